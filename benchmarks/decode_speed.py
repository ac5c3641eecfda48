"""Beam-search decoding throughput of t2t_lite, measured like ../shared/bench/decode_peers.py.

    python -m benchmarks.decode speed --size bench      # or base, or all (default)
    python -m benchmarks.decode speed --size all --jit  # XLA-compiled decoding loop
    python -m benchmarks.decode speed --copy_cache      # the cache copied at each write
    python -m benchmarks.decode speed --reorder_beams   # caches reordered, not grouped beams
    python -m benchmarks.decode speed --shards 1        # one search, not two side by side

A randomly initialized model of `benchmarks.workloads`' size, its decoding
batches (32 sources of 30 random ids + EOS, beam 4, alpha 0.6, exactly 40
generated tokens per sentence: min_decode_length == max, so every system does
the same work), 2 threads as the library splits them (`t2t_lite.decoding.parallel`:
without XLA 2 searches side by side, each on 1 intra-op thread; with XLA one
search on 2), 1 warm-up batch + N timed. One row per size: tokens/s = 32 * 40 /
median seconds per batch.
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
from benchmarks.workloads import ALPHA, BATCH, BEAM, NEW_TOKENS, SOURCE_LENGTH
from t2t_lite.decoding import parallel
from t2t_lite.decoding.search import search

THREADS = 2


def default_shards(jit: bool) -> int:
    """The library's shards on THREADS cores: searches side by side without XLA."""
    return 1 if jit else min(parallel.MAX_DEFAULT_SHARDS, THREADS)


def make_decode(model, jit: bool, copy_cache: bool = False, reorder_beams: bool | None = None,
                shards: int = 1):
    """A traced function: sources int32 [B, S+1] -> sequences [B, K, 40].

    As `t2t_lite-decoder`: without XLA the self-attention cache is written in
    place, unless `copy_cache` (`search(..., in_place=False)`), and the beams are
    grouped; with XLA (or `reorder_beams`: `search(..., grouped=False)`) the caches
    are repeated and reordered per beam. The batch is split into `shards`
    searches side by side (`parallel.sharded`).
    """
    if reorder_beams is None:
        reorder_beams = jit

    def one_search(inputs):
        return search(model, inputs, BEAM, ALPHA, NEW_TOKENS, min_decode_length=NEW_TOKENS,
                      in_place=not (jit or copy_cache), grouped=not reorder_beams)

    def decode(inputs):
        return parallel.sharded(one_search, (inputs,), shards)

    spec = tf.TensorSpec([BATCH, SOURCE_LENGTH + 1], tf.int32)
    return tf.function(decode, input_signature=[spec], jit_compile=jit)


def system_name(jit: bool, copy_cache: bool, reorder_beams: bool, shards: int) -> str:
    return (f"t2t_lite beam_search (TF, fp32{', XLA' if jit else ''}"
            f"{', cache copied' if copy_cache else ''}"
            f"{', beams reordered' if reorder_beams and not jit else ''}"
            f"{', one search' if shards == 1 and not jit else ''})")


def run(size: str, batches: int, jit: bool, copy_cache: bool = False,
        reorder_beams: bool | None = None, shards: int = 1) -> dict:
    model = workloads.decode_model(size)
    decode = make_decode(model, jit, copy_cache, reorder_beams, shards)
    sources = workloads.decode_sources(workloads.SIZES[size][1])
    times, lengths = [], set()
    for i in range(batches + 1):
        inputs = sources()
        start = time.perf_counter()
        sequences = decode(inputs)[0].numpy()
        if i:  # The first batch traces (and compiles) the loop.
            times.append(time.perf_counter() - start)
        lengths.update(int((row != 0).sum()) for row in sequences[:, 0])
    median = statistics.median(times)
    return {
        "bench": "decode", "system": system_name(jit, copy_cache, reorder_beams, shards),
        "setting": size, "size": size, "params": model.count_params(),
        "decode": {"batch": BATCH, "src_tokens": SOURCE_LENGTH, "plus_eos": True, "beam": BEAM,
                   "length_penalty": ALPHA, "new_tokens": NEW_TOKENS, "threads": THREADS,
                   "shards": shards,
                   "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
                   "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads()},
        "generated_tokens_checked": sorted(lengths),
        "batch_s": {"median": round(median, 3), "min": round(min(times), 3),
                    "max": round(max(times), 3), "n": len(times)},
        "tgt_tokens_per_s": {"median": round(BATCH * NEW_TOKENS / median, 1),
                             "best": round(BATCH * NEW_TOKENS / min(times), 1),
                             "worst": round(BATCH * NEW_TOKENS / max(times), 1)},
        "sentences_per_s_median": round(BATCH / median, 2),
        "tensorflow": tf.__version__, **cheap_fields(),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", choices=["bench", "base", "all"], default="all")
    parser.add_argument("--batches", type=int, default=6, help="timed batches")
    parser.add_argument("--jit", action="store_true", help="XLA-compile the decoding loop")
    parser.add_argument("--copy_cache", action="store_true",
                        help="write the self-attention cache by copying it")
    parser.add_argument("--shards", type=int, default=None,
                        help="searches side by side (default: the library's, 2 without XLA)")
    parser.add_argument("--reorder_beams", action="store_true",
                        help="repeat and reorder the caches per beam")
    parser.add_argument("--out", default="-", help="rows are appended here (- : print only)")


def main(args) -> int:
    shards = args.shards or default_shards(args.jit)
    parallel.configure_threads(shards, cores=THREADS)
    for size in (["bench", "base"] if args.size == "all" else [args.size]):
        append_row(run(size, args.batches, args.jit, args.copy_cache,
                       args.reorder_beams or None, shards), args.out, benchmark="decode_speed")
    return 0
