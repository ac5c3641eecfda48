"""The exported SavedModel's optional `sample_ids` signature (`t2t_lite-exporter --sampling`).

    sample_ids: inputs int32 [B, S] (EOS included, 0-padded), temperature float32 [],
                top_k int32 [] (0: no limit), top_p float32 [] (1: all), seed int64 [],
                num_samples int32 []
                -> ids int32 [B, N, L] (EOS then 0s), scores float32 [B, N]

`t2t_lite.decoding.sampling.sample` in the graph, under the decode policy that
translate_ids follows (`t2t_lite.serving.export`): rows truncated to
max_length, the batch padded to a power of two and sampled in that length's
branch (`tf.switch_case`), L = padded length + extra_length, under the
problem's search constraint. Row b is keyed b, so a request's samples are
t2t_lite-decoder's for the same lines in the same order, with the same seed.
The settings are inputs, not constants: one export serves any of them.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.sampling import sample

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
    buckets = decode_policy.source_buckets(max_length)
    widest = decode_policy.max_decode_length(buckets[-1], options.extra_length)

    def sample_ids(inputs, temperature, top_k, top_p, seed, num_samples):
        with tf.control_dependencies(_check(temperature, top_k, top_p, num_samples)):
            ids = decode_policy.tf_truncate(tf.cast(inputs, tf.int32), max_length)
        longest = tf.reduce_max(decode_policy.tf_row_lengths(ids))
        index, padded = decode_policy.tf_padded_length(longest, max_length)
        keys = tf.range(tf.shape(ids)[0], dtype=tf.int32)

        def branch(length):
            def fn():
                searched = decode_policy.max_decode_length(length, options.extra_length)
                seqs, scores = sample(
                    model, decode_policy.tf_pad_batch(ids, length), searched,
                    temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                    num_samples=num_samples, input_keys=keys, constraint=options.constraint)
                seqs = tf.pad(seqs, [[0, 0], [0, 0], [0, widest - searched]])
                return tf.ensure_shape(seqs, [None, None, widest]), scores
            return fn

        seqs, scores = tf.switch_case(index, [branch(n) for n in buckets])
        length = decode_policy.max_decode_length(padded, options.extra_length)
        return {"ids": seqs[:, :, :length], "scores": scores}

    return tf.function(sample_ids, input_signature=[
        tf.TensorSpec([None, None], tf.int32, name="inputs"),
        tf.TensorSpec([], tf.float32, name="temperature"),
        tf.TensorSpec([], tf.int32, name="top_k"),
        tf.TensorSpec([], tf.float32, name="top_p"),
        tf.TensorSpec([], tf.int64, name="seed"),
        tf.TensorSpec([], tf.int32, name="num_samples")])
