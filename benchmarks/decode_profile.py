"""Where decoding time goes, and decoding variants timed side by side in one process.

    python -m benchmarks.decode profile --size bench [--jit] [--top 15]
    python -m benchmarks.decode cache_writes [--rounds 3]
    python -m benchmarks.decode beams [--rounds 3] [--jit]

`profile` decodes one warm-up batch, then profiles `--batches` batches of
`benchmarks.workloads`' decoding workload with `tf.profiler.experimental` and
sums each TensorFlow op type's kernel time (`benchmarks.profiling.op_times`).
One row: wall seconds per batch, kernel seconds per batch (the sum over ops;
above the wall when the two threads overlap), op executions per decoding step,
and the top op types with seconds per batch and share of the kernel time. A
human table goes to stderr.

`cache_writes` times (no profiler) the two ways the library writes the new
key/value into the self-attention cache at each step, interleaved in one process
(`benchmarks.harness`): in place (`in_place`, the library's without XLA) and its
copying path (`slice_update`, `search(..., in_place=False)`), both on the
repeated and reordered caches. `beams` times, the same way, the search over
grouped beams (the library's without XLA) against the one that repeats the
encoder's keys per beam and reorders the caches (`search(..., grouped=False)`).
One row per variant: median seconds per batch.

Every row also says `core` (`--core`: what else ran on the cores it used, e.g.
"dedicated (taskset, nothing else on it)" or "shared with a training run"), the
machine (matmul peak at `--threads`) and `onednn_isa`, and is appended to
`--out` (default benchmarks/results/decode_profile.jsonl; "-" prints only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from benchmarks import decode_speed, harness, isa, workloads
from benchmarks.machine import machine_fields
from benchmarks.profiling import op_times, top_ops
from benchmarks.rows import RESULTS, append_row

# name -> the search's `in_place` (the self-attention cache written in place or copied).
CACHE_WRITES = {"in_place": True, "slice_update": False}
BEAMS = {"grouped": False, "reordered": True}  # name -> `reorder_beams`.


def cache_write_row(args, name: str, seconds: list[float], machine: dict) -> dict:
    """The row of one cache write: median seconds per batch over `seconds`."""
    median = statistics.median(seconds)
    return {"bench": "decode_cache_write", "size": args.size, "jit": args.jit,
            "threads": args.threads, "cache_write": name, "batches": len(seconds),
            "median_seconds_per_batch": round(median, 4),
            "tgt_tokens_per_s": round(workloads.BATCH * workloads.NEW_TOKENS / median, 1),
            "core": args.core, **machine}


def beams_row(args, name: str, seconds: list[float], machine: dict) -> dict:
    """The row of one way of keeping the beams: median seconds per batch."""
    median = statistics.median(seconds)
    return {"bench": "decode_beams", "size": args.size, "jit": args.jit,
            "threads": args.threads, "beams": name, "batches": len(seconds),
            "median_seconds_per_batch": round(median, 4),
            "tgt_tokens_per_s": round(workloads.BATCH * workloads.NEW_TOKENS / median, 1),
            "core": args.core, **machine}


def profile_row(args, wall: float, seconds: dict, counts: dict, logdir: str,
                machine: dict) -> dict:
    """The profile row: wall and kernel seconds per batch, op runs per step, the top op types."""
    steps = args.batches * workloads.NEW_TOKENS
    kernel, top = top_ops(seconds, counts, args.batches, steps, args.top, "batch")
    return {"bench": "decode_profile", "size": args.size, "jit": args.jit,
            "threads": args.threads,
            "wall_seconds_per_batch": round(wall, 4),
            "kernel_seconds_per_batch": round(kernel, 4),
            "op_executions_per_step": round(sum(counts.values()) / steps, 1),
            "top": top, "logdir": logdir, "core": args.core, **machine}


def interleaved(decodes: dict, args, sources) -> dict:
    """{name: seconds per batch}: each decode traced, then `args.rounds` rounds interleaved."""
    for decode in decodes.values():
        decode(sources())[0].numpy()  # Traced before timing.
    batches = [sources() for _ in range(args.batches)]
    return harness.interleave(
        {name: (lambda i, d=decode: d(batches[i % len(batches)])[0].numpy())
         for name, decode in decodes.items()}, args.rounds, repeats=args.batches)


def compare(args, sources, machine) -> None:
    """`cache_writes` or `beams`: one row per variant, interleaved."""
    model = workloads.decode_model(args.size)
    if args.command == "cache_writes":
        decodes = {name: decode_speed.make_decode(model, args.jit, copy_cache=not in_place,
                                                  reorder_beams=True)
                   for name, in_place in CACHE_WRITES.items()}
        make_row = cache_write_row
    else:
        decodes = {name: decode_speed.make_decode(model, args.jit, reorder_beams=reorder)
                   for name, reorder in BEAMS.items()}
        make_row = beams_row
    for name, seconds in interleaved(decodes, args, sources).items():
        append_row({**make_row(args, name, seconds, machine), "setting": name}, args.out,
                   benchmark="decode_profile")


def profile(args, sources, machine) -> None:
    decode = decode_speed.make_decode(workloads.decode_model(args.size), args.jit)
    decode(sources())[0].numpy()  # Trace (and compile) outside the profile.
    logdir = tempfile.mkdtemp(prefix="decode_profile_")
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    for _ in range(args.batches):
        decode(sources())[0].numpy()
    wall = (time.perf_counter() - start) / args.batches
    tf.profiler.experimental.stop()
    row = profile_row(args, wall, *op_times(logdir), logdir, machine)
    append_row(row, args.out, benchmark="decode_profile")
    print(f"wall {wall:.3f} s/batch, kernels {row['kernel_seconds_per_batch']:.3f} s/batch, "
          f"{row['op_executions_per_step']} op runs per step", file=sys.stderr)
    for item in row["top"]:
        print(f"  {item['op']:28s} {item['seconds_per_batch']:8.4f} s "
              f"{100 * item['share']:5.1f}%  {item['per_step']:6.1f}/step", file=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", choices=sorted(workloads.SIZES), default="bench")
    parser.add_argument("--batches", type=int, default=2, help="batches per setting and round")
    parser.add_argument("--jit", action="store_true")
    parser.add_argument("--top", type=int, default=15, help="op types in a profile row")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the comparisons")
    parser.add_argument("--core", default=None,
                        help='what else ran on its cores, e.g. "dedicated (taskset, nothing '
                             'else on it)" or "shared with a training run"')
    parser.add_argument("--out", default=os.path.join(RESULTS, "decode_profile.jsonl"),
                        help="rows are appended here (- : print only)")


def main(args) -> int:
    """`args.command`: profile, cache_writes or beams."""
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    machine = machine_fields()  # At --threads, before any decoding.
    machine["onednn_isa"] = isa.probe()  # AVX2 under `eval "$(... isa env --isa=avx2)"`.
    sources = workloads.decode_sources(workloads.SIZES[args.size][1])
    (profile if args.command == "profile" else compare)(args, sources, machine)
    return 0
