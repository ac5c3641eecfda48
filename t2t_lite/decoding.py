"""Decoding a trained model: batches of id sequences in, hypotheses out.

Sources are sorted by length and batched, decoded with beam search (or greedy
search for beam size 1) over the model's cached `decode_step`, and returned in
their original order. Maximum output length = input length + `extra_length`
(section 6.1: input length + 50). Shapes: B batch, S source length, K beam
size, L maximum decode length.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from t2t_lite import beam_search
from t2t_lite.model import EOS_ID
from t2t_lite.text_encoder import strip_ids


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50
    batch_size: int = 64  # Sentences per decoding batch.
    return_beams: bool = False
    jit_compile: bool = False  # XLA for the decoding loop (faster after compiling).

    @classmethod
    def from_hparams(cls, hparams, **overrides):
        values = dict(beam_size=hparams.beam_size, alpha=hparams.alpha,
                      extra_length=hparams.extra_length)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


MIN_SOURCE_BUCKET = 8


def padded_source_length(length: int) -> int:
    """Sources are padded to a power of two (at least 8): few shapes to trace."""
    padded = MIN_SOURCE_BUCKET
    while padded < length:
        padded *= 2
    return padded


def source_buckets(max_length: int) -> list[int]:
    """Every padded source length up to the first that holds `max_length`."""
    buckets = [MIN_SOURCE_BUCKET]
    while buckets[-1] < max_length:
        buckets.append(buckets[-1] * 2)
    return buckets


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
        max_length = inputs.shape[1] + self.options.extra_length
        return search(self.model, inputs, self.options.beam_size, self.options.alpha,
                      max_length)

    def decode(self, sources: list[list[int]]):
        """Decodes id sequences (EOS included), returning for each input, in order,
        a list of (ids without EOS, score): the best first, all K with return_beams."""
        order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
        results = [None] * len(sources)
        size = self.options.batch_size
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            longest = max(1, max(len(sources[i]) for i in chunk))
            padded_length = padded_source_length(longest)
            batch = np.zeros((len(chunk), padded_length), np.int32)
            for row, i in enumerate(chunk):
                batch[row, :len(sources[i])] = sources[i]
            ids, scores = self._function(padded_length)(tf.constant(batch))
            ids, scores = ids.numpy(), scores.numpy()
            keep = self.options.beam_size if self.options.return_beams else 1
            for row, i in enumerate(chunk):
                results[i] = [(strip_ids(ids[row, k]), float(scores[row, k])) for k in range(keep)]
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
           min_decode_length: int = 0):
    """Beam search (greedy for beam 1) over the model's cached decoder.

    The encoder-decoder keys and values are computed once, repeated for the K
    beams and closed over by `next_fn`, so only the growing self-attention cache
    travels through the loop and is reordered when beams are reselected.

    Args:
      inputs: int32 [B, S] source ids with EOS, 0-padded.

    Returns:
      (ids int32 [B, K, L], scores float32 [B, K]), best first; K = 1 for greedy.
    """
    encoder_output, input_mask = model.encode(inputs, training=False)
    lengths = cache_lengths(max_decode_length)
    cache = model.init_cache(encoder_output, input_mask, lengths[0])
    static = {"cross": [layer["cross"] for layer in cache["layers"]],
              "input_mask": cache["input_mask"]}
    if beam_size > 1:  # Rows b * K + k, as beam_search flattens them.
        static = tf.nest.map_structure(lambda x: tf.repeat(x, beam_size, axis=0), static)
    dynamic = [layer["self"] for layer in cache["layers"]]

    def next_fn(ids, index, self_caches):
        full = {"layers": [{"self": s, "cross": c} for s, c in zip(self_caches,
                                                                     static["cross"])],
                "input_mask": static["input_mask"]}
        logits, new = model.decode_step(ids, index, full)
        return logits, [layer["self"] for layer in new["layers"]]

    batch = tf.shape(inputs)[0]
    growth = dict(cache_lengths=lengths, grow_cache=model.grow_self_cache,
                  min_decode_length=min_decode_length)
    if beam_size == 1:
        ids, scores = beam_search.greedy_search(
            next_fn, dynamic, batch, max_decode_length, EOS_ID, **growth)
        return ids[:, None, :], scores[:, None]
    return beam_search.beam_search(
        next_fn, dynamic, batch, beam_size, max_decode_length, EOS_ID, alpha=alpha,
        vocab_size=model.vocab_size, **growth)


@dataclasses.dataclass(frozen=True)
class SplitReport:
    """Decoding of a problem's split: hypotheses, references and accuracy."""

    sources: list[str]
    hypotheses: list[str]
    references: list[str]
    exact_match: float  # Fraction of hypotheses equal to their reference.


def decode_split(problem, model, split: str, options: DecodeOptions,
                 data_dir: str | None = None) -> SplitReport:
    """Decodes every example of `split` and scores exact-sequence accuracy."""
    examples = list(problem.examples(split, data_dir).as_numpy_iterator())
    sources = [list(ex["inputs"]) for ex in examples]
    decoded = Decoder(model, options).decode(sources)
    hypotheses = [problem.decode(best[0][0]) for best in decoded]
    references = [problem.decode(ex["targets"]) for ex in examples]
    exact = sum(h == r for h, r in zip(hypotheses, references)) / max(len(examples), 1)
    return SplitReport([problem.decode(s) for s in sources], hypotheses, references, exact)


def encode_lines(problem, lines: list[str], max_length: int, warn=print) -> list[list[int]]:
    """Source lines -> id sequences with EOS; empty lines stay empty; long ones truncated."""
    sources = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            sources.append([])
            continue
        ids = problem.encode(line.strip())
        if len(ids) + 1 > max_length:
            warn(f"line {number}: {len(ids) + 1} tokens, truncated to max_length={max_length}")
            ids = ids[:max_length - 1]
        sources.append(ids + [EOS_ID])
    return sources


def decode_lines(problem, model, lines: list[str], options: DecodeOptions,
                 max_length: int, warn=print) -> list[list[tuple[str, float]]]:
    """Decodes text lines; each result is [(text, score), ...], best first.

    An empty input line gives [("", 0.0)].
    """
    sources = encode_lines(problem, lines, max_length, warn)
    nonempty = [i for i, ids in enumerate(sources) if ids]
    decoded = Decoder(model, options).decode([sources[i] for i in nonempty])
    results = [[("", 0.0)] for _ in sources]
    for i, beams in zip(nonempty, decoded):
        results[i] = [(problem.decode(ids), score) for ids, score in beams]
    return results
