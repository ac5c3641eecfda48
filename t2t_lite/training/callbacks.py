"""Keras callbacks for training a t2t_lite model with `model.fit`.

The project's own trainer (`t2t_lite.training.trainer`) is the fastest path and resumes
exactly; these callbacks give a Keras user the paper's recipe in plain Keras:

    with strategy.scope():
        model = Transformer.from_hparams(hparams, problem.vocab_size)
        model.compile(optimizer=keras.optimizers.Adam(0.0, 0.9, 0.98, 1e-9),
                      loss=LabelSmoothedCrossEntropy(hparams.label_smoothing))
    model.fit(problem.dataset("train", hparams, repeat=True), steps_per_epoch=1000,
              epochs=100, callbacks=[
                  TransformerLearningRate(hparams.d_model, hparams.warmup_steps),
                  CheckpointAveraging(last=5, every_steps=1000),
                  keras.callbacks.BackupAndRestore("backup"),
                  keras.callbacks.TensorBoard("logs")])

`DevMetrics` adds the problem's dev metrics to fit's logs (`val_sacrebleu`, ...),
so `keras.callbacks.EarlyStopping` can stop on one (list it first):

    callbacks=[DevMetrics(problem, hparams),
               keras.callbacks.EarlyStopping(monitor="val_sacrebleu", mode="max",
                                             patience=5, min_delta=0.1)]
"""

from __future__ import annotations

import keras
import numpy as np

from t2t_lite.training.schedules import paper_learning_rate


class TransformerLearningRate(keras.callbacks.Callback):
    """Sets the optimizer's learning rate by equation 3 (section 5.3) before every update.

    Update number `iterations + 1` uses the rate of that 1-based step, as the
    trainer's `TransformerSchedule` does; the optimizer's `iterations` is saved
    by Keras checkpoints and BackupAndRestore, so a resumed fit continues the
    schedule where it stopped.

    Args:
      d_model: model width.
      warmup_steps: linear warm-up steps (4000 in the paper).
      scale: multiplies the formula (1.0 is the paper).
    """

    def __init__(self, d_model: int, warmup_steps: int = 4000, scale: float = 1.0):
        super().__init__()
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.scale = scale

    def rate(self, step: int) -> float:
        return float(paper_learning_rate(step, self.d_model, self.warmup_steps, self.scale))

    def on_train_batch_begin(self, batch, logs=None):
        optimizer = self.model.optimizer
        optimizer.learning_rate = self.rate(int(optimizer.iterations.numpy()) + 1)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(keras.ops.convert_to_numpy(
                self.model.optimizer.learning_rate))


class CheckpointAveraging(keras.callbacks.Callback):
    """Averages the weights of the last `last` snapshots at the end of training (section 6.1).

    "For the base models, we used a single model obtained by averaging the last
    5 checkpoints, which were written at 10-minute intervals." A snapshot of the
    model weights is kept in host memory every `every_steps` optimizer updates
    (every epoch end when None); when `fit` ends the model's weights become the
    mean of the last `last` snapshots. Memory: `last` copies of the weights.

    Args:
      last: how many snapshots to average (5 base, 20 big).
      every_steps: updates between snapshots; None = one per epoch.
    """

    def __init__(self, last: int = 5, every_steps: int | None = None):
        super().__init__()
        if last < 1 or (every_steps is not None and every_steps < 1):
            raise ValueError("last and every_steps must be >= 1")
        self.last = last
        self.every_steps = every_steps
        self.snapshots: list[tuple[int, list[np.ndarray]]] = []

    def _snapshot(self):
        step = int(self.model.optimizer.iterations.numpy())
        if self.snapshots and self.snapshots[-1][0] == step:
            return
        weights = [np.array(keras.ops.convert_to_numpy(w)) for w in self.model.weights]
        self.snapshots = (self.snapshots + [(step, weights)])[-self.last:]

    def on_train_batch_end(self, batch, logs=None):
        if self.every_steps and int(self.model.optimizer.iterations.numpy()) % \
                self.every_steps == 0:
            self._snapshot()

    def on_epoch_end(self, epoch, logs=None):
        if self.every_steps is None:
            self._snapshot()

    def on_train_end(self, logs=None):
        if not self.snapshots:
            return
        count = len(self.snapshots)
        for i, weight in enumerate(self.model.weights):
            mean = sum(s[1][i].astype(np.float64) for s in self.snapshots) / count
            weight.assign(mean.astype(weight.dtype))

    @property
    def averaged_steps(self) -> list[int]:
        """The optimizer steps of the snapshots averaged (or to be averaged)."""
        return [step for step, _ in self.snapshots]


class DevMetrics(keras.callbacks.Callback):
    """Scores greedy decodes of the first dev examples at every epoch end, into fit's logs.

    As the trainer's dev evaluation does (`t2t_lite.training.evaluation`): the
    first `examples` dev examples, decoded greedily (within `minutes`) and
    scored with the problem's metrics; each Score's value goes into the epoch's
    logs as `val_<name>` (`val_exact_match`, `val_sacrebleu`, `val_chrf`,
    `val_ter`, ...), where History, TensorBoard and `keras.callbacks.EarlyStopping`
    read it. List it before them: Keras calls callbacks in order with one logs
    dict. TER is lower-is-better: `EarlyStopping(monitor="val_ter", mode="min")`.

    Args:
      problem: the Problem being trained (its dev split, metrics and vocabulary).
      hparams: its HParams (alpha, extra_length, max_length for the decodes).
      examples: how many dev examples to decode and score.
      batch_size: sentences per decoding batch.
      minutes: time bound of the decoding.
    """

    def __init__(self, problem, hparams, examples: int = 200, batch_size: int = 64,
                 minutes: float = 2.0):
        super().__init__()
        self.problem, self.hparams = problem, hparams
        self.count, self.batch_size, self.minutes = examples, batch_size, minutes
        self.examples = None
        self.decoder = None
        self.scores = []  # The last epoch's t2t_lite.metrics.Score list.

    def on_epoch_end(self, epoch, logs=None):
        from t2t_lite.training import evaluation  # TensorFlow's data pipeline: not at import.

        if self.decoder is None:
            self.examples = evaluation.first_examples(self.problem, self.count)
            self.decoder = evaluation.greedy_decoder(self.problem, self.model, self.hparams,
                                                     self.batch_size)
        sources, hypotheses, references = evaluation.decode_examples(
            self.problem, self.decoder, self.examples, self.hparams.max_length,
            self.batch_size, self.minutes)
        self.scores = self.problem.evaluate(hypotheses, references, sources)
        if logs is not None:
            for score in self.scores:
                logs[f"val_{score.name}"] = score.value
