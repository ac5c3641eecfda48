"""Training throughput and MFU of t2t_lite, measured like ../shared/bench/train_torch.py.

    python -m benchmarks.train_speed --size bench     # or base, or all (default)
    python -m benchmarks.train_speed --size all --jit on

The trainer's own step (`t2t_lite.training.trainer.build_state` + `train_step.StepRunner`:
the Transformer, label-smoothed loss, Adam with equation 3, under the default
MirroredStrategy) on the peers' workload: "bench" (N=3, d_model 256, d_ff 1024,
h=4, vocabulary 8192, 32 sentences of 32 source and 32 target tokens) and
"base" (the paper's base, vocabulary 32768, 64 x 32 + 64 x 32), random ids in
[3, V) with a fixed seed and no padding, 8 batches cycled, 2 intra-op threads,
3 (bench) / 2 (base) warm-up steps then up to 15 / 7 timed steps.

One JSON line per size: target tokens/s (median, best, worst over steps), model
GFLOP/s and MFU. The FLOP count is `../shared/bench/_common.py`'s when that
file is there (the number every peer is divided by), else `t2t_lite.training.flops`
(the same formula over t2t_lite's own weights: no attention biases); the peak
is the best TensorFlow float32 matmul measured in this run (`t2t_lite.training.flops.
matmul_peak` over 1024-3072). `--jit auto` (the default) is what the trainer does
without flags; `--adam keras` swaps the trainer's FusedAdam for Keras' own Adam
(the update before issue 28's change), and `--loss plain` the fused softmax
cross-entropy kernel for the backend-neutral ops (the loss before it), for
before/after rows (`benchmarks/train_changes.sh`).
`benchmarks/train_side_by_side.sh` runs it beside the peers.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = int(os.environ.get("BENCH_THREADS", "2"))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(THREADS)

from t2t_lite.training.options import TrainOptions
from t2t_lite import registry  # noqa: E402
from t2t_lite.training import flops
from t2t_lite.training import losses
from t2t_lite.training import trainer
from t2t_lite.training.train_step import StepRunner  # noqa: E402

# name: (hparams overrides of base, vocabulary, sentences, source length, target length)
SIZES = {
    "bench": ("num_layers=3,d_model=256,d_ff=1024,num_heads=4", 8192, 32, 32, 32),
    "base": ("", 32768, 64, 32, 32),
}
STEPS = {"bench": (3, 15), "base": (2, 7)}  # (warm-up, timed), as train_torch.py.


def shared_flops(size: str):
    """Training FLOPs per step by ../shared/bench/_common.py, or None without it."""
    bench = os.path.join(HERE, "..", "..", "shared", "bench")
    if not os.path.exists(os.path.join(bench, "_common.py")):
        return None
    spec = importlib.util.spec_from_file_location("_shared_bench_common",
                                                  os.path.join(bench, "_common.py"))
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    return float(common.train_flops_per_step(common.CONFIGS[size])["total"])


class _VocabProblem:
    """What `build_state` reads of a problem: the vocabulary sizes."""

    def __init__(self, vocab):
        self.source_vocab_size = self.target_vocab_size = vocab


OPTIMIZERS = {"fused": None, "keras": keras.optimizers.Adam}  # None: the trainer's FusedAdam.
# change -> (module, attribute, what it was before the change), for before/after rows.
UNDO = {"loss": (losses, "_fused_token_losses", losses._token_losses)}


@contextlib.contextmanager
def undone(change):
    """Within it, the library computes as before `change` (it must be traced inside)."""
    owner, name, before = UNDO[change]
    after = getattr(owner, name)
    setattr(owner, name, before)
    try:
        yield
    finally:
        setattr(owner, name, after)


def build_state(size: str, adam: str = "fused", strategy=None):
    """(model, optimizer, hparams) of `size` as the trainer builds them; `adam="keras"`
    swaps in Keras' own Adam (the update before issue 28's change) for the build."""
    overrides, vocab = SIZES[size][:2]
    hparams = registry.hparams("base").override(overrides)
    library = trainer.FusedAdam
    trainer.FusedAdam = OPTIMIZERS[adam] or library
    try:
        model, optimizer = trainer.build_state(_VocabProblem(vocab), hparams,
                                               strategy or tf.distribute.get_strategy())
    finally:
        trainer.FusedAdam = library
    return model, optimizer, hparams


def build(size: str, jit: bool, adam: str = "fused"):
    """(model, StepRunner, 8 random batches) of the workload at `size`."""
    _, vocab, batch, source_length, target_length = SIZES[size]
    strategy = tf.distribute.MirroredStrategy()
    model, optimizer, hparams = build_state(size, adam, strategy)
    runner = StepRunner(model, optimizer, strategy, hparams.label_smoothing,
                        jit_compile=jit)
    rng = np.random.default_rng(1234)
    batches = [{"inputs": rng.integers(3, vocab, (batch, source_length), dtype=np.int32),
                "targets": rng.integers(3, vocab, (batch, target_length), dtype=np.int32)}
               for _ in range(8)]
    return model, runner, batches


def run(size: str, jit: bool, budget_s: float, adam: str = "fused", loss: str = "fused") -> dict:
    batch, source_length, target_length = SIZES[size][2:]
    warmup, timed = STEPS[size]
    # `--loss plain`: traced at the first step with the loss before issue 28's change.
    with undone("loss") if loss == "plain" else contextlib.nullcontext():
        model, runner, batches = build(size, jit, adam)
        start = time.perf_counter()
        for i in range(warmup):
            runner.step([batches[i % 8]])
        warmup_s = time.perf_counter() - start
    times, begun = [], time.perf_counter()
    for i in range(timed):
        start = time.perf_counter()
        loss_sum, _, tokens = runner.step([batches[(warmup + i) % 8]])
        times.append(time.perf_counter() - start)
        if len(times) >= 5 and time.perf_counter() - begun > budget_s:
            break
    own = flops.FlopCounter.for_model(model).train_flops(batch, source_length, target_length)
    peer = shared_flops(size)
    step_flops = peer or own
    peak = flops.matmul_peak("float32", sizes=(1024, 2048, 3072), repeats=3)
    median = statistics.median(times)
    return {
        "bench": "train", "system": "t2t_lite StepRunner" + (" (XLA)" if jit else ""),
        "size": size, "jit": jit, "adam": adam, "loss": loss, "threads": THREADS,
        "tensorflow": tf.__version__,
        "params": model.count_params(), "flops_per_step": step_flops,
        "flop_count": "shared/bench/_common.py" if peer else "t2t_lite.training.flops",
        "t2t_lite_flops_per_step": own, "step_s_median": round(median, 4),
        "warmup_s": round(warmup_s, 2), "timed_steps": len(times),
        "tgt_tokens_per_s": {"median": round(tokens / median, 1),
                             "best": round(tokens / min(times), 1),
                             "worst": round(tokens / max(times), 1)},
        "model_gflops_per_s": round(step_flops / median / 1e9, 2),
        "peak_gflops": round(peak / 1e9, 1), "mfu": round(step_flops / median / peak, 4),
        "last_loss": round(loss_sum / tokens, 4),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=["bench", "base", "all"], default="all")
    parser.add_argument("--jit", choices=["auto", "on", "off"], default="auto",
                        help="auto: the trainer's default")
    parser.add_argument("--budget_s", type=float, default=120.0,
                        help="stop timing after this (at least 5 steps)")
    parser.add_argument("--adam", choices=["fused", "keras"], default="fused",
                        help="fused: the trainer's FusedAdam; keras: keras.optimizers.Adam")
    parser.add_argument("--loss", choices=["fused", "plain"], default="fused",
                        help="fused: TensorFlow's softmax cross-entropy kernel (the trainer's); "
                             "plain: the backend-neutral ops")
    args = parser.parse_args()
    jit = TrainOptions().jit_compile if args.jit == "auto" else args.jit == "on"
    for size in ["bench", "base"] if args.size == "all" else [args.size]:
        print(json.dumps(run(size, jit, args.budget_s, args.adam, args.loss)), flush=True)


if __name__ == "__main__":
    main()
