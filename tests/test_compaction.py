"""Finished sentences leave the batch between cache segments (`t2t_lite.decoding.compaction`).

The search without XLA takes the sentences that are done out of its loop state
each time the cache grows, and puts their results back in their rows at the
end. These tests state that the state shrinks to the sentences still searched,
that every row gets its own result back, and that a search that compacts
decodes the ids a search that does not compact decodes, eager and traced.
"""

import numpy as np
import pytest
import tensorflow as tf

from conftest import SEARCH_VOCAB, search_model
from t2t_lite.decoding import beam_search, compaction
from t2t_lite.decoding.search import search
from t2t_lite.models.transformer import Transformer

BEAM, L = 3, 24


def _state():
    """3 sentences, 2 beams: sentence 1 has a finished beam no alive one can beat."""
    alive = np.array([[-1.0, -2.0], [-30.0, -31.0], [-0.5, -0.7]], np.float32)
    finished = np.array([[-50.0, -1e9], [-1.0, -1e9], [-1e9, -1e9]], np.float32)
    seq = np.arange(3 * 2 * 4, dtype=np.int32).reshape(3, 2, 4)
    return beam_search._BeamState(
        index=tf.constant(2), alive_seq=tf.constant(seq), alive_log_probs=tf.constant(alive),
        finished_seq=tf.constant(seq + 100), finished_scores=tf.constant(finished),
        finished_flags=tf.constant(finished > -1e8),
        cache=({"key": tf.constant(np.arange(3, dtype=np.float32)[:, None])},))


def test_the_state_keeps_the_sentences_not_done_and_merge_restores_every_row():
    state = _state()
    np.testing.assert_array_equal(
        beam_search.sentence_done(state, 4, 0.6, best_only=True), [False, True, False])
    compact = compaction.Compaction(3, 4, 0.6, best_only=True)
    smaller = compact(state)
    assert int(smaller.index) == 2
    np.testing.assert_array_equal(smaller.alive_seq, state.alive_seq.numpy()[[0, 2]])
    np.testing.assert_array_equal(smaller.cache[0]["key"], [[0.0], [2.0]])
    np.testing.assert_array_equal(compact.rows, [0, 2])
    left = (tf.fill([2, 2, 4], 7), tf.fill([2, 2], 0.5))  # What the search gives the others.
    ids, scores = compact.merge(*left)
    np.testing.assert_array_equal(ids[1], state.finished_seq[1])  # Its result when done.
    np.testing.assert_array_equal(scores[1], state.finished_scores[1])
    np.testing.assert_array_equal(ids.numpy()[[0, 2]], 7)
    np.testing.assert_array_equal(scores.numpy()[[0, 2]], 0.5)
    # The full stopping rule keeps sentence 1: its second finished beam can still be beaten.
    assert not bool(beam_search.sentence_done(state, 4, 0.6)[1])


@pytest.fixture
def ending_model(monkeypatch):
    """The search model with EOS favoured: its sentences end after 1 to 24 tokens."""
    logits = Transformer._logits
    bias = np.zeros(SEARCH_VOCAB, np.float32)
    bias[1] = 1.0
    monkeypatch.setattr(Transformer, "_logits", lambda self, x: logits(self, x) + bias)
    monkeypatch.setattr("t2t_lite.decoding.search.FIRST_CACHE_LENGTH", 4)  # 4, 8, 16, 24.
    return search_model()


@pytest.mark.parametrize("best_only", [True, False])
def test_a_compacting_search_decodes_what_a_full_batch_decodes(ending_model, best_only,
                                                               monkeypatch):
    made = []

    class Spy(compaction.Compaction):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr("t2t_lite.decoding.compaction.Compaction", Spy)
    rng = np.random.default_rng(0)
    ids = rng.integers(2, SEARCH_VOCAB, size=(8, 8))
    ids[:, -1] = 1
    inputs = tf.constant(ids.astype(np.int32))

    def decode(in_place, traced=False):
        def run(x):
            return search(ending_model, x, BEAM, 0.6, L, in_place=in_place, grouped=True,
                          best_only=best_only)
        return (tf.function(run) if traced else run)(inputs)

    full_ids, full_scores = decode(in_place=False)  # No compaction.
    assert not made
    lengths = (full_ids.numpy()[:, 0] != 0).sum(-1)
    assert lengths.min() < 4 and lengths.max() > 16  # Some end before the first growth.
    for traced in (False, True):
        got_ids, got_scores = decode(in_place=True, traced=traced)
        keep = slice(None) if not best_only else slice(0, 1)
        np.testing.assert_array_equal(got_ids.numpy()[:, keep], full_ids.numpy()[:, keep])
        np.testing.assert_allclose(got_scores.numpy()[:, keep], full_scores.numpy()[:, keep],
                                   rtol=1e-5, atol=1e-5)
    taken_out = sum(int(tf.size(rows)) for rows, _, _ in made[0].parts)  # The eager search.
    assert taken_out >= 1 if best_only else len(made[0].parts) == 3  # Calls at 4, 8, 16.
