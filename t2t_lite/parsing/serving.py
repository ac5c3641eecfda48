"""The parser's text in, trees out, in the TensorFlow graph (core ops only).

`ParserTextModule.serve`: sentences tf.string [B] -> trees tf.string [B], scores [B],
the trees `t2t_lite-decoder` writes for the same lines, with nothing of
t2t_lite or tensorflow_text needed where the SavedModel runs:

- words: the line split at whitespace as Python's `str.split` splits (every
  character `str.isspace` calls whitespace);
- source ids: each word written as the treebank writes it (`ptb.treebank_word`),
  looked up in the word-level vocabulary (a hash table of its pieces), and a
  word it lacks given the id of its class piece (`word_classes.word_class`,
  here in regular expressions: digits, letters, hyphen, case, suffix);
- the search: the ids module's `translate_ids`, which holds the tree constraint
  and the tag dictionary as constants (`Problem.decode_constraint`);
- trees: the linearization's pieces with their word slots filled with the
  input's words, written as `ptb.to_string` writes them (`(TOP (S (NP (DT The)
  ...)))`, brackets in words escaped as `-LRB-` / `-RRB-`), or the flat `XX`
  tree `WsjParsing.format_output` writes for an output with the wrong number
  of word slots (a source cut at max_length); an empty line gives "" (score 0).

Where Unicode's tables differ between Python and RE2 the classes of a few
non-ASCII words may differ: `str.isupper` counts some symbols (Other_Uppercase,
e.g. circled letters) as capitals, RE2's `\\p{Lu}` does not.
"""

from __future__ import annotations

import sys

import tensorflow as tf

from t2t_lite.data import word_classes
from t2t_lite.ids import EOS_ID, PAD_ID
from t2t_lite.parsing import ptb
from t2t_lite.parsing.tree_constraint import CLOSE, OPEN, TAG, token_tables

UNK_ID = 2


def _char_class(predicate, extra: str = "") -> str:
    """An RE2 character class of every code point `predicate` holds for (plus `extra`)."""
    points = [c for c in range(sys.maxunicode + 1) if predicate(chr(c))]
    ranges, start = [], None
    for i, c in enumerate(points):
        if start is None:
            start = c
        if i + 1 == len(points) or points[i + 1] != c + 1:
            ranges.append(f"\\x{{{start:x}}}" + (f"-\\x{{{c:x}}}" if c != start else ""))
            start = None
    return "[" + extra + "".join(ranges) + "]"


WHITESPACE = _char_class(str.isspace)  # What Python's str.split splits at.
# str.isdigit: the decimal digits (\p{Nd}) and the other digits (superscripts, ...).
DIGIT = _char_class(lambda c: c.isdigit() and not c.isdecimal(), r"\p{Nd}")
LETTER = r"[\p{L}]"  # str.isalpha: the letter categories Lu Ll Lt Lm Lo.


def tf_words(lines):
    """tf.string [B] -> ragged [B, (W)]: `line.split()` of each line."""
    return tf.strings.split(tf.strings.regex_replace(lines, WHITESPACE + "+", " "))


def tf_escape(words):
    """`ptb.escape_word`: `(` -> `-LRB-`, `)` -> `-RRB-`."""
    return tf.strings.regex_replace(tf.strings.regex_replace(words, r"\(", ptb.ESCAPES["("]),
                                    r"\)", ptb.ESCAPES[")"])


def tf_treebank_words(words):
    """`ptb.treebank_word`: a bracket alone -> its treebank escape, else `tf_escape`."""
    out = tf_escape(words)
    for raw, escaped in ptb.BRACKET_WORDS.items():
        out = tf.where(words == raw, escaped, out)
    return out


def _contains(words, pattern):
    return tf.strings.regex_full_match(words, f"(?s).*{pattern}.*")


def tf_word_class(words):
    """`word_classes.word_class` of each word (a flat tf.string tensor)."""
    piece = word_classes._piece  # noqa: SLF001 (the one spelling of a class piece)
    lower = tf.strings.lower(words, encoding="utf-8")
    length = tf.strings.length(lower, unit="UTF8_CHAR")
    suffix = tf.fill(tf.shape(words), "")
    for s in reversed(word_classes.SUFFIXES):  # The first (longest) that fits wins.
        fits = tf.strings.regex_full_match(lower, f"(?s).*{s}") & (length > len(s) + 1)
        suffix = tf.where(fits, "-" + s, suffix)
    hyphen = _contains(words, "-")
    caps = (~hyphen & _contains(words, r"\p{Lu}") & ~_contains(words, r"[\p{Ll}\p{Lt}]")
            & (tf.strings.length(words, unit="UTF8_CHAR") > 1))
    shape = tf.where(hyphen, "hyph", tf.where(
        tf.strings.regex_full_match(words, r"(?s)\p{Lu}.*"), "Cap", "low"))
    with_suffix = tf.strings.join([piece("").replace(">", ""), shape, suffix, ">"])
    out = tf.where(caps, piece("CAPS"), with_suffix)
    out = tf.where(_contains(words, LETTER), out, piece("sym"))
    return tf.where(_contains(words, DIGIT), piece("num"), out)


class WordIds(tf.Module):
    """Words -> ids of a word-level vocabulary, as `SubwordVocab.encode` gives them."""

    def __init__(self, pieces: list[str]):
        super().__init__(name="word_ids")
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(pieces), tf.range(len(pieces), dtype=tf.int32)), UNK_ID)

    def __call__(self, words):
        """ragged tf.string [B, (W)] -> ragged int32 [B, (W)]."""
        flat = words.flat_values
        known = self.table.lookup(word_classes.SPACE_MARK + flat)
        classes = self.table.lookup(tf_word_class(flat))
        return words.with_flat_values(tf.where(known == UNK_ID, classes, known))


class TreeWriter:
    """Target ids and words -> the tree lines `WsjParsing.format_output` writes."""

    def __init__(self, target_pieces: list[str]):
        kinds, _ = token_tables(target_pieces)
        text = [p[1:] if p.startswith(word_classes.SPACE_MARK) else p for p in target_pieces]
        self.kinds = tf.constant(kinds)
        # What each token writes before its word (tags) or alone: `(NP`, `)`, `(NN `.
        self.heads = tf.constant([
            "(" + ptb.escape_word(t[1:]) if k == OPEN else ")" if k == CLOSE
            else "(" + ptb.escape_word(t) + " " if k == TAG else "" for t, k in zip(text, kinds)])

    def __call__(self, words, ids):
        """words ragged tf.string [B, (W)], ids int32 [B, L] -> tf.string [B]."""
        before_eos = tf.cumsum(tf.cast(ids == EOS_ID, tf.int32), axis=1) == 0
        tokens = tf.ragged.boolean_mask(ids, before_eos & (ids != PAD_ID))
        kind = tf.gather(self.kinds, tokens)
        is_tag = kind == TAG
        slot = tf.cumsum(tf.cast(is_tag, tf.int32), axis=1, exclusive=True)
        n_words = words.row_lengths()
        safe = tf.minimum(slot, tf.maximum(tf.cast(n_words, tf.int32)[:, None] - 1, 0))
        escaped = tf_escape(words)
        word = _gather_rows(escaped, safe)
        first = tf.cumsum(tf.ones_like(kind), axis=1) == 1  # No space before the first.
        lead = tf.where((kind == CLOSE) | first, "", " ")
        part = tf.strings.join([lead, tf.gather(self.heads, tokens),
                                tf.where(is_tag, word, ""), tf.where(is_tag, ")", "")])
        tree = tf.strings.join(["(TOP ", tf.strings.reduce_join(part, axis=1), ")"])
        flat = tf.strings.join(["(TOP ", tf.strings.reduce_join(
            tf.strings.join(["(XX ", escaped, ")"]), axis=1, separator=" "), ")"])
        opens = tf.reduce_sum(tf.cast(kind == OPEN, tf.int64), axis=1)
        closes = tf.reduce_sum(tf.cast(kind == CLOSE, tf.int64), axis=1)
        slots = tf.reduce_sum(tf.cast(is_tag, tf.int64), axis=1)
        formed = (slots == n_words) & (opens == closes) & (opens > 0)
        return tf.where(n_words == 0, "", tf.where(formed, tree, flat))


def _gather_rows(words, index):
    """words ragged [B, (W)], index ragged [B, (T)] -> ragged [B, (T)]: words[b][index[b][t]]."""
    offsets = tf.cast(words.row_starts(), index.dtype)
    return tf.gather(words.flat_values, index + offsets[:, None])


class ParserTextModule(tf.Module):
    """serving_default for a parsing run: sentences in, trees and scores out.

    `translate_tokens`: ragged int32 [B, (n)] source ids without EOS -> {"ids", "scores"}
    (the exporter's: EOS, truncation and padding as the decoder's, then
    `ids_module.translate_ids`)."""

    def __init__(self, ids_module, translate_tokens, source_pieces: list[str],
                 target_pieces: list[str]):
        super().__init__(name="t2t_lite_export_parser")
        self.ids_module = ids_module
        self.translate_ids = ids_module.translate_ids
        self.word_ids = WordIds(source_pieces)
        writer = TreeWriter(target_pieces)

        def serve(inputs):
            words = tf_words(inputs)
            out = translate_tokens(self.word_ids(tf_treebank_words(words)))
            empty = words.row_lengths() == 0
            return {"outputs": writer(words, out["ids"]),
                    "scores": tf.where(empty, 0.0, out["scores"])}

        self.serve = tf.function(serve, input_signature=[
            tf.TensorSpec([None], tf.string, name="inputs")])
