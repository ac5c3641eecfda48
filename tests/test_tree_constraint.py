"""The tree-constrained search: only well-formed trees over exactly the input words."""

import functools
import itertools

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding import beam_search
from t2t_lite.decoding.search import search
from t2t_lite.parsing import ptb
from t2t_lite.parsing.tree_constraint import CLOSE, END, OPEN, OTHER, TAG, TreeConstraint, token_tables

# A toy target vocabulary: pad, EOS, unk, two labels with both brackets, two
# tags, a byte piece, an open bracket whose close is missing, a non-word piece.
TARGET = ["<pad>", "</s>", "<unk>", "\u2581(A", "\u2581(B", "\u2581)A", "\u2581)B",
          "\u2581x", "\u2581y", "<0x41>", "\u2581(C", "ab"]
# Source pieces: a word is "▁w" or "▁v", optionally followed by "ord".
SOURCE = ["<pad>", "</s>", "<unk>", "\u2581w", "ord", "\u2581v"]
V = len(TARGET)


def text(ids):
    return " ".join(TARGET[i][1:] for i in ids if i > 1)


def source(n):
    """A source of n words (pieces alternate ▁w ord / ▁v), EOS-terminated."""
    ids = []
    for i in range(n):
        ids += [3, 4] if i % 2 else [5]
    return ids + [1]


def test_token_tables():
    kinds, labels = token_tables(TARGET)
    assert kinds.tolist() == [OTHER, END, OTHER, OPEN, OPEN, CLOSE, CLOSE, TAG, TAG,
                              OTHER, OTHER, OTHER]
    assert labels[3] == labels[5] != 0 and labels[4] == labels[6] != 0
    assert labels[3] != labels[4]


@functools.lru_cache(maxsize=None)
def _completable(n, max_length):
    """Every prefix (tuples of ids) of a well-formed linearization of n words
    that ends with EOS within max_length tokens, by brute-force enumeration.

    Only sequences that open a phrase first and close one last are tried (any
    other fails `ptb.is_well_formed`: a slot or a close with nothing open, or a
    phrase left open), which leaves a ninth of them to check."""
    opens, closes, tokens = (3, 4), (5, 6), (3, 4, 5, 6, 7, 8)
    prefixes = set()
    for length in range(2, max_length):
        for first, last in itertools.product(opens, closes):
            for middle in itertools.product(tokens, repeat=length - 2):
                seq = (first, *middle, last)
                if ptb.is_well_formed(text(seq), n):
                    full = seq + (1,)
                    prefixes.update(full[:i] for i in range(len(full) + 1))
    return frozenset(prefixes)


@pytest.mark.parametrize("n,max_length", [(1, 6), (2, 7), (3, 8)])
def test_allowed_is_exactly_the_completable_continuations(n, max_length):
    """allowed(prefix) == {t : prefix + t extends to a tree of n words within L}."""
    constraint = TreeConstraint(TARGET, SOURCE, max_depth=8)
    completable = _completable(n, max_length)
    prefixes = sorted((p for p in completable if len(p) < max_length and 1 not in p), key=len)
    assert len(prefixes) > 20
    # All prefixes at once, one row each: the search feeds the start id (0) first,
    # then the prefix; the padding after a short prefix is id 0 too, which leaves
    # the state as it is (checked below), and each row is asked at its own index.
    rows = np.zeros((len(prefixes), max_length), np.int32)
    for row, prefix in enumerate(prefixes):
        rows[row, 1:len(prefix) + 1] = prefix
    state = constraint.initial_state(tf.constant([source(n)] * len(prefixes)))
    for position in range(max_length):
        state = constraint.update(state, tf.constant(rows[:, position]))
    index = tf.constant([len(p) for p in prefixes], tf.int32)
    allowed = constraint.allowed(state, index, max_length).numpy()
    for row, prefix in enumerate(prefixes):
        expected = [prefix + (t,) in completable for t in range(V)]
        assert allowed[row].tolist() == expected, (text(prefix), allowed[row], expected)
    # The padding id is a no-op, so the batched rows are the one-by-one states.
    one = constraint.initial_state(tf.constant([source(n)]))
    for token in (0,) + prefixes[-1]:
        one = constraint.update(one, tf.constant([token]))
    for key, value in one.items():
        np.testing.assert_array_equal(value.numpy()[0], state[key].numpy()[-1])


def _random_model(seed, scale=3.0):
    """A fake untrained decoder's logits, from (index, last token): [64, V, V]."""
    return tf.constant(np.random.default_rng(seed).normal(0, scale, (64, V, V)), tf.float32)


class _TableModel:
    """The model contract over a logits table (`_random_model`)."""

    target_vocab_size = V

    def __init__(self, table):
        self.table = table

    def init_cache(self, inputs, length):
        return {"x": tf.zeros([tf.shape(inputs)[0], 1])}, {}

    def decode_step(self, ids, index, cache, cross):
        return tf.gather(self.table[index], ids), cache

    def grow_self_cache(self, cache, length):
        return cache


@functools.lru_cache(maxsize=None)
def _traced_search(beam_size, max_length, constrained):
    """search over a table model, traced once and reused for every table (seed)."""
    constraint = TreeConstraint(TARGET, SOURCE) if constrained else None
    return tf.function(lambda table, inputs: search(
        _TableModel(table), inputs, beam_size, 0.3, max_length, constraint=constraint))


def _search(table, inputs, beam_size, max_length, constrained):
    """search's loop over a fake model (with or without the constraint)."""
    return _traced_search(beam_size, max_length, constrained)(table, inputs)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_untrained_model_only_builds_trees_over_the_input_words(beam_size):
    counts = [1, 2, 3, 5, 8, 13]
    inputs = tf.constant(decoding_pad([source(n) for n in counts]))
    max_length = inputs.shape[1] + 12
    invalid_before = 0
    for seed in range(3):
        table = _random_model(seed)
        ids, scores = _search(table, inputs, beam_size, max_length, True)
        plain, _ = _search(table, inputs, beam_size, max_length, False)
        for row, n in enumerate(counts):
            # The search can always finish a tree, so the best hypothesis is a real one.
            assert scores[row, 0] > -1e8, (n, scores[row].numpy())
            for k in range(beam_size):
                if scores[row, k] > -1e8:  # Every real hypothesis returned.
                    assert ptb.is_well_formed(text(ids[row, k].numpy()), n), \
                        (n, text(ids[row, k].numpy()))
            invalid_before += not ptb.is_well_formed(text(plain[row, 0].numpy()), n)
    assert invalid_before > 0  # The unconstrained search does build broken trees here.


def decoding_pad(rows):
    width = max(len(r) for r in rows)
    return [r + [0] * (width - len(r)) for r in rows]


def _grammar_model(seed, n, max_length, forbidden=-1e4):
    """A fake model that puts `forbidden` on every token no tree of n words within
    max_length can continue with (known from brute force), random logits elsewhere."""
    completable = _completable(n, max_length)
    rng = np.random.default_rng(seed)
    cache_table = {}

    def logits_for(prefix):
        if prefix not in cache_table:
            row = rng.normal(0, 2.0, V)
            row[[t for t in range(V) if prefix + (t,) not in completable]] = forbidden
            cache_table[prefix] = row
        return cache_table[prefix]

    def next_fn(ids, index, cache):  # Eager: each beam's tokens travel in the cache.
        i, rows = int(index), cache["prefix"].numpy()
        prefixes = [tuple(int(t) for t in row[:i - 1]) + (int(t),) if i else ()
                    for row, t in zip(rows, ids.numpy())]
        logits = np.stack([logits_for(p) for p in prefixes]).astype(np.float32)
        for row, p in zip(rows, prefixes):
            row[:len(p)] = p
        return tf.constant(logits), {"prefix": tf.constant(rows)}

    return next_fn


@pytest.mark.parametrize("n,seed", [(2, 0), (3, 1), (3, 2)])
def test_equals_the_plain_beam_when_the_model_already_builds_valid_trees(n, seed):
    """Where the model's own choices are valid, the constraint changes nothing:
    same best hypothesis, same score, same ranking of every competitive beam."""
    max_length, beam_size = 9, 3
    constraint = TreeConstraint(TARGET, SOURCE)
    inputs = tf.constant([source(n)])
    next_fn = _grammar_model(seed, n, max_length)
    results = []
    for c in (None, constraint):
        cache = {"prefix": tf.zeros([beam_size, max_length + 1], tf.int32)}
        if c is None:
            ids, scores = beam_search.beam_search(next_fn, cache_for(cache), 1, beam_size,
                                                  max_length, 1, alpha=0.3)
        else:
            state = c.initial_state(inputs)

            def constrained(ids, index, cache, c=c):
                logits, model_cache = next_fn(ids, index, cache[0])
                return logits, (model_cache, c.update(cache[1], ids))

            ids, scores = beam_search.beam_search(
                constrained, (cache_for(cache), state), 1, beam_size, max_length, 1,
                alpha=0.3, allowed_fn=lambda cache, i, c=c: c.allowed(cache[1], i, max_length))
        results.append((ids.numpy()[0], scores.numpy()[0]))
    (plain_ids, plain_scores), (ids, scores) = results
    assert ptb.is_well_formed(text(plain_ids[0]), n)
    competitive = plain_scores > -1e3
    assert competitive.sum() >= 2
    np.testing.assert_array_equal(ids[competitive], plain_ids[competitive])
    np.testing.assert_allclose(scores[competitive], plain_scores[competitive], rtol=1e-6)


def cache_for(cache):
    """The per-sentence cache (B = 1) the beam search tiles to K beams."""
    return {"prefix": cache["prefix"][:1]}
