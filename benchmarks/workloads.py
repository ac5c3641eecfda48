"""The workloads the speed benchmarks time: sizes, seeded batches and the models built on them.

    from benchmarks import workloads
    model, runner, batches = workloads.train_step("bench", jit=False)
    model = workloads.decode_model("base")

The peers' workload of ../shared/bench/: "bench" (N=3, d_model 256, d_ff 1024,
h=4, vocabulary 8192) and "base" (the paper's base, vocabulary 32768). Training
batches are 32 (bench) or 64 (base) sentences of 32 source and 32 target random
ids in [3, V), no padding, 8 batches from seed 1234, cycled; decoding batches
are 32 sources of 30 random ids + EOS, beam 4, alpha 0.6, exactly 40 generated
tokens. Models and optimizers are built by the library's own functions
(`trainer.build_state`, `weights.build_model`), the step by `StepRunner`,
nothing in the library swapped. `THREADS` (BENCH_THREADS, default 2) is the
intra-op thread count the benchmarks set.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

from t2t_lite import registry

HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = int(os.environ.get("BENCH_THREADS", "2"))
# name: (hparams overrides of base, vocabulary)
SIZES = {
    "bench": ("num_layers=3,d_model=256,d_ff=1024,num_heads=4", 8192),
    "base": ("", 32768),
}
TRAIN_SHAPES = {"bench": (32, 32, 32), "base": (64, 32, 32)}  # sentences, source, target
STEPS = {"bench": (3, 15), "base": (2, 7)}  # (warm-up, timed), as train_torch.py.
BATCH, SOURCE_LENGTH, NEW_TOKENS, BEAM, ALPHA = 32, 30, 40, 4, 0.6  # Decoding.
SEED = 1234


def use_threads(threads: int = THREADS) -> None:
    """Sets TensorFlow's intra-op threads (before its first op; later calls change nothing)."""
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError:  # TensorFlow already started: the first setting stays.
        pass


def hparams(size: str, overrides: str = ""):
    """The `base` hparams with the size's overrides, then `overrides`."""
    joined = ",".join(x for x in (SIZES[size][0], overrides) if x)
    return registry.hparams("base").override(joined)


def train_batches(size: str, count: int = 8, seed: int = SEED) -> list[dict]:
    """`count` batches {"inputs", "targets"} of random ids in [3, V), no padding."""
    vocab = SIZES[size][1]
    sentences, source_length, target_length = TRAIN_SHAPES[size]
    rng = np.random.default_rng(seed)
    return [{"inputs": rng.integers(3, vocab, (sentences, source_length), dtype=np.int32),
             "targets": rng.integers(3, vocab, (sentences, target_length), dtype=np.int32)}
            for _ in range(count)]


def decode_sources(vocab: int, seed: int = SEED):
    """A function returning the next batch of sources: int32 [BATCH, SOURCE_LENGTH + 1]."""
    import tensorflow as tf

    from t2t_lite.ids import EOS_ID

    rng = np.random.default_rng(seed)

    def batch():
        ids = rng.integers(2, vocab, size=(BATCH, SOURCE_LENGTH))
        eos = np.full((BATCH, 1), EOS_ID)
        return tf.constant(np.concatenate([ids, eos], axis=1).astype(np.int32))
    return batch


class VocabProblem:
    """What `trainer.build_state` reads of a problem: the vocabulary sizes."""

    def __init__(self, vocab: int):
        self.source_vocab_size = self.target_vocab_size = vocab


def train_state(size: str, strategy=None, overrides: str = ""):
    """(model, optimizer, hparams) of `size` as the trainer builds them."""
    import tensorflow as tf

    from t2t_lite.training import trainer

    params = hparams(size, overrides)
    model, optimizer = trainer.build_state(VocabProblem(SIZES[size][1]), params,
                                           strategy or tf.distribute.get_strategy())
    return model, optimizer, params


def train_step(size: str, jit: bool, overrides: str = ""):
    """(model, StepRunner under the default MirroredStrategy, `train_batches(size)`)."""
    import tensorflow as tf

    from t2t_lite.training.train_step import StepRunner

    strategy = tf.distribute.MirroredStrategy()
    model, optimizer, params = train_state(size, strategy, overrides)
    runner = StepRunner(model, optimizer, strategy, params.label_smoothing, jit_compile=jit)
    return model, runner, train_batches(size)


def decode_model(size: str):
    """A randomly initialized model of `size` for decoding."""
    from t2t_lite.runs import weights

    return weights.build_model(hparams(size), SIZES[size][1])


def shared_flops(size: str) -> float | None:
    """Training FLOPs per step by ../shared/bench/_common.py (every peer's count), or None."""
    path = os.path.join(HERE, "..", "..", "shared", "bench", "_common.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("shared_bench_common", path)
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    return float(common.train_flops_per_step(common.CONFIGS[size])["total"])
