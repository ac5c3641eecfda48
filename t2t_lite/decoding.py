"""Decoding a trained model: batches of id sequences in, hypotheses out.

Sources are sorted by length and batched, decoded with beam search (or greedy
search for beam size 1) over the model's cached `decode_step`, and returned in
their original order. Truncation, padded source lengths and the maximum output
length (padded length + `extra_length`; section 6.1: input length + 50) follow
`t2t_lite.decode_policy`, as the exported SavedModel does. Decoded text is
scored with the problem's own metrics (`Problem.evaluate`). Shapes: B batch,
S source length, K beam size, L maximum decode length.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from t2t_lite import beam_search, decode_policy
from t2t_lite.ids import EOS_ID, strip_ids
from t2t_lite.metrics.base import MetricError, Score, read_lines
from t2t_lite.text_encoder import DataError


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50
    batch_size: int = 64  # Sentences per decoding batch.
    return_beams: bool = False
    jit_compile: bool = False  # XLA for the decoding loop (faster after compiling).
    # A search constraint (`Problem.decode_constraint()`, e.g. parsing's
    # `t2t_lite.tree_constraint.TreeConstraint`), or None: the plain search.
    constraint: Any = None

    @classmethod
    def from_hparams(cls, hparams, **overrides):
        values = dict(beam_size=hparams.beam_size, alpha=hparams.alpha,
                      extra_length=hparams.extra_length)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)




def decode_padded(model, inputs, options: DecodeOptions):
    """inputs int32 [B, S] (S a padded source length) -> (ids [B, K, L], scores [B, K]).

    The search of `decoding.Decoder` and of the exported SavedModel alike:
    L = decode_policy.max_decode_length(S, extra_length).
    """
    max_length = decode_policy.max_decode_length(inputs.shape[1], options.extra_length)
    return search(model, inputs, options.beam_size, options.alpha, max_length,
                  constraint=options.constraint)


class Decoder:
    """Traces one decoding function per padded source length and reuses it."""

    def __init__(self, model, options: DecodeOptions):
        self.model = model
        self.options = options
        self._functions = {}

    def _function(self, source_length: int):
        if source_length not in self._functions:
            spec = tf.TensorSpec([None, source_length], tf.int32)
            self._functions[source_length] = tf.function(
                self._decode, input_signature=[spec], reduce_retracing=True,
                jit_compile=self.options.jit_compile)
        return self._functions[source_length]

    def _decode(self, inputs):
        """inputs int32 [B, S] -> (ids int32 [B, K, L], scores float32 [B, K])."""
        return decode_padded(self.model, inputs, self.options)

    def decode(self, sources: list[list[int]], progress=None):
        """Decodes id sequences (EOS included), returning for each input, in order,
        a list of (ids without EOS, score): the best first, all K with return_beams.

        `progress`: an optional `t2t_lite.progress.Progress`, advanced per batch."""
        lengths = decode_policy.row_lengths(sources)
        order = sorted(range(len(sources)), key=lambda i: lengths[i])
        results = [None] * len(sources)
        size = self.options.batch_size
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            batch = decode_policy.pad_batch([sources[i] for i in chunk])
            ids, scores = self._function(batch.shape[1])(tf.constant(batch))
            ids, scores = ids.numpy(), scores.numpy()
            keep = self.options.beam_size if self.options.return_beams else 1
            for row, i in enumerate(chunk):
                results[i] = [(strip_ids(ids[row, k]), float(scores[row, k])) for k in range(keep)]
            if progress is not None:
                progress.advance(len(chunk))
        if progress is not None:
            progress.close()
        return results


FIRST_CACHE_LENGTH = 16


def cache_lengths(max_decode_length: int) -> list[int]:
    """Self-attention cache sizes the search grows through: 16, 32, ... below L, then L."""
    lengths, length = [], FIRST_CACHE_LENGTH
    while length < max_decode_length:
        lengths.append(length)
        length *= 2
    return lengths + [max_decode_length]


def search(model, inputs, beam_size: int, alpha: float, max_decode_length: int,
           min_decode_length: int = 0, constraint=None):
    """Beam search (greedy for beam 1) over the model's cached decoder.

    Uses only the model interface (`t2t_lite/model.py`): `init_cache`,
    `decode_step`, `grow_self_cache`, `target_vocab_size`. The cross_cache
    (e.g. encoder-decoder keys and values) is computed once, repeated for the K
    beams and closed over by `next_fn`, so only the self_cache travels through
    the loop, grows 16, 32, ... L positions, and is reordered when beams are
    reselected.

    A `constraint` (`initial_state(inputs)`, `update(state, ids)`,
    `allowed(state, index, L)`, as `t2t_lite.tree_constraint.TreeConstraint`)
    keeps its per-beam state beside the self_cache, updates it with each
    beam's last token, lets its optional `adjust_logits(state, logits)` change
    the model's logits, and masks the tokens it forbids; None (translation)
    runs the plain search.

    Args:
      model: a model with the interface of `t2t_lite/model.py`.
      inputs: int32 [B, S] source ids with EOS, 0-padded.

    Returns:
      (ids int32 [B, K, L], scores float32 [B, K]), best first; K = 1 for greedy.
    """
    lengths = cache_lengths(max_decode_length)
    self_cache, cross_cache = model.init_cache(inputs, lengths[0])
    if beam_size > 1:  # Rows b * K + k, as beam_search flattens them.
        cross_cache = tf.nest.map_structure(
            lambda x: tf.repeat(x, beam_size, axis=0), cross_cache)

    growth = dict(cache_lengths=lengths, grow_cache=model.grow_self_cache,
                  min_decode_length=min_decode_length)
    if constraint is None:
        def next_fn(ids, index, cache):
            return model.decode_step(ids, index, cache, cross_cache)
    else:
        self_cache = (self_cache, constraint.initial_state(inputs))

        adjust = getattr(constraint, "adjust_logits", None)

        def next_fn(ids, index, cache):
            model_cache, state = cache
            logits, model_cache = model.decode_step(ids, index, model_cache, cross_cache)
            state = constraint.update(state, ids)
            return (adjust(state, logits) if adjust else logits), (model_cache, state)

        growth.update(
            grow_cache=lambda cache, n: (model.grow_self_cache(cache[0], n), cache[1]),
            allowed_fn=lambda cache, index: constraint.allowed(
                cache[1], index, max_decode_length))
    batch = tf.shape(inputs)[0]
    if beam_size == 1:
        ids, scores = beam_search.greedy_search(
            next_fn, self_cache, batch, max_decode_length, EOS_ID, **growth)
        return ids[:, None, :], scores[:, None]
    return beam_search.beam_search(
        next_fn, self_cache, batch, beam_size, max_decode_length, EOS_ID, alpha=alpha,
        vocab_size=model.target_vocab_size, **growth)


@dataclasses.dataclass(frozen=True)
class SplitReport:
    """Decoding of a problem's split, scored with the problem's own metrics.

    Attributes:
      sources, hypotheses, references: text, one per example, in split order.
      scores: `problem.evaluate(hypotheses, references, sources)`, in the order
        of `problem.eval_metrics()`.
    """

    sources: list[str]
    hypotheses: list[str]
    references: list[str]
    scores: list[Score]

    def score(self, name: str) -> Score:
        """The Score called `name` (KeyError if the problem has no such metric)."""
        for score in self.scores:
            if score.name == name:
                return score
        raise KeyError(f"no score {name!r}; the scores are "
                       f"{', '.join(s.name for s in self.scores)}")


def decode_split(problem, model, split: str, options: DecodeOptions,
                 data_dir: str | None = None, progress=None) -> SplitReport:
    """Decodes every example of `split` and scores it with `problem.evaluate`.

    `progress`: fn(total) -> a `t2t_lite.progress.Progress`, or None.
    """
    examples = list(problem.examples(split, data_dir).as_numpy_iterator())
    decoded = Decoder(model, options).decode([list(ex["inputs"]) for ex in examples],
                                             progress and progress(len(examples)))
    sources = [problem.decode_inputs(ex["inputs"]) for ex in examples]
    hypotheses = [problem.format_output(s, problem.decode(best[0][0]))
                  for s, best in zip(sources, decoded)]
    references = [problem.format_output(s, problem.decode(ex["targets"]))
                  for s, ex in zip(sources, examples)]
    scores = problem.evaluate(hypotheses, references, sources)
    return SplitReport(sources, hypotheses, references, scores)


def read_references(path: str, count: int) -> list[str]:
    """The lines of a UTF-8 reference file, which must have `count` lines.

    Raises:
      MetricError: the file is not UTF-8 or has another number of lines.
      FileNotFoundError: no such file.
    """
    try:
        references = read_lines(path)
    except IsADirectoryError:
        raise MetricError(f"{path} is a directory; pass a reference file") from None
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise MetricError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(references) != count:
        raise MetricError(f"{path} has {len(references)} lines, the input has {count}; "
                          "pass a reference with one line per input line")
    return references


def split_source_text(data: bytes, name: str) -> list[str]:
    """UTF-8 bytes -> their lines, split at "\n" only (as datagen and the reference reader).

    A last line without a newline counts; "\r" and other characters that
    `str.splitlines` would break at stay inside their line, so line i of the
    output always answers line i of the input.

    Raises:
      DataError: the bytes are not UTF-8 (names `name`, the line and the byte).
    """
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    text = []
    for number, line in enumerate(lines, 1):
        try:
            text.append(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise DataError(
                f"{name}, line {number}: invalid UTF-8 (byte 0x{line[e.start]:02x} at byte "
                f"{e.start + 1} of the line); t2t_lite reads UTF-8 only: convert it "
                "(e.g. iconv -f latin1 -t utf-8) and rerun") from None
    return text


def read_source_lines(path: str) -> list[str]:
    """The lines of a UTF-8 input file (`split_source_text`).

    Raises:
      FileNotFoundError: no such file.
      DataError: not UTF-8, a directory, or unreadable (the message names the file).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise DataError(f"{path} is a directory; pass a text file, one input per line") \
            from None
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror or e})") from None
    return split_source_text(data, path)


def encode_lines(problem, lines: list[str], max_length: int, warn=print) -> list[list[int]]:
    """Source lines -> id sequences with EOS; empty lines stay empty; long ones truncated.

    Truncation is `decode_policy.source_ids` (max_length - 1 tokens + EOS), with a
    warning naming the line.
    """
    sources = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            sources.append([])
            continue
        tokens = problem.encode(line.strip())
        ids = decode_policy.source_ids(tokens, max_length)
        if len(ids) < len(tokens) + 1:
            warn(f"line {number}: {len(tokens) + 1} tokens, truncated to "
                 f"max_length={max_length}")
        sources.append(ids)
    return sources


def decode_lines(problem, model, lines: list[str], options: DecodeOptions,
                 max_length: int, warn=print, progress=None) -> list[list[tuple[str, float]]]:
    """Decodes text lines; each result is [(text, score), ...], best first.

    An empty input line gives [("", 0.0)]. `progress`: as for `decode_split`.
    """
    sources = encode_lines(problem, lines, max_length, warn)
    nonempty = [i for i, ids in enumerate(sources) if ids]
    decoded = Decoder(model, options).decode([sources[i] for i in nonempty],
                                             progress and progress(len(nonempty)))
    results = [[("", 0.0)] for _ in sources]
    for i, beams in zip(nonempty, decoded):
        results[i] = [(problem.format_output(lines[i].strip(), problem.decode(ids)), score)
                      for ids, score in beams]
    return results
