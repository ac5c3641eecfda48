"""The Transformer of Vaswani et al. 2017 (section 3), as a Keras 3 model.

`call` gives teacher-forced logits; `encode`, `init_cache` and `decode_step`
serve incremental decoding with an explicit cache. Only `keras.ops` is used,
so the model runs on any Keras backend. Logits are float32 under mixed precision.

Ids: 0 is padding (and the decoder's start symbol, as in tensor2tensor), 1 is EOS.
Shapes: B batch, S source length, T target length, D d_model, V vocabulary,
L maximum decode length.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.ids import EOS_ID, PAD_ID  # noqa: F401  (re-exported)
from t2t_lite.layers.decoder import DecoderLayer
from t2t_lite.layers.embedding import SharedEmbedding
from t2t_lite.layers.encoder import EncoderLayer
from t2t_lite.layers.positional_encoding import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
)


def shift_right(targets):
    """Decoder inputs: [0, t_0, ..., t_{T-2}] for targets [B, T]."""
    return ops.pad(targets, [[0, 0], [1, 0]])[:, :-1]


def causal_mask(length):
    """bool [1, T, T]: position i may attend to positions <= i."""
    rows = ops.expand_dims(ops.arange(length), 1)
    cols = ops.expand_dims(ops.arange(length), 0)
    return ops.expand_dims(cols <= rows, 0)


@keras.saving.register_keras_serializable(package="t2t_lite")
class Transformer(keras.Model):
    """Encoder-decoder Transformer with shared embeddings (sections 3.1-3.5).

    Build it with `Transformer.from_hparams(hparams, vocab_size)`.
    """

    def __init__(self, vocab_size, num_layers=6, d_model=512, d_ff=2048, num_heads=8,
                 key_dim=64, value_dim=64, dropout_rate=0.1, attention_dropout_rate=0.0,
                 relu_dropout_rate=0.0, normalize_before=False, layer_norm_epsilon=1e-6,
                 positional_encoding="sinusoid", max_length=256, shared_embedding=True,
                 **kwargs):
        super().__init__(**kwargs)
        self.config = dict(
            vocab_size=vocab_size, num_layers=num_layers, d_model=d_model, d_ff=d_ff,
            num_heads=num_heads, key_dim=key_dim, value_dim=value_dim,
            dropout_rate=dropout_rate, attention_dropout_rate=attention_dropout_rate,
            relu_dropout_rate=relu_dropout_rate, normalize_before=normalize_before,
            layer_norm_epsilon=layer_norm_epsilon,
            positional_encoding=positional_encoding, max_length=max_length,
            shared_embedding=shared_embedding,
        )
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.num_layers = num_layers
        self.normalize_before = normalize_before
        dtype = self.dtype_policy
        self.target_embedding = SharedEmbedding(
            vocab_size, d_model, name="shared_embedding" if shared_embedding
            else "target_embedding", dtype=dtype)
        if shared_embedding:
            self.source_embedding = self.softmax_embedding = self.target_embedding
        else:
            self.source_embedding = SharedEmbedding(
                vocab_size, d_model, name="source_embedding", dtype=dtype)
            self.softmax_embedding = SharedEmbedding(
                vocab_size, d_model, name="softmax_weights", dtype=dtype)
        if positional_encoding == "learned":
            self.position = LearnedPositionalEmbedding(
                d_model, max_length, name="position", dtype=dtype)
        else:
            self.position = SinusoidalPositionalEncoding(d_model, name="position", dtype=dtype)
        layer_args = dict(
            d_model=d_model, d_ff=d_ff, num_heads=num_heads, key_dim=key_dim,
            value_dim=value_dim, dropout_rate=dropout_rate,
            attention_dropout_rate=attention_dropout_rate,
            relu_dropout_rate=relu_dropout_rate, normalize_before=normalize_before,
            layer_norm_epsilon=layer_norm_epsilon, dtype=dtype,
        )
        self.encoder_layers = [
            EncoderLayer(name=f"encoder_layer_{i}", **layer_args) for i in range(num_layers)
        ]
        self.decoder_layers = [
            DecoderLayer(name=f"decoder_layer_{i}", **layer_args) for i in range(num_layers)
        ]
        # tf.train.Checkpoint does not look inside Keras' tracked lists: make each
        # layer an attribute too, so checkpoints hold `model/encoder_layer_0/...`.
        for layer in self.encoder_layers + self.decoder_layers:
            setattr(self, layer.name, layer)
        self.source_dropout = keras.layers.Dropout(dropout_rate, dtype=dtype)
        self.target_dropout = keras.layers.Dropout(dropout_rate, dtype=dtype)
        if normalize_before:  # Pre-norm stacks end with a LayerNorm.
            self.encoder_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, name="encoder_norm", dtype=dtype)
            self.decoder_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, name="decoder_norm", dtype=dtype)

    @classmethod
    def from_hparams(cls, hparams, vocab_size: int) -> Transformer:
        """Builds (and creates the weights of) the model `hparams` describe."""
        dtype = "mixed_float16" if hparams.mixed_precision else None
        model = cls(
            vocab_size=vocab_size, num_layers=hparams.num_layers,
            d_model=hparams.d_model, d_ff=hparams.d_ff, num_heads=hparams.num_heads,
            key_dim=hparams.key_dim, value_dim=hparams.value_dim,
            dropout_rate=hparams.dropout_rate,
            attention_dropout_rate=hparams.attention_dropout_rate,
            relu_dropout_rate=hparams.relu_dropout_rate,
            normalize_before=hparams.normalize_before,
            layer_norm_epsilon=hparams.layer_norm_epsilon,
            positional_encoding=hparams.positional_encoding,
            max_length=hparams.max_length, shared_embedding=hparams.shared_embedding,
            dtype=dtype,
        )
        model.build_weights()
        return model

    def build_weights(self):
        """Creates every weight by running a one-token batch."""
        ids = ops.ones((1, 2), dtype="int32")
        self({"inputs": ids, "targets": ids})

    def _embed(self, ids, embedding, dropout, training, start_index=0):
        """Token embedding x sqrt(d_model) + positional encoding, then dropout."""
        x = embedding(ids)
        x = x + ops.expand_dims(self.position(x, start_index=start_index), 0)
        return dropout(x, training=training)

    def encode(self, inputs, training=None):
        """inputs int [B, S] -> (encoder output [B, S, D], bool mask [B, 1, S])."""
        input_mask = ops.expand_dims(ops.not_equal(inputs, PAD_ID), 1)
        x = self._embed(inputs, self.source_embedding, self.source_dropout, training)
        for layer in self.encoder_layers:
            x = layer(x, attention_mask=input_mask, training=training)
        if self.normalize_before:
            x = self.encoder_norm(x)
        return x, input_mask

    def _logits(self, x):
        if self.normalize_before:
            x = self.decoder_norm(x)
        return self.softmax_embedding.project(x)

    def decode(self, decoder_inputs, encoder_output, input_mask, training=None):
        """Teacher-forced decoder: ids [B, T] -> float32 logits [B, T, V]."""
        x = self._embed(decoder_inputs, self.target_embedding, self.target_dropout, training)
        self_mask = causal_mask(ops.shape(decoder_inputs)[1])
        for layer in self.decoder_layers:
            x = layer(x, encoder_output, self_attention_mask=self_mask,
                      cross_attention_mask=input_mask, training=training)
        return self._logits(x)

    def call(self, features, training=None):
        """features {"inputs": [B, S], "targets": [B, T]} -> logits [B, T, V]."""
        encoder_output, input_mask = self.encode(features["inputs"], training=training)
        decoder_inputs = shift_right(features["targets"])
        return self.decode(decoder_inputs, encoder_output, input_mask, training=training)

    def init_cache(self, encoder_output, input_mask, max_decode_length):
        """The decoding cache: per layer self (empty, [B, H, L, d]) and cross K/V."""
        batch = ops.shape(encoder_output)[0]
        layers = []
        for layer in self.decoder_layers:
            attention = layer.self_attention
            heads = attention.num_heads
            dtype = encoder_output.dtype
            layers.append({
                "self": {
                    "key": ops.zeros((batch, heads, max_decode_length, attention.key_dim),
                                     dtype=dtype),
                    "value": ops.zeros((batch, heads, max_decode_length,
                                        attention.value_dim), dtype=dtype),
                },
                "cross": layer.compute_cross_cache(encoder_output),
            })
        return {"layers": layers, "input_mask": input_mask}

    @staticmethod
    def grow_self_cache(self_caches, length):
        """Pads per-layer self-attention caches [B, H, l, d] with zeros to `length` slots."""
        def pad(x):
            return ops.pad(x, [[0, 0], [0, 0], [0, length - x.shape[2]], [0, 0]])
        return keras.tree.map_structure(pad, self_caches)

    def decode_step(self, ids, index, cache):
        """One cached decoder step.

        Args:
          ids: int [B], the token at position `index - 1` (0 = start at index 0).
          index: int32 scalar, the position being predicted.
          cache: from `init_cache` or the previous step.

        Returns:
          (float32 logits [B, V] for position `index`, updated cache).
        """
        x = self._embed(ops.expand_dims(ids, 1), self.target_embedding,
                        self.target_dropout, False, start_index=index)
        max_len = ops.shape(cache["layers"][0]["self"]["key"])[2]
        valid = ops.reshape(ops.arange(max_len) <= index, (1, 1, -1))  # [1, 1, L]
        new_layers = []
        for layer, layer_cache in zip(self.decoder_layers, cache["layers"]):
            x, new_cache = layer(
                x, self_attention_mask=valid, cross_attention_mask=cache["input_mask"],
                cache=layer_cache, cache_index=index, training=False)
            new_layers.append(new_cache)
        logits = self._logits(x)[:, 0, :]
        return logits, {"layers": new_layers, "input_mask": cache["input_mask"]}

    def get_config(self):
        config = super().get_config()
        config.update(self.config)
        return config
