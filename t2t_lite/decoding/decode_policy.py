"""The decode policy: how sources become the padded batch a search runs on, written once.

t2t_lite-decoder (`decoding/decoder.py`, in Python over id lists) and the exported
SavedModel (`export.py`, in the graph) both follow these rules, so the
exported model gives the ids the decoder gives. Each rule has its Python and
its TensorFlow version side by side (`tests/test_decode_policy.py` checks that
they agree on the same inputs):

- truncation: a source (EOS included) longer than `max_length` keeps its
  first max_length - 1 tokens and EOS: `truncate` / `tf_truncate`;
- tokens -> source: EOS appended, then truncated: `source_ids` / `tf_source_ids`;
- row length: the position after the last non-padding id: `row_lengths` /
  `tf_row_lengths`;
- padded source length: the batch's longest row padded to a power of two, at
  least 8, so there are few shapes to trace: `padded_length` / `tf_padded_length`;
  the batch cut or 0-padded to it: `pad_batch` / `tf_pad_batch`;
- maximum decode length: padded source length + extra_length (section 6.1:
  input length + 50): `max_decode_length` (ints and tensors alike).

`source_buckets(max_length)` lists every padded length a truncated source can
get (8, 16, ... up to the first that holds max_length). The exported graph
searches a batch with `tf_search`: one traced search for every padded length,
or one per bucket for a search that needs a static source length. Shapes: B
batch, S source length.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from t2t_lite.ids import EOS_ID, PAD_ID

MIN_SOURCE_LENGTH = 8  # The smallest padded source length.


# --- Truncation ---
def truncate(ids: Sequence[int], max_length: int) -> list[int]:
    """A source with EOS, at most `max_length` ids: long ones keep max_length-1 tokens + EOS."""
    ids = [int(i) for i in ids]
    if len(ids) > max_length:
        return ids[:max_length - 1] + [EOS_ID]
    return ids


def tf_truncate(ids, max_length: int):
    """`truncate` for a batch: int32 [B, S] (0-padded) -> [B, min(S, max_length)]."""
    import tensorflow as tf  # Only the SavedModel's graph needs these.

    lengths = tf_row_lengths(ids)
    cut = ids[:, :max_length]
    at_end = tf.range(tf.shape(cut)[1]) == max_length - 1
    too_long = (lengths > max_length)[:, None]
    return tf.where(tf.logical_and(too_long, at_end[None, :]),
                    tf.constant(EOS_ID, ids.dtype), cut)


def source_ids(tokens: Sequence[int], max_length: int) -> list[int]:
    """Source tokens (no EOS) -> the ids decoded: EOS appended, then `truncate`d."""
    return truncate(list(tokens) + [EOS_ID], max_length)


def tf_source_ids(tokens, max_length: int):
    """`source_ids` for a batch: ragged int32 [B, (n)] -> int32 [B, min(N, max_length - 1) + 1].

    Each row is its first max_length - 1 tokens, EOS, then 0s.
    """
    import tensorflow as tf  # Only the SavedModel's graph needs these.

    tokens = tokens[:, :max_length - 1]
    counts = tf.cast(tokens.row_lengths(), tf.int32)
    dense = tf.pad(tokens.to_tensor(), [[0, 0], [0, 1]])
    positions = tf.range(tf.shape(dense)[1])
    return tf.where(positions[None, :] == counts[:, None], tf.constant(EOS_ID, dense.dtype),
                    dense)


# --- Row lengths ---
def row_lengths(rows: Sequence[Sequence[int]]) -> list[int]:
    """Each row's length: the position after its last non-padding id (0 if none)."""
    lengths = []
    for row in rows:
        nonzero = np.flatnonzero(np.asarray(row) != PAD_ID)
        lengths.append(int(nonzero[-1]) + 1 if len(nonzero) else 0)
    return lengths


def tf_row_lengths(ids):
    """`row_lengths` of an int32 [B, S] batch -> int32 [B]."""
    import tensorflow as tf  # Only the SavedModel's graph needs these.

    positions = tf.range(1, tf.shape(ids)[1] + 1)
    return tf.reduce_max(tf.where(ids != PAD_ID, positions[None, :], 0), axis=1)


# --- Padded source length ---
def source_buckets(max_length: int) -> list[int]:
    """Every padded source length up to the first that holds `max_length`: 8, 16, ..."""
    buckets = [MIN_SOURCE_LENGTH]
    while buckets[-1] < max_length:
        buckets.append(buckets[-1] * 2)
    return buckets


def padded_length(longest: int) -> int:
    """The padded source length of a batch whose longest row is `longest`: 2^k >= 8."""
    padded = MIN_SOURCE_LENGTH
    while padded < longest:
        padded *= 2
    return padded


def tf_padded_length(longest, max_length: int):
    """`padded_length` in the graph, for a batch already truncated to `max_length`.

    Returns:
      (index, padded): int32 scalars; `padded` is `source_buckets(max_length)[index]`.
    """
    import tensorflow as tf  # Only the SavedModel's graph needs these.

    buckets = tf.constant(source_buckets(max_length), tf.int32)
    index = tf.reduce_sum(tf.cast(buckets < longest, tf.int32))
    return index, tf.gather(buckets, index)


def pad_batch(sources: Sequence[Sequence[int]]) -> np.ndarray:
    """Id sequences -> int32 [B, padded_length(longest)], 0-padded."""
    longest = max(row_lengths(sources), default=0)
    batch = np.zeros((len(sources), padded_length(longest)), np.int32)
    for row, ids in enumerate(sources):
        ids = list(ids)[:batch.shape[1]]  # Trailing padding past the longest row is dropped.
        batch[row, :len(ids)] = ids
    return batch


def tf_pad_batch(ids, length):
    """An int32 [B, S] batch whose rows fit in `length` -> [B, length]: a static
    length when `length` is an int, unknown when it is a tensor."""
    import tensorflow as tf  # Only the SavedModel's graph needs these.

    ids = ids[:, :length]
    ids = tf.pad(ids, [[0, 0], [0, length - tf.shape(ids)[1]]])
    return tf.ensure_shape(ids, [None, length]) if isinstance(length, int) else ids


def tf_search(ids, max_length: int, extra_length: int, search, per_bucket: bool):
    """A truncated batch int32 [B, S] searched in the graph, as the SavedModel does.

    `search(inputs, source_bound)` -> (ids int32 [..., L'], scores) is one
    traced search over the batch padded to its padded length, S unknown, with
    `source_bound` the widest bucket (`search.decode_padded`'s), unless
    `per_bucket` (a search needing a static S, e.g. a constrained one): then
    one search per bucket (static S, `source_bound` None), in a switch.
    Returns (ids [..., max_decode_length(padded, extra_length)], scores).
    """
    import tensorflow as tf  # Only the SavedModel's graph needs these.

    index, padded = tf_padded_length(tf.reduce_max(tf_row_lengths(ids)), max_length)
    buckets = source_buckets(max_length)
    widest = max_decode_length(buckets[-1], extra_length)

    def branch(length):
        def fn():
            seqs, scores = search(tf_pad_batch(ids, length), None)
            padding = [[0, 0]] * (seqs.shape.rank - 1) + [[0, widest - seqs.shape[-1]]]
            return tf.ensure_shape(tf.pad(seqs, padding), seqs.shape[:-1] + [widest]), scores
        return fn

    if per_bucket:
        seqs, scores = tf.switch_case(index, [branch(n) for n in buckets])
    else:
        seqs, scores = search(tf_pad_batch(ids, padded), buckets[-1])
    return seqs[..., :max_decode_length(padded, extra_length)], scores


# --- Decode length ---
def max_decode_length(padded, extra_length: int):
    """Output positions searched: padded source length + extra_length (int or tensor)."""
    return padded + extra_length
