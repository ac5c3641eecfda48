"""Decoder layer, section 3.1 of Vaswani et al. 2017.

Each layer: masked multi-head self-attention, multi-head attention over the
encoder output (encoder-decoder attention), then the position-wise FFN, each in
the residual block of encoder.py. Shapes: B batch, T target length, S source
length, D d_model, L maximum decode length.

For incremental decoding the layer takes a cache
`{"self": {"key": [B, H, L, d_k], "value": [B, H, L, d_v]},
  "cross": {"key": [B, H, S, d_k], "value": [B, H, S, d_v]}}` and the index of
the position being decoded, and returns the updated cache.
"""

from __future__ import annotations

import keras

from t2t_lite.layers.residual import ResidualMixin


@keras.saving.register_keras_serializable(package="t2t_lite")
class DecoderLayer(ResidualMixin, keras.layers.Layer):
    """Masked self-attention + encoder-decoder attention + FFN (section 3.1).

    Args:
      layer_config: the `LayerConfig` (or its dict).
    """

    def __init__(self, layer_config, **kwargs):
        super().__init__(**kwargs)
        self._store_config(layer_config)

    def build(self, x_shape, encoder_output_shape=None):
        input_shape = x_shape
        encoder_output_shape = encoder_output_shape or input_shape
        self.self_attention = self._make_attention("self_attention", input_shape)
        self.self_attention_norm = self._make_norm("self_attention_norm", input_shape)
        self.self_attention_dropout = self._make_dropout("self_attention_dropout")
        self.cross_attention = self._make_attention(
            "cross_attention", input_shape, encoder_output_shape
        )
        self.cross_attention_norm = self._make_norm("cross_attention_norm", input_shape)
        self.cross_attention_dropout = self._make_dropout("cross_attention_dropout")
        self.feed_forward = self._make_ffn(input_shape)
        self.feed_forward_norm = self._make_norm("feed_forward_norm", input_shape)
        self.feed_forward_dropout = self._make_dropout("feed_forward_dropout")
        self.built = True

    def compute_cross_cache(self, encoder_output):
        """Encoder-decoder keys and values, computed once per source batch."""
        return self.cross_attention.compute_cache(encoder_output)

    def call(self, x, encoder_output=None, *, self_attention_mask=None,
             cross_attention_mask=None, cache=None, cache_index=None, in_place=False,
             training=None, return_attention_scores=False):
        """Teacher-forced ([B, T, D]) or one cached step ([B, 1, D]).

        Args:
          x: decoder input [B, T, D].
          encoder_output: [B, S, D]; unused when `cache` holds "cross".
          self_attention_mask: bool [B or 1, T, T or L] (causal, and cache validity).
          cross_attention_mask: bool [B, 1, S] (source padding).
          cache, cache_index: see the module docstring.
          in_place: write the self-attention cache in place
            (`t2t_lite.layers.attention.write_position`).
          return_attention_scores: also return {"self": float32 [B, H, T, T or L],
            "cross": float32 [B, H, T, S]}, the weights of both attentions.

        Returns:
          [B, T, D], or ([B, T, D], updated cache) when `cache` is given; with
          `return_attention_scores`, the weights dict is appended to the tuple.
        """
        new_cache, scores = {}, {}

        def attend(kind, attention, *args, **kwargs):
            result = attention(*args, training=training,
                               return_attention_scores=return_attention_scores, **kwargs)
            if return_attention_scores:
                *result, scores[kind] = result
                result = result[0] if len(result) == 1 else tuple(result)
            if cache is None:
                return result
            out, new_cache[kind] = result
            return out

        def self_attention(y):
            cached = {} if cache is None else dict(cache=cache["self"], cache_index=cache_index,
                                                   in_place=in_place)
            return attend("self", self.self_attention, y,
                          attention_mask=self_attention_mask, **cached)

        def cross_attention(y):
            if cache is None:
                return attend("cross", self.cross_attention, y, encoder_output,
                              attention_mask=cross_attention_mask)
            return attend("cross", self.cross_attention, y,
                          attention_mask=cross_attention_mask, cache=cache["cross"])

        x = self._residual(x, self_attention, self.self_attention_norm,
                           self.self_attention_dropout, training)
        x = self._residual(x, cross_attention, self.cross_attention_norm,
                           self.cross_attention_dropout, training)
        x = self._residual(x, lambda y: self.feed_forward(y, training=training),
                           self.feed_forward_norm, self.feed_forward_dropout, training)
        result = (x,) if cache is None else (x, new_cache)
        if return_attention_scores:
            result += (scores,)
        return result[0] if len(result) == 1 else result

    def beams_step(self, x, beam_size, cache, cache_index, self_attention_mask,
                   cross_attention_mask, in_place=False):
        """One decoding step of grouped beams (`MultiHeadAttention.beams_call`).

        Args:
          x: [B*K, 1, D], rows b * K + k.
          cache: {"self": {"key": [B, H, K, L, d_k], ...}, "cross": {"key": [B, H, S, d_k], ...}}.
          self_attention_mask: bool [B, 1, K, K*L]; cross_attention_mask: bool [B, 1, 1, S].

        Returns:
          ([B*K, 1, D], the updated self-attention cache).
        """
        new = {}

        def self_attention(y):
            out, new["self"] = self.self_attention.beams_call(
                y, beam_size, cache["self"], self_attention_mask, cache_index=cache_index,
                in_place=in_place)
            return out

        def cross_attention(y):
            return self.cross_attention.beams_call(y, beam_size, cache["cross"],
                                                   cross_attention_mask)

        x = self._residual(x, self_attention, self.self_attention_norm,
                           self.self_attention_dropout, False)
        x = self._residual(x, cross_attention, self.cross_attention_norm,
                           self.cross_attention_dropout, False)
        x = self._residual(x, lambda y: self.feed_forward(y, training=False),
                           self.feed_forward_norm, self.feed_forward_dropout, False)
        return x, new["self"]

    def compute_output_shape(self, x_shape, encoder_output_shape=None):
        return x_shape
