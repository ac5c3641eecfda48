"""The RNN encoder: a stack of (bidirectional) LSTM or GRU layers over a 0-padded source.

Padding never enters a state: the layers are given the source mask, so a
forward layer's final state is its state after the row's last token (EOS), and
a backward layer, which reads the row from its end, keeps its zero state
through the padded tail and ends after the first token. A bidirectional layer
concatenates the forward and backward outputs per token (Bahdanau et al. 2015,
section 3.2: h_j = [h->_j; h<-_j]), and the next layer reads them.
Dropout (P_drop) is applied to every layer's output (Zaremba et al. 2014: not
on the recurrent connections). Shapes: B batch, S source length, D units.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.models.rnn.cells import make_rnn


@keras.saving.register_keras_serializable(package="t2t_lite")
class RNNEncoder(keras.layers.Layer):
    """`num_layers` RNN layers of `units` each (per direction when bidirectional).

    Args:
      rnn_cell: "lstm" or "gru".
      units: D, the state size of each direction.
      num_layers: stacked layers.
      bidirectional: a forward and a backward RNN per layer, outputs concatenated.
      dropout_rate: P_drop on each layer's output.
    """

    def __init__(self, rnn_cell, units, num_layers=1, bidirectional=False, dropout_rate=0.0,
                 **kwargs):
        super().__init__(**kwargs)
        self.rnn_cell = rnn_cell
        self.units = units
        self.num_layers = num_layers
        self.bidirectional = bidirectional
        self.dropout_rate = dropout_rate
        dtype = self.dtype_policy
        self.forward_layers = [make_rnn(rnn_cell, units, f"forward_{i}", dtype)
                               for i in range(num_layers)]
        self.backward_layers = [
            make_rnn(rnn_cell, units, f"backward_{i}", dtype, go_backwards=True)
            for i in range(num_layers)] if bidirectional else []
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=dtype)

    @property
    def output_size(self) -> int:
        """The size of an output vector: D, or 2 D when bidirectional."""
        return self.units * (2 if self.bidirectional else 1)

    def call(self, x, mask, training=None):
        """x [B, S, E], mask bool [B, S] -> (outputs [B, S, D or 2 D], forward, backward).

        `forward`: each layer's final state (a list: [h, c] or [h]) after the
        row's last token; `backward`: each backward layer's final state, after
        the row's first token ([] when not bidirectional). Outputs at padding
        are not meaningful (attention masks them).
        """
        forward, backward = [], []
        for i in range(self.num_layers):
            outputs, *state = self.forward_layers[i](x, mask=mask, training=training)
            forward.append(list(state))
            if self.bidirectional:
                reverse, *state = self.backward_layers[i](x, mask=mask, training=training)
                backward.append(list(state))
                # The backward layer returns its outputs in reading order (last first).
                outputs = ops.concatenate([outputs, ops.flip(reverse, axis=1)], axis=-1)
            x = self.dropout(outputs, training=training)
        return x, forward, backward

    def get_config(self):
        config = super().get_config()
        config.update(rnn_cell=self.rnn_cell, units=self.units, num_layers=self.num_layers,
                      bidirectional=self.bidirectional, dropout_rate=self.dropout_rate)
        return config
