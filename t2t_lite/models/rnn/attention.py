"""Attention over the encoder states for the RNN decoders, and what its models share.

For a decoder state h and the encoder states s_1..s_S (Luong et al. 2015,
section 3.1; Bahdanau et al. 2015, appendix A.1.2):

    additive ("concat", Bahdanau's MLP):  score(h, s_j) = v^T tanh(W h + U s_j)
    general (bilinear, Luong's):          score(h, s_j) = h^T W_a s_j
    dot:                                  score(h, s_j) = h^T s_j

    a_j = softmax_j score(h, s_j) over the source tokens (padding gets exactly 0),
    c = sum_j a_j s_j.

The part that does not depend on h (U s_j, W_a s_j or s_j itself, the *keys*)
is computed once per source and kept in the cross_cache beside the values s_j
and the mask, so a decoder step costs one query projection and two products.
Scores and weights are float32. Shapes: B batch, S source length, D_s encoder
state size, D_h decoder state size, A attention size.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.models.contract import Capabilities
from t2t_lite.models.rnn.seq2seq import RNNSeq2Seq

SCORES = ("additive", "general", "dot")
LUONG_SCORES = {"concat": "additive", "general": "general", "dot": "dot"}  # Their names.


@keras.saving.register_keras_serializable(package="t2t_lite")
class AttentionScore(keras.layers.Layer):
    """score(h, s_j), the weights a_j and the context c for one query per row.

    Args:
      score: "additive", "general" or "dot".
      units: A for "additive"; D_h for "general" (W_a maps s_j to the query's size).
    """

    def __init__(self, score, units, **kwargs):
        super().__init__(**kwargs)
        if score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, not {score!r}")
        self.score = score
        self.units = units
        dtype = self.dtype_policy
        if score != "dot":
            self.key_projection = keras.layers.Dense(units, use_bias=False, name="key",
                                                     dtype=dtype)
        if score == "additive":
            self.query_projection = keras.layers.Dense(units, use_bias=False, name="query",
                                                       dtype=dtype)
            self.energy = keras.layers.Dense(1, use_bias=False, name="energy", dtype=dtype)

    def build(self, values_shape):
        """Creates the key projection (under this layer's name) for values [B, S, D_s]."""
        if self.score != "dot":
            self.key_projection.build(values_shape)
        self.built = True

    def keys(self, values):
        """values s [B, S, D_s] -> keys [B, S, A]: U s, W_a s, or s (dot)."""
        if not self.built:
            self.build(values.shape)
        return values if self.score == "dot" else self.key_projection(values)

    def call(self, query, keys, values, mask):
        """query h [B, D_h] -> (context c [B, D_s], float32 weights a [B, S]).

        `keys` from `keys(values)`, `mask` bool [B, S] (False: padding).
        """
        if self.score == "additive":
            hidden = ops.tanh(self.query_projection(query)[:, None, :] + keys)
            scores = self.energy(hidden)[..., 0]
        else:
            scores = ops.einsum("bd,bsd->bs", query, keys)
        scores = ops.where(mask, ops.cast(scores, "float32"), -1e9)
        # The softmax written out (keras.ops.softmax warns on a one-token source).
        weights = ops.exp(scores - ops.max(scores, axis=-1, keepdims=True))
        weights = weights / ops.sum(weights, axis=-1, keepdims=True)
        context = ops.einsum("bs,bsd->bd", ops.cast(weights, values.dtype), values)
        return context, weights

    def get_config(self):
        config = super().get_config()
        config.update(score=self.score, units=self.units)
        return config


class AttentionSeq2Seq(RNNSeq2Seq):
    """`RNNSeq2Seq` whose decoder attends to the encoder states (a base, not registered).

    Its carry adds "weights" float32 [B, S], the last step's attention (so the
    teacher-forced pass returns every step's); the cross_cache holds the
    encoder states ("values" [B, S, D_s]), their "keys" [B, S, A] and the
    source "mask" bool [B, S]. A subclass makes `self.attention` (an
    `AttentionScore`) and defines `_step` and `_readout`.
    """

    capabilities = Capabilities(attention_maps=True)

    def _cross_cache(self, encoded):
        values = encoded["outputs"]
        return {"keys": self.attention.keys(values), "values": values, "mask": encoded["mask"]}

    def _initial_carry(self, encoded):
        carry = super()._initial_carry(encoded)
        carry["weights"] = ops.zeros(ops.shape(encoded["mask"]), "float32")
        return carry

    def call(self, features, training=None, return_attention_scores=False):
        """features {"inputs": [B, S], "targets": [B, T]} -> float32 logits [B, T, V].

        With `return_attention_scores`: (logits, the dict of `attention_weights`).
        """
        encoded = self.encode(features["inputs"], training=training)
        logits, carries = self._decode_sequence(features["targets"], encoded, training)
        if not return_attention_scores:
            return logits
        return logits, {"encoder": [], "decoder": [],
                        "cross": [ops.expand_dims(carries["weights"], 1)]}

    def attention_weights(self, features):
        """The attention of the teacher-forced forward pass (inference mode).

        Args:
          features: {"inputs": int [B, S], "targets": int [B, T]}, as for `call`.

        Returns:
          {"encoder": [], "decoder": [], "cross": [float32 [B, 1, T, S]]}: one
          "head", row t the weights that predict target t; rows sum to 1 and
          padding keys are 0.
        """
        return self(features, training=False, return_attention_scores=True)[1]
