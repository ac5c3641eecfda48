"""The tree constraint's tag dictionary: a word's slot takes only the tags it had in training."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.search import search
from t2t_lite.parsing import ptb
from t2t_lite.parsing.tree_constraint import TreeConstraint, tag_dictionary

# Target: pad, EOS, unk, (A (B )A )B, tags x y, a byte piece, (C without a close, a non-word.
TARGET = ["<pad>", "</s>", "<unk>", "\u2581(A", "\u2581(B", "\u2581)A", "\u2581)B",
          "\u2581x", "\u2581y", "<0x41>", "\u2581(C", "ab"]
X, Y = 7, 8
# A word-level source: each id is one word.
SOURCE = ["<pad>", "</s>", "<unk>", "\u2581w", "\u2581v", "\u2581u"]
W, V_, U = 3, 4, 5
TRAIN = [([W, V_, 1], [3, X, Y, 5, 1]),  # w:x v:y
         ([W, 1], [3, X, 5, 1]),  # w:x
         ([U, 1], [3, Y, 5, 1]),  # u:y
         ([U, W, 1], [3, X, 5, 1])]  # Two words, one slot: not counted.


def text(ids):
    return " ".join(TARGET[i][1:] for i in ids if i > 1)


def test_the_table_keeps_the_tags_of_words_seen_often_enough():
    table = tag_dictionary(TRAIN, len(SOURCE), TARGET, min_count=2)
    assert table.shape == (len(SOURCE), len(TARGET))
    assert table[W, X] and not table[W, Y]  # Seen twice, always as x.
    assert table[V_].all() and table[U].all()  # Seen once: every tag.
    assert table[W, [0, 1, 2, 3, 4, 5, 6, 9, 10, 11]].all()  # Non-tags are not restricted.
    table = tag_dictionary(TRAIN, len(SOURCE), TARGET, min_count=1)
    assert not table[V_, X] and table[V_, Y] and not table[U, X] and table[U, Y]
    assert table[0].all() and table[2].all()  # Never seen: pad, unk.


def _tags_after(constraint, words, prefix):
    state = constraint.initial_state(tf.constant([words + [1]]))
    for token in [0] + prefix:
        state = constraint.update(state, tf.constant([token]))
    allowed = constraint.allowed(state, len(prefix), 30).numpy()[0]
    return {TARGET[t][1:] for t in (X, Y) if allowed[t]}, state


def test_each_slot_takes_only_the_tags_of_its_word():
    table = tag_dictionary(TRAIN, len(SOURCE), TARGET, min_count=1)
    constraint = TreeConstraint(TARGET, SOURCE, tags=table)
    assert _tags_after(constraint, [W, V_], [3])[0] == {"x"}  # The slot of w.
    assert _tags_after(constraint, [W, V_], [3, X])[0] == {"y"}  # Then v's.
    assert _tags_after(constraint, [W, V_], [3, X, 4])[0] == {"y"}  # Inside a phrase too.
    assert _tags_after(constraint, [V_, W], [3])[0] == {"y"}
    rare = TreeConstraint(TARGET, SOURCE, tags=tag_dictionary(TRAIN, len(SOURCE), TARGET, 2))
    assert _tags_after(rare, [V_, W], [3])[0] == {"x", "y"}  # Seen once: any tag.
    assert _tags_after(rare, [V_, W], [3, Y])[0] == {"x"}
    plain = TreeConstraint(TARGET, SOURCE)
    assert _tags_after(plain, [W, V_], [3])[0] == {"x", "y"}


def test_forbidden_tags_give_their_probability_to_the_allowed_ones():
    table = tag_dictionary(TRAIN, len(SOURCE), TARGET, min_count=1)
    constraint = TreeConstraint(TARGET, SOURCE, tags=table)
    _, state = _tags_after(constraint, [W, V_], [3])
    logits = tf.constant(np.random.default_rng(0).normal(0, 2, (1, len(TARGET))), tf.float32)
    before = tf.nn.softmax(logits).numpy()[0]
    after = tf.nn.softmax(constraint.adjust_logits(state, logits)).numpy()[0]
    assert after[X] == pytest.approx(before[X] + before[Y], rel=1e-5)  # y's mass goes to x.
    others = [t for t in range(len(TARGET)) if t not in (X, Y)]
    np.testing.assert_allclose(after[others], before[others], rtol=1e-5)  # Brackets keep theirs.
    # Without a dictionary the logits are unchanged.
    plain = TreeConstraint(TARGET, SOURCE)
    np.testing.assert_array_equal(plain.adjust_logits(state, logits), logits)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_search_with_the_dictionary_builds_trees_with_each_words_tags(beam_size):
    """An untrained fake model: every returned tree is well formed over the words
    and tags each word with a tag it had in training."""
    table = tag_dictionary(TRAIN, len(SOURCE), TARGET, min_count=1)
    constraint = TreeConstraint(TARGET, SOURCE, tags=table)
    sentences = [[W], [V_, W], [W, V_, W, W], [U, V_, W, U, W, V_]]
    width = max(len(s) for s in sentences) + 1
    inputs = tf.constant([s + [1] + [0] * (width - len(s) - 1) for s in sentences])
    want = {W: "x", V_: "y", U: "y"}

    class Fake:
        target_vocab_size = len(TARGET)
        table = tf.constant(np.random.default_rng(beam_size).normal(0, 3, (64, 12, 12)),
                            tf.float32)

        def init_cache(self, inputs, length):
            return {"x": tf.zeros([tf.shape(inputs)[0], 1])}, {}

        def decode_step(self, ids, index, cache, cross):
            return tf.gather(self.table[index], ids), cache

        def grow_self_cache(self, cache, length):
            return cache

    ids, scores = search(Fake(), inputs, beam_size, 0.3, width + 14,
                                  constraint=constraint)
    for row, words in enumerate(sentences):
        for k in range(beam_size):
            if scores[row, k] > -1e8:
                tree = text(ids[row, k].numpy())
                assert ptb.is_well_formed(tree, len(words)), tree
                tags = [t for t in tree.split() if t in ("x", "y")]
                assert tags == [want[w] for w in words], (tree, words)


def test_a_dictionary_needs_a_word_level_source():
    bpe = ["<pad>", "</s>", "<unk>", "\u2581w", "ord", "\u2581v"]
    with pytest.raises(ValueError, match="needs a word-level source"):
        TreeConstraint(TARGET, bpe, tags=np.ones((6, len(TARGET)), bool))
    with pytest.raises(ValueError, match="shape"):
        TreeConstraint(TARGET, SOURCE, tags=np.ones((5, len(TARGET)), bool))
