"""Under KERAS_BACKEND=jax: the TensorFlow side's weights give its logits and searches,
equation 3 drives `fit`, and a tiny Transformer learns algorithmic_reverse with
`model.fit` on NumPy arrays, decoded under `jax.jit`.

Keras chooses its backend once, at import, so these run in their own pytest
process, and the file's name keeps the TensorFlow run from collecting it:
`tests/test_jax_backend.py` (collected by the normal run, so CI runs this)
writes the TensorFlow side's reference into $T2T_JAX_REFERENCE and starts
pytest on this file with KERAS_BACKEND=jax. By hand:

    KERAS_BACKEND=jax T2T_JAX_REFERENCE=DIR .venv/bin/python -m pytest \
        --confcutdir=tests/jax_backend tests/jax_backend/jax_checks.py
"""

import os
import sys

import jax
import keras
import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.decoding import search
from t2t_lite.training.callbacks import CheckpointAveraging, TransformerLearningRate
from t2t_lite.models.losses import LabelSmoothedCrossEntropy
from t2t_lite.training.schedules import paper_learning_rate


@pytest.fixture(scope="module")
def reference_dir():
    path = os.environ.get("T2T_JAX_REFERENCE")
    if not path or not os.path.exists(os.path.join(path, "reference.npz")):
        pytest.fail("T2T_JAX_REFERENCE must name the TensorFlow side's reference directory "
                    "(tests/test_jax_backend.py writes it)")
    return path


@pytest.fixture(scope="module")
def reference(reference_dir):
    return dict(np.load(os.path.join(reference_dir, "reference.npz")))


def _model(hparams_name, vocab):
    hparams = registry.hparams(str(hparams_name))
    return hparams, registry.model(hparams.model).from_hparams(hparams, int(vocab))


def test_backend_is_jax_and_tensorflow_is_not_imported():
    assert keras.backend.backend() == "jax"
    assert "tensorflow" not in sys.modules  # model, search, loss, callbacks: keras.ops only


def test_tensorflow_weights_give_tensorflow_logits(reference, reference_dir):
    _, model = _model(reference["hparams"], reference["vocab"])
    model.load_weights(os.path.join(reference_dir, "tensorflow.weights.h5"))
    features = {"inputs": reference["inputs"], "targets": reference["targets"]}
    logits = np.asarray(model(features, training=False))
    np.testing.assert_allclose(logits, reference["logits"], rtol=1e-5, atol=1e-5)


def test_greedy_and_beam_under_jit_equal_tensorflow(reference, reference_dir):
    _, model = _model(reference["hparams"], reference["vocab"])
    model.load_weights(os.path.join(reference_dir, "tensorflow.weights.h5"))
    for beam, key in ((1, "greedy"), (4, "beam")):
        ids, scores = jax.jit(lambda x, k=beam: search.search(model, x, k, 0.6, 24))(
            reference["inputs"])
        np.testing.assert_array_equal(np.asarray(ids), reference[key])
        np.testing.assert_allclose(np.asarray(scores), reference[key + "_scores"],
                                   rtol=1e-4, atol=1e-4)


def _reverse_data(rng, count, vocab, max_words):
    """algorithmic_reverse's task as arrays: 0-padded sources with EOS (1), reversed targets."""
    lengths = rng.integers(1, max_words + 1, size=count)
    inputs = np.zeros((count, max_words + 1), np.int32)
    targets = np.zeros((count, max_words + 1), np.int32)
    for row, length in enumerate(lengths):
        words = rng.integers(2, vocab, size=length)
        inputs[row, :length + 1] = [*words, 1]
        targets[row, :length + 1] = [*words[::-1], 1]
    return inputs, targets


class _Rates(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(np.asarray(self.model.optimizer.learning_rate)))


def test_fit_with_paper_callbacks_learns_reverse(reference_dir):
    keras.utils.set_random_seed(0)
    vocab, max_words = 12, 8
    hparams, model = _model("tiny", vocab)
    model.compile(optimizer=keras.optimizers.Adam(0.0, hparams.adam_beta1, hparams.adam_beta2,
                                                  hparams.adam_epsilon),
                  loss=LabelSmoothedCrossEntropy(hparams.label_smoothing))
    rng = np.random.default_rng(0)
    inputs, targets = _reverse_data(rng, 64 * 150, vocab, max_words)
    rates, averaging = _Rates(), CheckpointAveraging(last=3, every_steps=50)
    model.fit({"inputs": inputs, "targets": targets}, targets, batch_size=64, epochs=4,
              verbose=0, callbacks=[TransformerLearningRate(hparams.d_model, hparams.warmup_steps),
                                    averaging, rates])
    # Equation 3 at every step (optimizer step s + 1 is the update's step number).
    expected = [paper_learning_rate(step, hparams.d_model, hparams.warmup_steps)
                for step in range(1, len(rates.rates) + 1)]
    np.testing.assert_allclose(rates.rates, np.asarray(expected, np.float32), rtol=1e-6)
    assert averaging.averaged_steps == [500, 550, 600]
    test_inputs, test_targets = _reverse_data(np.random.default_rng(1), 200, vocab, max_words)
    ids, _ = jax.jit(lambda x: search.search(model, x, 1, 0.6, max_words + 1))(test_inputs)
    ids = np.asarray(ids)[:, 0, :max_words + 1]
    exact = np.mean(np.all(ids == test_targets, axis=1))
    # 0.9+ on an AMD EPYC, 0.88 on an Intel Xeon with AMX (XLA's CPU code differs); an
    # untrained model scores 0.
    assert exact >= 0.8, exact
    model.save_weights(os.path.join(reference_dir, "jax_trained.weights.h5"))
    logits = np.asarray(model({"inputs": test_inputs[:8], "targets": test_targets[:8]},
                              training=False))
    np.savez(os.path.join(reference_dir, "jax_trained.npz"), vocab=vocab,
             inputs=test_inputs[:8], targets=test_targets[:8], logits=logits)
