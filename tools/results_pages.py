"""The results pages: every table rendered from the raw rows in benchmarks/results/*.jsonl.

A `Table` names its row file, the rows it shows, its columns and the command that
reproduces it. Every table starts with the columns a reader needs to weigh a figure:
the date and commit of the row (its own fields where the script wrote them, else
`benchmarks/results/provenance.json`, made from `git blame` by
`python -m tools.gen_docs --provenance`) and the machine (CPU, the instruction set
oneDNN ran, the matmul peak measured in the same run).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import pathlib
import re
import subprocess
from typing import Any, Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PROVENANCE = RESULTS / "provenance.json"
Value = Callable[[dict], Any]


@dataclasses.dataclass(frozen=True)
class Table:
    file: str  # Row file under benchmarks/results/.
    title: str
    about: str  # What was measured, on what workload: one short paragraph.
    reproduce: str  # The command that writes these rows ("": none does any more).
    columns: tuple[tuple[str, Value | str], ...]
    where: Callable[[dict], bool] = lambda row: True


def get(path: str) -> Value:
    """A column reading a dotted field path ("bleu.averaged_beam4"), or "" if absent."""
    def value(row):
        for key in path.split("."):
            if not isinstance(row, dict) or key not in row:
                return ""
            row = row[key]
        return row
    return value


def line_key(line: str) -> str:
    return hashlib.sha1(line.strip().encode("utf-8")).hexdigest()[:16]


def rows(file: str) -> list[dict]:
    """The rows of one file, each with `_key` (its provenance key)."""
    out = []
    for line in (RESULTS / file).read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append({**json.loads(line), "_key": line_key(line)})
    return out


def load_provenance() -> dict:
    if PROVENANCE.exists():
        return json.loads(PROVENANCE.read_text(encoding="utf-8"))
    return {}


def blame_provenance() -> dict:
    """file -> line key -> [commit, date] of the commit that added each row (git blame)."""
    out = {}
    for path in sorted(RESULTS.glob("*.jsonl")):
        blame = subprocess.run(["git", "blame", "--line-porcelain", "--", str(path)], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout
        commit, table, dates = None, {}, {}
        for line in blame.splitlines():
            if line.startswith("\t"):
                if line[1:].strip():
                    table[line_key(line[1:])] = [commit[:7], dates[commit]]
            elif len(line) > 40 and line[40] == " " and all(c in "0123456789abcdef"
                                                             for c in line[:40]):
                commit = line[:40]
            elif line.startswith("committer-time "):
                stamp = int(line.split()[1])
                dates[commit] = datetime.datetime.fromtimestamp(
                    stamp, datetime.timezone.utc).strftime("%Y-%m-%d")
        out[path.name] = table
    return out


def _isa(row: dict) -> str:
    isa = row.get("onednn_isa") or row.get("isa") or ""
    if "AMX" in isa:
        return "AVX-512 + AMX"
    if "AVX-512" in isa:
        return "AVX-512"
    if isa == "native":
        return "native"
    if "AVX2" in isa or isa == "avx2":
        return "AVX2"
    return isa


def machine(row: dict) -> str:
    nested = row.get("machine") if isinstance(row.get("machine"), dict) else {}
    cpu = row.get("cpu") or nested.get("cpu") or ""
    cpu = (cpu or "").replace("(R)", "").replace(" Processor", "").strip()
    parts = [p for p in (cpu, _isa(row)) if p]
    if row.get("device") and row.get("platform") == "gpu":
        parts = [row["device"]]
    peak = row.get("peak_gflops") or row.get("peak_gflops_machine") or row.get("peak_gflops_tf")
    if peak:
        parts.append(f"peak {peak:g} GFLOP/s")
    if row.get("cores"):
        parts.append(f"{row['cores']} core{'s' if row['cores'] != 1 else ''}")
    return ", ".join(parts) or "not recorded"


def _format(value) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):  # 4 decimals below 10, 2 above, trailing zeros dropped.
        return f"{value:,.{4 if abs(value) < 10 else 2}f}".rstrip("0").rstrip(".")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_format(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_format(v)}" for k, v in value.items())
    return _plain(str(value)).replace("|", "\\|").replace("\n", " ")


ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)"


def _plain(text: str) -> str:
    """A row's free-text label without the run ordinals of a lab notebook ("ninth run")."""
    text = re.sub(rf"\s*\((?:the )?{ORDINAL} (?:run|pair)\)", "", text)
    text = re.sub(rf"\bthe {ORDINAL} (run|pair)\b", r"the t2t_lite \1 of that session", text)
    return re.sub(rf"\b{ORDINAL} (run|pair)\b", r"\1", text)


def render_table(table: Table, provenance: dict) -> str:
    known = provenance.get(table.file, {})
    header = ["date", "commit", "machine"] + [label for label, _ in table.columns]
    lines = [f"### {table.title}\n", table.about + "\n",
             f"Rows: `benchmarks/results/{table.file}`. " + (
                 f"Reproduce: `{table.reproduce}`.\n" if table.reproduce else
                 "No command of benchmarks/ writes these rows.\n"),
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    shown = [row for row in rows(table.file) if table.where(row)]
    for row in shown:
        commit, date = known.get(row["_key"], [row.get("commit", ""), row.get("date", "")])
        cells = [row.get("date") or date or "not recorded", row.get("commit") or commit or
                 "not recorded", machine(row)]
        for _, column in table.columns:
            cells.append(_format(get(column)(row) if isinstance(column, str) else column(row)))
        lines.append("| " + " | ".join(cells) + " |")
    if not shown:
        lines.append("| " + " | ".join(["(no rows)"] + [""] * (len(header) - 1)) + " |")
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class Page:
    path: str  # Under docs/.
    title: str
    intro: str
    tables: tuple[Table, ...]


GENERATED = ("<!-- Generated by `python -m tools.gen_docs` from benchmarks/results/*.jsonl "
             "(tools/results_specs.py); do not edit. -->\n\n")


def render_page(page: Page, provenance: dict) -> str:
    parts = [GENERATED, f"# {page.title}\n\n", page.intro.strip() + "\n\n"]
    for table in page.tables:
        parts.append(render_table(table, provenance) + "\n")
    return "".join(parts).rstrip() + "\n"
