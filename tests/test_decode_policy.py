"""The decode policy: each Python rule and its TensorFlow twin agree on the same inputs."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding import decode_policy as policy
from t2t_lite.ids import EOS_ID

MAX_LENGTH = 24


def _sources():
    """Sources with EOS, of every length from 1 to 40 (beyond MAX_LENGTH)."""
    rng = np.random.default_rng(0)
    return [[int(t) for t in rng.integers(2, 50, n - 1)] + [EOS_ID] for n in range(1, 41)]


def _padded(rows, width=None):
    width = width or max(map(len, rows))
    batch = np.zeros((len(rows), width), np.int32)
    for i, row in enumerate(rows):
        batch[i, :len(row)] = row
    return batch


def _rows(batch):
    """Rows of a padded batch without their trailing padding."""
    return [list(map(int, row[:n])) for row, n in zip(batch, policy.row_lengths(batch))]


def test_truncate_golden():
    assert policy.truncate([5, 6, 7, EOS_ID], 3) == [5, 6, EOS_ID]
    assert policy.truncate([5, 6, EOS_ID], 3) == [5, 6, EOS_ID]
    assert policy.source_ids([5, 6, 7, 8], 4) == [5, 6, 7, EOS_ID]
    assert policy.source_ids([5, 6, 7], 4) == [5, 6, 7, EOS_ID]
    assert policy.source_ids([], 4) == [EOS_ID]


def test_truncate_python_equals_tf():
    sources = _sources()
    got = policy.tf_truncate(tf.constant(_padded(sources, 48)), MAX_LENGTH).numpy()
    assert got.shape == (len(sources), MAX_LENGTH)
    assert _rows(got) == [policy.truncate(s, MAX_LENGTH) for s in sources]
    assert all(len(row) <= MAX_LENGTH and row[-1] == EOS_ID for row in _rows(got))


def test_source_ids_python_equals_tf():
    tokens = [s[:-1] for s in _sources()]
    got = policy.tf_source_ids(tf.ragged.constant(tokens, tf.int32), MAX_LENGTH).numpy()
    assert _rows(got) == [policy.source_ids(t, MAX_LENGTH) for t in tokens]


def test_row_lengths_python_equals_tf():
    batch = _padded([[3, 4, 1], [1], [], [5, 0, 6, 1]], 6)  # A 0 inside a row is not its end.
    assert policy.row_lengths(batch) == [3, 1, 0, 4]
    assert policy.tf_row_lengths(tf.constant(batch)).numpy().tolist() == [3, 1, 0, 4]


@pytest.mark.parametrize("max_length", [8, 24, 64, 256])
def test_padded_length_python_equals_tf(max_length):
    buckets = policy.source_buckets(max_length)
    assert buckets[0] == 8 and buckets[-1] >= max_length and buckets[-1] < 2 * max(8, max_length)
    for longest in range(0, max_length + 1):
        index, padded = policy.tf_padded_length(tf.constant(longest), max_length)
        assert int(padded) == buckets[int(index)] == policy.padded_length(longest)
        assert padded >= longest and (padded == 8 or padded < 2 * longest)


def test_pad_batch_python_equals_tf():
    sources = [policy.truncate(s, MAX_LENGTH) for s in _sources()[:13]]  # Longest 13 -> 16.
    batch = policy.pad_batch(sources)
    assert batch.shape == (13, 16) and _rows(batch) == sources
    padded = policy.tf_pad_batch(tf.constant(_padded(sources, 40)), 16)
    assert padded.shape[1] == 16
    np.testing.assert_array_equal(padded.numpy(), batch)
    np.testing.assert_array_equal(policy.tf_pad_batch(tf.constant(batch[:, :13]), 16), batch)


def test_max_decode_length():
    assert policy.max_decode_length(16, 50) == 66
    assert int(policy.max_decode_length(tf.constant(16), 50)) == 66


@pytest.mark.parametrize("per_bucket", [False, True])
def test_tf_search_traces_one_search_or_one_per_bucket(per_bucket):
    """The exported graph's search: one traced for every padded length (S unknown, the widest
    bucket as its bound), or one per bucket (static S) for a search needing it; either way the
    batch is padded to its padded length and the output cut to that length's decode length."""
    calls = []

    def search(inputs, source_bound):  # Ids: each row's source repeated, then its row sum.
        calls.append((inputs.shape[1], source_bound))
        length = policy.max_decode_length(source_bound or inputs.shape[1], 3)
        ids = tf.pad(inputs, [[0, 0], [0, length - tf.shape(inputs)[1]]])
        return ids, tf.reduce_sum(inputs, axis=1)

    traced = tf.function(lambda ids: policy.tf_search(ids, MAX_LENGTH, 3, search, per_bucket),
                         input_signature=[tf.TensorSpec([None, None], tf.int32)])
    traced.get_concrete_function()
    buckets = policy.source_buckets(MAX_LENGTH)
    assert calls == ([(n, None) for n in buckets] if per_bucket else [(None, buckets[-1])])
    sources = [policy.truncate(s, MAX_LENGTH) for s in _sources()[:11]]  # Longest 11 -> 16.
    ids, sums = traced(tf.constant(_padded(sources, 20)))
    expected = policy.pad_batch(sources)
    assert ids.shape == (11, 16 + 3)
    np.testing.assert_array_equal(ids[:, :16], expected)
    assert not ids[:, 16:].numpy().any()
    np.testing.assert_array_equal(sums, expected.sum(axis=1))
