"""Training throughput and MFU of t2t_lite's own step, measured like ../shared/bench/train_torch.py.

    python -m benchmarks.train steps --size bench     # or base, or all (default)
    python -m benchmarks.train steps --size all --jit on

The trainer's own step (`trainer.build_state` + `train_step.StepRunner`: the
Transformer, label-smoothed loss, Adam with equation 3, under the default
MirroredStrategy) on `benchmarks.workloads`' training batches, 3 (bench) / 2
(base) warm-up steps then up to 15 / 7 timed steps.

One row per size: target tokens/s (median, best, worst over steps), model
GFLOP/s and MFU. The FLOP count is `../shared/bench/_common.py`'s when that file
is there (the number every peer is divided by), else `t2t_lite.training.flops`
(the same formula over t2t_lite's own weights: no attention biases); the peak is
the best TensorFlow float32 matmul measured in this run. `--jit auto` (the
default) is what the trainer does without flags. `benchmarks/train_side_by_side.sh`
runs it beside the peers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from benchmarks import workloads
from benchmarks.machine import cheap_fields
from benchmarks.rows import append_row
from t2t_lite.training import flops
from t2t_lite.training.options import TrainOptions

THREADS = workloads.THREADS


def timed_steps(runner, batches, warmup: int, timed: int, budget_s: float):
    """(warm-up seconds, seconds of each timed step, tokens of the last, its loss sum)."""
    start = time.perf_counter()
    for i in range(warmup):
        runner.step([batches[i % len(batches)]])
    warmup_s = time.perf_counter() - start
    times, begun = [], time.perf_counter()
    for i in range(timed):
        start = time.perf_counter()
        loss_sum, _, tokens = runner.step([batches[(warmup + i) % len(batches)]])
        times.append(time.perf_counter() - start)
        if len(times) >= 5 and time.perf_counter() - begun > budget_s:
            break
    return warmup_s, times, tokens, loss_sum


def run(size: str, jit: bool, budget_s: float) -> dict:
    """The row of `size`: the step timed as the module says."""
    model, runner, batches = workloads.train_step(size, jit)
    warmup_s, times, tokens, loss_sum = timed_steps(runner, batches, *workloads.STEPS[size],
                                                    budget_s)
    own = flops.FlopCounter.for_model(model).train_flops(*workloads.TRAIN_SHAPES[size])
    peer = workloads.shared_flops(size)
    step_flops = peer or own
    peak = flops.matmul_peak("float32", sizes=(1024, 2048, 3072), repeats=3)
    median = statistics.median(times)
    return {
        "bench": "train", "system": "t2t_lite StepRunner" + (" (XLA)" if jit else ""),
        "setting": f"{size}, jit {'on' if jit else 'off'}",
        "size": size, "jit": jit, "threads": THREADS, "tensorflow": tf.__version__,
        "params": model.count_params(), "flops_per_step": step_flops,
        "flop_count": "shared/bench/_common.py" if peer else "t2t_lite.training.flops",
        "t2t_lite_flops_per_step": own, "step_s_median": round(median, 4),
        "warmup_s": round(warmup_s, 2), "timed_steps": len(times),
        "tgt_tokens_per_s": {"median": round(tokens / median, 1),
                             "best": round(tokens / min(times), 1),
                             "worst": round(tokens / max(times), 1)},
        "model_gflops_per_s": round(step_flops / median / 1e9, 2),
        **cheap_fields(), "peak_gflops": round(peak / 1e9, 1),
        "mfu": round(step_flops / median / peak, 4), "last_loss": round(loss_sum / tokens, 4),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", choices=["bench", "base", "all"], default="all")
    parser.add_argument("--jit", choices=["auto", "on", "off"], default="auto",
                        help="auto: the trainer's default")
    parser.add_argument("--budget_s", type=float, default=120.0,
                        help="stop timing after this (at least 5 steps)")
    parser.add_argument("--out", default="-", help="rows are appended here (- : print only)")


def main(args) -> int:
    workloads.use_threads()
    jit = TrainOptions().jit_compile if args.jit == "auto" else args.jit == "on"
    for size in ["bench", "base"] if args.size == "all" else [args.size]:
        append_row(run(size, jit, args.budget_s), args.out, benchmark="train_speed")
    return 0
