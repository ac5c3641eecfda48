"""Where decoding time goes: TensorFlow's profiler on decode_speed.py's workload.

    python -m benchmarks.decode_profile --size bench [--jit] [--top 15]
    python -m benchmarks.decode_profile --compare_cache_writes [--rounds 3]
    python -m benchmarks.decode_profile --compare_beams [--rounds 3] [--jit]

Decodes one warm-up batch, then profiles `--batches` batches (decode_speed.py's
32 x 30 random sources, beam 4, exactly 40 new tokens, 2 intra-op threads)
with `tf.profiler.experimental`, reads the host plane of the trace (the
XSpace protobuf that TensorBoard's profile plugin reads) and sums each
TensorFlow op type's kernel time. Prints one JSON line: wall seconds per
batch, kernel seconds per batch (the sum over ops; above the wall when the
two threads overlap), op executions per decoding step, and the top op types
with seconds per batch and share of the kernel time. A human table goes to
stderr.

`--compare_cache_writes` instead times (no profiler) four ways of writing the
new key/value into the self-attention cache at each step, interleaved in one
process: in place (`attention.cache_writes_in_place`, the library's without
XLA), and, each swapped in for `attention.write_position`, copying ways:
`ops.slice_update` (XlaDynamicUpdateSlice in TensorFlow), a select over the
cache (`ops.where`) and a scatter of the B x H new rows (`ops.scatter_update`).
One JSON line per variant: median seconds per batch.

`--compare_beams` times, the same way, the beam search over grouped beams (the
library's without XLA since 2026-12-06: `t2t_lite.layers.beam_decoder`) against the
search that repeats the encoder's keys per beam and reorders the caches
(`search(..., grouped=False)`), both with the library's cache writes.

Every row also says `core` (`--core`: what else ran on the cores it used, e.g.
"dedicated (taskset, nothing else on it)" or "shared with a training run") and
the machine (`machine.py`: CPU model, cores, load average, float32 matmul peak
at `--threads`), and is appended to `--out` (default
benchmarks/results/decode_profile.jsonl; "-" prints only).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from benchmarks import decode_speed  # noqa: E402
from benchmarks import isa  # noqa: E402
from benchmarks.machine import RESULTS, append_row, machine_fields  # noqa: E402
from keras import ops  # noqa: E402

from t2t_lite import registry  # noqa: E402
from t2t_lite.runs import weights
from t2t_lite.layers import attention  # noqa: E402
from t2t_lite.ids import EOS_ID  # noqa: E402

# Ops that only contain others (their time is their children's).
# ExecuteAsyncOnStream is the XLA launch inside a single-op XLA kernel (counted there).
CONTAINERS = {"While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall",
              "If", "StatelessIf", "ExecuteAsyncOnStream"}


def op_times(logdir: str) -> tuple[dict, dict]:
    """(seconds, executions) per TF op type, from the host plane of the trace."""
    seconds, counts = collections.Counter(), collections.Counter()
    for path in glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            if not plane.name.startswith("/host:CPU"):
                continue
            for line in plane.lines:
                for event in line.events:
                    name = plane.event_metadata[event.metadata_id].name
                    if ":" not in name or "::" in name:  # Executor events, not ops.
                        continue
                    kind = name.rsplit(":", 1)[1]
                    if not kind or kind in CONTAINERS or not (kind[0].isupper() or
                                                              kind[0] == "_"):
                        continue
                    seconds[kind] += event.duration_ps * 1e-12
                    counts[kind] += 1
    return seconds, counts


def _select(cache, new, index):
    at = ops.arange(ops.shape(cache)[2], dtype="int32") == index
    return ops.where(ops.reshape(at, (1, 1, -1, 1)), new, cache)


def _scatter(cache, new, index):
    shape = ops.shape(cache)
    rows = ops.broadcast_to(ops.arange(shape[0], dtype="int32")[:, None], shape[:2])
    heads = ops.broadcast_to(ops.arange(shape[1], dtype="int32")[None, :], shape[:2])
    position = ops.broadcast_to(ops.cast(index, "int32"), shape[:2])
    indices = ops.stack([rows, heads, position], axis=-1)  # [B, H, 3]
    return ops.scatter_update(cache, indices, new[:, :, 0, :])


# name -> (the write swapped in for `attention.write_position`, the search's `in_place`).
CACHE_WRITES = {"in_place": (attention.write_position, True),  # The library's since 2026-12-06.
                "slice_update": (attention.write_position, False),  # Its copying path.
                "select": (_select, False), "scatter": (_scatter, False)}


def cache_write_row(args, name: str, seconds: list[float], machine: dict) -> dict:
    """The row of one cache write: median seconds per batch over `seconds`."""
    median = statistics.median(seconds)
    return {"bench": "decode_cache_write", "size": args.size, "jit": args.jit,
            "threads": args.threads, "cache_write": name, "batches": len(seconds),
            "median_seconds_per_batch": round(median, 4),
            "tgt_tokens_per_s": round(decode_speed.BATCH * decode_speed.NEW_TOKENS / median, 1),
            "core": args.core, **machine}


def profile_row(args, wall: float, seconds: dict, counts: dict, logdir: str,
                machine: dict) -> dict:
    """The profile row: wall and kernel seconds per batch, op runs per step, the top op types."""
    kernel = sum(seconds.values()) / args.batches
    steps = args.batches * decode_speed.NEW_TOKENS
    ranked = sorted(seconds.items(), key=lambda item: -item[1])[:args.top]
    top = [{"op": kind, "seconds_per_batch": round(s / args.batches, 4),
            "share": round(s / args.batches / kernel, 4),
            "per_step": round(counts[kind] / steps, 1)} for kind, s in ranked]
    return {"bench": "decode_profile", "size": args.size, "jit": args.jit,
            "threads": args.threads,
            "wall_seconds_per_batch": round(wall, 4),
            "kernel_seconds_per_batch": round(kernel, 4),
            "op_executions_per_step": round(sum(counts.values()) / steps, 1),
            "top": top, "logdir": logdir, "core": args.core, **machine}


def interleaved(decodes, args, make_batch):
    """{name: seconds per batch}: `args.rounds` rounds of `args.batches` batches of each decode."""
    times = collections.defaultdict(list)
    for _ in range(args.rounds):
        for name, decode in decodes.items():
            for _ in range(args.batches):
                inputs = make_batch()
                start = time.perf_counter()
                decode(inputs)[0].numpy()
                times[name].append(time.perf_counter() - start)
    return times


def compare_cache_writes(args, make_batch, machine):
    """Median seconds per batch of each cache write, interleaved over rounds."""
    overrides, vocab = decode_speed.SIZES[args.size]
    decodes, library = {}, attention.write_position
    for name, (write, in_place) in CACHE_WRITES.items():
        attention.write_position = write  # Looked up when the decode is traced.
        model = weights.build_model(registry.hparams("base").override(overrides), vocab)
        decodes[name] = decode_speed.make_decode(  # The [B*K, H, L, d] cache these writes take.
            model, args.jit, copy_cache=not in_place, reorder_beams=True)
        decodes[name](make_batch())[0].numpy()
    attention.write_position = library
    times = interleaved(decodes, args, make_batch)
    for name, seconds in times.items():
        append_row(cache_write_row(args, name, seconds, machine), args.out)


def compare_beams(args, make_batch, machine):
    """Median seconds per batch of grouped and reordered beams, interleaved over rounds."""
    overrides, vocab = decode_speed.SIZES[args.size]
    model = weights.build_model(registry.hparams("base").override(overrides), vocab)
    decodes = {name: decode_speed.make_decode(model, args.jit, reorder_beams=reorder)
               for name, reorder in (("grouped", False), ("reordered", True))}
    for decode in decodes.values():
        decode(make_batch())[0].numpy()  # Traced before timing.
    times = interleaved(decodes, args, make_batch)
    for name, seconds in times.items():
        median = statistics.median(seconds)
        append_row({"bench": "decode_beams", "size": args.size, "jit": args.jit,
                    "threads": args.threads, "beams": name, "batches": len(seconds),
                    "median_seconds_per_batch": round(median, 4),
                    "tgt_tokens_per_s": round(
                        decode_speed.BATCH * decode_speed.NEW_TOKENS / median, 1),
                    "core": args.core, **machine}, args.out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(decode_speed.SIZES), default="bench")
    parser.add_argument("--batches", type=int, default=2, help="profiled batches")
    parser.add_argument("--jit", action="store_true")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads")
    parser.add_argument("--compare_cache_writes", action="store_true")
    parser.add_argument("--compare_beams", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="with --compare_*")
    parser.add_argument("--core", default=None,
                        help='what else ran on its cores, e.g. "dedicated (taskset, nothing '
                             'else on it)" or "shared with a training run"')
    parser.add_argument("--out", default=os.path.join(RESULTS, "decode_profile.jsonl"),
                        help="rows are appended here (- : print only)")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    machine = machine_fields()  # At --threads, before any decoding.
    machine["onednn_isa"] = isa.probe()  # AVX2 under `eval "$(... isa.py env --isa=avx2)"`.
    overrides, vocab = decode_speed.SIZES[args.size]
    rng = np.random.default_rng(1234)

    def batch():
        ids = rng.integers(2, vocab, size=(decode_speed.BATCH, decode_speed.SOURCE_LENGTH))
        eos = np.full((decode_speed.BATCH, 1), EOS_ID)
        return tf.constant(np.concatenate([ids, eos], axis=1).astype(np.int32))

    if args.compare_cache_writes:
        return compare_cache_writes(args, batch, machine)
    if args.compare_beams:
        return compare_beams(args, batch, machine)
    model = weights.build_model(registry.hparams("base").override(overrides), vocab)
    decode = decode_speed.make_decode(model, args.jit)
    decode(batch())[0].numpy()  # Trace (and compile) outside the profile.
    logdir = tempfile.mkdtemp(prefix="decode_profile_")
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    for _ in range(args.batches):
        decode(batch())[0].numpy()
    wall = (time.perf_counter() - start) / args.batches
    tf.profiler.experimental.stop()
    seconds, counts = op_times(logdir)
    row = profile_row(args, wall, seconds, counts, logdir, machine)
    append_row(row, args.out)
    kernel, top = row["kernel_seconds_per_batch"], row["top"]
    print(f"wall {wall:.3f} s/batch, kernels {kernel:.3f} s/batch, "
          f"{row['op_executions_per_step']} op runs per step", file=sys.stderr)
    for item in top:
        print(f"  {item['op']:28s} {item['seconds_per_batch']:8.4f} s "
              f"{100 * item['share']:5.1f}%  {item['per_step']:6.1f}/step", file=sys.stderr)


if __name__ == "__main__":
    main()
