"""Dev evaluation while training: dev loss, the problem's own metric, the best checkpoint.

Every `eval_every_steps` steps and at the end of training, the trainer calls
`DevEvaluator.evaluate(step)`, which computes
- the dev loss: label-smoothed loss and NLL per non-padding target token over
  the first `eval_examples` dev examples (teacher forced, no dropout; a chart
  trained without its decoder: its training loss, `model_loss_sums`);
- the problem's metrics (`Problem.eval_metrics`: exact match, sacreBLEU, ...)
  on greedy decodes of the first `eval_decode_examples` of those examples,
  within `eval_decode_minutes` (past it the subset is cut short, and the log
  says how many were scored);
and logs them, writes them to TensorBoard (`OUTPUT_DIR/dev`: `loss`, `nll`,
and one scalar per metric name), and keeps the best weights by the problem's
first metric, or the one `EvalOptions.best_metric` (`--best_metric`) names, in
`OUTPUT_DIR/best/` (`ckpt` + `best.json` with the step, that metric's name and
value, and every score), so a user selects on dev, never on test:
`t2t_lite-decoder --checkpoint=best`. "Best" follows the metric's direction
(`Score.higher_is_better`: the lowest TER). A resumed run reads `best.json` and
only replaces `best/` with a better evaluation (or when it was kept by another
metric). Early stopping on the same metric is `t2t_lite.training.early_stopping`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable

import numpy as np
import tensorflow as tf

from t2t_lite import records
from t2t_lite.data import batching
from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.decoder import Decoder
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.metrics.base import MetricError, improvement
from t2t_lite.training.options import EvalOptions
from t2t_lite.problems.base import ProblemError

BEST_DIR = "best"
BEST_FILE = "best.json"


@dataclasses.dataclass(frozen=True)
class DevResult:
    step: int
    loss: float  # Smoothed loss per target token.
    nll: float  # Negative log-likelihood per target token.
    scores: list  # t2t_lite.metrics.Score, in the problem's order.
    decoded: int  # Examples decoded and scored.
    seconds: float
    is_best: bool
    best_metric: str = ""  # The name of the score that keeps best/ ("": the first).

    def best_score(self):
        """The Score that keeps best/ (and that early stopping watches)."""
        return next((s for s in self.scores if s.name == self.best_metric), self.scores[0])


def best_metric_name(problem, requested: str | None = None) -> str | None:
    """The metric that keeps best/: `requested`, or the problem's first (None if it has none).

    Raises:
      MetricError: `requested` is not one of the problem's metrics (lists them).
    """
    names = [metric.name for metric in problem.eval_metrics()]
    if requested is None:
        return names[0] if names else None
    if requested not in names:
        raise MetricError(f"unknown --best_metric {requested!r}: {problem.name}'s metrics are "
                          f"{', '.join(names) or 'none'}")
    return requested


def model_loss_sums(model, batch, label_smoothing):
    """(loss, NLL, tokens) sums of the model in inference mode on `batch`: its own logged
    sums (the model contract's `loss_sums`), as the train step logs them."""
    sums = model.loss_sums(batch, label_smoothing, training=False)
    return sums.loss, sums.nll, sums.tokens


def mean_loss(model, hparams, dataset, loss_sums=None) -> tuple[float, float]:
    """(smoothed loss, NLL) per non-padding target token of an unbatched dataset.

    Batched as the trainer batches (`hparams` tokens and buckets), nothing
    dropped. `loss_sums`: fn(batch) -> (loss, NLL, tokens) sums of the
    model on it (e.g. a traced one); by default the model in inference mode.
    """
    if loss_sums is None:
        def loss_sums(batch):
            return model_loss_sums(model, batch, hparams.label_smoothing)
    batches = batching.batch_by_tokens(
        dataset, hparams.batch_size, hparams.max_length, drop_long=False,
        min_length_bucket=hparams.min_length_bucket,
        length_bucket_step=hparams.length_bucket_step)
    totals = np.zeros(3)
    for batch in batches:
        totals += [float(v) for v in loss_sums(batch)]
    tokens = max(totals[2], 1.0)
    return totals[0] / tokens, totals[1] / tokens


class DevEvaluator:
    """Evaluates a training model on the dev split; keeps `OUTPUT_DIR/best/`.

    Args:
      problem: the Problem being trained (its dev split and metrics).
      model: the model being trained (weights are read, never changed).
      hparams: the run's HParams (label smoothing, batch sizes, extra_length).
      output_dir: the run's output directory.
      options: EvalOptions.
      save_weights: fn(directory) writing the model's weights to `directory/ckpt`.
      log: where one-line reports go.
    """

    def __init__(self, problem, model, hparams, output_dir: str, options: EvalOptions,
                 save_weights: Callable[[str], None], log: Callable[[str], None] = print):
        self.problem = problem
        self.model = model
        self.hparams = hparams
        self.output_dir = output_dir
        self.options = options
        self.save_weights = save_weights
        self.log = log
        self.examples = first_examples(problem, options.eval_examples)
        self.writer = tf.summary.create_file_writer(os.path.join(output_dir, "dev"))
        self.decoder = greedy_decoder(problem, model, hparams, options.eval_batch_size)
        self.best_metric = best_metric_name(problem, options.best_metric)
        self.best = read_best(output_dir)
        self._loss_fn = tf.function(self._loss_sums, input_signature=[
            {name: tf.TensorSpec([None, None], tf.int32) for name in ("inputs", "targets")}])

    @classmethod
    def create(cls, problem, model, hparams, output_dir, options, save_weights, log=print):
        """A DevEvaluator, or None when evaluation is off or the problem has no dev data."""
        if options.eval_every_steps <= 0:
            return None
        try:
            return cls(problem, model, hparams, output_dir, options, save_weights, log)
        except ProblemError as e:
            log(f"no dev evaluation: {e}")
            return None

    def _loss_sums(self, batch):
        return model_loss_sums(self.model, batch, self.hparams.label_smoothing)

    def dev_loss(self) -> tuple[float, float]:
        """(smoothed loss, NLL) per non-padding target token over the dev examples."""
        dataset = tf.data.Dataset.from_generator(
            lambda: iter(self.examples), output_signature={
                name: tf.TensorSpec([None], tf.int32) for name in ("inputs", "targets")})
        return mean_loss(self.model, self.hparams, dataset, self._loss_fn)

    def decode(self) -> tuple[list[str], list[str], list[str]]:
        """(sources, hypotheses, references) of greedy decodes, within the time bound."""
        return decode_examples(
            self.problem, self.decoder, self.examples[:self.options.eval_decode_examples],
            self.hparams.max_length, self.options.eval_batch_size,
            self.options.eval_decode_minutes)

    def evaluate(self, step: int) -> DevResult:
        """Dev loss and metrics at `step`; replaces `best/` when the best metric improved."""
        start = time.time()
        loss, nll = self.dev_loss()
        sources, hypotheses, references = self.decode()
        scores = self.problem.evaluate(hypotheses, references, sources)
        seconds = time.time() - start
        result = DevResult(step, loss, nll, scores, len(hypotheses), seconds, False,
                           self.best_metric or "")
        primary = result.best_score()
        # A best/ kept under another metric (another --best_metric, or the problem
        # changed its first metric) is not comparable: the first evaluation replaces it.
        is_best = (self.best is None or self.best.get("metric") != primary.name
                   or improvement(primary, self.best["value"]) > 0)
        if is_best:
            self._save_best(step, loss, nll, scores, primary, len(hypotheses))
        with self.writer.as_default(step=step):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("nll", nll)
            for score in scores:
                tf.summary.scalar(score.name, score.value)
        self.writer.flush()
        cut = len(hypotheses) < min(len(self.examples), self.options.eval_decode_examples)
        metrics = "; ".join(f"{s.name} {s.value:.2f}" for s in scores)
        self.log(f"dev step {step}: loss {loss:.4f}  nll {nll:.4f}  {metrics} "
                 f"({len(hypotheses)} greedy decodes{', time bound reached' if cut else ''}, "
                 f"{seconds:.1f} s){'  new best -> ' + BEST_DIR + '/' if is_best else ''}")
        return dataclasses.replace(result, is_best=is_best)

    def _save_best(self, step, loss, nll, scores, primary, decoded):
        record = {"step": step, "metric": primary.name, "value": primary.value,
                  "higher_is_better": primary.higher_is_better,
                  "dev_loss": loss, "dev_nll": nll, "decoded": decoded,
                  "scores": {s.name: s.value for s in scores},
                  "lines": [s.line for s in scores]}
        self.save_weights(os.path.join(self.output_dir, BEST_DIR), record)
        self.best = record


def greedy_decoder(problem, model, hparams, batch_size: int) -> Decoder:
    """The Decoder dev evaluation uses: beam 1, the run's alpha and extra length."""
    return Decoder(model, DecodeOptions(
        beam_size=1, alpha=hparams.alpha, extra_length=hparams.extra_length,
        batch_size=batch_size, constraint=problem.decode_constraint()))


def decode_examples(problem, decoder, examples, max_length: int, batch_size: int,
                    minutes: float) -> tuple[list[str], list[str], list[str]]:
    """(sources, hypotheses, references) as text of `examples` decoded by `decoder`.

    Stops after the batch that passes `minutes` (the rest is left out).
    """
    deadline = time.time() + 60.0 * minutes
    decoded = []
    for start in range(0, len(examples), batch_size):
        chunk = [decode_policy.truncate(list(ex["inputs"]), max_length)
                 for ex in examples[start:start + batch_size]]
        decoded += [problem.decode(beams[0][0]) for beams in decoder.decode(chunk)]
        if time.time() > deadline:
            break
    done = examples[:len(decoded)]
    sources = [problem.decode_inputs(ex["inputs"]) for ex in done]
    hypotheses = [problem.format_output(s, h) for s, h in zip(sources, decoded)]
    references = [problem.format_output(s, problem.decode(ex["targets"]))
                  for s, ex in zip(sources, done)]
    return sources, hypotheses, references


def first_examples(problem, count: int, split: str = "dev") -> list[dict]:
    """The first `count` examples of `split` as int32 numpy arrays (ProblemError if none)."""
    examples = []
    for example in problem.examples(split).take(count).as_numpy_iterator():
        examples.append({k: np.asarray(v, np.int32) for k, v in example.items()})
    if not examples:
        raise ProblemError(f"{problem.name} has no {split} examples")
    return examples


def read_best(output_dir: str) -> dict | None:
    """The record of `OUTPUT_DIR/best/` (step, metric, value, scores), None if none.

    Raises:
      RecordError: best.json is damaged (one line naming it).
    """
    path = os.path.join(output_dir, BEST_DIR, BEST_FILE)
    if not os.path.exists(path):
        return None
    return read_best_file(path)


def read_best_file(path: str) -> dict:
    """A `best.json` record: its step, metric and value checked (RecordError if damaged)."""
    return records.read_json(
        path, f"delete {os.path.dirname(path)} and the next dev evaluation writes it again",
        {"step": int, "metric": str, "value": float})

