"""Position-wise feed-forward network, section 3.3 of Vaswani et al. 2017.

`FFN(x) = max(0, x W1 + b1) W2 + b2`, inner width d_ff. Shapes: [B, T, D].
"""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="t2t_lite")
class PositionwiseFeedForward(keras.layers.Layer):
    """Two dense layers with a ReLU between them, applied at every position.

    Args:
      d_model: input and output width.
      d_ff: inner width.
      relu_dropout_rate: dropout on the ReLU output (0 in the paper).
    """

    def __init__(self, d_model, d_ff, relu_dropout_rate=0.0, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.d_ff = d_ff
        self.relu_dropout_rate = relu_dropout_rate

    def build(self, input_shape):
        self.inner_dense = keras.layers.Dense(
            self.d_ff, activation="relu", name="ffn_inner", dtype=self.dtype_policy
        )
        self.output_dense = keras.layers.Dense(
            self.d_model, name="ffn_output", dtype=self.dtype_policy
        )
        self.dropout = keras.layers.Dropout(
            self.relu_dropout_rate, name="relu_dropout", dtype=self.dtype_policy
        )
        self.inner_dense.build(input_shape)
        self.output_dense.build(tuple(input_shape[:-1]) + (self.d_ff,))
        self.built = True

    def call(self, x, training=None):
        """[B, T, D] -> [B, T, D]."""
        hidden = self.dropout(self.inner_dense(x), training=training)
        return self.output_dense(hidden)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.d_model,)

    def get_config(self):
        config = super().get_config()
        config.update(
            d_model=self.d_model, d_ff=self.d_ff, relu_dropout_rate=self.relu_dropout_rate
        )
        return config
