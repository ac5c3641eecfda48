"""The Transformer told which word its next slot is for: a hard alignment (issue 23).

Constituency parsing as translation decodes a linearized tree
(`t2t_lite.parsing.ptb.linearize`), `(S (NP NNP NNP )NP (VP VBZ )VP . )S`, in
which the i-th POS tag is the slot of the i-th input word; the source is
word-level (one id per word, then EOS). Where the plain Transformer must find
that word by attention, this model is given it. At target position t let k_t
be the number of word slots among the targets before t (k_0 = 0). The decoder
stack's input at t is

    E[y_{t-1}] sqrt(D) + PE(t) + W_a h[min(k_t, s)] + C[min(k_t, max_length)]

then dropout (section 5.4), where h is the encoder output [B, S, D], s the
position of the source's EOS (a k past the words reads EOS), W_a a learned
D x D projection and C a learned count embedding of max_length + 1 rows.
Hard-attention seq2seq parsers closed their gap this way (Ma et al. 2017;
Liu, Zhu & Shi 2018).

Which target ids are slots is the model's non-trainable float32 weight
`word_slots` [V] (1.0 for a slot, zeros by default), filled by
`adapt(problem)` from `problem.word_slot_ids()` (the trainer calls it after
building the model). It is saved with the checkpoints, so the decoder, the
averager and the exporter restore it without the problem.

Levers for a small treebank (issue 23), off by default:
- `word_class_features` (`AlignedConfig`): the encoder input adds C_w[class(x_i)], a
  learned embedding of each source word's class (`t2t_lite.data.word_classes`:
  shape and suffix; a word outside the vocabulary is its class), so rare and
  unknown words share what their spelling says. The class of every source id is
  the non-trainable float32 weight `word_classes` [V_src], filled by `adapt`
  from `problem.source_word_classes()`.
- `word_dropout` (`AlignedConfig`): while training, each source word becomes the
  piece of its class (`t2t_lite.data.word_classes.unknown_ids`) with this
  probability, so the words a small treebank has seen are also learned as if
  unknown (word dropout; Kiperwasser and Goldberg 2016 replace rare words
  with unknown-word entries). The non-trainable float32 weight
  `word_unknown_ids` [V_src], filled by `adapt` from
  `problem.source_unknown_ids()`, holds the replacement of every id.
- `word_dropout_alpha` (`AlignedConfig`): word dropout by frequency (Kiperwasser and
  Goldberg 2016): a word seen c times in training is dropped with probability
  word_dropout + alpha / (alpha + c) (at most 1), so the rarest words are
  learned mostly as unknown and frequent ones keep their own embedding. The
  rate of every id is the non-trainable float32 weight `word_drop_rates`
  [V_src], filled by `adapt` from `problem.source_word_counts()`.
- `relative_position_buckets` (`AlignedConfig`): the encoder's self-attention scores
  add a learned bias per head and bucket of the distance between query and
  key (`t2t_lite.layers.relative_position`, T5's), shared by its layers, on
  top of the absolute positions: the chart parser trailed supar on dev only on
  sentences longer than 25 words.
- `tagging_loss` (`AlignedConfig`): an auxiliary POS-tagging loss on the encoder (a
  softmax over the target vocabulary at each word, whose label is the word's
  slot in the target), weighted and added to the summed token loss in the
  training objective (`loss_sums`, which the trainer calls); Keras `fit` trains
  without it.

Cached decoding: self_cache is {"layers": the Transformer's per-layer caches,
"count": int32 [B], k of the position last predicted}, so beam search
reorders the counts with the beams; cross_cache adds "encoder_output"
[B, S, D] and "source_last" int32 [B] (the index of EOS) to the Transformer's,
so the search repeats them per beam.
Only `keras.ops`. Shapes: B batch, S source length, T target length,
D d_model, V target vocabulary, L maximum decode length.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from t2t_lite.data.word_classes import CLASS_PIECES
from t2t_lite.layers.relative_position import RelativePositionBias
from t2t_lite.models.transformer import Transformer, shift_right
from t2t_lite.models.contract import LossSums
from t2t_lite.models.losses import smoothed_cross_entropy_sums
from t2t_lite.models.parsing.config import AlignedConfig
from t2t_lite.registry import register_model


def source_last(input_mask):
    """bool [B, 1, S] source mask -> int32 [B], the index of each row's EOS (0 if empty)."""
    lengths = ops.sum(ops.cast(input_mask[:, 0, :], "int32"), axis=1)
    return ops.maximum(lengths - 1, 0)


@register_model("aligned_transformer", config=AlignedConfig)
@keras.saving.register_keras_serializable(package="t2t_lite")
class AlignedTransformer(Transformer):
    """`Transformer` whose decoder input also holds the encoder output at its word.

    Takes the Transformer's arguments (its `max_length` bounds the count
    embedding too); the model contract (`t2t_lite.models.contract`), with `adapt`.
    """

    def __init__(self, *args, word_class_features=False, tagging_loss=0.0, word_dropout=0.0,
                 word_dropout_alpha=0.0, relative_position_buckets=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.relative_position_buckets = int(relative_position_buckets)
        if self.relative_position_buckets:
            self.relative_position_bias = RelativePositionBias(
                self.relative_position_buckets, self.layer_config.num_heads,
                name="relative_position_bias")
        self.word_class_features = bool(word_class_features)
        self.auxiliary_loss = float(tagging_loss)
        self.word_dropout = float(word_dropout)
        self.word_dropout_alpha = float(word_dropout_alpha)
        d_model, dtype = self.layer_config.d_model, self.dtype_policy
        if self.word_dropout_alpha:
            self.word_drop_rates = self.add_weight(
                shape=(self.source_vocab_size,), initializer="zeros", dtype="float32",
                trainable=False, autocast=False, name="word_drop_rates")
        if self.word_dropout or self.word_dropout_alpha:
            self.word_unknown_ids = self.add_weight(
                shape=(self.source_vocab_size,), initializer="zeros", dtype="float32",
                trainable=False, autocast=False, name="word_unknown_ids")
            self.word_dropout_seed = keras.random.SeedGenerator(name="word_dropout_seed")
        if self.word_class_features:
            self.word_classes = self.add_weight(
                shape=(self.source_vocab_size,), initializer="zeros", dtype="float32",
                trainable=False, autocast=False, name="word_classes")
            self.class_embedding = keras.layers.Embedding(
                len(CLASS_PIECES) + 1, d_model, name="class_embedding", dtype=dtype)
        if self.auxiliary_loss:
            self.tagger = keras.layers.Dense(self.target_vocab_size, name="tagger", dtype=dtype)
        self.alignment_projection = keras.layers.Dense(
            d_model, use_bias=False, name="alignment_projection", dtype=dtype)
        self.count_embedding = keras.layers.Embedding(
            self.max_length + 1, d_model, name="count_embedding", dtype=dtype)
        self.word_slots = self.add_weight(
            shape=(self.target_vocab_size,), initializer="zeros", dtype="float32",
            trainable=False, autocast=False, name="word_slots")

    token_loss = 1.0  # The weight of the decoder's token loss (span_transformer's to change).

    def build_weights(self):
        """Creates every weight, the tagger's too, with a one-token batch."""
        ids = ops.ones((1, 2), dtype="int32")
        self({"inputs": ids, "targets": ids}, return_auxiliary_loss=bool(self.auxiliary_loss))

    def loss_sums(self, batch, label_smoothing: float, training: bool = False) -> LossSums:
        """The Transformer's; in training, the weighted auxiliary loss joins the objective.

        With token_loss 0 (span_transformer: no decoder trains) the logged sums are
        the auxiliary loss, in training and on dev alike.
        """
        if not self.auxiliary_loss or (self.token_loss and not training):
            return super().loss_sums(batch, label_smoothing, training)
        logits, auxiliary = self(batch, training=training, return_auxiliary_loss=True)
        loss, nll, tokens = smoothed_cross_entropy_sums(logits, batch["targets"], label_smoothing)
        if not self.token_loss:
            auxiliary = ops.cast(auxiliary, loss.dtype)
            return LossSums(auxiliary, auxiliary, auxiliary, tokens)
        return LossSums(self.token_loss * loss + auxiliary, loss, nll, tokens)

    def get_config(self):
        config = super().get_config()
        config.update(word_class_features=self.word_class_features,
                      tagging_loss=self.auxiliary_loss, word_dropout=self.word_dropout,
                      word_dropout_alpha=self.word_dropout_alpha,
                      relative_position_buckets=self.relative_position_buckets)
        return config

    def adapt(self, problem):
        """Fills `word_slots` from `problem.word_slot_ids()` (None: no slot, zeros),
        with word_class_features `word_classes` from `problem.source_word_classes()`,
        with word_dropout `word_unknown_ids` from `problem.source_unknown_ids()`, and
        with word_dropout_alpha `word_drop_rates` from `problem.source_word_counts()`.

        Raises:
          ValueError: an id outside the target vocabulary, or no word classes or counts.
        """
        if self.word_class_features:
            self._adapt_word_classes(problem)
        if self.word_dropout or self.word_dropout_alpha:
            self._adapt_word_dropout(problem)
        slots = np.zeros(self.target_vocab_size, np.float32)
        ids = problem.word_slot_ids()
        if ids is not None:
            ids = np.asarray(list(ids), np.int64)
            if ids.size and (ids.min() < 0 or ids.max() >= self.target_vocab_size):
                raise ValueError(f"word slot ids must lie in [0, {self.target_vocab_size}); "
                                 f"got {ids.min()}..{ids.max()}")
            slots[ids] = 1.0
        self.word_slots.assign(slots)

    def _source_table(self, problem, values, needs: str, lever: str) -> np.ndarray:
        """One value per source id from the problem, as float32 [V_src].

        Raises:
          ValueError: None (no word-level source) or the wrong length.
        """
        if values is None or len(values) != self.source_vocab_size:
            raise ValueError(f"{lever} needs {needs} ({problem.name} has none); drop {lever}")
        return np.asarray(values, np.float32)

    def _adapt_word_dropout(self, problem):
        self.word_unknown_ids.assign(self._source_table(
            problem, problem.source_unknown_ids(), "a word-level source vocabulary",
            "word_dropout"))
        if self.word_dropout_alpha:
            counts = self._source_table(problem, problem.source_word_counts(),
                                        "the training counts of a word-level source",
                                        "word_dropout_alpha").astype(np.float64)
            alpha = self.word_dropout_alpha
            rates = np.minimum(self.word_dropout + alpha / (alpha + counts), 1.0)
            self.word_drop_rates.assign(rates.astype(np.float32))

    def _adapt_word_classes(self, problem):
        self.word_classes.assign(self._source_table(
            problem, problem.source_word_classes(), "a word-level source vocabulary",
            "word_class_features"))

    def _encoder_input(self, inputs, training):
        """Word embedding + PE (+ the word's class embedding), then dropout; while
        training, word dropout first."""
        if training and (self.word_dropout or self.word_dropout_alpha):
            inputs = self.drop_words(inputs)
        extra = None
        if self.word_class_features:
            classes = ops.take(self.word_classes, ops.cast(inputs, "int32"), axis=0)
            extra = self.class_embedding(ops.cast(classes, "int32"))
        return self._embed(inputs, self.source_embedding, self.source_dropout, training,
                           extra=extra)

    def _encoder_attention_bias(self, inputs):
        """With relative_position_buckets, the learned bias of each head and distance
        bucket, float32 [1, H, S, S]; otherwise None."""
        if not self.relative_position_buckets:
            return None
        return self.relative_position_bias(inputs)

    def drop_words(self, inputs):
        """inputs int [B, S] -> int32 [B, S], each id replaced by its
        `word_unknown_ids` entry with probability `word_dropout` (with
        `word_dropout_alpha`, the id's `word_drop_rates` entry)."""
        ids = ops.cast(inputs, "int32")
        unknown = ops.cast(ops.take(self.word_unknown_ids, ids, axis=0), "int32")
        drop = keras.random.uniform(ops.shape(ids), seed=self.word_dropout_seed)
        rate = (ops.take(self.word_drop_rates, ids, axis=0) if self.word_dropout_alpha
                else self.word_dropout)
        return ops.where(drop < rate, unknown, ids)

    def call(self, features, training=None, return_attention_scores=False,
             return_auxiliary_loss=False):
        """The Transformer's call; with `return_auxiliary_loss`, (logits, the
        weighted tagging loss summed over the batch's words, float32 scalar)."""
        if not return_auxiliary_loss:
            return super().call(features, training=training,
                                return_attention_scores=return_attention_scores)
        encoder_output, input_mask = self.encode(features["inputs"], training=training)
        decoder_inputs = shift_right(features["targets"])
        logits = self.decode(decoder_inputs, encoder_output, input_mask, training=training)
        if not self.auxiliary_loss:
            return logits, ops.zeros((), "float32")
        tagging = self.tagging_loss_sum(features["targets"], encoder_output)
        return logits, self.auxiliary_loss * tagging

    def word_tags(self, targets, source_length):
        """targets int [B, T] -> (tags int32 [B, S], float32 [B, S] 1 where word i
        has a slot): the i-th word slot of each target row is the tag of word i."""
        slots = self._is_slot(targets)
        place = ops.one_hot(ops.cumsum(slots, axis=1) - 1, source_length)  # [B, T, S]
        place = place * ops.cast(slots, place.dtype)[:, :, None]
        tags = ops.einsum("bts,bt->bs", place, ops.cast(targets, place.dtype))
        return ops.cast(ops.round(tags), "int32"), ops.cast(ops.sum(place, axis=1), "float32")

    def tagging_loss_sum(self, targets, encoder_output):
        """Cross-entropy of the tagger over the encoder output [B, S, D] at each
        word with a slot in `targets` [B, T], summed: float32 scalar."""
        tags, present = self.word_tags(targets, ops.shape(encoder_output)[1])
        logits = ops.cast(self.tagger(encoder_output), "float32")
        nll = keras.losses.sparse_categorical_crossentropy(tags, logits, from_logits=True)
        return ops.sum(nll * present)

    def _is_slot(self, ids):
        """int ids [...] -> int32 [...]: 1 where the id is a word slot."""
        return ops.cast(ops.take(self.word_slots, ops.cast(ids, "int32"), axis=0), "int32")

    def slot_counts(self, targets):
        """targets int [B, T] -> k int32 [B, T]: word slots among the targets before t."""
        return ops.cumsum(self._is_slot(shift_right(targets)), axis=1)

    def _alignment(self, counts, encoder_output, last):
        """W_a h[min(k, s)] + C[min(k, max_length)]: counts int32 [B, T],
        encoder_output [B, S, D], last int32 [B] -> [B, T, D]."""
        shape, counts = ops.shape(encoder_output), ops.cast(counts, "int32")
        position = ops.minimum(counts, ops.cast(last, "int32")[:, None])
        rows = ops.arange(shape[0], dtype="int32")[:, None] * shape[1] + position
        flat = ops.reshape(encoder_output, (-1, self.layer_config.d_model))
        aligned = ops.take(flat, rows, axis=0)  # [B, T, D]: the output at word k_t.
        count = self.count_embedding(ops.minimum(counts, self.max_length))
        return self.alignment_projection(aligned) + count

    def _decoder_input(self, decoder_inputs, encoder_output, input_mask, training):
        """Target embedding + PE + the alignment term, then dropout: [B, T, D]."""
        # decoder_inputs are the targets shifted right: an inclusive count is k_t.
        counts = ops.cumsum(self._is_slot(decoder_inputs), axis=1)
        extra = self._alignment(counts, encoder_output, source_last(input_mask))
        return self._embed(decoder_inputs, self.target_embedding, self.target_dropout,
                           training, extra=extra)

    def init_cache(self, inputs, max_decode_length):
        """Encodes `inputs` int32 [B, S] for cached decoding.

        Returns:
          self_cache: {"layers": the Transformer's self_cache (L =
            max_decode_length), "count": int32 [B] zeros}.
          cross_cache: the Transformer's, plus "encoder_output" [B, S, D] and
            "source_last" int32 [B].
        """
        encoder_output, input_mask = self.encode(inputs, training=False)
        layers, cross_cache = self._init_cache_from(encoder_output, input_mask,
                                                    max_decode_length)
        counts = ops.zeros((ops.shape(encoder_output)[0],), "int32")
        cross_cache = {**cross_cache, "encoder_output": encoder_output,
                       "source_last": source_last(input_mask)}
        return {"layers": layers, "count": counts}, cross_cache

    def grow_self_cache(self, self_cache, length):
        """The per-layer caches padded to `length` positions; the counts kept."""
        return {"layers": Transformer.grow_self_cache(self_cache["layers"], length),
                "count": self_cache["count"]}

    def decode_step(self, ids, index, self_cache, cross_cache, in_place=False):
        """One cached decoder step (the model contract).

        Args:
          ids: int [B], the token at position `index - 1` (0 at index 0); a word
            slot advances the row's count before it is read.
          index: int32 scalar, the position being predicted.
          self_cache, cross_cache: from `init_cache` (cross rows may be repeated
            per beam).

        Returns:
          (float32 logits [B, V] for position `index`, updated self_cache).
        """
        counts = self_cache["count"] + self._is_slot(ids)
        extra = self._alignment(counts[:, None], cross_cache["encoder_output"],
                                cross_cache["source_last"])
        x = self._embed(ops.expand_dims(ids, 1), self.target_embedding, self.target_dropout,
                        False, start_index=index, extra=extra)
        logits, layers = self._decode_layers_step(x, index, self_cache["layers"], cross_cache,
                                                  in_place)
        return logits, {"layers": layers, "count": counts}
