"""Two settings of the training step, before and after, interleaved step by step in one process.

    python -m benchmarks.train interleaved --after=num_heads=8 --size bench [--steps 24]
    python -m benchmarks.train interleaved --before_jit=off --after_jit=on
    eval "$(python -m benchmarks.isa env --isa=avx2)"; python -m benchmarks.train interleaved ...

Builds `benchmarks.workloads`' training step twice, "before" and "after", each
with its own hparams overrides (`--before`, `--after`) and XLA switch, traces and
warms up both, then alternates their steps (`benchmarks.harness.interleave`), so
the slow spells of a shared machine hit both alike. Appends one row per setting
(median, best and worst step, the ratio of medians) to `--out` (default
benchmarks/results/train_interleaved.jsonl), each with the machine, the ISA
oneDNN reported and the matmul peak.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import cli, harness, isa, workloads
from benchmarks.machine import machine_fields
from benchmarks.rows import RESULTS, append_row

SETTINGS = ("before", "after")


def build_and_warm(size: str, overrides: dict, jit: dict) -> dict:
    """{setting: a function running step i}, each traced and warmed up."""
    built = {}
    for setting in SETTINGS:
        _, runner, batches = workloads.train_step(size, jit[setting], overrides[setting])
        for i in range(workloads.STEPS[size][0]):
            runner.step([batches[i % len(batches)]])
        built[setting] = (lambda i, r=runner, b=batches: r.step([b[i % len(b)]]))
    return built


def interleaved_row(args, setting, times, tokens, fields):
    """One setting's row: its step rates, the ratio of medians (after / before) and `fields`."""
    seconds = times[setting]
    return {"bench": "train_interleaved", "change": args.change, "setting": setting,
            "size": args.size, "threads": workloads.THREADS, "steps": len(seconds),
            "tgt_tokens_per_s": harness.rates(seconds, tokens),
            "after_over_before": harness.ratio(times), **fields}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--before", default="", help="hparams overrides of the before setting")
    parser.add_argument("--after", default="", help="hparams overrides of the after setting")
    for setting in SETTINGS:
        parser.add_argument(f"--{setting}_jit", choices=["on", "off"], default="off")
    parser.add_argument("--change", default=None,
                        help="the change's name in the rows (default: the two settings)")
    parser.add_argument("--size", choices=sorted(workloads.SIZES), default="bench")
    parser.add_argument("--steps", type=int, default=24, help="timed steps of each setting")
    parser.add_argument("--out", default=os.path.join(RESULTS, "train_interleaved.jsonl"))


def main(args) -> int:
    overrides = {"before": args.before, "after": args.after}
    jit = {s: getattr(args, f"{s}_jit") == "on" for s in SETTINGS}
    if overrides["before"] == overrides["after"] and jit["before"] == jit["after"]:
        raise cli.UsageError("--before and --after name the same setting")
    args.change = args.change or " -> ".join(
        f"{overrides[s] or 'defaults'}, jit {'on' if jit[s] else 'off'}" for s in SETTINGS)
    workloads.use_threads()
    steps = build_and_warm(args.size, overrides, jit)
    tokens = {s: float(steps[s](0)[2]) for s in SETTINGS}  # One more warm-up step each.
    times = harness.interleave(steps, args.steps)
    fields = {**machine_fields(), "onednn_isa": isa.probe()}
    for setting in SETTINGS:
        append_row(interleaved_row(args, setting, times, tokens[setting], fields), args.out,
                   benchmark="train_interleaved")
    return 0
