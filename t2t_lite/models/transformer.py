"""The Transformer of Vaswani et al. 2017 (section 3).

`Transformer` implements the model contract (`t2t_lite.models.contract`) with
shared embeddings (section 3.4) and a heads-first self-attention cache
[B, H, L, d] per decoder layer; the encoder-decoder keys and values
[B, H, S, d] are computed once, in the cross_cache. It declares every
capability: self_cache writes in place, grouped beams (unless a subclass
changes the cached decoder) and attention maps. Only `keras.ops` is used, so
the model runs on any Keras backend. Logits are float32 under mixed precision.

Ids: 0 is padding (and the decoder's start symbol, as in tensor2tensor), 1 is EOS.
Shapes: B batch, S source length, T target length, H heads, D d_model,
V target vocabulary, L maximum decode length.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.hparams.config import ModelConfig
from t2t_lite.hparams.hparams import HParamsError
from t2t_lite.ids import EOS_ID, PAD_ID  # noqa: F401  (re-exported)
from t2t_lite.layers.attention import own_buffers
from t2t_lite.layers.beam_decoder import GroupedBeamsMixin
from t2t_lite.layers.config import LayerConfig
from t2t_lite.layers.decoder import DecoderLayer
from t2t_lite.layers.embedding import SharedEmbedding
from t2t_lite.layers.encoder import EncoderLayer
from t2t_lite.layers.positional_encoding import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
)
from t2t_lite.models.contract import Capabilities, FlopProfile, ModelBase
from t2t_lite.registry import register_model


def shift_right(targets):
    """Decoder inputs: [0, t_0, ..., t_{T-2}] for targets [B, T]."""
    return ops.pad(targets, [[0, 0], [1, 0]])[:, :-1]


def causal_mask(length):
    """bool [1, T, T]: position i may attend to positions <= i."""
    rows = ops.expand_dims(ops.arange(length), 1)
    cols = ops.expand_dims(ops.arange(length), 0)
    return ops.expand_dims(cols <= rows, 0)


def check_shared_vocabulary(source_vocab_size, target_vocab_size):
    """Raises HParamsError when one embedding matrix cannot serve both sides."""
    if source_vocab_size != target_vocab_size:
        raise HParamsError(
            f"the problem has separate source ({source_vocab_size}) and target "
            f"({target_vocab_size}) vocabularies, which cannot share one embedding "
            "matrix; pass --hparams_overrides=shared_embedding=false")


def dtype_of(hparams):
    """The Keras dtype argument of a model built from `hparams` (None: float32)."""
    return None if hparams.dtype_policy == "float32" else hparams.dtype_policy


@register_model("transformer", config=ModelConfig)
@keras.saving.register_keras_serializable(package="t2t_lite")
class Transformer(GroupedBeamsMixin, ModelBase, keras.Model):
    """Encoder-decoder Transformer (sections 3.1-3.5); the model contract (`t2t_lite.models.contract`).

    Build it with `Transformer.from_hparams(hparams, source_vocab_size,
    target_vocab_size)`.

    Args:
      layer_config: the `LayerConfig` of every encoder and decoder layer.
      source_vocab_size, target_vocab_size: vocabulary sizes (target defaults
        to source).
      num_layers: N, layers in the encoder and in the decoder.
      positional_encoding: "sinusoid" (the paper) or "learned" (Table 3 row E).
      max_length: rows of the learned positional table.
      shared_embedding: one matrix for the source and target embeddings and the
        pre-softmax projection (section 3.4); needs equal vocabulary sizes.
        Otherwise the source has its own matrix and the target embedding stays
        tied to the pre-softmax projection ("target_embedding").
    """

    def __init__(self, layer_config, source_vocab_size, target_vocab_size=None, *,
                 num_layers=6, positional_encoding="sinusoid", max_length=256,
                 shared_embedding=True, **kwargs):
        super().__init__(**kwargs)
        self.layer_config = LayerConfig.coerce(layer_config)
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size or source_vocab_size
        self.num_layers = num_layers
        self.positional_encoding = positional_encoding
        self.max_length = max_length
        self.shared_embedding = shared_embedding
        self._make_embeddings()
        c, dtype = self.layer_config, self.dtype_policy
        self.encoder_layers = [
            EncoderLayer(c, name=f"encoder_layer_{i}", dtype=dtype) for i in range(num_layers)
        ]
        self.decoder_layers = [
            DecoderLayer(c, name=f"decoder_layer_{i}", dtype=dtype) for i in range(num_layers)
        ]
        # tf.train.Checkpoint does not look inside Keras' tracked lists: make each
        # layer an attribute too, so checkpoints hold `model/encoder_layer_0/...`.
        for layer in self.encoder_layers + self.decoder_layers:
            setattr(self, layer.name, layer)
        self.source_dropout = keras.layers.Dropout(c.dropout_rate, dtype=dtype)
        self.target_dropout = keras.layers.Dropout(c.dropout_rate, dtype=dtype)
        if c.normalize_before:  # Pre-norm stacks end with a LayerNorm.
            self.encoder_norm = keras.layers.LayerNormalization(
                epsilon=c.layer_norm_epsilon, name="encoder_norm", dtype=dtype)
            self.decoder_norm = keras.layers.LayerNormalization(
                epsilon=c.layer_norm_epsilon, name="decoder_norm", dtype=dtype)

    def _make_embeddings(self):
        """Token embeddings (one or two matrices) and the positional encoding."""
        d_model, dtype = self.layer_config.d_model, self.dtype_policy
        if self.shared_embedding:
            check_shared_vocabulary(self.source_vocab_size, self.target_vocab_size)
            self.target_embedding = SharedEmbedding(
                self.target_vocab_size, d_model, name="shared_embedding", dtype=dtype)
            self.source_embedding = self.target_embedding
        else:
            self.target_embedding = SharedEmbedding(
                self.target_vocab_size, d_model, name="target_embedding", dtype=dtype)
            self.source_embedding = SharedEmbedding(
                self.source_vocab_size, d_model, name="source_embedding", dtype=dtype)
        self.softmax_embedding = self.target_embedding  # Tied (section 3.4).
        if self.positional_encoding == "learned":
            self.position = LearnedPositionalEmbedding(
                d_model, self.max_length, name="position", dtype=dtype)
        else:
            self.position = SinusoidalPositionalEncoding(d_model, name="position", dtype=dtype)

    @classmethod
    def from_hparams(cls, hparams, source_vocab_size: int,
                     target_vocab_size: int | None = None) -> Transformer:
        """Builds (and creates the weights of) the model `hparams` describe.

        Raises:
          HParamsError: shared_embedding with different vocabulary sizes.
        """
        model = cls(
            LayerConfig.from_hparams(hparams), source_vocab_size, target_vocab_size,
            num_layers=hparams.num_layers, positional_encoding=hparams.positional_encoding,
            max_length=hparams.max_length, shared_embedding=hparams.shared_embedding,
            dtype=dtype_of(hparams), **cls.hparams_kwargs(hparams),
        )
        model.build_weights()
        return model

    def _embed(self, ids, embedding, dropout, training, start_index=0, extra=None):
        """Token embedding x sqrt(d_model) + positional encoding (+ `extra`
        [B, T, D], if given), then dropout."""
        x = embedding(ids)
        x = x + ops.expand_dims(self.position(x, start_index=start_index), 0)
        if extra is not None:
            x = x + extra
        return dropout(x, training=training)

    def encode(self, inputs, training=None, return_attention_scores=False):
        """inputs int [B, S] -> (encoder output [B, S, D], bool mask [B, 1, S]).

        With `return_attention_scores`, a third element: the self-attention
        weights float32 [B, H, S, S] of each encoder layer.
        """
        input_mask = ops.expand_dims(ops.not_equal(inputs, PAD_ID), 1)
        x = self._encoder_input(inputs, training)
        bias = self._encoder_attention_bias(inputs)
        scores = []
        for layer in self.encoder_layers:
            x = layer(x, attention_mask=input_mask, attention_bias=bias, training=training,
                      return_attention_scores=return_attention_scores)
            if return_attention_scores:
                x, weights = x
                scores.append(weights)
        if self.layer_config.normalize_before:
            x = self.encoder_norm(x)
        return (x, input_mask, scores) if return_attention_scores else (x, input_mask)

    def _encoder_input(self, inputs, training):
        """The encoder stack's input [B, S, D] (a subclass' hook)."""
        return self._embed(inputs, self.source_embedding, self.source_dropout, training)

    def _encoder_attention_bias(self, inputs):
        """What the encoder layers add to their self-attention scores for `inputs`
        [B, S] (a subclass' hook): None, the paper's absolute positions only."""
        del inputs
        return None

    def _logits(self, x):
        if self.layer_config.normalize_before:
            x = self.decoder_norm(x)
        return self.softmax_embedding.project(x)

    def decode(self, decoder_inputs, encoder_output, input_mask, training=None,
               return_attention_scores=False):
        """Teacher-forced decoder: ids [B, T] -> float32 logits [B, T, V].

        With `return_attention_scores`: (logits, {"decoder": self-attention
        weights [B, H, T, T] per layer, "cross": encoder-decoder weights
        [B, H, T, S] per layer}), all float32.
        """
        x = self._decoder_input(decoder_inputs, encoder_output, input_mask, training)
        self_mask = causal_mask(ops.shape(decoder_inputs)[1])
        scores = {"decoder": [], "cross": []}
        for layer in self.decoder_layers:
            x = layer(x, encoder_output, self_attention_mask=self_mask,
                      cross_attention_mask=input_mask, training=training,
                      return_attention_scores=return_attention_scores)
            if return_attention_scores:
                x, weights = x
                scores["decoder"].append(weights["self"])
                scores["cross"].append(weights["cross"])
        logits = self._logits(x)
        return (logits, scores) if return_attention_scores else logits

    def _decoder_input(self, decoder_inputs, encoder_output, input_mask, training):
        """The teacher-forced decoder stack's input [B, T, D] (a subclass' hook)."""
        del encoder_output, input_mask
        return self._embed(decoder_inputs, self.target_embedding, self.target_dropout, training)

    def call(self, features, training=None, return_attention_scores=False):
        """features {"inputs": [B, S], "targets": [B, T]} -> float32 logits [B, T, V].

        With `return_attention_scores`: (logits, the dict of `attention_weights`).
        """
        encoded = self.encode(features["inputs"], training=training,
                              return_attention_scores=return_attention_scores)
        decoder_inputs = shift_right(features["targets"])
        decoded = self.decode(decoder_inputs, encoded[0], encoded[1], training=training,
                              return_attention_scores=return_attention_scores)
        if not return_attention_scores:
            return decoded
        logits, scores = decoded
        return logits, {"encoder": encoded[2], **scores}

    @property
    def capabilities(self) -> Capabilities:
        """In-place self_cache writes, grouped beams (`decodes_grouped_beams`), attention maps."""
        return Capabilities(in_place_cache=True, grouped_beams=self.decodes_grouped_beams(),
                            attention_maps=True)

    def flop_profile(self) -> FlopProfile:
        """Source tokens go through the encoder layers, target tokens through the decoder
        layers and the pre-softmax projection (the embeddings are lookups)."""
        d_model = self.layer_config.d_model
        projection = self.target_vocab_size * d_model
        return FlopProfile(sum(layer.count_params() for layer in self.encoder_layers),
                           sum(layer.count_params() for layer in self.decoder_layers)
                           + projection, d_model, len(self.decoder_layers))

    def attention_weights(self, features):
        """The attention weights of the teacher-forced forward pass (inference mode).

        Args:
          features: {"inputs": int [B, S], "targets": int [B, T]}, as for `call`.

        Returns:
          {"encoder": [B, H, S, S], "decoder": [B, H, T, T], "cross": [B, H, T, S]}:
          one float32 tensor per layer for each kind; rows sum to 1 and masked
          (padding, future) positions are 0 (rows of padding queries excepted).
        """
        return self(features, training=False, return_attention_scores=True)[1]

    def init_cache(self, inputs, max_decode_length):
        """Encodes `inputs` int32 [B, S] for cached decoding.

        Returns:
          self_cache: per decoder layer {"key": [B, H, L, d_k], "value": [B, H, L, d_v]},
            zeros, L = max_decode_length.
          cross_cache: {"layers": per decoder layer {"key": [B, H, S, d_k],
            "value": [B, H, S, d_v]}, "input_mask": bool [B, 1, S]}.
        """
        encoder_output, input_mask = self.encode(inputs, training=False)
        return self._init_cache_from(encoder_output, input_mask, max_decode_length)

    def _init_cache_from(self, encoder_output, input_mask, max_decode_length):
        """`init_cache` from the encoder output [B, S, D] and mask [B, 1, S]."""
        batch, dtype = ops.shape(encoder_output)[0], encoder_output.dtype
        self_cache = []
        for layer in self.decoder_layers:
            attention = layer.self_attention
            shape = (batch, attention.num_heads, max_decode_length)
            self_cache.append({
                "key": ops.zeros(shape + (attention.key_dim,), dtype=dtype),
                "value": ops.zeros(shape + (attention.value_dim,), dtype=dtype),
            })
        cross_cache = {
            "layers": [layer.compute_cross_cache(encoder_output)
                       for layer in self.decoder_layers],
            "input_mask": input_mask,
        }
        return self_cache, cross_cache

    own_self_cache = staticmethod(own_buffers)  # See the contract's `in_place_cache`.

    @staticmethod
    def grow_self_cache(self_cache, length):
        """Pads the self-attention caches [B, H, l, d] with zeros to `length` slots."""
        def pad(x):
            return ops.pad(x, [[0, 0], [0, 0], [0, length - x.shape[2]], [0, 0]])
        return keras.tree.map_structure(pad, self_cache)

    def decode_step(self, ids, index, self_cache, cross_cache, in_place=False):
        """One cached decoder step.

        Args:
          ids: int [B], the token at position `index - 1` (0 = start at index 0).
          index: int32 scalar, the position being predicted.
          self_cache: from `init_cache`, `grow_self_cache` or the previous step.
          cross_cache: from `init_cache` (rows may be repeated per beam).
          in_place: in a traced TensorFlow graph, write the self_cache in place
            (`t2t_lite.layers.attention.write_position`; the contract's `in_place_cache`).

        Returns:
          (float32 logits [B, V] for position `index`, updated self_cache).
        """
        x = self._embed(ops.expand_dims(ids, 1), self.target_embedding,
                        self.target_dropout, False, start_index=index)
        return self._decode_layers_step(x, index, self_cache, cross_cache, in_place)

    def _decode_layers_step(self, x, index, self_cache, cross_cache, in_place=False):
        """The decoder stack on x [B, 1, D] -> (logits [B, V], self_cache written at `index`)."""
        max_len = ops.shape(self_cache[0]["key"])[2]
        valid = ops.reshape(ops.arange(max_len) <= index, (1, 1, -1))  # [1, 1, L]
        new_self_cache = []
        for layer, own, cross in zip(self.decoder_layers, self_cache, cross_cache["layers"]):
            x, new = layer(
                x, self_attention_mask=valid, cross_attention_mask=cross_cache["input_mask"],
                cache={"self": own, "cross": cross}, cache_index=index, in_place=in_place,
                training=False)
            new_self_cache.append(new["self"])
        return self._logits(x)[:, 0, :], new_self_cache

    def get_config(self):
        config = super().get_config()
        config.update(
            layer_config=self.layer_config.to_dict(),
            source_vocab_size=self.source_vocab_size,
            target_vocab_size=self.target_vocab_size,
            num_layers=self.num_layers, positional_encoding=self.positional_encoding,
            max_length=self.max_length, shared_embedding=self.shared_embedding,
        )
        return config

    @classmethod
    def from_config(cls, config):
        return super().from_config(LayerConfig.in_keras_config(config))
