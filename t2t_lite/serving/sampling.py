"""The exported SavedModel's optional `sample_ids` signature (`t2t_lite-exporter --sampling`).

    sample_ids: inputs int32 [B, S] (EOS included, 0-padded), temperature float32 [],
                top_k int32 [] (0: no limit), top_p float32 [] (1: all), seed int64 [],
                num_samples int32 []
                -> ids int32 [B, N, L] (EOS then 0s), scores float32 [B, N]

`t2t_lite.decoding.sampling.sample` in the graph, under the decode policy that
translate_ids follows (`t2t_lite.serving.export`): rows truncated to
max_length, the batch padded to a power of two and sampled by one traced
search for every padded length (one per length for a constrained search,
`decode_policy.tf_search`), L = padded length + extra_length, under the
problem's search constraint. Row b is keyed b, so a request's samples are
t2t_lite-decoder's for the same lines in the same order, with the same seed.
The settings are inputs, not constants: one export serves any of them.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.sampling import sample
from t2t_lite.decoding.search import decode_lengths

SIGNATURE = "sample_ids"


def _check(temperature, top_k, top_p, num_samples):
    """Assertions that fail a request with settings sampling cannot use."""
    return [
        tf.debugging.assert_greater_equal(temperature, 0.0, message="temperature >= 0"),
        tf.debugging.assert_greater_equal(top_k, 0, message="top_k >= 0 (0: no limit)"),
        tf.debugging.assert_greater(top_p, 0.0, message="0 < top_p <= 1"),
        tf.debugging.assert_less_equal(top_p, 1.0, message="0 < top_p <= 1"),
        tf.debugging.assert_greater_equal(num_samples, 1, message="num_samples >= 1"),
    ]


def sample_ids_function(model, options, max_length: int):
    """The `sample_ids` tf.function: `options` gives extra_length and the constraint."""

    def sample_ids(inputs, temperature, top_k, top_p, seed, num_samples):
        with tf.control_dependencies(_check(temperature, top_k, top_p, num_samples)):
            ids = decode_policy.tf_truncate(tf.cast(inputs, tf.int32), max_length)
        keys = tf.range(tf.shape(ids)[0], dtype=tf.int32)

        def search(inputs, source_bound):
            searched, static = decode_lengths(inputs, options, source_bound)
            return sample(model, inputs, searched, sequence_length=static,
                          temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                          num_samples=num_samples, input_keys=keys,
                          constraint=options.constraint)

        seqs, scores = decode_policy.tf_search(ids, max_length, options.extra_length, search,
                                               per_bucket=options.constraint is not None)
        return {"ids": seqs, "scores": scores}

    return tf.function(sample_ids, input_signature=[
        tf.TensorSpec([None, None], tf.int32, name="inputs"),
        tf.TensorSpec([], tf.float32, name="temperature"),
        tf.TensorSpec([], tf.int32, name="top_k"),
        tf.TensorSpec([], tf.float32, name="top_p"),
        tf.TensorSpec([], tf.int64, name="seed"),
        tf.TensorSpec([], tf.int32, name="num_samples")])
