"""Batched decoding of id sequences with one traced function per padded length.

Sources are sorted by length and batched, decoded with `search.decode_padded`
(or sampled with `sampling.sample_padded`, each keyed by its index in the
list decoded or a key given, so its samples do not depend on the batching),
and returned in their original order.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.sampling import sample_padded
from t2t_lite.decoding.search import decode_padded
from t2t_lite.ids import strip_ids


class Decoder:
    """Traces one decoding function per padded source length and reuses it."""

    def __init__(self, model, options: DecodeOptions):
        self.model = model
        self.options = options
        self._functions = {}

    def _function(self, source_length: int):
        if source_length not in self._functions:
            spec = [tf.TensorSpec([None, source_length], tf.int32)]
            if self.options.sampling:  # And each row's key.
                spec.append(tf.TensorSpec([None], tf.int32))
            self._functions[source_length] = tf.function(
                self._sample if self.options.sampling else self._decode,
                input_signature=spec, reduce_retracing=True,
                jit_compile=self.options.jit_compile)
        return self._functions[source_length]

    def _decode(self, inputs):
        """inputs int32 [B, S] -> (ids int32 [B, K, L], scores float32 [B, K])."""
        return decode_padded(self.model, inputs, self.options)

    def _sample(self, inputs, keys):
        """inputs int32 [B, S], keys int32 [B] -> (ids int32 [B, N, L], scores [B, N])."""
        return sample_padded(self.model, inputs, keys, self.options)

    def decode(self, sources: list[list[int]], progress=None, keys=None):
        """Decodes id sequences (EOS included), returning for each input, in order,
        a list of (ids without EOS, score): the best first, all K with return_beams;
        when sampling, the N samples in order.

        `progress`: an optional `t2t_lite.progress.Progress`, advanced per batch.
        `keys`: when sampling, each source's key for the noise (default: its index)."""
        lengths = decode_policy.row_lengths(sources)
        order = sorted(range(len(sources)), key=lambda i: lengths[i])
        results = [None] * len(sources)
        size = self.options.batch_size
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            batch = decode_policy.pad_batch([sources[i] for i in chunk])
            args = [tf.constant(batch)]
            if self.options.sampling:
                args.append(tf.constant([i if keys is None else keys[i] for i in chunk], tf.int32))
            ids, scores = self._function(batch.shape[1])(*args)
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
