"""Scoring given (source, target) pairs under the model, by teacher forcing, no search.

A pair's score is log p(target | source): the sum over the target's tokens, EOS
included, of the model's log-softmax at the target id, from one teacher-forced
forward pass per batch (`model(features)`, the model contract's `call`).
With alpha = 0 the beam's scores are these same log-probabilities, so scoring
the beam's candidates gives back the beam's scores (for filtering noisy pairs
or reranking N-best lists: t2t's `--score_file`, marian-scorer). The problem's
search constraint plays no part: the score is the model's own.

Sources are encoded and truncated as the decoder's (`splits.encode_lines`:
max_length - 1 tokens + EOS, with a warning); targets are encoded with
`Problem.encode_target` and scored whole (a learned positional table reuses
its last row past max_length). An empty source is EOS alone. Pairs are batched by length, padded as
`decode_policy` pads sources (powers of two, so few shapes are traced) and
returned in input order. Shapes: B batch, S source length, T target length.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from t2t_lite.data.text_encoder import DataError
from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.splits import encode_lines
from t2t_lite.decoding.text_io import read_source_lines
from t2t_lite.ids import EOS_ID, PAD_ID


@dataclasses.dataclass(frozen=True)
class PairScore:
    """The model's log-probability of one pair's target."""

    log_prob: float  # Summed over the target's tokens, EOS included.
    num_tokens: int  # Target tokens scored, EOS included.

    @property
    def per_token(self) -> float:
        """The mean log-probability per target token."""
        return self.log_prob / self.num_tokens


def read_pairs(path: str) -> list[tuple[str, str]]:
    """The (source, target) pairs of a UTF-8 file of `source<TAB>target` lines.

    Raises:
      DataError: the file is empty, or a line has no tab or more than one (names it).
      FileNotFoundError: no such file.
    """
    lines = read_source_lines(path)
    if not lines:
        raise DataError(f"{path} is empty; pass source<TAB>target lines to score")
    pairs = []
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        if len(fields) != 2:
            found = "no tab" if len(fields) == 1 else f"{len(fields) - 1} tabs"
            raise DataError(f"{path}, line {number}: {found}; each line must be "
                            "source<TAB>target")
        pairs.append((fields[0].strip(), fields[1].strip()))
    return pairs


def teacher_forced_log_probs(model, inputs, targets):
    """inputs int32 [B, S], targets int32 [B, T] (EOS included, 0-padded) ->
    float32 [B, T]: log p(targets[b, t] | source, targets[b, :t]), 0 at padding."""
    logits = model({"inputs": inputs, "targets": targets}, training=False)
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    picked = tf.gather(log_probs, targets, batch_dims=2)
    return tf.where(targets != PAD_ID, picked, 0.0)


class Scorer:
    """Scores id pairs in batches, with one traced forward pass per padded shape."""

    def __init__(self, model, batch_size: int = 64):
        self.model = model
        self.batch_size = batch_size
        spec = tf.TensorSpec([None, None], tf.int32)
        self._function = tf.function(
            lambda inputs, targets: teacher_forced_log_probs(model, inputs, targets),
            input_signature=[spec, spec], reduce_retracing=True)

    def score(self, pairs: list[tuple[list[int], list[int]]], progress=None) -> list[PairScore]:
        """(source ids, target ids), each with EOS -> a `PairScore` each, in order.

        `progress`: an optional `t2t_lite.progress.Progress`, advanced per batch."""
        order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0])))
        results = [None] * len(pairs)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            inputs = decode_policy.pad_batch([pairs[i][0] for i in chunk])
            targets = decode_policy.pad_batch([pairs[i][1] for i in chunk])
            token_log_probs = self._function(tf.constant(inputs), tf.constant(targets))
            sums = tf.reduce_sum(token_log_probs, axis=1).numpy()
            for row, i in enumerate(chunk):
                results[i] = PairScore(float(sums[row]), len(pairs[i][1]))
            if progress is not None:
                progress.advance(len(chunk))
        if progress is not None:
            progress.close()
        return results


def score_pairs(problem, model, pairs: list[tuple[str, str]], max_length: int,
                batch_size: int = 64, warn=print, progress=None) -> list[PairScore]:
    """Text pairs -> the model's `PairScore` of each target given its source, in order.

    `progress`: fn(total) -> a `t2t_lite.progress.Progress`, or None.
    """
    sources = encode_lines(problem, [source for source, _ in pairs], max_length,
                           lambda message: warn(f"source {message}"))
    ids = [(source or [EOS_ID], (problem.encode_target(target) if target else []) + [EOS_ID])
           for source, (_, target) in zip(sources, pairs)]
    return Scorer(model, batch_size).score(ids, progress and progress(len(ids)))
