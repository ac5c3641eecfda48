"""What every benchmark row says about the machine it was measured on, and how rows are written.

    from benchmarks.machine import machine_fields, append_row, parse_field

`machine_fields()` is the shared part of a row: the CPU model (/proc/cpuinfo),
the logical cores, the load average when the row was made (this machine is
shared) and the best float32 matmul TensorFlow does here, measured as
`benchmarks/train_speed.py` measures the peak its MFU divides by
(`t2t_lite.training.flops.matmul_peak` over 1024-3072, 3 repeats). A script
that already measured the peak passes it in. `append_row` appends one JSON line
to a file under benchmarks/results/ (and prints it), so a README figure's row is
written by the script that measured it, never by hand.
"""

from __future__ import annotations

import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
MACHINE_FIELDS = ("cpu", "cores", "load_average", "peak_gflops")


def cpu_model() -> str:
    """The processor's model name (/proc/cpuinfo), or platform's word for it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def measured_peak() -> float:
    """The best float32 matmul of this process in FLOP/s (as train_speed.py measures it)."""
    from t2t_lite.training import flops

    return flops.matmul_peak("float32", sizes=(1024, 2048, 3072), repeats=3)


def machine_fields(peak_flops: float | None = None) -> dict:
    """cpu, cores, load_average (1, 5, 15 min) and peak_gflops (measured now unless given)."""
    peak = measured_peak() if peak_flops is None else peak_flops
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "load_average": load,
            "peak_gflops": round(peak / 1e9, 1)}


def parse_field(item: str) -> tuple[str, object]:
    """"key=value" -> (key, value); a value that reads as JSON (a number...) is decoded."""
    key, value = item.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def provenance_fields(path: str | None = None) -> dict:
    """date (UTC), commit (the source tree's HEAD, "-dirty" if it has changes) and benchmark.

    The results pages (`python -m tools.gen_docs`) print them in every table; rows older than
    these fields get theirs from benchmarks/results/provenance.json (git blame).
    """
    import datetime
    import subprocess

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    commit = git("rev-parse", "--short=7", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    fields = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
              "commit": commit or "unknown"}
    if path and path != "-":
        fields["benchmark"] = os.path.splitext(os.path.basename(path))[0]
    return fields


def append_row(row: dict, path: str | None) -> None:
    """Prints `row` as one JSON line, and appends it to `path` unless that is None or "-".

    The row gets `provenance_fields` (date, commit, benchmark) where it has none of its own.
    """
    row = {**provenance_fields(path), **row}
    line = json.dumps(row)
    print(line, flush=True)
    if path and path != "-":
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
