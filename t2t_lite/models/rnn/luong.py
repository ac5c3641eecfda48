"""Luong, Pham & Manning 2015: "Effective Approaches to Attention-based NMT" (registered "luong").

Global attention (section 3.1), applied *after* the decoder RNN step:

- a unidirectional multi-layer encoder whose final states initialise the
  decoder, layer by layer (as `rnn_seq2seq`);
- the decoder RNN reads E y_{t-1} (with input feeding, section 3.3,
  [E y_{t-1}; h~_{t-1}], h~_0 = 0) and gives h_t (the top layer's);
- h_t scores the encoder states s_j: "general" h_t^T W_a s_j (the default),
  "dot" h_t^T s_j or "concat" (the MLP of `t2t_lite.models.rnn.attention`);
  a_t = softmax(scores), c_t = sum_j a_tj s_j;
- the attentional state h~_t = tanh(W_c [c_t; h_t]) predicts y_t through the
  pre-softmax projection (equations 5 and 6).

The carry is {"states", "attentional": h~_t [B, D], "weights": a_t [B, S]}
(h~_t is what input feeding reads at t + 1); the cross_cache the encoder
states, their keys (W_a s_j, or s_j for "dot") and the mask.
Shapes: B batch, S source length, D d_model.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.registry import register_model
from t2t_lite.models.rnn import cells
from t2t_lite.models.rnn.attention import LUONG_SCORES, AttentionScore, AttentionSeq2Seq
from t2t_lite.models.rnn.config import LuongConfig


@register_model("luong", config=LuongConfig)
@keras.saving.register_keras_serializable(package="t2t_lite")
class LuongAttention(AttentionSeq2Seq):
    """Unidirectional encoder, attention from h_t, h~_t = tanh(W_c [c_t; h_t]).

    Takes `RNNSeq2Seq`'s arguments and:
      attention_score: "general" (bilinear), "dot" or "concat".
      input_feeding: feed h~_{t-1} to the decoder RNN at step t.
    """

    def __init__(self, *args, attention_score="general", input_feeding=True, **kwargs):
        super().__init__(*args, **kwargs)
        if attention_score not in LUONG_SCORES:
            raise ValueError(f"attention_score must be one of {', '.join(LUONG_SCORES)}, "
                             f"not {attention_score!r}")
        self.attention_score = attention_score
        self.input_feeding = bool(input_feeding)
        dtype = self.dtype_policy
        self.attention = AttentionScore(LUONG_SCORES[attention_score], self.d_model,
                                        name="attention", dtype=dtype)
        self.combine = keras.layers.Dense(self.d_model, activation="tanh", use_bias=False,
                                          name="combine", dtype=dtype)

    def _initial_carry(self, encoded):
        """The encoder's final states; h~_0 = 0; a_0 = 0."""
        carry = super()._initial_carry(encoded)
        h = cells.top_output(carry["states"])
        carry["attentional"] = ops.zeros_like(h)
        return carry

    def _step(self, e, carry, cross):
        """h_t = RNN(E y_{t-1} [; h~_{t-1}]), then c_t and h~_t from h_t."""
        x = ops.concatenate([e, carry["attentional"]], axis=-1) if self.input_feeding else e
        h, states = cells.stack_step(self.decoder_cells, x, carry["states"])
        context, weights = self.attention(h, cross["keys"], cross["values"], cross["mask"])
        attentional = self.combine(ops.concatenate([ops.cast(context, h.dtype), h], axis=-1))
        return {"states": states, "attentional": attentional, "weights": weights}

    def _readout(self, carry, e, training):
        """h~_t [..., D]."""
        del e
        return self.readout_dropout(carry["attentional"], training=training)

    def get_config(self):
        config = super().get_config()
        config.update(attention_score=self.attention_score, input_feeding=self.input_feeding)
        return config
