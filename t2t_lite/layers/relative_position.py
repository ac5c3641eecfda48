"""A learned bias of the relative distance on self-attention scores (issue 23).

The paper adds absolute positions to the embeddings (section 3.5). Shaw, Uszkoreit
& Vaswani (2018) gave self-attention the distance between query and key instead,
and T5 (Raffel et al. 2020) reduced that to one learned scalar per head and
distance bucket, added to the attention logits and shared by the layers:

    score(i, j) = q_i . k_j / sqrt(d_k) + b_h[bucket(j - i)]

Buckets (bidirectional, as T5's encoder): half for keys after the query, half
for keys at or before it; in each half the first quarter of the buckets are
exact distances, the rest grow logarithmically up to `max_distance`, beyond
which every distance shares the last bucket. Only `keras.ops`; S is the length.
"""

from __future__ import annotations

import math

import keras
from keras import ops

MAX_DISTANCE = 128  # T5's: distances from here on share their direction's last bucket.


def relative_buckets(length, num_buckets: int, max_distance: int = MAX_DISTANCE):
    """int32 [S, S]: the bucket of key j relative to query i (row i, column j).

    Keys at or before the query take buckets [0, num_buckets / 2), keys after it
    [num_buckets / 2, num_buckets); distances below num_buckets / 4 have a
    bucket each.
    """
    half = num_buckets // 2
    exact = max(half // 2, 1)
    positions = ops.arange(length, dtype="int32")
    relative = positions[None, :] - positions[:, None]  # j - i
    after = ops.cast(relative > 0, "int32") * half
    distance = ops.abs(relative)
    far = ops.cast(distance, "float32") / exact
    scale = (half - exact) / math.log(max_distance / exact)
    log_bucket = exact + ops.cast(ops.log(ops.maximum(far, 1.0)) * scale, "int32")
    log_bucket = ops.minimum(log_bucket, half - 1)
    return after + ops.where(distance < exact, distance, log_bucket)


@keras.saving.register_keras_serializable(package="t2t_lite")
class RelativePositionBias(keras.layers.Layer):
    """The learned table [num_buckets, H]; called with a sequence [B, S, ...] (only its
    length S is read) it returns the float32 bias [1, H, S, S] to add to every
    layer's self-attention scores."""

    def __init__(self, num_buckets, num_heads, max_distance=MAX_DISTANCE, **kwargs):
        super().__init__(**kwargs)
        if num_buckets < 4 or num_buckets % 2:
            raise ValueError(f"num_buckets must be even and at least 4, got {num_buckets}")
        self.num_buckets = num_buckets
        self.num_heads = num_heads
        self.max_distance = max_distance
        self.table = self.add_weight(shape=(num_buckets, num_heads), initializer="zeros",
                                     dtype="float32", autocast=False, name="table")

    def call(self, x):
        buckets = relative_buckets(ops.shape(x)[1], self.num_buckets, self.max_distance)
        bias = ops.take(self.table, buckets, axis=0)  # [S, S, H]
        return ops.expand_dims(ops.transpose(bias, (2, 0, 1)), 0)

    def get_config(self):
        config = super().get_config()
        config.update(num_buckets=self.num_buckets, num_heads=self.num_heads,
                      max_distance=self.max_distance)
        return config
