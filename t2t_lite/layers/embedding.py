"""Token embeddings shared with the pre-softmax projection, section 3.4.

"We share the same weight matrix between the two embedding layers and the
pre-softmax linear transformation [...]. In the embedding layers, we multiply
those weights by sqrt(d_model)." The matrix is initialized N(0, d_model^-0.5)
(tensor2tensor), so scaled embeddings have unit variance.
"""

from __future__ import annotations

import math

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="t2t_lite")
class SharedEmbedding(keras.layers.Layer):
    """One [V, D] matrix: `call` embeds ids, `project` gives float32 logits.

    Args:
      vocab_size: V.
      d_model: D.
    """

    def __init__(self, vocab_size, d_model, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.d_model = d_model

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocab_size, self.d_model),
            initializer=keras.initializers.RandomNormal(stddev=self.d_model**-0.5),
        )
        self.built = True

    def call(self, ids):
        """int [B, T] -> [B, T, D], multiplied by sqrt(d_model)."""
        x = ops.take(self.embeddings, ops.cast(ids, "int32"), axis=0)
        return ops.cast(x, self.compute_dtype) * ops.cast(
            math.sqrt(self.d_model), self.compute_dtype
        )

    def project(self, x):
        """[..., D] -> float32 logits [..., V] (the pre-softmax linear layer)."""
        weights = ops.cast(self.embeddings, "float32")
        shape = ops.shape(x)
        rows = ops.reshape(ops.cast(x, "float32"), (-1, self.d_model))
        # x E^T as a 2-D einsum: a matmul with a transposed operand, no copy of E.
        # (With "...d,vd->...v" TensorFlow's einsum gradient broadcasts to a
        # [V, D, B, T] tensor, gigabytes for a real vocabulary.)
        logits = ops.einsum("nd,vd->nv", rows, weights)
        return ops.reshape(logits, tuple(shape[:-1]) + (self.vocab_size,))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.d_model,)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, d_model=self.d_model)
        return config
