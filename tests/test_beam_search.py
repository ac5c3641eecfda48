"""Tests for t2t_lite.decoding.beam_search (CPU, float32, tiny fake decoders)."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import itertools  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras import ops  # noqa: E402

from t2t_lite.decoding.beam_search import beam_search  # noqa: E402
from t2t_lite.decoding.greedy import greedy_search  # noqa: E402
from t2t_lite.decoding.beam_search import length_penalty  # noqa: E402

PAD, EOS = 0, 1
NEG = -1e9


class PrefixModel:
    """Fake decoder whose next-token logits depend on the whole prefix.

    The cache carries `code`, a base-V number encoding the start code `c0`
    (1 <= c0 < V, one per sentence) followed by every token fed so far, so a
    cache that is not reordered together with its beam gives wrong logits.
    logits = table[code] + bias[sentence]. Codes are unique for V**(L+1) rows.
    """

    def __init__(self, table):
        self.table_np = np.asarray(table, np.float32)
        self.vocab = self.table_np.shape[1]
        self.table = ops.convert_to_tensor(self.table_np)
        self.calls = 0

    def next_fn(self, ids, index, cache):
        self.calls += 1
        code = cache["code"] * self.vocab + ids
        bias = cache["extra"][0]
        logits = ops.take(self.table, code, axis=0) + bias
        steps = cache["extra"][1] + 1  # int32 [N, 2]: a second odd-shaped tensor
        return logits, {"code": code, "extra": [bias, steps]}

    def cache(self, c0s, biases=None):
        c0s = np.asarray(c0s, np.int32)
        if biases is None:
            biases = np.zeros((len(c0s), self.vocab), np.float32)
        return {"code": ops.convert_to_tensor(c0s),
                "extra": [ops.convert_to_tensor(np.asarray(biases, np.float32)),
                          ops.zeros((len(c0s), 2), "int32")]}

    def log_probs(self, c0, bias, start_id, prefix):
        """float64 log-softmax of the logits that predict the token after `prefix`."""
        code = c0
        for tok in (start_id,) + tuple(prefix):
            code = code * self.vocab + tok
        logits = self.table_np[code].astype(np.float64) + bias
        m = logits.max()
        return logits - m - np.log(np.exp(logits - m).sum())


def random_table(seed, vocab, max_len, eos_shift=0.0):
    """Random logits table: pad is never predicted, EOS shifted by eos_shift."""
    rng = np.random.default_rng(seed)
    table = rng.normal(0.0, 1.5, size=(vocab ** (max_len + 1), vocab))
    table[:, PAD] = NEG
    table[:, EOS] += eos_shift
    return table


def lp(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


def enumerate_finished(model, c0, bias, start_id, max_len, alpha):
    """All sequences ending in EOS (no pad), best first: [(tokens, score)]."""
    words = range(2, model.vocab)
    out = []
    for n in range(1, max_len + 1):
        for body in itertools.product(words, repeat=n - 1):
            seq = body + (EOS,)
            logp = sum(model.log_probs(c0, bias, start_id, seq[:t])[seq[t]]
                       for t in range(n))
            out.append((seq, logp / lp(n, alpha)))
    return sorted(out, key=lambda x: -x[1])


def padded(seq, max_len):
    return list(seq) + [PAD] * (max_len - len(seq))


def run_beam(model, c0s, biases=None, beam_size=4, max_len=4, alpha=0.6, **kw):
    model.calls = 0
    seqs, scores = beam_search(model.next_fn, model.cache(c0s, biases), len(c0s),
                               beam_size, max_len, EOS, alpha=alpha, **kw)
    return np.asarray(seqs), np.asarray(scores)


def run_greedy(model, c0s, biases=None, max_len=4, **kw):
    model.calls = 0
    seqs, scores = greedy_search(model.next_fn, model.cache(c0s, biases), len(c0s),
                                 max_len, EOS, **kw)
    return np.asarray(seqs), np.asarray(scores)


# 1. Length penalty golden values.
def test_length_penalty_golden():
    for alpha in (0.0, 0.6, 1.5):
        np.testing.assert_allclose(float(length_penalty(1, alpha)), 1.0, rtol=1e-6)
    # (15 / 6) ** 0.6 = 2.5 ** 0.6, computed once with Python floats.
    np.testing.assert_allclose(float(length_penalty(10, 0.6)), 1.7328621078878659, rtol=1e-6)
    # (9 / 6) ** 1.5
    np.testing.assert_allclose(float(length_penalty(4, 1.5)), 1.8371173070873836, rtol=1e-6)
    np.testing.assert_allclose(float(length_penalty(7, 0.0)), 1.0, rtol=1e-6)
    val = length_penalty(ops.convert_to_tensor(10, "int32"), 0.6)
    assert keras.backend.standardize_dtype(val.dtype) == "float32"


# 2. Exhaustive beam == brute force over every possible output.
@pytest.mark.parametrize("seed,start_id", [(0, 0), (1, 2), (2, 3)])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_exhaustive_beam_matches_brute_force(seed, start_id, alpha):
    vocab, max_len = 4, 4
    model = PrefixModel(random_table(seed, vocab, max_len))
    bias = np.random.default_rng(seed + 10).normal(size=vocab).astype(np.float32)
    expected = enumerate_finished(model, 2, bias, start_id, max_len, alpha)
    k = (vocab - 1) ** max_len  # more slots than hypotheses: search is exhaustive
    seqs, scores = run_beam(model, [2], bias[None], k, max_len, alpha, start_id=start_id)
    assert seqs.shape == (1, k, max_len) and scores.shape == (1, k)
    assert seqs.dtype == np.int32 and scores.dtype == np.float32
    assert seqs[0, 0].tolist() == padded(expected[0][0], max_len)
    np.testing.assert_allclose(scores[0, 0], expected[0][1], rtol=1e-5, atol=1e-5)
    # Every finished hypothesis (15 of them) comes back, sorted best first.
    n = len(expected)
    assert [padded(s, max_len) for s, _ in expected] == seqs[0, :n].tolist()
    np.testing.assert_allclose(scores[0, :n], [s for _, s in expected], rtol=1e-5, atol=1e-5)
    assert np.all(scores[0, n:] < -1e8)


def hand_table(vocab, max_len, c0, start_id, rows):
    """Uniform logits over non-pad tokens, with explicit probabilities per prefix."""
    table = np.zeros((vocab ** (max_len + 1), vocab))
    table[:, PAD] = NEG
    for prefix, probs in rows.items():
        code = c0
        for tok in (start_id,) + prefix:
            code = code * vocab + tok
        table[code] = np.log(np.maximum(probs, 1e-30))
    return table


def test_alpha_changes_winner():
    # [EOS] has p=.55; [2, 2, 2, EOS] has p=.44*.9*.98*.98=.380: short wins
    # with alpha 0 and 0.6, long wins with alpha 1.5 (-0.967/1.837 > -0.598).
    rows = {(): [0, .55, .44, .01], (2,): [0, .05, .9, .05],
            (2, 2): [0, .01, .98, .01], (2, 2, 2): [0, .98, .01, .01]}
    model = PrefixModel(hand_table(4, 4, 1, 0, rows))
    winners = {}
    for alpha in (0.0, 0.6, 1.5):
        seqs, scores = run_beam(model, [1], None, 16, 4, alpha)
        best = enumerate_finished(model, 1, np.zeros(4), 0, 4, alpha)[0]
        assert seqs[0, 0].tolist() == padded(best[0], 4)
        np.testing.assert_allclose(scores[0, 0], best[1], rtol=1e-5)
        winners[alpha] = seqs[0, 0].tolist()
    assert winners[0.0] == winners[0.6] == [EOS, 0, 0, 0]
    assert winners[1.5] == [2, 2, 2, EOS]
    # K=1: after step 0 the alive [2] (log p -0.821) can still win only thanks
    # to the penalty at L (-0.821/1.837 > -0.598), so the search must go on.
    seqs, _ = run_beam(model, [1], None, 1, 4, 1.5)
    assert seqs[0, 0].tolist() == [2, 2, 2, EOS] and model.calls == 4
    seqs, _ = run_beam(model, [1], None, 1, 4, 0.0)
    assert seqs[0, 0].tolist() == [EOS, 0, 0, 0] and model.calls == 1


def test_no_finished_returns_alive_scored_at_their_length():
    vocab, max_len, alpha = 4, 3, 0.6
    table = random_table(5, vocab, max_len)
    table[:, EOS] = NEG  # EOS is never produced
    model = PrefixModel(table)
    seqs, scores = run_beam(model, [3], None, 8, max_len, alpha)
    expected = []
    for seq in itertools.product((2, 3), repeat=max_len):
        logp = sum(model.log_probs(3, 0.0, 0, seq[:t])[seq[t]] for t in range(max_len))
        expected.append((list(seq), logp / lp(max_len, alpha)))
    expected.sort(key=lambda x: -x[1])
    assert seqs[0].tolist() == [s for s, _ in expected]
    np.testing.assert_allclose(scores[0], [s for _, s in expected], rtol=1e-5)
    assert model.calls == max_len


# 3. beam_size=1 == greedy.
@pytest.mark.parametrize("seed", [0, 1])
def test_beam_size_one_equals_greedy(seed):
    vocab, max_len = 5, 6
    rng = np.random.default_rng(seed)
    biases = rng.normal(size=(3, vocab)).astype(np.float32)
    # (a) EOS never wins: both decode max_len tokens along the argmax path.
    table = random_table(seed, vocab, max_len)
    table[:, EOS] = NEG
    model = PrefixModel(table)
    b_seqs, b_scores = run_beam(model, [1, 2, 3], biases, 1, max_len, 0.0)
    g_seqs, g_scores = run_greedy(model, [1, 2, 3], biases, max_len)
    np.testing.assert_array_equal(b_seqs[:, 0], g_seqs)
    np.testing.assert_allclose(b_scores[:, 0], g_scores, rtol=1e-5)
    # (b) EOS is either very likely or very unlikely (forced at the last step):
    # the first EOS the argmax path meets is also the best finished hypothesis.
    table = random_table(seed + 7, vocab, max_len)
    table[:, EOS] = np.where(rng.random(len(table)) < 0.3, 8.0, -12.0)
    table[vocab ** max_len:, EOS] = 8.0  # rows predicting the last position
    model = PrefixModel(table)
    for alpha in (0.0, 0.6):
        b_seqs, b_scores = run_beam(model, [1, 2, 3], biases, 1, max_len, alpha)
        g_seqs, g_scores = run_greedy(model, [1, 2, 3], biases, max_len)
        np.testing.assert_array_equal(b_seqs[:, 0], g_seqs)
        lengths = (g_seqs != PAD).sum(axis=1)
        np.testing.assert_allclose(b_scores[:, 0] * lp(lengths, alpha), g_scores, rtol=1e-5)
    assert (g_seqs == EOS).any(axis=1).all() and (lengths < max_len).any()


# 4. Batched decoding == one sentence at a time.
def test_batched_equals_one_by_one():
    vocab, max_len, k = 5, 5, 3
    model = PrefixModel(random_table(3, vocab, max_len))
    c0s = [1, 3, 2]
    biases = np.random.default_rng(4).normal(0, 2, size=(3, vocab)).astype(np.float32)
    seqs, scores = run_beam(model, c0s, biases, k, max_len, 0.6)
    g_seqs, g_scores = run_greedy(model, c0s, biases, max_len)
    assert len({tuple(s) for s in seqs[:, 0].tolist()}) > 1  # sentences differ
    for b in range(3):
        one_seqs, one_scores = run_beam(model, c0s[b:b + 1], biases[b:b + 1], k, max_len, 0.6)
        np.testing.assert_array_equal(seqs[b], one_seqs[0])
        np.testing.assert_allclose(scores[b], one_scores[0], rtol=1e-6)
        one_g, one_gs = run_greedy(model, c0s[b:b + 1], biases[b:b + 1], max_len)
        np.testing.assert_array_equal(g_seqs[b], one_g[0])
        np.testing.assert_allclose(g_scores[b], one_gs[0], rtol=1e-6)


# 5. EOS handling.
def eos_first_model(vocab=4, max_len=10):
    table = np.zeros((vocab ** (max_len + 1), vocab))
    table[:, PAD] = NEG
    table[:, EOS] = 10.0
    return PrefixModel(table)


def test_positions_after_eos_are_pad_and_scores_sorted():
    model = PrefixModel(random_table(6, 5, 6, eos_shift=0.5))
    seqs, scores = run_beam(model, [1, 2], None, 4, 6, 0.6)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)
    saw_eos = False
    for seq in seqs.reshape(-1, 6).tolist():
        if EOS in seq:
            saw_eos = True
            e = seq.index(EOS)
            assert all(t == PAD for t in seq[e + 1:]) and PAD not in seq[:e]
    assert saw_eos


def test_eos_first_model_returns_length_one():
    model = eos_first_model(max_len=5)
    seqs, scores = run_beam(model, [1, 2], None, 3, 5, 0.6)
    assert seqs[:, 0].tolist() == [[EOS, 0, 0, 0, 0]] * 2
    logp_eos = 10.0 - np.log(np.exp(10.0) + 2.0)
    np.testing.assert_allclose(scores[:, 0], [logp_eos] * 2, rtol=0, atol=3e-6)
    g_seqs, _ = run_greedy(model, [1, 2], None, 5)
    assert g_seqs.tolist() == [[EOS, 0, 0, 0, 0]] * 2


def test_min_decode_length_equal_to_max():
    model = eos_first_model(max_len=5)
    seqs, _ = run_beam(model, [1, 2], None, 3, 5, 0.6, min_decode_length=5)
    assert not np.any(seqs[:, :, :4] == EOS) and not np.any(seqs == PAD)
    assert np.all(seqs[:, 0, 4] == EOS)  # EOS is allowed as the 5th token
    g_seqs, _ = run_greedy(model, [1, 2], None, 5, min_decode_length=5)
    assert not np.any(g_seqs[:, :4] == EOS) and not np.any(g_seqs == PAD)
    seqs, _ = run_beam(model, [1], None, 2, 5, 0.6, min_decode_length=3)
    assert seqs[0, 0].tolist()[2:] == [EOS, 0, 0] and EOS not in seqs[0, 0, :2]


# 6. Early stopping (eager while_loop runs the body once per iteration).
def test_early_stop_counts_next_fn_calls():
    model = eos_first_model(max_len=10)
    run_beam(model, [1, 2], None, 1, 10, 0.6)
    assert model.calls == 1
    run_beam(model, [1, 2], None, 2, 10, 0.6)
    assert model.calls == 2  # K=2 finished need one more step
    run_greedy(model, [1, 2], None, 10)
    assert model.calls == 1
    table = random_table(0, 4, 10)
    table[:, EOS] = NEG
    no_eos = PrefixModel(table)
    run_beam(no_eos, [1], None, 2, 10, 0.6)
    assert no_eos.calls == 10
    run_greedy(no_eos, [1], None, 10)
    assert no_eos.calls == 10


def test_best_only_returns_the_same_best_in_fewer_steps():
    """`best_only` stops once no alive beam can beat the best finished one: the first
    hypothesis and its score are the full search's, reached in fewer steps."""
    saved = []
    for seed in range(6):
        model = PrefixModel(random_table(seed, 5, 6, eos_shift=1.0))
        c0s = [1, 2, 3, 4]
        for alpha in (0.0, 0.6):
            full_seqs, full_scores = run_beam(model, c0s, None, 3, 6, alpha)
            full_calls = model.calls
            seqs, scores = run_beam(model, c0s, None, 3, 6, alpha, best_only=True)
            np.testing.assert_array_equal(seqs[:, 0], full_seqs[:, 0])
            np.testing.assert_allclose(scores[:, 0], full_scores[:, 0], rtol=1e-6)
            assert model.calls <= full_calls
            saved.append(full_calls - model.calls)
    assert sum(saved) > 0 and max(saved) >= 2  # It does stop earlier.


# 7. Inside tf.function (graph mode, static shapes) == eager.
def test_tf_function_matches_eager():
    import tensorflow as tf

    vocab, max_len = 5, 6
    model = PrefixModel(random_table(8, vocab, max_len, eos_shift=0.5))
    biases = np.random.default_rng(9).normal(size=(2, vocab)).astype(np.float32)
    seqs, scores = run_beam(model, [1, 3], biases, 3, max_len, 0.6)
    g_seqs, g_scores = run_greedy(model, [1, 3], biases, max_len)

    @tf.function
    def decode(cache):
        b = beam_search(model.next_fn, cache, 2, 3, max_len, EOS, alpha=0.6)
        g = greedy_search(model.next_fn, cache, 2, max_len, EOS)
        return b, g

    (t_seqs, t_scores), (tg_seqs, tg_scores) = decode(model.cache([1, 3], biases))
    assert t_seqs.shape == (2, 3, max_len) and tg_seqs.shape == (2, max_len)
    np.testing.assert_array_equal(t_seqs.numpy(), seqs)
    np.testing.assert_allclose(t_scores.numpy(), scores, rtol=1e-5)
    np.testing.assert_array_equal(tg_seqs.numpy(), g_seqs)
    np.testing.assert_allclose(tg_scores.numpy(), g_scores, rtol=1e-5)


def test_tf_function_dynamic_batch():
    import tensorflow as tf

    vocab, max_len = 5, 4
    model = PrefixModel(random_table(10, vocab, max_len))
    biases = np.random.default_rng(11).normal(size=(2, vocab)).astype(np.float32)
    seqs, scores = run_beam(model, [2, 1], biases, 2, max_len, 0.6)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None, vocab], tf.float32)])
    def decode(code, bias):
        cache = {"code": code, "extra": [bias, tf.zeros([tf.shape(code)[0], 2], tf.int32)]}
        return beam_search(model.next_fn, cache, tf.shape(code)[0], 2, max_len, EOS,
                           alpha=0.6, vocab_size=vocab)

    t_seqs, t_scores = decode(tf.constant([2, 1]), tf.constant(biases))
    np.testing.assert_array_equal(t_seqs.numpy(), seqs)
    np.testing.assert_allclose(t_scores.numpy(), scores, rtol=1e-5)


# 8. Vocabularies large enough for the chunked top-k (and a V that needs padding).
@pytest.mark.parametrize("vocab", [100, 8192, 6000])
def test_top_k_rows_equals_full_sort(vocab):
    import tensorflow as tf

    from t2t_lite.decoding.beam_search import _top_k_rows

    x = np.random.default_rng(vocab).normal(size=(7, vocab)).astype(np.float32)
    order = np.argsort(-x, axis=1)[:, :9]
    fn = tf.function(lambda t: _top_k_rows(t, 9, vocab),
                     input_signature=[tf.TensorSpec([None, vocab], tf.float32)])
    for values, indices in (_top_k_rows(ops.convert_to_tensor(x), 9, vocab), fn(x)):
        np.testing.assert_array_equal(np.asarray(indices), order)
        np.testing.assert_array_equal(np.asarray(values), np.take_along_axis(x, order, 1))


class HashModel:
    """Fake decoder with a large vocabulary: logits = table[hash of the prefix] + bias."""

    def __init__(self, vocab, rows=997, seed=0):
        rng = np.random.default_rng(seed)
        self.table = rng.normal(0.0, 2.0, size=(rows, vocab)).astype(np.float32)
        self.table[:, PAD] = NEG
        self.table[:, EOS] += 6.0  # Most hypotheses finish within 6 tokens.
        self.vocab, self.rows = vocab, rows

    def next_fn(self, ids, index, cache):
        code = (cache * self.vocab + ids) % self.rows
        return ops.take(ops.convert_to_tensor(self.table), code, axis=0), code

    def log_probs(self, code):
        logits = self.table[code].astype(np.float64)
        m = logits.max()
        return logits - m - np.log(np.exp(logits - m).sum())


def reference_beam_search(model, c0, beam_size, max_len, alpha, min_len):
    """tensor2tensor's beam search over all K*V extensions, in float64 NumPy."""
    alive, finished = [((), 0.0, c0)], []
    for i in range(max_len):
        candidates = []
        for seq, logp, code in alive:
            code = (code * model.vocab + (seq[-1] if seq else 0)) % model.rows
            log_probs = model.log_probs(code)
            if i + 1 < min_len:
                log_probs[EOS] = -np.inf
            candidates += [(seq + (t,), logp + log_probs[t], code) for t in range(model.vocab)]
        top = sorted(candidates, key=lambda c: -c[1])[:2 * beam_size]
        alive = [c for c in top if c[0][-1] != EOS][:beam_size]
        finished += [(c[0], c[1] / lp(i + 1, alpha)) for c in top if c[0][-1] == EOS]
        finished = sorted(finished, key=lambda c: -c[1])[:beam_size]
    return finished


@pytest.mark.parametrize("min_len", [0, 3])
def test_large_vocab_matches_reference(min_len):
    model = HashModel(vocab=6000)
    c0s, beam_size, max_len, alpha = [5, 17, 300], 4, 6, 0.6
    seqs, scores = beam_search(model.next_fn, ops.convert_to_tensor(np.int32(c0s)), 3,
                               beam_size, max_len, EOS, alpha=alpha,
                               min_decode_length=min_len)
    for row, c0 in enumerate(c0s):
        expected = reference_beam_search(model, c0, beam_size, max_len, alpha, min_len)
        assert expected
        for k, (seq, score) in enumerate(expected):
            assert np.asarray(seqs)[row, k].tolist() == padded(seq, max_len)
            np.testing.assert_allclose(np.asarray(scores)[row, k], score, rtol=1e-5)
        assert np.all(np.asarray(scores)[row, len(expected):] < 0.5 * NEG)  # empty slots


# 9. A cache that grows in segments (decoding.search grows the self-attention cache).
class SlotModel(PrefixModel):
    """PrefixModel whose prefix is read back from a cache of slots [N, l]: a token
    written at an index beyond the cache is lost and changes later logits."""

    def next_fn(self, ids, index, cache):
        self.calls += 1
        slots = cache["slots"]
        positions = ops.arange(slots.shape[1], dtype="int32")
        slots = ops.where(positions == index, ids[:, None], slots)
        powers = ops.convert_to_tensor(np.int32(self.vocab) ** np.arange(8, dtype=np.int32))
        weights = ops.where(positions <= index,
                            ops.take(powers, ops.maximum(index - positions, 0)), 0)
        code = cache["c0"] * ops.take(powers, index + 1) + ops.sum(slots * weights, axis=1)
        return ops.take(self.table, code, axis=0), {"c0": cache["c0"], "slots": slots}

    def slot_cache(self, c0s, length):
        return {"c0": ops.convert_to_tensor(np.int32(c0s)),
                "slots": ops.zeros((len(c0s), length), "int32")}

    @staticmethod
    def grow(cache, length):
        slots = cache["slots"]
        return {"c0": cache["c0"],
                "slots": ops.pad(slots, [[0, 0], [0, length - slots.shape[1]]])}


@pytest.mark.parametrize("lengths", [[5], [2, 5], [1, 3, 4, 5]])
def test_segmented_cache_equals_prefix_model(lengths):
    vocab, max_len = 4, 5
    table = random_table(12, vocab, max_len, eos_shift=-0.5)
    prefix, slots = PrefixModel(table), SlotModel(table)
    c0s = [1, 3]
    seqs, scores = run_beam(prefix, c0s, None, 3, max_len, 0.6)
    s_seqs, s_scores = beam_search(slots.next_fn, slots.slot_cache(c0s, lengths[0]), 2, 3,
                                   max_len, EOS, alpha=0.6, cache_lengths=lengths,
                                   grow_cache=slots.grow)
    np.testing.assert_array_equal(np.asarray(s_seqs), seqs)
    np.testing.assert_allclose(np.asarray(s_scores), scores, rtol=1e-6)
    g_seqs, g_scores = run_greedy(prefix, c0s, None, max_len)
    sg_seqs, sg_scores = greedy_search(slots.next_fn, slots.slot_cache(c0s, lengths[0]), 2,
                                       max_len, EOS, cache_lengths=lengths,
                                       grow_cache=slots.grow)
    np.testing.assert_array_equal(np.asarray(sg_seqs), g_seqs)
    np.testing.assert_allclose(np.asarray(sg_scores), g_scores, rtol=1e-6)


def test_segmented_cache_stops_early_and_checks_lengths():
    model = SlotModel(eos_first_model(max_len=10).table_np)
    beam_search(model.next_fn, model.slot_cache([1], 2), 1, 2, 10, EOS,
                cache_lengths=[2, 4, 8, 10], grow_cache=model.grow)
    assert model.calls == 2  # Finished in the first segment; later ones run no step.
    for bad in ([2, 4], [4, 2, 10], [2, 2, 10]):
        with pytest.raises(ValueError, match="cache_lengths"):
            beam_search(model.next_fn, model.slot_cache([1], bad[0]), 1, 2, 10, EOS,
                        cache_lengths=bad, grow_cache=model.grow)
