"""SentencePiece BPE tokenization in core TensorFlow ops (no tensorflow_text at run time).

`tensorflow_text.SentencepieceTokenizer` runs a custom op (`SentencepieceOp`) that
stock TensorFlow binaries such as TF Serving lack. `CoreSentencePiece` reads a BPE
model proto once, in Python, into constant tensors and `tf.lookup.StaticHashTable`s;
`tokenize` and `detokenize` use only core ops (tf.strings, tf.lookup, tf.ragged,
tf.while_loop, tf.gather), so a SavedModel holding one loads in any TensorFlow.

Tokenize does what SentencePiece does (normalizer.cc, bpe_model.cc,
sentencepiece_processor.cc):

1. UTF-8 decoding with SentencePiece's rules: each byte that does not start a valid
   character (overlong, surrogate, truncated) becomes one U+FFFD.
2. Normalization, read from the model's `precompiled_charsmap` (a Darts trie,
   decoded here; only maps of one character to U+0020 are supported, as
   `t2t_lite.data.text_encoder.train_vocab` writes for each `str.isspace`
   character), then `remove_extra_whitespaces` (leading spaces dropped, runs
   collapsed), spaces -> "▁" (U+2581), `add_dummy_prefix` (a leading "▁"), and
   every trailing "▁" dropped, a "▁" typed in the input included.
3. BPE: characters are the first symbols; each step merges the adjacent pair whose
   concatenation is a NORMAL piece of highest score, the leftmost of equal scores,
   one merge at a time, until no pair is a piece. Control, unknown and byte pieces
   never match ("<unk>" or "<0x41>" in the text stay characters). A symbol is an
   integer (a piece's id, or vocab_size + code point for a character that is no
   piece) and a hash table maps each pair of symbols that makes a piece to it, so
   the loop builds no strings. When no piece has a "▁" after its first character
   (SentencePiece's trainer splits at whitespace), no merge crosses a "▁", so each
   word ("▁" up to the next) is merged on its own with the same result; otherwise
   a line is one word. The batch's words are the rows of one matrix and one
   `tf.while_loop`: each iteration merges the best pair of every row, looks up
   the two new pairs beside it, and retires the rows with no pair left (the matrix
   narrows to its longest row): as many iterations as the longest word's merges.
4. A final symbol that is no piece (a character the model did not learn) is
   spelled as its UTF-8 bytes, byte pieces `<0xNN>` (byte fallback).

Detokenize follows SentencePiece's `Decode`: control pieces are empty, `<unk>` is
the model's `unk_surface` (" ⁇ "), "▁" is a space, a piece's leading "▁" is
dropped while nothing has been written yet, and each run of byte pieces is UTF-8
decoded with one U+FFFD per invalid byte.

Both are exact (the ids and text of the `sentencepiece` package, on every input)
for the models this supports; the constructor refuses, with a one-line ValueError,
any model it cannot reproduce: another model type, another normalization,
user-defined or unused pieces, no byte fallback, whitespace as suffix, a
denormalizer.
"""

from __future__ import annotations


import numpy as np
import tensorflow as tf

from t2t_lite.serving.sentencepiece_model import (BYTE as _BYTE, NORMAL as _NORMAL,
                                                  UNKNOWN as _UNKNOWN)
from t2t_lite.serving.sentencepiece_model import check_model as _check_model
from t2t_lite.serving.sentencepiece_model import parse as _parse
from t2t_lite.serving.sentencepiece_model import space_codepoints as _space_codepoints

SPACE_MARK = "\u2581"
_REPLACEMENT = 0xFFFD
_NUM_CODEPOINTS = 0x110000


class CoreSentencePiece(tf.Module):
    """A SentencePiece BPE model applied with core TensorFlow ops only.

    Args:
      model_proto: the serialized SentencePiece model (a `.model` file's bytes).
      name: the tf.Module name.

    Raises:
      ValueError: a model whose encoding or decoding this cannot reproduce exactly.
    """

    def __init__(self, model_proto: bytes, name: str | None = None):
        super().__init__(name=name)
        model = _parse(model_proto)
        pieces = [p.piece for p in model.pieces]
        types = [p.type for p in model.pieces]
        _check_model(model, pieces, types)
        self.vocab_size = len(pieces)
        self._spaces = tf.constant(_space_codepoints(model.normalizer_spec), tf.int32)
        self._add_dummy_prefix = model.normalizer_spec.add_dummy_prefix
        normal = {p: i for i, (p, t) in enumerate(zip(pieces, types)) if t == _NORMAL}
        chars = sorted((ord(p), i) for p, i in normal.items() if len(p) == 1)
        self._chars = _table([c for c, _ in chars], [i for _, i in chars])
        # Pair key: left * base + right; base leaves room for every character's symbol
        # and makes a key with a -1 (padding) side match nothing.
        self._base = self.vocab_size + _NUM_CODEPOINTS + 1
        pair_keys, pair_values = _pair_rules(normal, self.vocab_size, self._base)
        # No merge makes a piece with "▁" after its start, so none crosses a "▁": the
        # words (a "▁" and what follows up to the next) are merged independently.
        self._split_words = not any(SPACE_MARK in p[1:] for p in normal)
        self._pairs = _table(pair_keys, pair_values)
        scores = np.array([p.score for p in model.pieces], np.float32)
        self._rank = tf.constant(np.unique(scores, return_inverse=True)[1].reshape(-1),
                                 tf.int64)
        index = {p: i for i, p in enumerate(pieces)}
        byte_ids = [index[f"<0x{b:02X}>"] for b in range(256)]
        self._byte_ids = tf.constant(byte_ids, tf.int32)
        byte_value = np.full(self.vocab_size, -1, np.int32)
        byte_value[byte_ids] = np.arange(256)
        self._byte_value = tf.constant(byte_value)
        self._byte_strings = tf.constant([bytes([b]) for b in range(256)])
        texts, first_texts = _piece_texts(pieces, types, model.trainer_spec.unk_surface)
        self._texts = tf.constant(texts)
        self._first_texts = tf.constant(first_texts)
        # Pieces that write nothing when nothing has been written yet.
        self._silent_first = tf.constant([t == "" and ty != _BYTE
                                          for t, ty in zip(first_texts, types)])

    @tf.autograph.experimental.do_not_convert  # Plain graph code: faster tracing.
    def tokenize(self, texts):
        """string [B] -> int32 RaggedTensor [B, (n)]: SentencePiece's ids, no EOS."""
        texts = tf.convert_to_tensor(texts, tf.string)
        split = tf.strings.bytes_split(texts)
        data = tf.cast(tf.reshape(tf.io.decode_raw(split.flat_values, tf.uint8), [-1]),
                       tf.int32)
        rows = tf.cast(split.value_rowids(), tf.int32)
        nrows = tf.cast(split.nrows(), tf.int32)
        length, codepoint, covered = _decode_utf8(data, rows)
        keep = (length > 0) | ~covered
        chars, rows = self._normalize(
            tf.boolean_mask(tf.where(length > 0, codepoint, _REPLACEMENT), keep),
            tf.boolean_mask(rows, keep), nrows)
        # Words: merges never cross a row's start, nor (see _split_words) a "▁".
        first = tf.concat([[True], rows[1:] != rows[:-1]], 0)[:tf.size(rows)]
        if self._split_words:
            first |= chars == ord(SPACE_MARK)
        words = tf.cumsum(tf.cast(first, tf.int32)) - 1
        codepoints = tf.cast(chars, tf.int64)
        found = self._chars.lookup(codepoints)
        symbols = tf.where(found >= 0, found, self.vocab_size + codepoints)
        dense = tf.RaggedTensor.from_value_rowids(
            symbols, words, tf.reduce_sum(tf.cast(first, tf.int32))).to_tensor(-1)
        merged = self._merge(tf.pad(dense, [[0, 0], [0, 1]], constant_values=-1))
        ids = self._spell(tf.RaggedTensor.from_tensor(merged, padding=-1))
        word_rows = tf.cast(tf.boolean_mask(rows, first), tf.int64)
        return tf.RaggedTensor.from_value_rowids(
            ids, word_rows, tf.cast(nrows, tf.int64)).merge_dims(1, 2)

    def _normalize(self, chars, rows, nrows):
        """Code points [n] of rows `rows` -> the normalized ones (spaces as "▁"), rows."""
        where = tf.searchsorted(self._spaces, chars)
        where = tf.minimum(where, tf.size(self._spaces) - 1)
        space = (chars == 0x20) | (tf.gather(self._spaces, where) == chars)
        prev_space = tf.concat([[True], space[:-1] | (rows[1:] != rows[:-1])], 0)
        prev_space = prev_space[:tf.size(space)]
        keep = ~(space & prev_space)
        chars = tf.where(space, ord(SPACE_MARK), chars)
        text = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(chars, keep), tf.boolean_mask(rows, keep), nrows)
        if self._add_dummy_prefix:
            marks = tf.RaggedTensor.from_row_lengths(
                tf.fill([nrows], ord(SPACE_MARK)), tf.ones([nrows], tf.int32))
            text = tf.concat([marks, text], axis=1)
        # Drop every trailing "▁".
        values, rows = text.flat_values, tf.cast(text.value_rowids(), tf.int32)
        index = tf.range(tf.size(values))
        last = tf.math.unsorted_segment_max(
            tf.where(values != ord(SPACE_MARK), index, -1), rows, nrows)
        keep = index <= tf.gather(last, rows)
        return tf.boolean_mask(values, keep), tf.boolean_mask(rows, keep)

    def _pair(self, left, right):
        """The piece id that int64 symbols `left` + `right` make, else -1 (any shape)."""
        return self._pairs.lookup(left * self._base + right)

    def _merge(self, symbols):
        """BPE merges on int64 [N, W] symbols, one word a row (-1 pads each row's end).

        Rows with no pair left leave the loop (written into the result); the active
        matrix narrows to its longest row, so a long word costs little to the others.
        """
        full = tf.shape(symbols)[1]
        pairs = self._pair(symbols[:, :-1], symbols[:, 1:])
        alive = tf.reduce_any(pairs >= 0, axis=1)
        active = [tf.boolean_mask(x, alive) for x in
                  (symbols, pairs, tf.range(tf.shape(symbols)[0]))]

        def body(result, symbols, pairs, rows):
            symbols, pairs = self._merge_step(symbols, pairs)
            done = ~tf.reduce_any(pairs >= 0, axis=1)
            finished = tf.pad(tf.boolean_mask(symbols, done),
                              [[0, 0], [0, full - tf.shape(symbols)[1]]], constant_values=-1)
            result = tf.tensor_scatter_nd_update(
                result, tf.boolean_mask(rows, done)[:, tf.newaxis], finished)
            symbols, pairs, rows = [tf.boolean_mask(x, ~done) for x in (symbols, pairs, rows)]
            longest = tf.reduce_max(tf.reduce_sum(tf.cast(symbols >= 0, tf.int32), axis=1))
            width = tf.maximum(longest + 1, 2)
            return result, symbols[:, :width], pairs[:, :width - 1], rows

        result, *_ = tf.while_loop(
            lambda result, symbols, pairs, rows: tf.size(rows) > 0, body,
            (symbols, *active), parallel_iterations=1, maximum_iterations=full,
            shape_invariants=(symbols.shape, tf.TensorShape([None, None]),
                              tf.TensorShape([None, None]), tf.TensorShape([None])))
        return result

    def _merge_step(self, symbols, pairs):
        """Merges the best pair (highest score, then leftmost) of every row [A, W]."""
        width = tf.shape(symbols)[1]
        wide = tf.cast(width, tf.int64)
        column = tf.range(width)[tf.newaxis]
        pair_column = column[:, :-1]
        tie_break = wide - 1 - tf.cast(pair_column, tf.int64)  # Leftmost first.
        rank = tf.gather(self._rank, tf.maximum(pairs, 0))
        best = tf.reduce_max(tf.where(pairs >= 0, rank * wide + tie_break, -1), axis=1)
        at = tf.where(best >= 0, tf.cast(wide - 1 - best % wide, tf.int32), width)
        merged = tf.gather(pairs, tf.minimum(at, width - 2), batch_dims=1)
        padded = tf.pad(symbols, [[0, 0], [1, 2]], constant_values=-1)
        left = tf.gather(padded, at, batch_dims=1)  # symbols[at - 1]
        right = tf.gather(padded, tf.minimum(at + 3, width + 2), batch_dims=1)
        new = self._pair(tf.stack([left, merged], 1), tf.stack([merged, right], 1))
        at, merged = at[:, tf.newaxis], merged[:, tf.newaxis]
        symbols = tf.where(column < at, symbols,
                           tf.where(column == at, merged, padded[:, 2:-1]))
        shifted = tf.pad(pairs[:, 1:], [[0, 0], [0, 1]], constant_values=-1)
        pairs = tf.where(pair_column < at - 1, pairs, tf.where(
            pair_column == at - 1, new[:, :1],
            tf.where(pair_column == at, new[:, 1:], shifted)))
        return symbols, pairs

    def _spell(self, symbols):
        """Final symbols -> ids: a piece's id, or the byte pieces of a character's UTF-8."""
        values = tf.cast(symbols.flat_values, tf.int32)
        known = values < self.vocab_size
        codepoint = tf.where(known, 0, values - self.vocab_size)
        count = 1 + tf.add_n([tf.cast(codepoint >= limit, tf.int32)
                              for limit in (0x80, 0x800, 0x10000)])
        lead = tf.gather([0, 0x00, 0xC0, 0xE0, 0xF0], count)
        columns = [tf.where(known, values, tf.gather(
            self._byte_ids, lead | tf.bitwise.right_shift(codepoint, 6 * (count - 1))))]
        for j in (1, 2, 3):
            shift = tf.maximum(6 * (count - 1 - j), 0)
            byte = 0x80 | (tf.bitwise.right_shift(codepoint, shift) & 0x3F)
            columns.append(tf.gather(self._byte_ids, byte))
        spelled = tf.RaggedTensor.from_tensor(
            tf.stack(columns, axis=1), lengths=tf.where(known, 1, count))
        return tf.RaggedTensor.from_row_splits(
            spelled.values, tf.gather(spelled.row_splits, symbols.row_splits))

    @tf.autograph.experimental.do_not_convert
    def detokenize(self, ids):
        """int32 [B, (n)] ids (no EOS, no padding) -> string [B]: SentencePiece's decode.

        A dense [B, n] tensor is read as B rows of n ids. An id outside
        [0, vocab_size) is an error (InvalidArgumentError), as in SentencePiece.
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        flat = tf.cast(ids.flat_values, tf.int32)
        rows = tf.cast(ids.value_rowids(), tf.int32)
        byte = tf.gather(self._byte_value, flat)
        loud = tf.cast(~tf.gather(self._silent_first, flat), tf.int32)
        before = tf.cumsum(loud, exclusive=True)
        first = before == tf.gather(before, tf.gather(tf.cast(ids.row_splits, tf.int32),
                                                      rows))
        text = tf.where(first, tf.gather(self._first_texts, flat),
                        tf.gather(self._texts, flat))
        length, _, covered = _decode_utf8(byte, rows)
        byte_text = tf.where((length > 0) | covered,
                             tf.gather(self._byte_strings, tf.maximum(byte, 0)),
                             chr(_REPLACEMENT).encode())
        text = tf.where(byte >= 0, byte_text, text)
        return tf.strings.unsorted_segment_join(text, rows, ids.nrows(out_type=tf.int32))


def _decode_utf8(data, rows):
    """SentencePiece's UTF-8 decoding (util.cc DecodeUTF8) of byte runs.

    Args:
      data: int32 [n], bytes 0..255, or -1 for what is not a byte (a run ends there).
      rows: int32 [n], the row of each; a run also ends where the row changes.

    Returns:
      (length, codepoint, covered), each [n]: the length (1..4) of the valid
      character starting at each byte, else 0; its code point; whether the byte is
      a continuation inside a valid character that starts before it. A byte with
      length 0 that is not covered is invalid (U+FFFD).
    """
    n = tf.size(data)
    padded = tf.concat([data, [-1, -1, -1]], 0)
    padded_rows = tf.concat([rows, [-1, -1, -1]], 0)
    ahead = [data] + [tf.where(padded_rows[k:k + n] == rows, padded[k:k + n], -1)
                      for k in (1, 2, 3)]
    trail = [(b >= 0x80) & (b < 0xC0) for b in ahead]
    low = [b & 0x3F for b in ahead]
    lead = data
    cp2 = (lead & 0x1F) * 0x40 + low[1]
    cp3 = (lead & 0x0F) * 0x1000 + low[1] * 0x40 + low[2]
    cp4 = (lead & 0x07) * 0x40000 + low[1] * 0x1000 + low[2] * 0x40 + low[3]
    one = (lead >= 0) & (lead < 0x80)
    two = ((lead & 0xE0) == 0xC0) & trail[1] & (cp2 >= 0x80)
    three = (((lead & 0xF0) == 0xE0) & trail[1] & trail[2] & (cp3 >= 0x800)
             & ((cp3 < 0xD800) | (cp3 >= 0xE000)))
    four = (((lead & 0xF8) == 0xF0) & trail[1] & trail[2] & trail[3]
            & (cp4 >= 0x10000) & (cp4 < _NUM_CODEPOINTS))
    length = tf.where(one, 1, tf.where(two, 2, tf.where(three, 3, tf.where(four, 4, 0))))
    codepoint = tf.where(one, lead, tf.where(two, cp2, tf.where(three, cp3, cp4)))
    before = tf.concat([[0, 0, 0], length], 0)
    covered = tf.zeros([n], tf.bool)
    for k in (1, 2, 3):
        covered |= before[3 - k:3 - k + n] > k
    return length, codepoint, covered


def _table(keys, values):
    """A StaticHashTable int64 -> int64, default -1 (a tracked resource)."""
    if not keys:  # A table cannot be empty; this entry gives the default.
        keys, values = [-2], [-1]
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys, tf.int64, shape=[len(keys)]),
        tf.constant(values, tf.int64, shape=[len(values)])), -1)


def _pair_rules(normal: dict[str, int], vocab_size: int, base: int):
    """Every (left, right) symbol pair whose concatenation is a NORMAL piece.

    A symbol is a NORMAL piece (its id) or one character (vocab_size + code point
    when the character is no piece); key = left * base + right.
    """
    def symbol(text):
        if text in normal:
            return normal[text]
        return vocab_size + ord(text) if len(text) == 1 else None

    keys, values = [], []
    for piece, piece_id in normal.items():
        for cut in range(1, len(piece)):
            left, right = symbol(piece[:cut]), symbol(piece[cut:])
            if left is not None and right is not None:
                keys.append(left * base + right)
                values.append(piece_id)
    return keys, values


def _piece_texts(pieces, types, unk_surface):
    """What Decode writes for each id: anywhere, and while nothing is written yet."""
    texts, first_texts = [], []
    for piece, kind in zip(pieces, types):
        if kind == _NORMAL:
            first = piece[len(SPACE_MARK):] if piece.startswith(SPACE_MARK) else piece
            text, first = piece.replace(SPACE_MARK, " "), first.replace(SPACE_MARK, " ")
        else:  # Control and byte pieces write nothing here; <unk> its surface as is.
            text = first = unk_surface if kind == _UNKNOWN else ""
        texts.append(text)
        first_texts.append(first)
    return texts, first_texts
