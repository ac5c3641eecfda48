"""Encoder layer, section 3.1 of Vaswani et al. 2017.

Each layer: multi-head self-attention, then the position-wise FFN. Every
sub-layer is wrapped as `LayerNorm(x + Dropout(Sublayer(x)))` (post-norm, the
paper); `normalize_before=True` gives pre-norm `x + Dropout(Sublayer(LayerNorm(x)))`
(tensor2tensor v2), which then needs a final LayerNorm on the stack (model.py).
Shapes: B batch, S source length, D d_model.
"""

from __future__ import annotations

import keras

from t2t_lite.layers.attention import MultiHeadAttention
from t2t_lite.layers.feed_forward import PositionwiseFeedForward


class ResidualMixin:
    """The residual + dropout + LayerNorm wrapper shared by both layer kinds."""

    def _make_norm(self, name, shape):
        norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name=name, dtype=self.dtype_policy
        )
        norm.build(shape)
        return norm

    def _make_dropout(self, name):
        return keras.layers.Dropout(self.dropout_rate, name=name, dtype=self.dtype_policy)

    def _residual(self, x, sublayer, norm, dropout, training):
        """Post-norm LayerNorm(x + Dropout(f(x))), or pre-norm x + Dropout(f(LN(x)))."""
        if self.normalize_before:
            return x + dropout(sublayer(norm(x)), training=training)
        return norm(x + dropout(sublayer(x), training=training))

    def _common_config(self):
        return dict(
            d_model=self.d_model,
            d_ff=self.d_ff,
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            value_dim=self.value_dim,
            dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            relu_dropout_rate=self.relu_dropout_rate,
            normalize_before=self.normalize_before,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )

    def _store(self, d_model, d_ff, num_heads, key_dim, value_dim, dropout_rate,
               attention_dropout_rate, relu_dropout_rate, normalize_before,
               layer_norm_epsilon):
        self.d_model = d_model
        self.d_ff = d_ff
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.relu_dropout_rate = relu_dropout_rate
        self.normalize_before = normalize_before
        self.layer_norm_epsilon = layer_norm_epsilon

    def _make_attention(self, name, query_shape, value_shape=None):
        attention = MultiHeadAttention(
            self.num_heads, self.d_model, self.key_dim, self.value_dim,
            attention_dropout_rate=self.attention_dropout_rate,
            name=name, dtype=self.dtype_policy,
        )
        attention.build(query_shape, value_shape)
        return attention

    def _make_ffn(self, shape):
        ffn = PositionwiseFeedForward(
            self.d_model, self.d_ff, self.relu_dropout_rate,
            name="feed_forward", dtype=self.dtype_policy,
        )
        ffn.build(shape)
        return ffn


@keras.saving.register_keras_serializable(package="t2t_lite")
class EncoderLayer(ResidualMixin, keras.layers.Layer):
    """Self-attention + FFN, each in a residual block (section 3.1)."""

    def __init__(self, d_model, d_ff, num_heads, key_dim, value_dim, dropout_rate=0.1,
                 attention_dropout_rate=0.0, relu_dropout_rate=0.0,
                 normalize_before=False, layer_norm_epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self._store(d_model, d_ff, num_heads, key_dim, value_dim, dropout_rate,
                    attention_dropout_rate, relu_dropout_rate, normalize_before,
                    layer_norm_epsilon)

    def build(self, input_shape):
        self.self_attention = self._make_attention("self_attention", input_shape)
        self.self_attention_norm = self._make_norm("self_attention_norm", input_shape)
        self.self_attention_dropout = self._make_dropout("self_attention_dropout")
        self.feed_forward = self._make_ffn(input_shape)
        self.feed_forward_norm = self._make_norm("feed_forward_norm", input_shape)
        self.feed_forward_dropout = self._make_dropout("feed_forward_dropout")
        self.built = True

    def call(self, x, *, attention_mask=None, training=None):
        """x [B, S, D]; attention_mask bool [B, 1, S] (padding) -> [B, S, D]."""
        x = self._residual(
            x,
            lambda y: self.self_attention(y, attention_mask=attention_mask, training=training),
            self.self_attention_norm, self.self_attention_dropout, training,
        )
        return self._residual(
            x, lambda y: self.feed_forward(y, training=training),
            self.feed_forward_norm, self.feed_forward_dropout, training,
        )

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(self._common_config())
        return config
