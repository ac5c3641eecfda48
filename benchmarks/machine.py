"""What every benchmark row says about the machine it was measured on.

    from benchmarks.machine import machine_fields

`machine_fields()` is the shared part of a row: the CPU model (/proc/cpuinfo),
the logical cores, the load average when the row was made (this machine is
shared) and the best float32 matmul TensorFlow does here, measured as the
training-speed benchmark measures the peak its MFU divides by
(`t2t_lite.training.flops.matmul_peak` over 1024-3072, 3 repeats). A script
that already measured the peak passes it in. Rows are written by
`benchmarks.rows`.
"""

from __future__ import annotations

import os
import platform

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
    """The best float32 matmul of this process in FLOP/s."""
    from t2t_lite.training import flops

    return flops.matmul_peak("float32", sizes=(1024, 2048, 3072), repeats=3)


def machine_fields(peak_flops: float | None = None) -> dict:
    """cpu, cores, load_average (1, 5, 15 min) and peak_gflops (measured now unless given)."""
    peak = measured_peak() if peak_flops is None else peak_flops
    return {**cheap_fields(), "peak_gflops": round(peak / 1e9, 1)}


def cheap_fields() -> dict:
    """The machine fields that cost nothing to read (peak_gflops null: not measured)."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "load_average": load,
            "peak_gflops": None}
