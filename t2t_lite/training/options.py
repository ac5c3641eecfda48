"""How to train and evaluate while training: `TrainOptions`, `EvalOptions`.

Not what to train: that is `HParams`. This module imports no TensorFlow, so a
command builds its flags from these fields (their defaults, types and help are
the flags', `t2t_lite.data.options.option`) before TensorFlow starts.
"""

from __future__ import annotations

import dataclasses

from t2t_lite.data.options import option


@dataclasses.dataclass(frozen=True)
class EvalOptions:
    """When and how much of the dev split to evaluate while training."""

    eval_every_steps: int = option(
        1000, "dev evaluation every N steps and at the end (0: never; default: %(default)s)")
    eval_examples: int = option(
        1000, "first N dev examples for the dev loss (default: %(default)s)")
    eval_decode_examples: int = option(
        200, "of those, how many are greedily decoded and scored (default: %(default)s)")
    eval_decode_minutes: float = option(
        2.0, "time bound for decoding them (default: %(default)s)")
    eval_batch_size: int = option(64, "sentences per decoding batch", flag=False)
    best_metric: str | None = option(  # A `Score` name; None = the problem's first.
        None, "the dev metric that keeps best/ and that early stopping watches, by name "
        "(e.g. sacrebleu, chrf, ter; default: the problem's first)")
    early_stopping_evals: int = option(
        0, "stop when the best metric has not improved for N dev evaluations in a row "
        "(0: never; default: %(default)s)")
    early_stopping_min_delta: float = option(
        0.0, "an improvement must exceed this, in the metric's units (default: %(default)s)")


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """How to run training (not what to train: that is HParams)."""

    train_steps: int | None = option(  # None = hparams.train_steps.
        None, "optimizer steps (default: the hparams' train_steps)")
    # This invocation's training loop stops at the first step past the budget,
    # saves and evaluates.
    train_minutes: float | None = option(
        None, "stop at this wall-clock budget (minutes of this run, dev evaluations "
        "included) with a final checkpoint, or at --train_steps")
    save_checkpoints_steps: int = option(
        1000, "a checkpoint every N steps (default: %(default)s)")
    save_checkpoints_minutes: float = option(  # The paper: every 10 minutes.
        10.0, "and every M minutes (default: %(default)s)")
    keep_checkpoint_max: int = option(  # Enough to average the last 20 (big).
        20, "the newest N checkpoints are kept (default: %(default)s)")
    log_every_steps: int = option(100, "a log line every N steps (default: %(default)s)")
    jit_compile: bool = option(False, "compile the step with XLA", flag="jit")
    seed: int = option(1234, "random seed (default: %(default)s)")
    # Its fields are flags of their own, in its place.
    eval: EvalOptions = option(EvalOptions(), "dev evaluation and the best checkpoint")
    progress_bar: bool = option(
        False, "a live Keras Progbar (for a terminal) instead of log lines", flag=False)
    peak_flops: float | None = option(
        None, "the matmul peak (FLOP/s, all replicas) that MFU divides by; None: measure it "
        "before training (`t2t_lite.training.flops.matmul_peak`, under a second)", flag=False)
    # Fine-tuning (t2t_lite.training.warm_start): "RUN_DIR" is its newest checkpoint.
    init_from: str | None = option(
        None, "fine-tune: start a new run from RUN_DIR[:ckpt-N|averaged|best]'s weights "
        "(same model-shaping hparams and vocabularies), with a fresh step counter, schedule "
        "and optimizer")
    init_from_optimizer: bool = option(
        False, "with --init_from: copy Adam's slots from that checkpoint too")
