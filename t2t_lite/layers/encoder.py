"""Encoder layer, section 3.1 of Vaswani et al. 2017.

Each layer: multi-head self-attention, then the position-wise FFN. Every
sub-layer is wrapped as `LayerNorm(x + Dropout(Sublayer(x)))` (post-norm, the
paper); `normalize_before=True` gives pre-norm `x + Dropout(Sublayer(LayerNorm(x)))`
(tensor2tensor v2), which then needs a final LayerNorm on the stack (model.py).
Shapes: B batch, S source length, D d_model.
"""

from __future__ import annotations

import keras

from t2t_lite.layers.residual import ResidualMixin


@keras.saving.register_keras_serializable(package="t2t_lite")
class EncoderLayer(ResidualMixin, keras.layers.Layer):
    """Self-attention + FFN, each in a residual block (section 3.1).

    Args:
      layer_config: the `LayerConfig` (or its dict).
    """

    def __init__(self, layer_config, **kwargs):
        super().__init__(**kwargs)
        self._store_config(layer_config)

    def build(self, input_shape):
        self.self_attention = self._make_attention("self_attention", input_shape)
        self.self_attention_norm = self._make_norm("self_attention_norm", input_shape)
        self.self_attention_dropout = self._make_dropout("self_attention_dropout")
        self.feed_forward = self._make_ffn(input_shape)
        self.feed_forward_norm = self._make_norm("feed_forward_norm", input_shape)
        self.feed_forward_dropout = self._make_dropout("feed_forward_dropout")
        self.built = True

    def call(self, x, *, attention_mask=None, attention_bias=None, training=None,
             return_attention_scores=False):
        """x [B, S, D]; attention_mask bool [B, 1, S] (padding) -> [B, S, D].

        attention_bias: float32 broadcastable to [B, H, S, S], added to the
        self-attention scores (None: none).

        With `return_attention_scores`: ([B, S, D], self-attention weights
        float32 [B, H, S, S]).
        """
        scores = []

        def self_attention(y):
            if not return_attention_scores:
                return self.self_attention(y, attention_mask=attention_mask,
                                           attention_bias=attention_bias, training=training)
            out, weights = self.self_attention(
                y, attention_mask=attention_mask, attention_bias=attention_bias,
                training=training, return_attention_scores=True)
            scores.append(weights)
            return out

        x = self._residual(x, self_attention, self.self_attention_norm,
                           self.self_attention_dropout, training)
        x = self._residual(
            x, lambda y: self.feed_forward(y, training=training),
            self.feed_forward_norm, self.feed_forward_dropout, training,
        )
        return (x, scores[0]) if return_attention_scores else x

    def compute_output_shape(self, input_shape):
        return input_shape
