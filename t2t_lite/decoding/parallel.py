"""Searches side by side: a batch decoded as shards that run on separate cores.

TensorFlow's oneDNN kernels run a matrix product on one thread when its
operands fit in the L2 cache (`ExecuteSingleThreadedGemm` in TensorFlow's
`mkl_matmul_ops_common.h`). A decoding step's products are that small (32
sentences x 4 beams = 128 rows against a 256 x 1024 matrix at `bench`), so a
search used one core of two, whatever the intra-op thread count. Splitting the
batch into `shards` independent searches in one graph lets TensorFlow's
inter-op threads run them at once, one core each. A sentence's search depends
only on its own rows, so it decodes the same ids; its score may differ in the
last float bits, as it does between batch sizes (README, "Searches side by side").

`threads(shards)` is the thread split this needs: `shards` inter-op threads and
the process' cores shared among them as intra-op threads.
"""

from __future__ import annotations

import os

MAX_DEFAULT_SHARDS = 2  # Measured on 2 cores; more shards trace proportionally more graph.


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # Not Linux.
        return os.cpu_count() or 1


def default_shards() -> int:
    """Shards a search splits its batch into by default: the cores, at most 2."""
    return max(1, min(MAX_DEFAULT_SHARDS, available_cores()))


def threads(shards: int, cores: int | None = None) -> tuple[int, int]:
    """(inter-op, intra-op) thread counts for `shards` searches on `cores` cores."""
    cores = cores or available_cores()
    return max(1, shards), max(1, cores // max(1, shards))


def configure_threads(shards: int, cores: int | None = None) -> tuple[int, int]:
    """Sets TensorFlow's thread pools for `shards` searches (before TensorFlow runs an op).

    Returns the (inter-op, intra-op) counts set, or (0, 0) when the pools stay
    as they are: TF_NUM_INTEROP_THREADS or TF_NUM_INTRAOP_THREADS is set (the
    user's choice), or the runtime has started.
    """
    if any(name in os.environ for name in ("TF_NUM_INTEROP_THREADS", "TF_NUM_INTRAOP_THREADS")):
        return 0, 0
    import tensorflow as tf

    inter, intra = threads(shards, cores)
    try:
        tf.config.threading.set_inter_op_parallelism_threads(inter)
        tf.config.threading.set_intra_op_parallelism_threads(intra)
    except RuntimeError:  # The runtime has started: its pools stay.
        return 0, 0
    return inter, intra


def _traced_tensorflow() -> bool:
    import keras

    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return not tf.executing_eagerly()


def sharded(fn, tensors, shards: int):
    """`fn(*tensors)` computed on `shards` slices of the batch, side by side.

    `tensors` share their leading (batch) dimension B; `fn` returns a tuple of
    tensors with that leading dimension, each row depending only on its own
    input rows. Every slice gets ceil(B / shards) rows: the batch is padded
    with copies of its last row (at most shards - 1, their outputs dropped), so
    no search runs on an empty batch. `fn` is traced once, as a function the
    graph calls once per slice and does not inline (tracing and optimizing a
    search costs seconds). Runs `fn` once, unsplit, outside a traced
    TensorFlow graph or for one shard.
    """
    if shards <= 1 or not _traced_tensorflow():
        return fn(*tensors)
    import tensorflow as tf

    batch = tf.shape(tensors[0])[0]
    extra = (batch + shards - 1) // shards * shards - batch

    def pad(x):
        return tf.concat([x, tf.repeat(x[-1:], extra, axis=0)], axis=0)

    pieces = [tf.split(pad(x), shards, axis=0) for x in tensors]
    one = tf.function(fn, reduce_retracing=True, autograph=False,
                      experimental_attributes={"_noinline": True})
    outputs = [one(*shard) for shard in zip(*pieces)]
    return tuple(tf.concat(list(parts), axis=0)[:batch] for parts in zip(*outputs))
