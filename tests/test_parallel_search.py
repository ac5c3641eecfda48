"""Searches side by side: a batch decoded as shards on separate cores (issue 28).

TensorFlow runs a decoding step's small matrix products on one thread, so
without XLA the decoder splits each batch into `shards` independent searches
in one graph, which TensorFlow's inter-op threads run at once
(`t2t_lite.decoding.parallel`). These tests state that the split decodes
what one search decodes (beam, greedy, sampling; batches smaller than the
shard count and not divisible by it), that the graph traces the search once
and calls it once per shard (one search under XLA), how the threads are split,
and that the decoder CLI refuses a shard count below 1 in one line.
"""

import numpy as np
import pytest
import tensorflow as tf

from conftest import SEARCH_VOCAB, search_model
from t2t_lite.bin import decoder as decoder_cli
from t2t_lite.decoding import parallel
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.sampling import sample_padded
from t2t_lite.decoding.search import decode_padded

VOCAB = SEARCH_VOCAB


@pytest.fixture(scope="module")
def model():
    return search_model()


def _inputs(batch, seed=0, length=8):
    ids = np.random.default_rng(seed).integers(2, VOCAB, size=(batch, length))
    ids[:, -1] = 1
    if batch > 2:
        ids[2, 3:] = 0  # A shorter source.
        ids[2, 2] = 1
    return tf.constant(ids.astype(np.int32))


def _decode(model, options, sampling=False):
    spec = [tf.TensorSpec([None, 8], tf.int32)]
    if sampling:
        return tf.function(lambda x, keys: sample_padded(model, x, keys, options),
                           input_signature=spec + [tf.TensorSpec([None], tf.int32)])
    return tf.function(lambda x: decode_padded(model, x, options), input_signature=spec)


# A batch of 5 in 2 and 3 shards (padded to 6), one sentence in 2 shards (fewer
# rows than shards), each against one search: beams, then greedy.
@pytest.mark.parametrize("beam_size,batch,shard_counts", [
    pytest.param(3, 5, (2, 3), marks=pytest.mark.slow), (1, 1, (2,))])  # Slow: CI runs it.
def test_shards_decode_what_one_search_decodes(model, beam_size, batch, shard_counts):
    inputs = _inputs(batch)
    one = _decode(model, DecodeOptions(beam_size=beam_size, extra_length=10, shards=1))(inputs)
    for shards in shard_counts:
        options = DecodeOptions(beam_size=beam_size, extra_length=10, shards=shards)
        ids, scores = _decode(model, options)(inputs)
        assert ids.shape == one[0].shape
        np.testing.assert_array_equal(ids.numpy(), one[0].numpy())
        np.testing.assert_allclose(scores.numpy(), one[1].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_shards_sample_what_one_sampler_samples(model):
    inputs, keys = _inputs(5), tf.constant([7, 3, 9, 1, 4], tf.int32)
    results = []
    for shards in (1, 2):
        options = DecodeOptions(sampling_temperature=1.0, num_samples=2, extra_length=10,
                                seed=5, shards=shards)
        results.append(_decode(model, options, sampling=True)(inputs, keys))
    np.testing.assert_array_equal(results[1][0].numpy(), results[0][0].numpy())
    np.testing.assert_allclose(results[1][1].numpy(), results[0][1].numpy(), rtol=1e-5,
                               atol=1e-5)


def _graph(concrete):
    """(top-level call ops as (op, function name), While loops in the whole graph)."""
    graph = concrete.graph.as_graph_def()
    calls = [(n.op, n.attr["f"].func.name) for n in graph.node if "PartitionedCall" in n.op]
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    return calls, sum(node.op in ("While", "StatelessWhile") for node in nodes)


@pytest.mark.parametrize("jit", [False, True])
def test_the_graph_calls_one_traced_search_per_shard_and_one_under_xla(model, jit):
    spec = tf.TensorSpec([None, 8], tf.int32)
    graphs = {}
    for shards in (1, 2):
        options = DecodeOptions(beam_size=3, extra_length=10, shards=shards, jit_compile=jit)
        graphs[shards] = _graph(tf.function(
            lambda x: decode_padded(model, x, options)).get_concrete_function(spec))
    (calls_one, loops_one), (calls_two, loops_two) = graphs[1], graphs[2]
    assert not calls_one and loops_one > 0
    assert loops_two == loops_one  # The search is traced (and optimized) once ...
    if jit:
        assert not calls_two
    else:  # ... and called once per shard, as separate ops the executor runs side by side.
        assert len(calls_two) == 2 and calls_two[0] == calls_two[1]


def test_sharded_slices_the_batch_evenly_and_keeps_its_order():
    seen = []

    def fn(x):
        seen.append(x)
        return (x * 10,)

    result = tf.function(lambda x: parallel.sharded(fn, (x,), 3))(tf.range(7))
    # 7 rows padded to 9 by 2 copies: three slices of 3 rows, one trace for all three.
    assert [x.shape[0] for x in seen] == [3]
    np.testing.assert_array_equal(result[0].numpy(), np.arange(7) * 10)
    assert parallel.sharded(fn, (tf.range(4),), 2)[0].shape == (4,)  # Eager: one call.


def test_threads_split_the_cores_among_the_shards():
    assert parallel.threads(2, cores=2) == (2, 1)
    assert parallel.threads(1, cores=2) == (1, 2)
    assert parallel.threads(2, cores=8) == (2, 4)
    assert 1 <= parallel.default_shards() <= parallel.MAX_DEFAULT_SHARDS


def test_the_decoder_cli_refuses_shards_below_one(tmp_path, capsys):
    code = decoder_cli.main(["--output_dir", str(tmp_path), "--shards", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == "t2t_lite-decoder: error: --shards must be at least 1 (got 0)"
