"""Positional encodings, section 3.5 of Vaswani et al. 2017.

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Interleaved exactly as the paper writes it (tensor2tensor concatenated the sin
and cos halves instead; the two differ by a fixed permutation of channels).
`LearnedPositionalEmbedding` is Table 3 row E.
"""

from __future__ import annotations

import keras
from keras import ops


def sinusoid(positions, d_model, max_wavelength=10000.0):
    """The paper's encoding at `positions` (float [T]) -> float32 [T, d_model]."""
    positions = ops.cast(positions, "float32")
    half = (d_model + 1) // 2
    two_i = ops.cast(ops.arange(half) * 2, "float32")  # 2i
    inv_timescale = ops.power(max_wavelength, -two_i / d_model)
    angles = ops.expand_dims(positions, 1) * ops.expand_dims(inv_timescale, 0)  # [T, half]
    pe = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)  # [T, half, 2]
    pe = ops.reshape(pe, (-1, 2 * half))
    return pe[:, :d_model]


@keras.saving.register_keras_serializable(package="t2t_lite")
class SinusoidalPositionalEncoding(keras.layers.Layer):
    """Returns the encoding [T, D] for the positions of `x` [B, T, D].

    Call arguments:
      x: the embeddings; only its length T is read.
      start_index: position of the first step (cached decoding).
    """

    def __init__(self, d_model, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.max_wavelength = max_wavelength

    def call(self, x, start_index=0):
        length = ops.shape(x)[1]
        positions = ops.arange(length) + start_index
        pe = sinusoid(positions, self.d_model, self.max_wavelength)
        return ops.cast(pe, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return (input_shape[1], self.d_model)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, max_wavelength=self.max_wavelength)
        return config


@keras.saving.register_keras_serializable(package="t2t_lite")
class LearnedPositionalEmbedding(keras.layers.Layer):
    """A learned [max_length, D] table (Table 3 row E).

    Positions past `max_length - 1` reuse the last row, so decoding past the
    training length degrades instead of failing.
    """

    def __init__(self, d_model, max_length, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.max_length = max_length

    def build(self, input_shape=None):
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_length, self.d_model),
            initializer=keras.initializers.RandomNormal(stddev=self.d_model**-0.5),
        )
        self.built = True

    def call(self, x, start_index=0):
        length = ops.shape(x)[1]
        positions = ops.minimum(ops.arange(length) + start_index, self.max_length - 1)
        pe = ops.take(self.position_embeddings, positions, axis=0)
        return ops.cast(pe, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return (input_shape[1], self.d_model)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, max_length=self.max_length)
        return config
