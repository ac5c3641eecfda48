"""A search that can only build well-formed trees over exactly the input words.

Constituency parsing as translation (Vinyals et al. 2015; section 6.3 of
Vaswani et al. 2017) decodes a linearized tree (`t2t_lite.parsing.ptb.linearize`):
`(S (NP NNP NNP )NP (VP VBZ )VP . )S`, where `(X` opens a phrase, `)X`
closes it and a POS tag is a word slot. An unconstrained beam can close what
is not open, place too many or too few word slots, or stop inside a phrase;
EVALB then drops the sentence. `TreeConstraint` removes that failure class
inside the search: at every step it allows only the tokens that keep the
prefix completable into one tree whose word slots number exactly the input's
words within the maximum decode length:

- `(X` opens a phrase (only for labels whose `)X` is in the vocabulary) if
  the tree is not finished, a word is left to put under it, and the shortest
  completion still fits;
- a POS tag fills a word slot inside an open phrase while words remain;
- `)X` closes the innermost open phrase only if it is labelled X and already
  has a child, and closes the root only once every word has its slot;
- EOS only after the root has closed; anything else (padding, unknown and
  byte pieces) never.

With a word-level source (one id per word), a tag dictionary can narrow the
tags further, as POS taggers' do (Ratnaparkhi 1996): the slot of the i-th
word takes only the tags that word had in the training trees, for words seen
`min_count` times or more; other words keep every tag (`tag_dictionary`). A
slot then cannot drift off its word: a comma is tagged `,`, so COLLINS.prm
deletes the same punctuation from output and gold.

The shortest completion of a prefix with `d` open phrases and `w` words left
is w + d + 1 tokens (EOS included), so a prefix is kept only if that fits in
the steps left; the search can therefore always finish. The mask is applied
after normalization (`beam_search.beam_search`'s `allowed_fn`): allowed tokens
keep the model's log-probabilities, and where the mask never removes a
candidate the search is the unconstrained one. Translation passes no
constraint and runs the unchanged search.

The state of each beam (rows N = B * K) travels in the decoding cache, so the
beam search reorders it with the beams. Only `keras.ops`.
"""

from __future__ import annotations

import numpy as np
from keras import ops

from t2t_lite.parsing import ptb
from t2t_lite.ids import EOS_ID

OTHER, OPEN, CLOSE, TAG, END = 0, 1, 2, 3, 4  # Token kinds.
SPACE_MARK = "\u2581"  # SentencePiece's word-start mark.


def token_tables(target_pieces: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Target pieces -> (kind int32 [V], label int32 [V]).

    A piece counts only if it is a whole word (`▁(NP`, `▁)NP`, `▁NNP`): byte
    and special pieces are OTHER. Labels are numbered in piece order; an open
    whose close is missing from the vocabulary is OTHER (it could not close).
    """
    kinds = np.zeros(len(target_pieces), np.int32)
    labels = np.zeros(len(target_pieces), np.int32)
    numbers: dict[str, int] = {}
    closes = {p[1:] for p in target_pieces if p.startswith(SPACE_MARK + ptb.CLOSE)
              and len(p) > 2}
    for i, piece in enumerate(target_pieces):
        if i == EOS_ID:
            kinds[i] = END
            continue
        if not piece.startswith(SPACE_MARK) or len(piece) < 2 or piece.startswith("<"):
            continue
        token = piece[1:]
        kind = ptb.token_kind(token)
        if kind == "open" and ptb.CLOSE + ptb.token_label(token) not in closes:
            continue
        kinds[i] = {"open": OPEN, "close": CLOSE, "tag": TAG}[kind]
        if kind != "tag":
            labels[i] = numbers.setdefault(ptb.token_label(token), len(numbers) + 1)
    return kinds, labels


def tag_dictionary(examples, source_size: int, target_pieces: list[str],
                   min_count: int = 5) -> np.ndarray:
    """bool [V_source, V_target]: the tags each source word may take.

    `examples`: (source ids, target ids) of the training trees, a word-level
    source (the i-th id is the i-th word; EOS and padding are ignored). A word
    seen `min_count` times or more may take the tags it had; any other id, and
    every non-tag target token, is left unrestricted (all True).
    """
    kinds = token_tables(target_pieces)[0]
    is_tag = kinds == TAG
    seen = np.zeros((source_size, len(target_pieces)), np.int64)
    for source, target in examples:
        words = [w for w in source if w > EOS_ID]
        tags = [t for t in target if is_tag[t]]
        if len(words) == len(tags):
            np.add.at(seen, (np.asarray(words, np.int64), np.asarray(tags, np.int64)), 1)
    frequent = seen.sum(axis=1) >= max(min_count, 1)
    table = np.ones(seen.shape, bool)
    table[np.ix_(frequent, is_tag)] = seen[np.ix_(frequent, is_tag)] > 0
    return table


def word_starts(source_pieces: list[str]) -> np.ndarray:
    """bool [V_source]: the pieces that begin a word (SentencePiece's `▁` prefix)."""
    return np.array([p.startswith(SPACE_MARK) for p in source_pieces], bool)


class TreeConstraint:
    """Allowed next tokens for linearized trees (see the module docstring).

    Args:
      target_pieces: the target vocabulary's pieces, in id order.
      source_pieces: the source vocabulary's pieces; an input's word count is
        the number of its pieces that start a word.
      max_depth: the deepest nesting a tree may reach (a static stack size).
      tags: None, or `tag_dictionary`'s table (word-level sources only): the
        tags the slot of each input word may take.
    """

    def __init__(self, target_pieces: list[str], source_pieces: list[str],
                 max_depth: int = 128, tags: np.ndarray | None = None):
        kinds, labels = token_tables(target_pieces)
        if not (kinds == OPEN).any() or not (kinds == TAG).any():
            raise ValueError("the target vocabulary has no phrase or POS-tag pieces; "
                             "it is not a linearized-tree vocabulary")
        self.kinds = kinds
        self.labels = labels
        self.word_starts = word_starts(source_pieces)
        self.max_depth = max_depth
        if tags is not None:
            if tags.shape != (len(source_pieces), len(target_pieces)):
                raise ValueError(f"tags has shape {tags.shape}, not (source, target) vocabulary "
                                 f"sizes ({len(source_pieces)}, {len(target_pieces)})")
            if not self.word_starts[EOS_ID + 2:].all():
                raise ValueError("a tag dictionary needs a word-level source (one id per word)")
        self.tags = tags

    def initial_state(self, inputs) -> dict:
        """inputs int32 [B, S] source ids -> the state of B empty prefixes."""
        starts = ops.convert_to_tensor(self.word_starts)
        words = ops.sum(ops.cast(ops.take(starts, inputs, axis=0), "int32"), axis=1)
        rows = ops.shape(inputs)[0]
        zeros = ops.zeros((rows,), "int32")
        false = ops.zeros((rows,), "bool")
        state = {"words_left": words, "depth": zeros, "empty": false, "started": false,
                 "done": false, "stack": ops.zeros((rows, self.max_depth), "int32")}
        if self.tags is not None:  # The words, to look up the slot's word.
            state.update(inputs=ops.cast(inputs, "int32"), words=words)
        return state

    def update(self, state: dict, tokens) -> dict:
        """The state after each row appends `tokens` int32 [N] (others: unchanged)."""
        kind = ops.take(ops.convert_to_tensor(self.kinds), tokens, axis=0)
        label = ops.take(ops.convert_to_tensor(self.labels), tokens, axis=0)
        is_open, is_close, is_tag = kind == OPEN, kind == CLOSE, kind == TAG
        depth = state["depth"]
        slots = ops.arange(self.max_depth, dtype="int32")[None, :]
        push = ops.logical_and(is_open[:, None], slots == depth[:, None])
        new_depth = depth + ops.cast(is_open, "int32") - ops.cast(is_close, "int32")
        return {
            "words_left": state["words_left"] - ops.cast(is_tag, "int32"),
            "depth": new_depth,
            "empty": ops.where(is_open, True, ops.where(is_close | is_tag, False,
                                                         state["empty"])),
            "started": ops.logical_or(state["started"], is_open),
            "done": ops.logical_or(state["done"],
                                   ops.logical_and(is_close, new_depth == 0)),
            "stack": ops.where(push, label[:, None], state["stack"]),
            **{k: state[k] for k in ("inputs", "words") if k in state},
        }

    def allowed(self, state: dict, index, max_decode_length: int):
        """bool [N, V]: the tokens each row may append at position `index`."""
        left = state["words_left"]
        depth = state["depth"]
        done = state["done"]
        # Tokens still to generate after this one; the shortest completion of
        # a prefix is words_left + depth + 1 (EOS).
        after = max_decode_length - index - 1
        top = ops.take_along_axis(state["stack"], ops.maximum(depth - 1, 0)[:, None], axis=1)
        open_row = (~done & (depth < self.max_depth) & (left >= 1)
                    & (~state["started"] | (depth > 0)) & (left + depth + 2 <= after))
        tag_row = ~done & (depth > 0) & (left >= 1) & (left + depth <= after)
        close_row = ((depth > 0) & ~state["empty"] & ((depth > 1) | (left == 0))
                     & (left + depth <= after))
        end_row = done | (~state["started"] & (left == 0))
        kinds = ops.convert_to_tensor(self.kinds)[None, :]
        labels = ops.convert_to_tensor(self.labels)[None, :]
        tag_ok = tag_row[:, None]
        if self.tags is not None:
            tag_ok = tag_ok & self._slot_tags(state)
        return ((kinds == OPEN) & open_row[:, None]
                | (kinds == TAG) & tag_ok
                | (kinds == CLOSE) & close_row[:, None] & (labels == top)
                | (kinds == END) & end_row[:, None])

    def _slot_tags(self, state):
        """bool [N, V]: the tag dictionary's row of the word the next slot is for."""
        inputs = state["inputs"]
        slot = ops.minimum(state["words"] - state["words_left"], ops.shape(inputs)[1] - 1)
        word = ops.take_along_axis(inputs, slot[:, None], axis=1)[:, 0]
        return ops.take(ops.convert_to_tensor(self.tags), word, axis=0)

    def adjust_logits(self, state, logits):
        """logits [N, V] -> the same, with the tag dictionary's tags renormalized
        (the forbidden ones at -1e30).

        The probability of the tags the dictionary forbids for the slot's word
        goes to the ones it allows, in proportion, so the dictionary changes
        which tag fills a slot but not how likely a slot is against a bracket
        (masking alone would make the beam open brackets to avoid a word whose
        preferred tag is forbidden). Without a dictionary: unchanged.
        """
        if self.tags is None:
            return logits
        is_tag = ops.convert_to_tensor(self.kinds == TAG)[None, :]
        kept = is_tag & self._slot_tags(state)
        floor = ops.full_like(logits, -1e30)
        shift = (ops.logsumexp(ops.where(is_tag, logits, floor), axis=-1)
                 - ops.logsumexp(ops.where(kept, logits, floor), axis=-1))
        # Forbidden tags leave the softmax's normalizer too (the mask removes them anyway).
        return ops.where(kept, logits + shift[:, None], ops.where(is_tag, floor, logits))
