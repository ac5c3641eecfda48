"""Before and after one change to the training step, interleaved step by step in one process.

    python -m benchmarks.train_interleaved --change loss --size bench [--steps 24]
    eval "$(python -m benchmarks.isa env --isa=avx2)"; python -m benchmarks.train_interleaved ...

Builds `train_speed.py`'s workload (the trainer's StepRunner, no XLA, the peers'
random batches) twice, once with the change undone ("before") and once as the
library trains ("after"), traces and warms up both, then alternates their steps
(the order swapped each round), so the slow spells of a shared machine hit both
alike; separate processes (`train_changes.sh`) saw 1.3x between runs of one
setting. Appends one row per setting (median, best and worst step, the ratio of
medians) to `--out` (default benchmarks/results/train_interleaved.jsonl), each
with the machine, the ISA oneDNN reported and the matmul peak.

Changes (issue 28):
  loss   the backend-neutral label-smoothed loss -> TensorFlow's fused softmax
         cross-entropy kernel (`losses._fused_token_losses`)
Rows of changes tried and dropped stay in the file (README, "Training without
XLA"): `projections` (Q, K, V as one matmul over the kernels side by side,
removed after it measured 0.87x and 0.98x).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import isa  # noqa: E402
from benchmarks import train_speed  # noqa: E402
from benchmarks.machine import RESULTS, append_row, machine_fields  # noqa: E402
from benchmarks.train_speed import UNDO, undone  # noqa: E402


def build_and_warm(size, change):
    """{"before": (runner, batches), "after": ...}, each traced and warmed up."""
    built = {}
    for setting in ("before", "after"):
        with undone(change) if setting == "before" else contextlib.nullcontext():
            _, runner, batches = train_speed.build(size, jit=False)
            for i in range(train_speed.STEPS[size][0]):
                runner.step([batches[i % 8]])
        built[setting] = (runner, batches)
    return built


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--change", choices=sorted(UNDO), required=True)
    parser.add_argument("--size", choices=sorted(train_speed.SIZES), default="bench")
    parser.add_argument("--steps", type=int, default=24, help="timed steps of each setting")
    parser.add_argument("--out", default=os.path.join(RESULTS, "train_interleaved.jsonl"))
    args = parser.parse_args()
    built = build_and_warm(args.size, args.change)
    times = {"before": [], "after": []}
    tokens = {}
    for i in range(args.steps):
        for setting in (("before", "after") if i % 2 == 0 else ("after", "before")):
            runner, batches = built[setting]
            start = time.perf_counter()
            _, _, tokens[setting] = runner.step([batches[i % 8]])
            times[setting].append(time.perf_counter() - start)
    fields = {**machine_fields(), "onednn_isa": isa.probe()}
    for setting in times:
        append_row(interleaved_row(args, setting, times, tokens[setting], fields), args.out)


def interleaved_row(args, setting, times, tokens, fields):
    """One setting's row: its step rates, the ratio of medians (after / before) and `fields`."""
    seconds = times[setting]
    median = statistics.median(seconds)
    ratio = statistics.median(times["before"]) / statistics.median(times["after"])
    return {"bench": "train_interleaved", "change": args.change, "setting": setting,
            "size": args.size, "threads": train_speed.THREADS, "steps": len(seconds),
            "tgt_tokens_per_s": {"median": round(tokens / median, 1),
                                 "best": round(tokens / min(seconds), 1),
                                 "worst": round(tokens / max(seconds), 1)},
            "after_over_before": round(ratio, 4), **fields}


if __name__ == "__main__":
    main()
