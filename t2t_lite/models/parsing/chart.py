"""Decoding a span (chart) parser: the best binary tree, then its target tokens.

A chart parser scores every span of the input, (first word i, last word j)
inclusive, i <= j, and labels it; its parse is the binary tree whose spans'
scores sum highest (CKY; Stern, Andreas & Klein 2017). `best_trees` finds that
tree: best[i, i] = score[i, i] and

    best[i, j] = score[i, j] + max_{k=i..j-1} (best[i, k] + best[k+1, j])

(ties to the smallest k), filled by width, then followed down from the root
(0, n-1). `plan_tokens` writes a tree as the linearized target of the
sequence-to-sequence parsers (`t2t_lite.parsing.ptb.linearize`):
`(S (NP NNP NNP )NP (VP VBZ )VP . )S`. Each span carries a class whose unary
chain of brackets it writes (class 0: none, so a span the binarization added
writes nothing), so the output reads back with `ptb.delinearize` like the
Transformer parser's.

Both run inside a TensorFlow graph (tf.function, SavedModel) with a static
span dimension and a dynamic batch: the loops are `ops.fori_loop` over widths
with fixed shapes, and ordering the tokens needs no sort, because each word's
block of candidate tokens is laid out in output order and the written ones
are compacted by a running count. Only `keras.ops`. Shapes: B batch, S words
(static), C classes, K chain depth (static), L output length.
"""

from __future__ import annotations

from keras import ops

from t2t_lite.ids import EOS_ID


def best_trees(scores, num_words):
    """float32 [B, S, S] span scores, int32 [B] word counts -> bool [B, S, S].

    True exactly for the 2n-1 spans of the highest-scoring binary tree over
    words 0..n-1 (n = num_words[b]; none for n = 0). Entries of spans past n,
    or with i > j, are ignored, whatever they hold.
    """
    scores = ops.convert_to_tensor(scores, "float32")
    size = scores.shape[-1]
    n = ops.cast(num_words, "int32")[:, None, None]
    pos = ops.arange(size, dtype="int32")
    row, col = pos[:, None], pos[None, :]
    scores = ops.where((row <= col)[None] & (col[None] < n), scores, 0.0)
    best = ops.where((row == col)[None], scores, 0.0)
    split = ops.zeros_like(best, "int32")
    offset = ops.arange(max(size - 1, 0), dtype="int32")[None, :]  # Split k = i + offset.
    last = size * size - 1

    def fill(width, state):  # Spans (i, i + width) from the narrower ones.
        best, split = state
        flat = ops.reshape(best, (-1, size * size))
        left = row * (size + 1) + offset  # (i, k)
        right = (row + offset + 1) * size + row + width  # (k + 1, i + width)
        sums = (ops.take(flat, ops.clip(left, 0, last), axis=1)
                + ops.take(flat, ops.clip(right, 0, last), axis=1))  # [B, S, S-1]
        usable = (offset < width) & (row + width < size)
        sums = ops.where(usable[None], sums, float("-inf"))
        top = ops.max(sums, axis=2, keepdims=True)
        first = ops.min(ops.where(sums == top, offset[None], size), axis=2, keepdims=True)
        here = (col - row == width)[None]
        best = ops.where(here, scores + top, best)
        split = ops.where(here, row[None] + first, split)
        return best, split

    best, split = ops.fori_loop(1, size, fill, (best, split))
    flat_split = ops.reshape(split, (-1, size * size))

    def follow(step, tree):  # Marks the children of the tree's spans of one width.
        width = size - 1 - step
        flat = ops.reshape(tree, (-1, size * size))
        at = ops.clip(pos * (size + 1) + width, 0, last)  # (i, i + width)
        active = ops.take(flat, at, axis=1) & (pos + width < size)[None]  # [B, S] by i
        k = ops.take(flat_split, at, axis=1)
        left = active[:, :, None] & (col[None] == k[:, :, None])  # (i, k)
        parent = ops.clip(pos - width, 0, size - 1)  # Of (k + 1, j): i = j - width.
        active = ops.take(active, parent, axis=1) & (pos >= width)[None]  # [B, S] by j
        k = ops.take(k, parent, axis=1)
        right = active[:, None, :] & (row[None] == k[:, None, :] + 1)  # (k + 1, j)
        return tree | left | right

    root = (row == 0)[None] & (col[None] == n - 1)
    return ops.fori_loop(0, size - 1, follow, root)


def plan_tokens(in_tree, labels, chain_opens, chain_closes, slot_ids, num_words, length):
    """A tree's spans and classes -> int32 [B, length] linearized target ids.

    in_tree: bool [B, S, S], any nested spans (`best_trees`'s); labels: int32
    [B, S, S], a class per span (0: writes nothing); chain_opens, chain_closes:
    int32 [C, K], class c's unary chain of open / close ids, top first,
    0-padded (0 writes nothing); slot_ids: int32 [B, S], word i's slot token;
    num_words: int32 [B]; length: a Python int.

    Word by word: the opens of the spans starting there (widest first, each
    chain top first), the slot, the closes of the spans ending there (narrowest
    first, each chain bottom first); then EOS, and EOS to the end. A sequence
    longer than `length` is cut (without its EOS).
    """
    labels = ops.cast(labels, "int32")
    size, depth = labels.shape[-1], chain_opens.shape[-1]
    n = ops.cast(num_words, "int32")[:, None]
    pos = ops.arange(size, dtype="int32")
    row, col = pos[:, None], pos[None, :]
    written = (ops.cast(in_tree, "bool") & (labels != 0) & (row <= col)[None]
               & (col[None] < n[:, :, None]))[..., None]
    opens = ops.where(written, ops.take(ops.cast(chain_opens, "int32"), labels, axis=0), 0)
    closes = ops.where(written, ops.take(ops.cast(chain_closes, "int32"), labels, axis=0), 0)
    # Word i's block, in output order: opens [(i, j) by j descending, chain top first],
    # slot i, closes [(i', i) by i' descending, chain bottom first].
    opens = ops.reshape(ops.flip(opens, axis=2), (-1, size, size * depth))
    closes = ops.flip(ops.transpose(closes, (0, 2, 1, 3)), axis=(2, 3))
    closes = ops.reshape(closes, (-1, size, size * depth))
    slots = ops.cast(slot_ids, "int32")[:, :, None]
    tokens = ops.concatenate([opens, slots, closes], axis=2)
    is_word = (pos[None] < n)[:, :, None]
    keep = ops.concatenate([opens != 0, is_word, closes != 0], axis=2)
    items = size * (2 * size * depth + 1)
    tokens = ops.pad(ops.reshape(tokens, (-1,)), [(0, 1)])  # + one past the last row
    keep = ops.cast(ops.reshape(keep, (-1, items)), "int32")
    # The t-th token of row b is its first item whose running count reaches t + 1;
    # over the flattened batch (row b after the counts of the rows before it)
    # the counts never decrease, so one search finds every row's items.
    counts = ops.cumsum(keep, axis=1)
    total = counts[:, -1]
    before = ops.cumsum(total) - total
    counts = ops.reshape(counts + before[:, None], (-1,))
    step = ops.arange(length, dtype="int32")[None, :]
    wanted = ops.reshape(before[:, None] + step + 1, (-1,))
    found = ops.searchsorted(counts, wanted, side="left")
    found = ops.reshape(ops.take(tokens, found, axis=0), (-1, length))
    return ops.where(step < total[:, None], found, EOS_ID)
