"""The encoder's relative-position bias (issue 23): T5's buckets, the bias reaching every
encoder layer's attention, saved with the weights, and the hparams that turn it on."""

import math

import keras
import numpy as np
import pytest

from t2t_lite.hparams.hparams import HParamsError
from t2t_lite.layers.relative_position import RelativePositionBias, relative_buckets
from t2t_lite.runs import weights


def _reference_bucket(relative, num_buckets, max_distance):
    """T5's bidirectional bucket of key j - query i, written out once per pair."""
    half = num_buckets // 2
    exact = half // 2
    bucket = half if relative > 0 else 0
    distance = abs(relative)
    if distance < exact:
        return bucket + distance
    log_bucket = exact + int(math.log(distance / exact) / math.log(max_distance / exact)
                             * (half - exact))
    return bucket + min(log_bucket, half - 1)


@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (8, 20), (4, 10)])
def test_buckets_are_t5s_bidirectional_log_buckets(num_buckets, max_distance):
    length = 300
    got = np.asarray(relative_buckets(length, num_buckets, max_distance))
    want = np.array([[_reference_bucket(j - i, num_buckets, max_distance)
                      for j in range(length)] for i in range(length)])
    np.testing.assert_array_equal(got, want)
    assert got.min() == 0 and got.max() == num_buckets - 1
    # Keys after the query never share a bucket with keys at or before it.
    after = np.triu(np.ones((length, length), bool), 1)
    assert set(got[after]).isdisjoint(got[~after])
    # Every short distance has a bucket of its own; far ones share the last.
    assert len({got[0, j] for j in range(num_buckets // 4)}) == num_buckets // 4
    assert got[0, max_distance] == got[0, length - 1] == num_buckets - 1


def test_the_bias_is_the_tables_entry_of_each_heads_bucket():
    layer = RelativePositionBias(8, 3)
    table = np.arange(24, dtype=np.float32).reshape(8, 3)
    layer.table.assign(table)
    bias = np.asarray(layer(np.zeros((2, 6), np.int32)))
    buckets = np.asarray(relative_buckets(6, 8))
    assert bias.shape == (1, 3, 6, 6)
    for h in range(3):
        np.testing.assert_array_equal(bias[0, h], table[buckets, h])


def test_buckets_must_be_even_and_at_least_four():
    with pytest.raises(ValueError, match="even and at least 4"):
        RelativePositionBias(5, 2)


def _model(tiny_hparams, buckets):
    keras.utils.set_random_seed(3)
    hparams = tiny_hparams.override(
        "model=aligned_transformer,shared_embedding=false,num_layers=2,"
        f"relative_position_buckets={buckets}")
    return weights.build_model(hparams, 20, 20)


def test_the_bias_reaches_every_encoder_layers_attention(tiny_hparams):
    """A huge bias on distance 0 makes each layer's self-attention the identity;
    without the bias (zeros, as initialized) it is spread over the words."""
    model = _model(tiny_hparams, 8)
    inputs = np.array([[5, 6, 7, 8, 9, 1, 0]], np.int32)
    *_, before = model.encode(inputs, return_attention_scores=True)
    table = np.zeros((8, tiny_hparams.num_heads), np.float32)
    table[0] = 1e4  # Bucket 0: the query's own position.
    model.relative_position_bias.table.assign(table)
    *_, after = model.encode(inputs, return_attention_scores=True)
    assert len(after) == 2
    for weights_before, weights_after in zip(before, after):
        identity = np.broadcast_to(np.eye(7)[:6], (tiny_hparams.num_heads, 6, 7))
        np.testing.assert_allclose(np.asarray(weights_after)[0, :, :6], identity, atol=1e-6)
        assert np.asarray(weights_before)[0, :, :6].max() < 0.9
        # Padding stays masked whatever the bias.
        assert np.asarray(weights_after)[0, :, :, 6].max() == 0.0


def test_the_bias_table_is_saved_and_restored(tiny_hparams, tmp_path):
    model = _model(tiny_hparams, 8)
    table = np.random.default_rng(0).normal(size=(8, tiny_hparams.num_heads))
    model.relative_position_bias.table.assign(table.astype(np.float32))
    inputs = np.array([[5, 6, 7, 1]], np.int32)
    want = np.asarray(model.encode(inputs)[0])
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    other = _model(tiny_hparams, 8)
    other.load_weights(path)
    np.testing.assert_allclose(np.asarray(other.relative_position_bias.table), table, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(other.encode(inputs)[0]), want, rtol=1e-5, atol=1e-6)


def test_off_by_default_and_config_round_trip(tiny_hparams):
    assert tiny_hparams.override(
        "model=aligned_transformer").model_config.relative_position_buckets == 0
    plain = _model(tiny_hparams, 0)
    assert not hasattr(plain, "relative_position_bias")
    model = _model(tiny_hparams, 8)
    config = model.get_config()
    assert config["relative_position_buckets"] == 8
    assert type(model).from_config(config).relative_position_buckets == 8


@pytest.mark.parametrize("overrides,match", [
    ("relative_position_buckets=8", "need model=aligned_transformer"),
    ("model=aligned_transformer,relative_position_buckets=7", "even and at least 4"),
    ("model=aligned_transformer,relative_position_buckets=2", "even and at least 4"),
])
def test_hparams_refuse_what_cannot_be_built(tiny_hparams, overrides, match):
    with pytest.raises(HParamsError, match=match):
        tiny_hparams.override(overrides)
