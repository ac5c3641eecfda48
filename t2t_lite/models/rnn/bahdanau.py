"""Bahdanau, Cho & Bengio 2015: "Jointly Learning to Align and Translate" (registered "bahdanau").

- Encoder (section 3.2): a bidirectional RNN; the annotation of source token j
  is h_j = [h->_j; h<-_j] [2 D] (with num_layers > 1, the layers are stacked,
  each reading the one below's annotations).
- Initial decoder state (appendix A.2.2): s_0 = tanh(W_s h<-_1), from the
  backward state after the first token, per layer (an LSTM's cell state starts at 0).
- Attention *between* decoder steps (section 3.1): the previous state s_{t-1}
  (the top layer's) scores every annotation with the MLP
  e_tj = v^T tanh(W s_{t-1} + U h_j), a_t = softmax(e_t) and c_t = sum_j a_tj h_j;
  then the decoder RNN reads [E y_{t-1}; c_t] and gives s_t.
- Output (appendix A.2.2, a tanh in place of their maxout): the features
  tanh(W_o [s_t; c_t; E y_{t-1}]) [D] predict y_t through the pre-softmax projection.

The carry is {"states", "context": c_t [B, 2 D], "weights": a_t [B, S]};
the cross_cache the annotations, their keys U h_j and the mask
(`t2t_lite.models.rnn.attention.AttentionSeq2Seq`). Bahdanau et al. used gated
recurrent units (`rnn_cell="gru"`, as `bahdanau_multi30k`).
Shapes: B batch, S source length, D d_model.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.registry import register_model
from t2t_lite.models.rnn import cells
from t2t_lite.models.rnn.attention import AttentionScore, AttentionSeq2Seq
from t2t_lite.models.rnn.config import RNNConfig


@register_model("bahdanau", config=RNNConfig)
@keras.saving.register_keras_serializable(package="t2t_lite")
class BahdanauAttention(AttentionSeq2Seq):
    """Bidirectional encoder, MLP attention from s_{t-1}, context into the RNN.

    Takes `RNNSeq2Seq`'s arguments; d_model is the state size of each
    encoder direction, of the decoder and of the attention MLP.
    """

    bidirectional = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        dtype = self.dtype_policy
        self.attention = AttentionScore("additive", self.d_model, name="attention", dtype=dtype)
        self.bridges = [keras.layers.Dense(self.d_model, activation="tanh", name=f"bridge_{i}",
                                           dtype=dtype) for i in range(self.num_layers)]
        for bridge in self.bridges:
            setattr(self, bridge.name, bridge)
        self.readout = keras.layers.Dense(self.d_model, activation="tanh", name="readout",
                                          dtype=dtype)

    def _initial_carry(self, encoded):
        """s_0 = tanh(W_s h<-_1) per layer; c_0 = 0 (not read); a_0 = 0."""
        states = []
        for bridge, backward in zip(self.bridges, encoded["backward"]):
            h = bridge(backward[0])
            states.append([h, ops.zeros_like(h)] if self.rnn_cell == "lstm" else [h])
        values = encoded["outputs"]
        context = ops.zeros((ops.shape(values)[0], ops.shape(values)[2]), values.dtype)
        weights = ops.zeros(ops.shape(encoded["mask"]), "float32")
        return {"states": states, "context": context, "weights": weights}

    def _step(self, e, carry, cross):
        """Attend from s_{t-1}, then s_t = RNN([E y_{t-1}; c_t], s_{t-1})."""
        context, weights = self.attention(cells.top_output(carry["states"]), cross["keys"],
                                          cross["values"], cross["mask"])
        x = ops.concatenate([e, ops.cast(context, e.dtype)], axis=-1)
        _, states = cells.stack_step(self.decoder_cells, x, carry["states"])
        return {"states": states, "context": context, "weights": weights}

    def _readout(self, carry, e, training):
        """tanh(W_o [s_t; c_t; E y_{t-1}]) [..., D]."""
        features = ops.concatenate([cells.top_output(carry["states"]), carry["context"], e],
                                   axis=-1)
        return self.readout_dropout(self.readout(features), training=training)
