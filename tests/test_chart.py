"""Chart decoding: CKY's best binary tree and its linearized target tokens."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.models.parsing.chart import best_trees, plan_tokens


# --- References ---------------------------------------------------------------

def cky_reference(scores, n):
    """The spans of the best binary tree over words 0..n-1 (ties: smallest k), in numpy."""
    if n == 0:
        return set()
    scores = np.asarray(scores, np.float32)
    best = np.zeros((n, n), np.float32)
    split = np.zeros((n, n), np.int64)
    for i in range(n):
        best[i, i] = scores[i, i]
    for width in range(1, n):
        for i in range(n - width):
            j = i + width
            sums = np.array([best[i, k] + best[k + 1, j] for k in range(i, j)], np.float32)
            split[i, j] = i + int(np.argmax(sums))  # numpy's argmax: the first maximum
            best[i, j] = scores[i, j] + sums.max()
    spans, todo = set(), [(0, n - 1)]
    while todo:
        i, j = todo.pop()
        spans.add((i, j))
        if i < j:
            k = split[i, j]
            todo += [(i, k), (k + 1, j)]
    return spans


@functools.lru_cache(maxsize=None)
def all_trees(i, j):
    """Every binary tree over words i..j, each a frozenset of its spans."""
    if i == j:
        return [frozenset({(i, i)})]
    return [left | right | {(i, j)}
            for k in range(i, j)
            for left in all_trees(i, k) for right in all_trees(k + 1, j)]


def tree_score(scores, spans):
    return sum(float(scores[i, j]) for i, j in spans)


def spans_of(in_tree):
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(in_tree))}


def assert_binary_tree(spans, n):
    """2n-1 spans over words 0..n-1: the root, every word, and one split for each phrase."""
    assert len(spans) == max(2 * n - 1, 0)
    if n == 0:
        return
    assert (0, n - 1) in spans
    assert all((i, i) in spans for i in range(n))
    for i, j in spans:
        assert 0 <= i <= j < n
        if i < j:
            splits = [k for k in range(i, j) if (i, k) in spans and (k + 1, j) in spans]
            assert len(splits) == 1, (i, j, splits)


def run_best_trees(scores, num_words):
    return np.asarray(best_trees(np.asarray(scores, np.float32), np.asarray(num_words, np.int32)))


def garbage_scores(rng, lengths, size):
    """Random scores, with large values, inf and nan outside each row's spans."""
    scores = rng.normal(size=(len(lengths), size, size)).astype(np.float32)
    for b, n in enumerate(lengths):
        outside = np.ones((size, size), bool)
        outside[np.triu_indices(n)] = False
        junk = rng.choice(np.array([1e30, -1e30, 1e4, np.inf, np.nan], np.float32),
                          size=(size, size))
        scores[b][outside] = junk[outside]
    return scores


# --- best_trees ---------------------------------------------------------------

@pytest.mark.parametrize("size", [7, 8])
def test_best_trees_is_the_best_binary_tree(size):
    rng = np.random.default_rng(size)
    lengths = [0, 1, 2, 5, size, size - 1, 3]
    scores = garbage_scores(rng, lengths, size)
    in_tree = run_best_trees(scores, lengths)
    assert in_tree.shape == (len(lengths), size, size) and in_tree.dtype == bool
    for b, n in enumerate(lengths):
        spans = spans_of(in_tree[b])
        assert_binary_tree(spans, n)
        assert spans == cky_reference(scores[b], n)
        if n:
            brute = max(tree_score(scores[b], tree) for tree in all_trees(0, n - 1))
            assert tree_score(scores[b], spans) == pytest.approx(brute, rel=1e-5, abs=1e-5)


def test_best_trees_ties_take_the_smallest_split():
    rng = np.random.default_rng(0)
    lengths = [6, 8, 4, 8]
    scores = rng.integers(0, 3, size=(4, 8, 8)).astype(np.float32)
    scores[3] = 0.0  # All ties: every split at k = i, the right-branching tree.
    in_tree = run_best_trees(scores, lengths)
    for b, n in enumerate(lengths):
        assert spans_of(in_tree[b]) == cky_reference(scores[b], n)
    assert spans_of(in_tree[3]) == {(i, i) for i in range(8)} | {(i, 7) for i in range(8)}


def test_best_trees_follows_strong_scores():
    gold = {(0, 5), (0, 1), (2, 5), (2, 3), (4, 5)} | {(i, i) for i in range(6)}
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(1, 8, 8)).astype(np.float32)
    for i, j in gold:
        scores[0, i, j] += 10.0
    scores[0, 6:, :] = scores[0, :, 6:] = 1e30  # Past n: ignored.
    assert spans_of(run_best_trees(scores, [6])[0]) == gold


def test_best_trees_single_span_dimension():
    in_tree = run_best_trees(np.full((2, 1, 1), 3.0), [0, 1])
    assert in_tree.tolist() == [[[False]], [[True]]]


def test_best_trees_in_a_graph_with_a_dynamic_batch():
    size = 8
    graph = tf.function(best_trees, input_signature=[
        tf.TensorSpec([None, size, size], tf.float32), tf.TensorSpec([None], tf.int32)])
    rng = np.random.default_rng(2)
    for lengths in ([8, 0, 3], [1, 5]):
        scores = garbage_scores(rng, lengths, size)
        eager = run_best_trees(scores, lengths)
        traced = graph(tf.constant(scores), tf.constant(lengths, tf.int32)).numpy()
        np.testing.assert_array_equal(traced, eager)
        for b, n in enumerate(lengths):
            assert spans_of(traced[b]) == cky_reference(scores[b], n)


# --- plan_tokens --------------------------------------------------------------

FLAT = "(S (NP NNP NNP )NP (VP VBZ (NP (NP DT NN )NP (PP IN (NP PRP )NP )PP )NP )VP . )S"
UNARY = "(S (VP TO (VP VB )VP )VP )S"
DEEP = "(S (SBAR (S (NP PRP )NP (VP VBD (ADVP RB )ADVP )VP )S )SBAR )S"
EXAMPLES = [FLAT, UNARY, DEEP]
PIECES = sorted({token for text in EXAMPLES for token in text.split()})
VOCAB = {token: index + 2 for index, token in enumerate(PIECES)}  # 0 pad, 1 EOS
DEPTH = 4


def read_spans(text):
    """A linearization -> (words' tags, {(first, last): labels top first})."""
    tags, stack, spans = [], [], {}
    for token in text.split():
        if token.startswith("("):
            stack.append((token[1:], len(tags)))
        elif token.startswith(")"):
            label, first = stack.pop()
            assert label == token[1:]
            spans.setdefault((first, len(tags) - 1), []).insert(0, label)  # outer closes last
        else:
            tags.append(token)
    assert not stack
    return tags, spans


def chain_tables():
    """Class 0 (no brackets), then one class per chain in the examples."""
    chains = sorted({tuple(chain) for text in EXAMPLES for chain in read_spans(text)[1].values()})
    classes = {chain: c + 1 for c, chain in enumerate(chains)}
    opens = np.zeros((len(chains) + 1, DEPTH), np.int32)
    closes = np.zeros_like(opens)
    for chain, c in classes.items():
        opens[c, :len(chain)] = [VOCAB["(" + label] for label in chain]
        closes[c, :len(chain)] = [VOCAB[")" + label] for label in chain]
    return classes, opens, closes


CLASSES, OPENS, CLOSES = chain_tables()


def example_arrays(texts, size, junk=False):
    """in_tree (gold spans + every word), labels, slot_ids, num_words for a batch."""
    batch = len(texts)
    in_tree = np.zeros((batch, size, size), bool)
    labels = np.zeros((batch, size, size), np.int32)
    slots = np.zeros((batch, size), np.int32)
    lengths = np.zeros(batch, np.int32)
    for b, text in enumerate(texts):
        tags, spans = read_spans(text)
        n = lengths[b] = len(tags)
        if junk:  # Spans and slots past n are never written.
            in_tree[b] = True
            labels[b] = 1
            slots[b] = VOCAB["NN"]
        in_tree[b, :n, :n] = False
        labels[b, :n, :n] = 0
        for i in range(n):
            in_tree[b, i, i] = True
        for (i, j), chain in spans.items():
            in_tree[b, i, j] = True
            labels[b, i, j] = CLASSES[tuple(chain)]
        slots[b, :n] = [VOCAB[tag] for tag in tags]
    return in_tree, labels, slots, lengths


def expected_ids(text, length):
    ids = [VOCAB[token] for token in text.split()] + [1]
    return (ids + [1] * length)[:length]


def run_plan(in_tree, labels, slots, lengths, length):
    return np.asarray(plan_tokens(in_tree, labels, OPENS, CLOSES, slots, lengths, length))


@pytest.mark.parametrize("text", EXAMPLES)
def test_plan_tokens_writes_the_linearization(text):
    arrays = example_arrays([text], 10)
    out = run_plan(*arrays, 40)
    assert out.dtype == np.int32 and out.shape == (1, 40)
    assert out[0].tolist() == expected_ids(text, 40)


def test_plan_tokens_cuts_to_the_length():
    arrays = example_arrays([FLAT], 10)
    full = len(FLAT.split())
    for length in (1, 5, full - 1, full, full + 1, full + 2):
        out = run_plan(*arrays, length)
        assert out[0].tolist() == expected_ids(FLAT, length)
    assert 1 not in run_plan(*arrays, full)[0]


def test_plan_tokens_batch_with_padding_and_empty_rows():
    texts = [FLAT, UNARY, DEEP]
    in_tree, labels, slots, lengths = example_arrays(texts, 12, junk=True)
    in_tree, labels = np.concatenate([in_tree, in_tree[:1]]), np.concatenate([labels, labels[:1]])
    slots, lengths = np.concatenate([slots, slots[:1]]), np.append(lengths, 0)  # An empty row.
    out = run_plan(in_tree, labels, slots, lengths, 36)
    assert [row.tolist() for row in out[:3]] == [expected_ids(text, 36) for text in texts]
    assert out[3].tolist() == [1] * 36


def test_plan_tokens_in_a_graph_with_a_dynamic_batch():
    size, length = 10, 30
    graph = tf.function(functools.partial(plan_tokens, length=length), input_signature=[
        tf.TensorSpec([None, size, size], tf.bool), tf.TensorSpec([None, size, size], tf.int32),
        tf.TensorSpec(OPENS.shape, tf.int32), tf.TensorSpec(CLOSES.shape, tf.int32),
        tf.TensorSpec([None, size], tf.int32), tf.TensorSpec([None], tf.int32)])
    for texts in ([UNARY, FLAT], [DEEP]):
        in_tree, labels, slots, lengths = example_arrays(texts, size, junk=True)
        out = graph(in_tree, labels, OPENS, CLOSES, slots, lengths).numpy()
        assert [row.tolist() for row in out] == [expected_ids(text, length) for text in texts]


# --- Both ---------------------------------------------------------------------

def test_round_trip_from_gold_span_scores():
    """Score 1 on the gold spans, 0 elsewhere: any binary tree holding them all is best,
    and the spans binarization adds have class 0, so the gold sequence comes back."""
    texts, size, length = [FLAT, UNARY, DEEP], 9, 34
    gold, labels, slots, lengths = example_arrays(texts, size)
    scores = gold.astype(np.float32)

    @tf.function(input_signature=[
        tf.TensorSpec([None, size, size], tf.float32), tf.TensorSpec([None, size, size], tf.int32),
        tf.TensorSpec([None, size], tf.int32), tf.TensorSpec([None], tf.int32)])
    def decode(scores, labels, slots, lengths):
        in_tree = best_trees(scores, lengths)
        return in_tree, plan_tokens(in_tree, labels, OPENS, CLOSES, slots, lengths, length)

    in_tree, out = (x.numpy() for x in decode(scores, labels, slots, lengths))
    for b, text in enumerate(texts):
        assert_binary_tree(spans_of(in_tree[b]), lengths[b])
        assert spans_of(gold[b]) <= spans_of(in_tree[b])
        assert out[b].tolist() == expected_ids(text, length)
    assert len(spans_of(in_tree[0])) > len(spans_of(gold[0]))  # FLAT was binarized.
