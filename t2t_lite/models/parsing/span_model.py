"""The aligned Transformer with a span chart: CKY over the encoder's spans (issue 23).

A chart parser scores every span of the sentence and takes the best tree by
dynamic programming (Stern, Andreas & Klein 2017; Kitaev & Klein 2018, with a
self-attentive encoder); on a small treebank it learns far more from each tree
than a decoder that must write the tree token by token. This model adds such a
chart to `AlignedTransformer` (`t2t_lite.models.parsing.aligned_model`): the encoder
output h [B, S, D] at the first word i and the last word j of a span gives

    s(i, j) = W_o relu(LayerNorm(W_l h_i + W_r h_j + b)),  [C] scores,

over C span classes: class 0 is "no phrase", the others are the unary chains
of phrase labels seen in training (`S`, `NP`, `S over VP`, ...), top first,
at most `MAX_CHAIN` deep. Training adds the span classes' cross entropy over
every span of every sentence (Gaddy, Stern & Klein 2018's local span loss),
weighted by `span_loss`, to the aligned model's losses: its decoder's token
loss and the encoder's tagging loss (required: the tagger gives the POS tags).

Decoding: each span's margin is m(i, j) = max_{c>0} log p(c) - log p(0) +
`span_bias` (a local span loss under-predicts phrases: the bias buys recall); CKY
(`t2t_lite.models.parsing.chart.best_trees`) takes the binary tree maximizing the
sum of max(m, 0) over its spans, whose spans with m > 0 (and the root, always)
keep their best chain; the others dissolve into their parents, so the tree is
n-ary. `chart.plan_tokens` writes it in the target format,
`(S (NP NNP NNP )NP (VP VBZ )VP . )S`, and the cached decoder replays that plan
through the model contract: at a bracket it puts all the mass on the planned
token, at a word slot it gives the tagger's scores at that word, so the
search's tree constraint and tag dictionary still choose the tag. Everything
stays inside the search (and the exported SavedModel's graph).

What the chart needs from the problem, through `adapt(problem)`, is saved with
the weights (non-trainable float32): `target_kinds` [V] (0 other, 1 open,
2 close, 3 word slot; `problem.target_token_tables()`), and the class table
`span_chains`, `span_closes` [C, MAX_CHAIN] (each class's open and close ids,
top first, 0-padded): every single label first, then the most frequent longer
chains of the training trees (`problem.span_label_chains()`) while rows remain.

Only `keras.ops`. Shapes: B batch, S source length, T target length, D d_model,
V target vocabulary, C span classes, K = MAX_CHAIN.
"""

from __future__ import annotations

import collections

import keras
import numpy as np
from keras import ops

from t2t_lite.models.parsing import chart
from t2t_lite.models.transformer import shift_right
from t2t_lite.models.contract import FlopProfile
from t2t_lite.models.parsing.aligned_model import AlignedTransformer, source_last
from t2t_lite.models.parsing.config import SpanConfig
from t2t_lite.registry import register_model

MAX_CHAIN = 3  # Unary chains deeper than this keep their top three labels.
OPEN, CLOSE, SLOT = 1, 2, 3  # target_kinds (t2t_lite.parsing.tree_constraint's numbers).
_EXCLUDED = -1e9  # The logit of every token but the planned one.


def chain_table(kinds, labels, chains: collections.Counter, classes: int):
    """The span classes: (opens, closes) int32 [classes, MAX_CHAIN].

    Row 0 is "no phrase"; then one row per open id (a single label), then the
    longer chains of `chains` ({open ids top first: count}), most frequent
    first, cut to MAX_CHAIN labels, while rows remain.

    Raises:
      ValueError: fewer rows than the single labels need.
    """
    kinds, labels = np.asarray(kinds), np.asarray(labels)
    close_of = {int(labels[i]): i for i in np.flatnonzero(kinds == CLOSE)}
    singles = [(int(i),) for i in np.flatnonzero(kinds == OPEN)]
    if len(singles) + 1 > classes:
        raise ValueError(f"span_classes={classes} cannot hold the {len(singles)} phrase "
                         f"labels and 'no phrase'; pass span_classes={len(singles) + 1} or more")
    rows = [()] + singles
    for chain, _ in sorted(chains.items(), key=lambda item: (-item[1], item[0])):
        chain = tuple(chain)[:MAX_CHAIN]
        if len(chain) > 1 and chain not in rows and len(rows) < classes:
            rows.append(chain)
    opens = np.zeros((classes, MAX_CHAIN), np.int32)
    closes = np.zeros((classes, MAX_CHAIN), np.int32)
    for row, chain in enumerate(rows):
        opens[row, :len(chain)] = chain
        closes[row, :len(chain)] = [close_of[int(labels[i])] for i in chain]
    return opens, closes


def target_chains(targets, kinds) -> collections.Counter:
    """Unary chains of phrases over the same words in linearized trees.

    targets: iterable of target id sequences; kinds: int [V] (OPEN, CLOSE, SLOT).
    Returns {open ids top first: count}; a phrase over the same words as its
    parent continues the parent's chain.
    """
    counts = collections.Counter()
    for ids in targets:
        spans, stack, words = {}, [], 0
        for token in ids:
            kind = kinds[int(token)]
            if kind == OPEN:
                stack.append((int(token), words))
            elif kind == CLOSE and stack:
                token_open, first = stack.pop()
                spans.setdefault((first, words), []).insert(0, token_open)
            elif kind == SLOT:
                words += 1
        counts.update(tuple(chain) for chain in spans.values())
    return counts


@register_model("span_transformer", config=SpanConfig)
@keras.saving.register_keras_serializable(package="t2t_lite")
class SpanTransformer(AlignedTransformer):
    """`AlignedTransformer` plus a span chart that decodes by CKY (module docstring).

    Takes AlignedTransformer's arguments (tagging_loss > 0), `span_loss` (the
    weight of the span classes' summed cross entropy), `span_classes` (C) and
    `span_bias` (b, decoding only: a span keeps its phrase where m + b > 0, so a
    larger b trades precision for recall; 1.0 measured best of 0, 1 and 2 on dev)
    and `token_loss` (the weight of the decoder's token loss; 0: the decoder is
    frozen and not run in training, as decoding needs only the chart and tagger).
    """

    def __init__(self, *args, span_loss=1.0, span_classes=64, span_bias=1.0, token_loss=1.0,
                 **kwargs):
        super().__init__(*args, **kwargs)
        if not self.auxiliary_loss:
            raise ValueError("span_transformer tags words with the encoder's tagger: "
                             "pass tagging_loss > 0")
        self.span_loss = float(span_loss)
        self.span_bias = float(span_bias)
        self.span_classes = int(span_classes)
        self.token_loss = float(token_loss)
        d_model, dtype = self.layer_config.d_model, self.dtype_policy
        self.span_first = keras.layers.Dense(d_model, name="span_first", dtype=dtype)
        self.span_last = keras.layers.Dense(d_model, use_bias=False, name="span_last",
                                            dtype=dtype)
        self.span_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_config.layer_norm_epsilon, name="span_norm", dtype=dtype)
        self.span_output = keras.layers.Dense(self.span_classes, name="span_output",
                                              dtype=dtype)
        table = dict(initializer="zeros", dtype="float32", trainable=False, autocast=False)
        self.target_kinds = self.add_weight(
            shape=(self.target_vocab_size,), name="target_kinds", **table)
        self.span_chains = self.add_weight(
            shape=(self.span_classes, MAX_CHAIN), name="span_chains", **table)
        self.span_closes = self.add_weight(
            shape=(self.span_classes, MAX_CHAIN), name="span_closes", **table)

    def get_config(self):
        config = super().get_config()
        config.update(span_loss=self.span_loss, span_classes=self.span_classes,
                      span_bias=self.span_bias, token_loss=self.token_loss)
        return config

    def flop_profile(self) -> FlopProfile:
        """The Transformer's; with token_loss 0 only the encoder trains (the chart's span
        scores are not counted, as no head beyond the stacks is)."""
        profile = super().flop_profile()
        if self.token_loss:
            return profile
        return FlopProfile(profile.encoder_weights, 0, profile.d_model, len(self.encoder_layers),
                           decoder=False)

    def _decoder_side(self):
        """The layers only the decoder uses (the target embedding unless shared)."""
        layers = list(self.decoder_layers) + [self.alignment_projection, self.count_embedding]
        if getattr(self, "decoder_norm", None) is not None:
            layers.append(self.decoder_norm)
        if self.target_embedding is not self.source_embedding:
            layers.append(self.target_embedding)
        return layers

    def adapt(self, problem):
        """AlignedTransformer's `adapt`, then `target_kinds` and the span classes
        from `problem.target_token_tables()` and `problem.span_label_chains()`.

        Raises:
          ValueError: the problem has no bracketed targets, or too few classes.
        """
        super().adapt(problem)
        tables = problem.target_token_tables()
        if tables is None:
            raise ValueError(f"span_transformer needs bracketed tree targets ({problem.name} "
                             "has none); use an aligned_transformer hparams set")
        kinds, labels = (np.asarray(t) for t in tables)
        opens, closes = chain_table(kinds, labels, problem.span_label_chains(),
                                    self.span_classes)
        self.target_kinds.assign(kinds.astype(np.float32))
        self.span_chains.assign(opens.astype(np.float32))
        self.span_closes.assign(closes.astype(np.float32))

    def build_weights(self):
        """Creates every weight, the tagger's and the chart's too (the span loss runs
        the chart), with a one-token batch; the decoder's too when training skips it."""
        ids = ops.ones((1, 2), dtype="int32")
        if not self.token_loss:
            self({"inputs": ids, "targets": ids})
            for layer in self._decoder_side():  # Built: frozen with every sub-layer.
                layer.trainable = False
        self({"inputs": ids, "targets": ids}, return_auxiliary_loss=True)

    def call(self, features, training=None, return_attention_scores=False,
             return_auxiliary_loss=False):
        """AlignedTransformer's call; with `return_auxiliary_loss`, (logits, the
        weighted tagging and span losses summed over the batch, float32 scalar),
        where with token_loss 0 the decoder is not run and the logits are zeros."""
        if not return_auxiliary_loss:
            return super().call(features, training=training,
                                return_attention_scores=return_attention_scores)
        targets = features["targets"]
        encoder_output, input_mask = self.encode(features["inputs"], training=training)
        if self.token_loss:
            logits = self.decode(shift_right(targets), encoder_output, input_mask,
                                 training=training)
        else:
            logits = ops.zeros(ops.shape(targets) + (self.target_vocab_size,), "float32")
        tagging = self.tagging_loss_sum(targets, encoder_output)
        spans = self.span_loss_sum(targets, encoder_output, source_last(input_mask))
        return logits, self.auxiliary_loss * tagging + self.span_loss * spans

    def span_scores(self, encoder_output):
        """encoder_output [B, S, D] -> float32 [B, S, S, C]: [b, i, j] scores the
        span from word i to word j."""
        first = self.span_first(encoder_output)[:, :, None, :]
        last = self.span_last(encoder_output)[:, None, :, :]
        hidden = ops.relu(self.span_norm(first + last))
        return ops.cast(self.span_output(hidden), "float32")

    def span_targets(self, targets, length):
        """targets int [B, T] -> int32 [B, length, length]: the class of each span
        (first word, last word) of the linearized trees, 0 where none."""
        targets = ops.cast(targets, "int32")
        kinds = ops.cast(ops.take(self.target_kinds, targets, axis=0), "int32")
        is_open, is_close = ops.cast(kinds == OPEN, "int32"), kinds == CLOSE
        slot = ops.cast(kinds == SLOT, "int32")
        first = ops.cumsum(slot, axis=1) - slot  # Slots before t: the word a phrase opens at.
        step = is_open - ops.cast(is_close, "int32")
        depth = ops.cumsum(step, axis=1) - step
        positions = ops.arange(ops.shape(targets)[1])
        closes = ((positions[None, None, :] > positions[None, :, None]) & is_close[:, None, :]
                  & (depth[:, None, :] == depth[:, :, None] + 1))  # [B, T, T]
        match = ops.argmax(ops.cast(closes, "int32"), axis=2)
        last = ops.take_along_axis(first, match, axis=1) - 1
        span = first * 65536 + last
        above = ops.pad(span, [[0, 0], [1, 0]])[:, :-1]
        above_open = ops.pad(is_open, [[0, 0], [1, 0]])[:, :-1]
        head = (is_open == 1) & ~((above_open == 1) & (above == span))
        members = [targets * is_open]
        for shift in range(1, MAX_CHAIN):
            same = ops.pad(span, [[0, 0], [0, shift]])[:, shift:] == span
            nxt = ops.pad(targets * is_open, [[0, 0], [0, shift]])[:, shift:]
            members.append(ops.where(same & (members[-1] > 0), nxt, 0))
        classes = self._chain_classes(ops.stack(members, axis=-1))
        weight = ops.cast(ops.where(head, classes, 0), "float32")
        rows = ops.one_hot(first, length) * weight[:, :, None]
        return ops.cast(ops.round(ops.einsum("bti,btj->bij", rows, ops.one_hot(last, length))),
                        "int32")

    def _chain_classes(self, chains):
        """chains int32 [B, T, K] (open ids top first) -> int32 [B, T]: the class
        of the whole chain, else of its top label alone, else 0."""
        table = ops.cast(self.span_chains, "int32")  # [C, K]
        whole = ops.all(chains[:, :, None, :] == table[None, None], axis=-1)
        top = ops.concatenate([chains[:, :, :1], ops.zeros_like(chains[:, :, 1:])], axis=-1)
        alone = ops.all(top[:, :, None, :] == table[None, None], axis=-1)
        found = ops.where(ops.any(whole, axis=-1)[:, :, None], whole, alone)
        return ops.cast(ops.argmax(ops.cast(found, "int32"), axis=-1), "int32")

    def span_loss_sum(self, targets, encoder_output, num_words):
        """Cross entropy of every span's class (first <= last < the row's words),
        summed: float32 scalar."""
        # Batches pad sources to their targets' length (three times the words):
        # the chart covers the batch's words only.
        length = ops.maximum(ops.max(ops.cast(num_words, "int32")), 1)
        labels = self.span_targets(targets, length)
        scores = self.span_scores(encoder_output[:, :length])
        nll = keras.losses.sparse_categorical_crossentropy(labels, scores, from_logits=True)
        words = ops.arange(length)
        valid = ((words[None, :, None] <= words[None, None, :])
                 & (words[None, None, :] < ops.cast(num_words, "int32")[:, None, None]))
        return ops.sum(nll * ops.cast(valid, "float32"))

    def plan_length(self, source_length: int) -> int:
        """The longest plan of a padded source length: every word's slot, the
        2S - 1 spans of a binary tree each opened and closed MAX_CHAIN deep, EOS."""
        return source_length * (1 + 4 * MAX_CHAIN) + 1

    def parse(self, encoder_output, num_words):
        """The chart's trees: (plan int32 [B, plan_length(S)], the tagger's logits
        float32 [B, S, V], non-slot ids excluded); the plan's slots hold its best tags."""
        logp = ops.log_softmax(self.span_scores(encoder_output), axis=-1)
        best = ops.max(logp[..., 1:], axis=-1)
        label = ops.cast(ops.argmax(logp[..., 1:], axis=-1), "int32") + 1
        margin = best - logp[..., 0] + self.span_bias
        length = encoder_output.shape[1]
        in_tree = chart.best_trees(ops.maximum(margin, 0.0), num_words)
        words = ops.arange(length)
        root = ((words[None, :, None] == 0)
                & (words[None, None, :] == ops.cast(num_words, "int32")[:, None, None] - 1))
        labels = ops.where((margin > 0) | root, label, 0)
        tags = ops.where(self.word_slots > 0, ops.cast(self.tagger(encoder_output), "float32"),
                         _EXCLUDED)  # Only word slots.
        slot_tags = ops.cast(ops.argmax(tags, axis=-1), "int32")
        plan = chart.plan_tokens(in_tree, labels, ops.cast(self.span_chains, "int32"),
                                 ops.cast(self.span_closes, "int32"), slot_tags, num_words,
                                 self.plan_length(length))
        return plan, tags

    def init_cache(self, inputs, max_decode_length):
        """Encodes `inputs` int32 [B, S] and parses them with the chart.

        Returns:
          self_cache: {"count": int32 [B] zeros} (word slots so far).
          cross_cache: {"plan": int32 [B, plan_length(S)], "tags": float32 [B, S, V]}.
        """
        del max_decode_length  # The plan is as long as any tree of S words.
        encoder_output, input_mask = self.encode(inputs, training=False)
        plan, tags = self.parse(encoder_output, source_last(input_mask))
        counts = ops.zeros((ops.shape(inputs)[0],), "int32")
        return {"count": counts}, {"plan": plan, "tags": tags}

    def grow_self_cache(self, self_cache, length):
        """Nothing grows: the plan is whole from the start."""
        del length
        return self_cache

    def decode_step(self, ids, index, self_cache, cross_cache, in_place=False):
        """The plan's token at `index` as logits (the model contract): all the mass
        on a planned bracket or EOS; at a planned word slot, the tagger's logits at
        that word (the search's constraint and tag dictionary choose among them).

        Args:
          ids: int [B], the token at position `index - 1` (0 at index 0).
          index: int32 scalar, the position being predicted.
          self_cache, cross_cache: from `init_cache` (cross rows may be repeated per beam).

        Returns:
          (float32 logits [B, V] for position `index`, updated self_cache).
        """
        del in_place  # Nothing is written in place: the plan is whole.
        counts = self_cache["count"] + self._is_slot(ids)
        plan, tags = cross_cache["plan"], cross_cache["tags"]
        position = ops.minimum(ops.cast(index, "int32"), plan.shape[1] - 1)
        token = ops.take(plan, position, axis=1)  # [B]
        word = ops.minimum(counts, tags.shape[1] - 1)
        slot_logits = ops.einsum("bs,bsv->bv", ops.one_hot(word, tags.shape[1]), tags)
        planned = ops.where(ops.arange(self.target_vocab_size)[None, :] == token[:, None],
                            0.0, _EXCLUDED)
        logits = ops.where(self._is_slot(token)[:, None] > 0, slot_logits, planned)
        return logits, {"count": counts}

