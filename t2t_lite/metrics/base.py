"""What a problem's evaluation metric is: text hypotheses and references in, a Score out.

A problem declares its metrics (`Problem.eval_metrics`, as tensor2tensor's
`Problem.eval_metrics`); the decoder prints every Score's `line`, the trainer's
dev evaluation logs every Score's `value` to TensorBoard as `dev/<name>` and
keeps the best checkpoint by the first metric (or the one `--best_metric` names).
A Score whose metric is lower-is-better (TER) keeps its real value and says so
with `higher_is_better=False`; every comparison goes through `improvement`.
Adding a metric means writing a
`Metric` subclass and returning it from a problem: no edit to the decoder or
the trainer.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Sequence

from t2t_lite.errors import UserError


class MetricError(UserError, ValueError):
    """Hypotheses and references that cannot be scored; the message says why."""


class TreeError(MetricError):
    """A tree or linearization that cannot be read; the message says where.

    The one error for unreadable trees: the treebank reader and linearization
    (`t2t_lite.parsing.ptb`) and EVALB's reader (`t2t_lite.metrics.trees`), where a test tree that
    cannot be read makes the output unscorable (hence a `MetricError`).
    """


@dataclasses.dataclass(frozen=True)
class Score:
    """One metric's result on a corpus.

    Attributes:
      name: short identifier, used as the TensorBoard tag `dev/<name>` and in
        `best/best.json` (e.g. "exact_match", "sacrebleu", "bleu_tokenized").
      value: the figure as the metric defines it (TER is a TER, not -TER).
      line: the one line a person reads, with how it was computed.
      higher_is_better: False for an error rate (TER): best/ and early stopping
        then keep the lowest value.
    """

    name: str
    value: float
    line: str
    higher_is_better: bool = True


def improvement(score: Score, reference: float | None) -> float:
    """How much `score` is better than `reference` (in the metric's units; inf if None).

    Positive when better, whichever way the metric points: value - reference,
    or reference - value for a lower-is-better metric.
    """
    if reference is None:
        return float("inf")
    delta = score.value - reference
    return delta if score.higher_is_better else -delta


class Metric(abc.ABC):
    """A corpus-level metric over decoded text."""

    name: str = "metric"

    @abc.abstractmethod
    def score(self, hypotheses: Sequence[str], references: Sequence[str],
              sources: Sequence[str] | None = None) -> Score:
        """Scores `hypotheses` against `references` (one each, same order)."""


class ExactMatch(Metric):
    """Fraction of hypotheses equal to their reference, in percent."""

    name = "exact_match"

    def score(self, hypotheses, references, sources=None) -> Score:
        check_lengths(hypotheses, references)
        correct = sum(h == r for h, r in zip(hypotheses, references))
        n = len(hypotheses)
        value = 100.0 * correct / max(n, 1)
        return Score(self.name, value,
                     f"exact-sequence accuracy: {value:.2f}% ({correct}/{n})")


def check_lengths(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    """Raises MetricError unless there is one reference per hypothesis."""
    if len(hypotheses) != len(references):
        raise MetricError(f"{len(hypotheses)} hypotheses but {len(references)} references; "
                          "they must pair up one to one")


def evaluate(metrics: Sequence[Metric], hypotheses: Sequence[str],
             references: Sequence[str], sources: Sequence[str] | None = None) -> list[Score]:
    """Every metric's Score, in the order the problem declared them."""
    check_lengths(hypotheses, references)
    return [metric.score(hypotheses, references, sources) for metric in metrics]


def read_lines(path: str) -> list[str]:
    """Lines of a UTF-8 file (hypotheses or references) without their newlines.

    Raises:
      MetricError: the file is not UTF-8 (the message names it and the first bad byte's
        offset in the file, counted from 0).
      OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")  # Whole, so the byte named is the file's own offset.
    except UnicodeDecodeError as e:
        raise MetricError(f"{path} is not UTF-8 ({e.reason} at byte {e.start})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines
