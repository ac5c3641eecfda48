"""Decoding writes the self-attention cache in place without XLA (issue 28).

Without XLA, TensorFlow copied the whole [B, H, L, d] cache to write one
position; the library's searches now write the new rows into the cache's own
buffer (`t2t_lite.layers.attention.write_position`'s `in_place`). These tests state
that the decoder's graph does so, that it decodes exactly what the copying
search decodes (beam, greedy, sampling, repeated calls on static shapes whose
zero caches the graph optimizer folds into constants), that XLA keeps the
copying write, and that a caller's cache is never changed behind its back.
"""

import numpy as np
import pytest
import tensorflow as tf

from conftest import SEARCH_VOCAB, search_model
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.sampling import sample
from t2t_lite.decoding.search import decode_padded, search

VOCAB = SEARCH_VOCAB


@pytest.fixture(scope="module")
def model():
    return search_model()


def _inputs(seed, batch=3, length=8):
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, VOCAB, size=(batch, length - 1))
    return tf.constant(np.concatenate([ids, np.ones((batch, 1))], 1).astype(np.int32))


def _op_types(concrete):
    """Every op type in a concrete function's graph and the functions it calls."""
    graph = concrete.graph.as_graph_def()
    types = {node.op for node in graph.node}
    for function in graph.library.function:
        types.update(node.op for node in function.node_def)
    return types


@pytest.mark.parametrize("jit, written, absent", [
    (False, "InplaceUpdate", "XlaDynamicUpdateSlice"),
    (True, "XlaDynamicUpdateSlice", "InplaceUpdate"),
])
def test_the_decoders_search_writes_in_place_unless_xla_compiles_it(model, jit, written, absent):
    options = DecodeOptions(beam_size=3, extra_length=10, jit_compile=jit)
    spec = tf.TensorSpec([None, 8], tf.int32)
    concrete = tf.function(lambda x: decode_padded(model, x, options)).get_concrete_function(spec)
    types = _op_types(concrete)
    assert written in types and absent not in types


@pytest.mark.parametrize("beam_size", [1, 3])
def test_in_place_writes_decode_what_the_copying_search_decodes(model, beam_size):
    def traced(in_place):
        spec = tf.TensorSpec([3, 8], tf.int32)  # Static: the zero caches fold into constants.
        # At least 20 tokens, whatever the random weights: both cache segments (16, 24) are used.
        return tf.function(lambda x: search(model, x, beam_size, 0.6, 24, min_decode_length=20,
                                            in_place=in_place), input_signature=[spec])

    copying, writing = traced(False), traced(True)
    for seed in (1, 2, 1):  # The first batch again: no call may leave state in a buffer.
        inputs = _inputs(seed)
        (want_ids, want_scores), (ids, scores) = copying(inputs), writing(inputs)
        np.testing.assert_array_equal(ids.numpy(), want_ids.numpy())
        np.testing.assert_array_equal(scores.numpy(), want_scores.numpy())
        assert (ids.numpy()[:, 0, 16:19] != 0).all()


def test_in_place_writes_sample_what_the_copying_sampler_samples(model):
    def traced(in_place):
        return tf.function(lambda x: sample(model, x, 24, temperature=1.0, seed=7,
                                            num_samples=2, in_place=in_place))

    inputs = _inputs(3)
    (want_ids, want_scores), (ids, scores) = traced(False)(inputs), traced(True)(inputs)
    np.testing.assert_array_equal(ids.numpy(), want_ids.numpy())
    np.testing.assert_allclose(scores.numpy(), want_scores.numpy(), rtol=1e-6)


def test_decode_step_never_changes_the_callers_cache(model):
    """A cache passed to `decode_step` outside a search stays as it was, traced without
    `in_place` or eager with it (eager steps never write in place): only a search owns
    its buffers."""
    inputs = _inputs(4)
    self_cache, cross_cache = model.init_cache(inputs, 16)
    step_ids = tf.constant([5, 6, 7], tf.int32)

    @tf.function
    def traced_step(cache):
        return model.decode_step(step_ids, tf.constant(0), cache, cross_cache)

    eager_logits, eager_cache = model.decode_step(step_ids, tf.constant(0), self_cache,
                                                  cross_cache, in_place=True)
    traced_logits, _ = traced_step(self_cache)
    for layer in self_cache:
        assert not np.any(layer["key"].numpy()) and not np.any(layer["value"].numpy())
    assert np.any(eager_cache[0]["key"].numpy()[:, :, 0])  # The step wrote its own copy.
    np.testing.assert_allclose(traced_logits.numpy(), eager_logits.numpy(), rtol=1e-5, atol=1e-6)
