"""The RNN encoder-decoder of Sutskever, Vinyals & Le 2014, and the recurrent model seam.

`RNNSeq2Seq` (registered as "rnn_seq2seq"): a multi-layer LSTM (or GRU)
reads the source; its final state, layer by layer, is the initial state of a
multi-layer decoder RNN of the same size, whose top output h_t predicts y_t
through the pre-softmax projection. No attention: the final state is all the
decoder knows of the source. With `reverse_source` the encoder reads the
words of each source backwards (their section 3.3: "we reversed the order of
the words in the source sentence but not the target sentences"); EOS stays last.

The recurrent models share this class' machinery (`t2t_lite.models.rnn.attention`'s
Bahdanau and Luong models subclass it):
- the decoder's state is a nested dict of [B, ...] tensors, the *carry*
  ({"states": one cell state per layer, plus what a model adds});
  `_step(e, carry, cross)` is one decoder step on the embedded previous token
  e [B, D] and `_readout(carry, e, training)` its features [B, D] for the
  projection. Teacher-forced `call` runs `_step` over the targets with
  `keras.ops.scan` and reads out every position at once, `decode_step` runs it
  once: the same computation, so cached decoding equals the full forward pass;
- the model contract (t2t_lite/models/contract.py): the self_cache is the carry (every
  leaf [B, ...], no length axis: `grow_self_cache` returns it unchanged), the
  cross_cache what `_cross_cache` keeps of the encoder (nothing here);
- embeddings as the Transformer's (`SharedEmbedding`, x sqrt(d_model); one
  matrix for source, target and pre-softmax projection when `shared_embedding`),
  dropout (P_drop) on the embeddings, between encoder layers and on the
  readout; none on the recurrent connections (Zaremba et al. 2014).

Only `keras.ops`. Shapes: B batch, S source length, T target length,
D d_model (every RNN's state size), V target vocabulary.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.layers.embedding import SharedEmbedding
from t2t_lite.models.transformer import check_shared_vocabulary, dtype_of, shift_right
from t2t_lite.models.contract import ModelBase
from t2t_lite.registry import register_model
from t2t_lite.models.rnn import cells
from t2t_lite.models.rnn.config import RNNConfig
from t2t_lite.models.rnn.encoder import RNNEncoder


@register_model("rnn_seq2seq", config=RNNConfig)
@keras.saving.register_keras_serializable(package="t2t_lite")
class RNNSeq2Seq(ModelBase, keras.Model):
    """Encoder RNN -> final state -> decoder RNN (Sutskever et al. 2014).

    Build it with `RNNSeq2Seq.from_hparams(hparams, source_vocab_size, target_vocab_size)`.

    Args:
      source_vocab_size, target_vocab_size: vocabulary sizes (target defaults to source).
      d_model: D, the embedding size and every RNN's state size.
      num_layers: layers of the encoder RNN and of the decoder RNN.
      rnn_cell: "lstm" or "gru".
      dropout_rate: P_drop.
      reverse_source: read the source words backwards (EOS stays last).
      shared_embedding: one matrix for source and target embeddings and the
        pre-softmax projection (equal vocabularies); else the target's is tied
        to the projection.
    """

    bidirectional = False  # The encoder's kind (Bahdanau's reads both ways).

    def __init__(self, source_vocab_size, target_vocab_size=None, *, d_model=256,
                 num_layers=2, rnn_cell="lstm", dropout_rate=0.0, reverse_source=False,
                 shared_embedding=True, **kwargs):
        super().__init__(**kwargs)
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size or source_vocab_size
        self.d_model = d_model
        self.num_layers = num_layers
        self.rnn_cell = cells.check_cell(rnn_cell)
        self.dropout_rate = dropout_rate
        self.reverse_source = bool(reverse_source)
        self.shared_embedding = bool(shared_embedding)
        dtype = self.dtype_policy
        self._make_embeddings()
        self.encoder = RNNEncoder(rnn_cell, d_model, num_layers, self.bidirectional,
                                  dropout_rate, name="encoder", dtype=dtype)
        self.decoder_cells = [cells.make_cell(rnn_cell, d_model, f"decoder_cell_{i}", dtype)
                              for i in range(num_layers)]
        for cell in self.decoder_cells:  # Named attributes, as the Transformer's layers.
            setattr(self, cell.name, cell)
        self.source_dropout = keras.layers.Dropout(dropout_rate, dtype=dtype)
        self.target_dropout = keras.layers.Dropout(dropout_rate, dtype=dtype)
        self.readout_dropout = keras.layers.Dropout(dropout_rate, dtype=dtype)

    def _make_embeddings(self):
        dtype = self.dtype_policy
        if self.shared_embedding:
            check_shared_vocabulary(self.source_vocab_size, self.target_vocab_size)
            self.target_embedding = SharedEmbedding(
                self.target_vocab_size, self.d_model, name="shared_embedding", dtype=dtype)
            self.source_embedding = self.target_embedding
        else:
            self.target_embedding = SharedEmbedding(
                self.target_vocab_size, self.d_model, name="target_embedding", dtype=dtype)
            self.source_embedding = SharedEmbedding(
                self.source_vocab_size, self.d_model, name="source_embedding", dtype=dtype)
        self.softmax_embedding = self.target_embedding

    @classmethod
    def from_hparams(cls, hparams, source_vocab_size: int,
                     target_vocab_size: int | None = None) -> RNNSeq2Seq:
        """Builds (and creates the weights of) the model `hparams` describe.

        Uses d_model, num_layers, dropout_rate, shared_embedding and the config's
        fields (`t2t_lite.models.rnn.config`: rnn_cell, reverse_source and a subclass' own);
        the Transformer's d_ff, num_heads, d_k, d_v, positional_encoding and
        normalize_before are unused.

        Raises:
          HParamsError: shared_embedding with different vocabulary sizes.
        """
        model = cls(source_vocab_size, target_vocab_size, d_model=hparams.d_model,
                    num_layers=hparams.num_layers, dropout_rate=hparams.dropout_rate,
                    shared_embedding=hparams.shared_embedding,
                    dtype=dtype_of(hparams), **cls.hparams_kwargs(hparams))
        model.build_weights()
        return model

    # --- The encoder ---
    def encode(self, inputs, training=None):
        """inputs int [B, S] -> {"outputs": [B, S, D or 2 D] in the source's order,
        "mask": bool [B, S], "forward": final states, "backward": final states}
        (`RNNEncoder.call`; with reverse_source the words are read backwards and
        the outputs put back in the source's order)."""
        mask = cells.source_mask(inputs)
        index = cells.reversal_index(mask) if self.reverse_source else None
        if index is not None:
            inputs = cells.gather_positions(inputs, index)
        x = self.source_dropout(self.source_embedding(inputs), training=training)
        outputs, forward, backward = self.encoder(x, mask, training=training)
        if index is not None:
            outputs = cells.gather_positions(outputs, index)
        return {"outputs": outputs, "mask": mask, "forward": forward, "backward": backward}

    # --- The decoder: what a subclass changes ---
    def _initial_carry(self, encoded):
        """The decoder's carry before the first step: the encoder's final states."""
        return {"states": [list(state) for state in encoded["forward"]]}

    def _cross_cache(self, encoded):
        """What decoding keeps of the encoder besides the initial carry: nothing."""
        del encoded
        return {}

    def _step(self, e, carry, cross):
        """One decoder step on the embedded previous token e [B, D]: the new carry."""
        del cross
        _, states = cells.stack_step(self.decoder_cells, e, carry["states"])
        return {"states": states}

    def _readout(self, carry, e, training):
        """Features [..., D] predicting the token: the top layer's h_t."""
        del e
        return self.readout_dropout(cells.top_output(carry["states"]), training=training)

    # --- The model contract ---
    def _logits(self, features):
        return self.softmax_embedding.project(features)

    def _decode_sequence(self, targets, encoded, training):
        """Teacher-forced decoding: (float32 logits [B, T, V], every step's carry [B, T, ...])."""
        e = self.target_dropout(self.target_embedding(shift_right(targets)), training=training)
        cross = self._cross_cache(encoded)

        def body(carry, x):
            carry = self._step(x, carry, cross)
            return carry, carry

        _, carries = ops.scan(body, self._initial_carry(encoded), ops.transpose(e, (1, 0, 2)))
        carries = keras.tree.map_structure(
            lambda x: ops.moveaxis(x, 0, 1), carries)  # [T, B, ...] -> [B, T, ...]
        return self._logits(self._readout(carries, e, training)), carries

    def call(self, features, training=None):
        """features {"inputs": [B, S], "targets": [B, T]} -> float32 logits [B, T, V]."""
        encoded = self.encode(features["inputs"], training=training)
        return self._decode_sequence(features["targets"], encoded, training)[0]

    def init_cache(self, inputs, max_decode_length):
        """Encodes `inputs` int32 [B, S]: (the initial carry, the cross_cache).

        `max_decode_length` is not needed: the carry has no length axis.
        """
        del max_decode_length
        encoded = self.encode(inputs, training=False)
        return self._initial_carry(encoded), self._cross_cache(encoded)

    def grow_self_cache(self, self_cache, length):
        """The carry, unchanged (no length axis)."""
        del length
        return self_cache

    def decode_step(self, ids, index, self_cache, cross_cache):
        """One decoder step (the model contract).

        Args:
          ids: int [B], the token at position `index - 1` (0 at index 0).
          index: int32 scalar, the position predicted (the carry knows it).
          self_cache: the carry; cross_cache: from `init_cache` (rows may be
            repeated per beam).

        Returns:
          (float32 logits [B, V] for position `index`, the new carry).
        """
        del index
        e = self.target_embedding(ids)
        carry = self._step(e, self_cache, cross_cache)
        return self._logits(self._readout(carry, e, False)), carry

    def get_config(self):
        config = super().get_config()
        config.update(
            source_vocab_size=self.source_vocab_size, target_vocab_size=self.target_vocab_size,
            d_model=self.d_model, num_layers=self.num_layers, rnn_cell=self.rnn_cell,
            dropout_rate=self.dropout_rate, reverse_source=self.reverse_source,
            shared_embedding=self.shared_embedding)
        return config
