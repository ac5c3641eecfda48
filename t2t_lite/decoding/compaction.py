"""Finished sentences leave the batch: a beam search's rows shrink between cache segments.

A batch decodes until its last sentence is done, so without compaction every
step computes every row, done or not. Between two segments of the growing cache
(`beam_search._segmented_loop`), `Compaction` takes the sentences that are done
(`beam_search.sentence_done`: no alive beam can change what is returned) out of
the loop state, keeps their results, and lets the search go on with the others;
`merge` puts every sentence's result back in its row. A sentence's result is
the one it had when it was done, which further steps would not have changed, so
the ids are the same as without compaction (a score may differ in the last
float bits: later steps run on fewer rows, as between batch sizes).

The loop state's batch dimension then changes from segment to segment, which a
TensorFlow graph without XLA allows; every leaf of the search's cache must have
the sentences as its leading dimension (the grouped beams' caches,
`t2t_lite.decoding.search.grouped_beams_decoder`). Shapes: B batch (B' the
sentences still searched), K beams, L' the static sequence length.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.decoding import beam_search


class Compaction:
    """`between_segments` of a beam search over B sentences; `merge` after it."""

    def __init__(self, batch, max_decode_length, alpha, best_only: bool):
        self.rows = tf.range(batch)  # The original row of each sentence still searched.
        self.batch, self.max_decode_length = batch, max_decode_length
        self.alpha, self.best_only = alpha, best_only
        self.parts = []  # (rows, ids [n, K, L'], scores [n, K]) of the sentences taken out.

    def __call__(self, state):
        """The loop state without the sentences that are done; their results are kept."""
        done = beam_search.sentence_done(state, self.max_decode_length, self.alpha,
                                         self.best_only)
        gone, kept = tf.where(done)[:, 0], tf.where(tf.logical_not(done))[:, 0]
        seqs, scores = beam_search.finalize(state, self.alpha)
        self.parts.append((tf.gather(self.rows, gone), tf.gather(seqs, gone),
                           tf.gather(scores, gone)))
        self.rows = tf.gather(self.rows, kept)
        return type(state)(*[
            value if name == "index" else keras.tree.map_structure(
                lambda x: tf.gather(x, kept), value)
            for name, value in zip(state._fields, state)])

    def merge(self, seqs, scores):
        """The search's results for the sentences left -> every sentence's, in row order."""
        parts = self.parts + [(self.rows, seqs, scores)]
        rows = tf.concat([p[0] for p in parts], axis=0)[:, None]
        seqs = tf.concat([p[1] for p in parts], axis=0)
        scores = tf.concat([p[2] for p in parts], axis=0)
        rows, batch = tf.cast(rows, tf.int32), tf.cast(self.batch, tf.int32)
        seq_shape = tf.concat([[batch], tf.shape(seqs)[1:]], axis=0)
        score_shape = tf.concat([[batch], tf.shape(scores)[1:]], axis=0)
        return tf.scatter_nd(rows, seqs, seq_shape), tf.scatter_nd(rows, scores, score_shape)
