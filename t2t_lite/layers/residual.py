"""The residual wrapper shared by encoder and decoder layers (section 5.4).

Every sub-layer is wrapped as `LayerNorm(x + Dropout(Sublayer(x)))` (post-norm,
the paper); `normalize_before=True` gives pre-norm
`x + Dropout(Sublayer(LayerNorm(x)))` (tensor2tensor v2). The mixin also builds
the attention and feed-forward sub-layers from the layer's `LayerConfig`.
"""

from __future__ import annotations

import keras

from t2t_lite.layers.attention import MultiHeadAttention
from t2t_lite.layers.config import LayerConfig
from t2t_lite.layers.feed_forward import PositionwiseFeedForward


class ResidualMixin:
    """The residual + dropout + LayerNorm wrapper shared by both layer kinds.

    The layer stores its `LayerConfig` as `self.layer_config` (`_store_config`);
    `get_config` writes it as a dict and `from_config` rebuilds it.
    """

    def _store_config(self, layer_config):
        self.layer_config = LayerConfig.coerce(layer_config)

    def _make_norm(self, name, shape):
        norm = keras.layers.LayerNormalization(
            epsilon=self.layer_config.layer_norm_epsilon, name=name, dtype=self.dtype_policy
        )
        norm.build(shape)
        return norm

    def _make_dropout(self, name):
        return keras.layers.Dropout(
            self.layer_config.dropout_rate, name=name, dtype=self.dtype_policy)

    def _residual(self, x, sublayer, norm, dropout, training):
        """Post-norm LayerNorm(x + Dropout(f(x))), or pre-norm x + Dropout(f(LN(x)))."""
        if self.layer_config.normalize_before:
            return x + dropout(sublayer(norm(x)), training=training)
        return norm(x + dropout(sublayer(x), training=training))

    def _make_attention(self, name, query_shape, value_shape=None):
        c = self.layer_config
        attention = MultiHeadAttention(
            c.num_heads, c.d_model, c.key_dim, c.value_dim,
            attention_dropout_rate=c.attention_dropout_rate,
            name=name, dtype=self.dtype_policy,
        )
        attention.build(query_shape, value_shape)
        return attention

    def _make_ffn(self, shape):
        c = self.layer_config
        ffn = PositionwiseFeedForward(
            c.d_model, c.d_ff, c.relu_dropout_rate, name="feed_forward", dtype=self.dtype_policy,
        )
        ffn.build(shape)
        return ffn

    def get_config(self):
        config = super().get_config()
        config.update(layer_config=self.layer_config.to_dict())
        return config

    @classmethod
    def from_config(cls, config):
        return super().from_config(LayerConfig.in_keras_config(config))
