"""The row writer: one JSON line per measurement, in benchmarks/results/*.jsonl.

    from benchmarks.rows import append_row, parse_field, read_rows

`append_row(row, path)` prints the row and appends it to `path`, after adding the
fields every row of the current schema (`SCHEMA`) carries: `schema`, `date`
(UTC), `commit` (the source tree's HEAD, "-dirty" with changes), `benchmark`
(the row file's name, or the `benchmark` argument), `system` (what was measured,
"t2t_lite" unless the row names one), `setting` (the setting that tells the
row from its neighbours, or null) and the machine (`benchmarks.machine`:
`cpu`, `cores`, `load_average`, `peak_gflops`; a script that measured the
peak passes the machine in the row, the writer adds the cheap fields the row
lacks and null for an unmeasured peak). A field the row has itself wins.

`read_rows(path)` reads a row file of any schema and gives every row the
current schema's fields: rows without `schema` (schema 1) take `benchmark`
from their `bench` field or the file's name, `system` and `setting` from
nothing (null), and the machine fields they have (null for the others); the
row's own fields are kept as they are. `tools/results_pages.py` reads the
files as they are.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess

from benchmarks import machine
from benchmarks.machine import MACHINE_FIELDS

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
SCHEMA = 2
COMMON_FIELDS = ("schema", "date", "commit", "benchmark", "system", "setting") + MACHINE_FIELDS


def parse_field(item: str) -> tuple[str, object]:
    """"key=value" -> (key, value); a value that reads as JSON (a number...) is decoded."""
    key, value = item.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def provenance_fields(path: str | None = None) -> dict:
    """date (UTC), commit and, for a row file, benchmark (the file's name)."""
    commit = _git("rev-parse", "--short=7", "HEAD")
    if commit and _git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    fields = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
              "commit": commit or "unknown"}
    if path and path != "-":
        fields["benchmark"] = os.path.splitext(os.path.basename(path))[0]
    return fields


def schema_fields(path: str | None, benchmark: str | None = None) -> dict:
    """The fields `append_row` puts under a row (the row's own win)."""
    fields = {"schema": SCHEMA, **provenance_fields(path), "system": "t2t_lite",
              "setting": None, **machine.cheap_fields()}
    if benchmark:
        fields["benchmark"] = benchmark
    return fields


def append_row(row: dict, path: str | None, benchmark: str | None = None) -> dict:
    """Prints `row` (with `schema_fields`) as one JSON line and appends it to `path`
    unless that is None or "-"; returns the row written."""
    row = {**schema_fields(path, benchmark), **row}
    line = json.dumps(row)
    print(line, flush=True)
    if path and path != "-":
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    return row


def normalized(row: dict, file_name: str) -> dict:
    """`row` of any schema with every field of the current one (see the module's doc)."""
    nested = row.get("machine") if isinstance(row.get("machine"), dict) else {}
    filled = {"schema": 1, "date": None, "commit": None,
              "benchmark": row.get("bench") or os.path.splitext(file_name)[0],
              "system": None, "setting": None,
              **{name: nested.get(name) for name in MACHINE_FIELDS}}
    return {**filled, **row}


def read_rows(path: str) -> list[dict]:
    """The rows of a row file, each `normalized`."""
    with open(path, encoding="utf-8") as f:
        return [normalized(json.loads(line), os.path.basename(path)) for line in f
                if line.strip()]
