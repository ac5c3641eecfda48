"""The model: paper-exact pieces, parameter counts, masks, cached decoding."""

import dataclasses
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.runs import weights
from t2t_lite.training import trainer
from t2t_lite.layers.attention import MultiHeadAttention, write_position
from t2t_lite.layers.config import LayerConfig
from t2t_lite.layers.decoder import DecoderLayer
from t2t_lite.layers.encoder import EncoderLayer
from t2t_lite.layers.positional_encoding import SinusoidalPositionalEncoding, sinusoid
from t2t_lite.models.transformer import Transformer


def test_positional_encoding_golden_values():
    # d_model = 4: PE(pos, 0) = sin(pos), PE(pos, 1) = cos(pos),
    # PE(pos, 2) = sin(pos / 100), PE(pos, 3) = cos(pos / 100).
    pe = np.array(sinusoid(np.arange(4), 4))
    np.testing.assert_allclose(pe[0], [0.0, 1.0, 0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(pe[3], [0.14112001, -0.9899925, 0.0299955, 0.99955003], atol=1e-6)
    # d_model = 512, position 10, i = 100: sin(10 / 10000^(200/512)) = sin(0.2738...)
    big = np.array(sinusoid(np.arange(11), 512))
    assert big[10, 200] == pytest.approx(math.sin(10 / 10000 ** (200 / 512)), abs=1e-6)
    assert big[10, 201] == pytest.approx(math.cos(10 / 10000 ** (200 / 512)), abs=1e-6)


def test_positional_encoding_start_index():
    layer = SinusoidalPositionalEncoding(8)
    full = np.array(layer(np.zeros((1, 6, 8))))
    step = np.array(layer(np.zeros((1, 1, 8)), start_index=4))
    np.testing.assert_allclose(step[0], full[4], atol=1e-6)


def closed_form_parameters(vocab, n, d, d_ff, h, d_k=None, d_v=None):
    """Independent count: shared embedding + N encoder + N decoder layers."""
    d_k = d_k or d // h
    d_v = d_v or d // h
    attention = d * h * d_k * 2 + d * h * d_v + h * d_v * d  # No biases (section 3.2.2).
    ffn = d * d_ff + d_ff + d_ff * d + d
    layer_norm = 2 * d
    encoder = attention + ffn + 2 * layer_norm
    decoder = 2 * attention + ffn + 3 * layer_norm
    return vocab * d + n * (encoder + decoder)


@pytest.mark.parametrize("name, expected, paper", [
    ("base", 63_045_632, 65e6),
    ("big", 214_171_648, 213e6),
])
def test_parameter_counts(name, expected, paper):
    h = registry.hparams(name)
    count = closed_form_parameters(37000, h.num_layers, h.d_model, h.d_ff, h.num_heads)
    assert count == expected
    model = Transformer.from_hparams(h, 37000)
    assert model.count_params() == expected
    assert abs(expected - paper) / paper < 0.04  # Within 4% of the paper's figure.


def test_table3_row_b_parameters():
    h = registry.hparams("base_b_dk16")
    model = Transformer.from_hparams(h, 37000)
    assert model.count_params() == closed_form_parameters(37000, 6, 512, 2048, 8, d_k=16)


def test_one_shared_embedding_matrix(tiny_hparams):
    model = Transformer.from_hparams(tiny_hparams, 20)
    assert model.source_embedding is model.target_embedding is model.softmax_embedding
    names = [w.path for w in model.weights if "embedding" in w.path]
    assert len(names) == 1
    # Embedding = E[id] * sqrt(d_model); logits = x E^T.
    table = np.array(model.target_embedding.embeddings)
    emb = np.array(model.target_embedding(np.array([[3]])))
    np.testing.assert_allclose(emb[0, 0], table[3] * math.sqrt(32), rtol=1e-6)
    x = np.random.default_rng(0).normal(size=(1, 2, 32)).astype(np.float32)
    np.testing.assert_allclose(
        np.array(model.softmax_embedding.project(x)), x @ table.T, rtol=1e-5, atol=1e-5)


def _random_batch(rng, vocab=20):
    inputs = rng.integers(2, vocab, (3, 7)).astype(np.int32)
    inputs[1, 4:] = 0
    inputs[2, 6:] = 0
    targets = rng.integers(2, vocab, (3, 6)).astype(np.int32)
    targets[0, 5:] = 0
    return inputs, targets


@pytest.mark.parametrize("overrides, target_vocab", [
    ("", 20), ("normalize_before=true", 20), ("positional_encoding=learned,d_k=8,d_v=24", 20),
    ("shared_embedding=false", 30)])
def test_cached_decoding_equals_full_forward(tiny_hparams, overrides, target_vocab):
    model = Transformer.from_hparams(tiny_hparams.override(overrides), 20, target_vocab)
    inputs, targets = _random_batch(np.random.default_rng(1))
    targets[1, 2] = target_vocab - 1  # A target-only id when the vocabularies differ.
    full = np.array(model({"inputs": inputs, "targets": targets}))
    assert full.shape == (3, 6, target_vocab) and full.dtype == np.float32
    self_cache, cross_cache = model.init_cache(inputs, 4)
    previous = np.zeros(3, np.int32)
    for i in range(6):
        if i == 4:  # Grown as decoding.search grows it; cross_cache never changes.
            self_cache = model.grow_self_cache(self_cache, 6)
        logits, self_cache = model.decode_step(previous, i, self_cache, cross_cache)
        np.testing.assert_allclose(np.array(logits), full[:, i], atol=1e-4)
        previous = targets[:, i]


@pytest.mark.parametrize("index", [0, 3, 6])
def test_cache_write_touches_only_its_position(index):
    rng = np.random.default_rng(index)
    cache = rng.normal(size=(3, 2, 7, 4)).astype("float32")
    new = rng.normal(size=(3, 2, 1, 4)).astype("float32")
    written = np.asarray(write_position(cache, new, tf.constant(index)))
    expected = cache.copy()
    expected[:, :, index] = new[:, :, 0]
    np.testing.assert_array_equal(written, expected)


def test_no_future_leak_and_padding_ignored(tiny_hparams):
    model = Transformer.from_hparams(tiny_hparams, 20)
    inputs, targets = _random_batch(np.random.default_rng(2))
    logits = np.array(model({"inputs": inputs, "targets": targets}))
    changed = targets.copy()
    changed[:, 3:] = 7  # Future targets change ...
    again = np.array(model({"inputs": inputs, "targets": changed}))
    np.testing.assert_allclose(again[:, :4], logits[:, :4], atol=1e-5)  # ... earlier logits don't.
    padded = np.pad(inputs, [[0, 0], [0, 5]])  # More source padding changes nothing.
    np.testing.assert_allclose(
        np.array(model({"inputs": padded, "targets": targets})), logits, atol=1e-5)


def test_post_norm_layer_structure():
    # LayerNorm(x + Sublayer(x)): the output of every position has zero mean, unit variance.
    layer = EncoderLayer(LayerConfig(16, 32, 2, 8, 8, dropout_rate=0.0))
    out = np.array(layer(np.random.default_rng(0).normal(size=(2, 5, 16)).astype(np.float32)))
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.std(-1), 1.0, atol=1e-2)


CONFIG = LayerConfig(d_model=16, d_ff=32, num_heads=2, key_dim=8, value_dim=8,
                     dropout_rate=0.2, normalize_before=True, layer_norm_epsilon=1e-5)


@pytest.mark.parametrize("layer, args", [
    (MultiHeadAttention, dict(num_heads=2, d_model=16, key_dim=4, value_dim=12)),
    (EncoderLayer, dict(layer_config=CONFIG)),
    (DecoderLayer, dict(layer_config=CONFIG)),
    (Transformer, dict(layer_config=CONFIG, source_vocab_size=11, target_vocab_size=13,
                       num_layers=2, positional_encoding="learned", max_length=40,
                       shared_embedding=False)),
])
def test_layer_config_round_trip(layer, args):
    instance = layer(**args)
    config = instance.get_config()
    if "layer_config" in args:  # Stored as a plain dict, rebuilt as a LayerConfig.
        assert config["layer_config"] == dataclasses.asdict(CONFIG)
    again = layer.from_config(config)
    assert again.get_config() == config
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(instance))
    assert type(again) is layer and again.get_config() == config
    if "layer_config" in args:
        assert again.layer_config == CONFIG


def test_layer_config_from_hparams():
    h = registry.hparams("base_b_dk16").override("relu_dropout_rate=0.1,normalize_before=true")
    assert LayerConfig.from_hparams(h) == LayerConfig(
        d_model=512, d_ff=2048, num_heads=8, key_dim=16, value_dim=64, dropout_rate=0.1,
        attention_dropout_rate=0.0, relu_dropout_rate=0.1, normalize_before=True,
        layer_norm_epsilon=1e-6)
    model = Transformer.from_hparams(registry.hparams("tiny").override("dropout_rate=0.3"), 12)
    assert model.encoder_layers[1].layer_config is model.layer_config
    assert model.decoder_layers[0].self_attention_dropout.rate == 0.3


def test_checkpoint_holds_every_weight(tiny_hparams, tmp_path):
    model = Transformer.from_hparams(tiny_hparams, 20)
    optimizer = trainer.make_optimizer(tiny_hparams)
    optimizer.build(model.trainable_variables)  # It references the same variables.
    path = tf.train.Checkpoint(model=weights.model_weights(model), optimizer=optimizer).save(
        str(tmp_path / "ckpt"))
    saved = {k for k, _ in tf.train.list_variables(path) if k.startswith("model/")}
    assert saved == set(weights.weight_keys(model))
    assert "model/encoder_layer_0-self_attention-query-kernel/.ATTRIBUTES/" \
        "VARIABLE_VALUE" in saved
    other = Transformer.from_hparams(tiny_hparams, 20)
    tf.train.Checkpoint(model=weights.model_weights(other)).read(path).expect_partial()
    for a, b in zip(model.weights, other.weights):
        np.testing.assert_array_equal(np.array(a), np.array(b))


def test_projection_gradient_builds_no_tensor_larger_than_the_logits():
    """The pre-softmax projection's gradient stays a matmul: no [V, D, B, T] outer product."""
    from t2t_lite.layers.embedding import SharedEmbedding

    vocab, d_model, batch, length = 300, 16, 4, 7
    embedding = SharedEmbedding(vocab, d_model)
    embedding.build()

    @tf.function(input_signature=[tf.TensorSpec([batch, length, d_model], tf.float32)])
    def grads(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(embedding.project(x) ** 2)
        return tape.gradient(loss, [x, embedding.embeddings.value])

    graph = grads.get_concrete_function().graph
    largest = max(output.shape.num_elements() or 0
                  for op in graph.get_operations() for output in op.outputs)
    assert largest <= batch * length * vocab  # The logits, or their gradient.
    x = tf.random.normal([batch, length, d_model])
    dx, dw = grads(x)
    logits = tf.einsum("btd,vd->btv", x, embedding.embeddings)
    np.testing.assert_allclose(dw, tf.einsum("btv,btd->vd", 2 * logits, x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, tf.einsum("btv,vd->btd", 2 * logits, embedding.embeddings),
                               rtol=1e-4, atol=1e-4)
