"""Batched decoding of id sequences with one traced function for every batch.

Sources are sorted by length and batched, decoded with `search.decode_padded`
(or sampled with `sampling.sample_padded`, each keyed by its index in the
list decoded or a key given, so its samples do not depend on the batching),
and returned in their original order.

A batch is padded to its own padded length (`decode_policy.pad_batch`), but
one function, traced for an unknown source length, decodes them all: tracing
and optimizing a search costs seconds, once per function. The function is
keyed by the padded length of the longest source decoded (its `source_bound`),
so it is traced again only for longer sources. A constrained search (the
parsers', whose models may need a static source length, as the span chart's
CKY does) keeps one function per padded length.
"""

from __future__ import annotations

import functools
import weakref

import tensorflow as tf

from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.sampling import sample_padded
from t2t_lite.decoding.search import decode_padded
from t2t_lite.ids import strip_ids


class Decoder:
    """Traces one decoding function for every batch and reuses it (per `source_bound`)."""

    def __init__(self, model, options: DecodeOptions):
        self.model = model
        self.options = options
        self._functions = {}

    def _function(self, source_bound: int, source_length: int):
        """The decoding function of a batch padded to `source_length` <= `source_bound`."""
        static = self.options.constraint is not None  # One per padded length, static.
        if static:
            source_bound = source_length
        if source_bound not in self._functions:
            spec = [tf.TensorSpec([None, source_length if static else None], tf.int32)]
            if self.options.sampling:  # And each row's key.
                spec.append(tf.TensorSpec([None], tf.int32))
            fn = self._sample if self.options.sampling else self._decode
            self._functions[source_bound] = tf.function(
                functools.partial(fn, source_bound=source_bound),
                input_signature=spec, reduce_retracing=True, autograph=False,
                jit_compile=self.options.jit_compile)
        return self._functions[source_bound]

    def _decode(self, inputs, source_bound):
        """inputs int32 [B, S] -> (ids int32 [B, K, L'], scores float32 [B, K])."""
        return decode_padded(self.model, inputs, self.options, source_bound)

    def _sample(self, inputs, keys, source_bound):
        """inputs int32 [B, S], keys int32 [B] -> (ids int32 [B, N, L'], scores [B, N])."""
        return sample_padded(self.model, inputs, keys, self.options, source_bound)

    def decode(self, sources: list[list[int]], progress=None, keys=None):
        """Decodes id sequences (EOS included), returning for each input, in order,
        a list of (ids without EOS, score): the best first, all K with return_beams;
        when sampling, the N samples in order.

        `progress`: an optional `t2t_lite.progress.Progress`, advanced per batch.
        `keys`: when sampling, each source's key for the noise (default: its index)."""
        lengths = decode_policy.row_lengths(sources)
        order = sorted(range(len(sources)), key=lambda i: lengths[i])
        bound = decode_policy.padded_length(max(lengths, default=0))
        results = [None] * len(sources)
        size = self.options.batch_size
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            batch = decode_policy.pad_batch([sources[i] for i in chunk])
            args = [tf.constant(batch)]
            if self.options.sampling:
                args.append(tf.constant([i if keys is None else keys[i] for i in chunk], tf.int32))
            ids, scores = self._function(bound, batch.shape[1])(*args)
            ids, scores = ids.numpy(), scores.numpy()
            keep = self.options.beam_size if self.options.return_beams else 1
            if self.options.sampling:
                keep = self.options.num_samples
            for row, i in enumerate(chunk):
                results[i] = [(strip_ids(ids[row, k]), float(scores[row, k])) for k in range(keep)]
            if progress is not None:
                progress.advance(len(chunk))
        if progress is not None:
            progress.close()
        return results


_DECODERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {options: Decoder}


def decoder_for(model, options: DecodeOptions) -> Decoder:
    """The process' `Decoder` of `model` with `options`, made once and reused.

    Decoding a second split or file with the same model and options then reuses
    the traced functions instead of tracing again. Options that cannot be
    hashed (an unhashable constraint) get a new Decoder each time.
    """
    try:
        decoders = _DECODERS.setdefault(model, {})
        if options not in decoders:
            decoders[options] = Decoder(model, options)
        return decoders[options]
    except TypeError:  # Unhashable or not weakly referable.
        return Decoder(model, options)
