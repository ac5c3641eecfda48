"""How to train and evaluate while training: `TrainOptions`, `EvalOptions`.

Not what to train: that is `HParams`. This module imports no TensorFlow, so a
command builds its flags from these fields (their defaults are the flags')
before TensorFlow starts.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class EvalOptions:
    """When and how much of the dev split to evaluate while training."""

    eval_every_steps: int = 1000  # 0 = never (not even at the end).
    eval_examples: int = 1000  # Dev examples for the dev loss (the first ones).
    eval_decode_examples: int = 200  # Of those, greedily decoded and scored.
    eval_decode_minutes: float = 2.0  # Time bound for decoding them.
    eval_batch_size: int = 64  # Sentences per decoding batch.
    # The metric that keeps best/ (and that early stopping watches), by its
    # Score name ("sacrebleu", "chrf", "ter", ...); None = the problem's first.
    best_metric: str | None = None
    # Stop training when that metric has not improved by more than
    # early_stopping_min_delta for this many dev evaluations in a row; 0 = never.
    early_stopping_evals: int = 0
    early_stopping_min_delta: float = 0.0


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """How to run training (not what to train: that is HParams)."""

    train_steps: int | None = None  # None = hparams.train_steps.
    # Wall-clock budget of this invocation's training loop (dev evaluations
    # included): it stops at the first step past it, saves and evaluates.
    train_minutes: float | None = None
    save_checkpoints_steps: int = 1000
    save_checkpoints_minutes: float = 10.0  # The paper: every 10 minutes.
    keep_checkpoint_max: int = 20  # Enough to average the last 20 (big).
    log_every_steps: int = 100
    jit_compile: bool = False  # XLA for the training step.
    seed: int = 1234
    eval: EvalOptions = EvalOptions()  # Dev evaluation and the best checkpoint.
    progress_bar: bool = False  # A live Keras Progbar (for a terminal) instead of log lines.
    # The matmul peak (FLOP/s, all replicas) that MFU divides by; None = measure
    # it before training (`t2t_lite.training.flops.matmul_peak`, under a second).
    peak_flops: float | None = None
    # Fine-tuning: start a new run from another run's weights, "RUN_DIR" (its
    # newest checkpoint) or "RUN_DIR:ckpt-N|averaged|best", with a fresh step
    # counter, schedule and optimizer (t2t_lite.training.warm_start).
    init_from: str | None = None
    init_from_optimizer: bool = False  # Keep the source checkpoint's Adam slots too.
