"""Where training time goes: TensorFlow's profiler on the training-speed workload.

    python -m benchmarks.train profile --size base [--jit] [--steps 3] [--top 20]
    ONEDNN_MAX_CPU_ISA=AVX2 python -m benchmarks.train profile --size base   # AVX2 only

Builds the trainer's own step (`benchmarks.workloads.train_step`: `trainer.build_state`
+ `StepRunner`, the default MirroredStrategy) on the peers' workload, runs its
warm-up steps, then profiles `--steps` steps with `tf.profiler.experimental`
and sums each TensorFlow op type's kernel time from the host plane of the
trace (`benchmarks.profiling.op_times`). Prints one row: wall seconds per
step, kernel seconds per step (the sum over ops; above the wall when the two
threads overlap), op executions per step and the top op types with seconds per
step and share of the kernel time; a human table goes to stderr. Every row
also carries `onednn_isa` (`benchmarks.isa.probe`), `core` and the machine,
and is appended to `--out` (default benchmarks/results/train_profile.jsonl;
"-" prints only).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from benchmarks import isa, workloads
from benchmarks.profiling import op_times, top_ops
from benchmarks.machine import machine_fields
from benchmarks.rows import RESULTS, append_row



def profile_row(args, wall: float, seconds: dict, counts: dict, machine: dict,
                onednn_isa: str | None) -> dict:
    """Wall and kernel seconds per step, op runs per step, the top op types."""
    kernel, top = top_ops(seconds, counts, args.steps, args.steps, args.top, "step")
    return {"bench": "train_profile", "size": args.size, "jit": args.jit,
            "threads": workloads.THREADS, "steps": args.steps,
            "wall_seconds_per_step": round(wall, 4),
            "kernel_seconds_per_step": round(kernel, 4),
            "op_executions_per_step": round(sum(counts.values()) / args.steps, 1),
            "top": top, "onednn_isa": onednn_isa, "core": args.core, **machine}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", choices=sorted(workloads.SIZES), default="base")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps")
    parser.add_argument("--jit", action="store_true")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--core", default=None,
                        help='what else ran on its cores, e.g. "dedicated"')
    parser.add_argument("--out", default=os.path.join(RESULTS, "train_profile.jsonl"),
                        help="rows are appended here (- : print only)")


def main(args) -> int:
    workloads.use_threads()
    machine = machine_fields()
    _, runner, batches = workloads.train_step(args.size, args.jit)
    for i in range(workloads.STEPS[args.size][0]):  # Trace, compile, warm up.
        runner.step([batches[i % 8]])
    logdir = tempfile.mkdtemp(prefix="train_profile_")
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    for i in range(args.steps):
        runner.step([batches[i % 8]])
    wall = (time.perf_counter() - start) / args.steps
    tf.profiler.experimental.stop()
    seconds, counts = op_times(logdir)
    row = profile_row(args, wall, seconds, counts, machine, isa.probe())
    append_row(row, args.out, benchmark="train_profile")
    print(f"wall {wall:.3f} s/step, kernels {row['kernel_seconds_per_step']:.3f} s/step, "
          f"{row['op_executions_per_step']} op runs per step", file=sys.stderr)
    for item in row["top"]:
        print(f"  {item['op']:34s} {item['seconds_per_step']:8.4f} s  {100 * item['share']:5.1f}%"
              f"  x{item['per_step']}", file=sys.stderr)
    return 0
