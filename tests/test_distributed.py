"""MirroredStrategy: two replicas == one replica on the same global batch.

Also: accumulating two micro-batches == one step on both (gradient accumulation).
The two logical CPU devices come from conftest.py.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.training import cluster
from t2t_lite.training.train_step import StepRunner
from t2t_lite.training.trainer import build_state


def _global_batch():
    rng = np.random.default_rng(0)
    inputs = rng.integers(2, 12, (6, 9)).astype(np.int32)
    targets = rng.integers(2, 12, (6, 9)).astype(np.int32)
    inputs[0, 5:] = targets[1, 3:] = targets[4, 7:] = 0  # Uneven token counts.
    return {"inputs": tf.constant(inputs), "targets": tf.constant(targets)}


def _run(hparams, devices, micro_batches, weights=None):
    problem = registry.problem("algorithmic_reverse")
    strategy = cluster.local_strategy(devices)
    model, _ = build_state(problem, hparams, strategy, seed=7)
    with strategy.scope():
        # SGD: the update is linear in the gradient, so float32 noise in
        # near-zero gradients stays noise (Adam's first step is lr * sign(g)).
        optimizer = keras.optimizers.SGD(learning_rate=1.0)
        optimizer.build(model.trainable_variables)
    if weights is not None:
        for variable, value in zip(model.weights, weights):
            variable.assign(value)
    initial = [np.array(w) for w in model.weights]
    runner = StepRunner(model, optimizer, strategy, hparams.label_smoothing,
                        accum_steps=len(micro_batches))
    loss_sum, nll_sum, tokens = runner.step(micro_batches)
    return initial, [np.array(w) for w in model.weights], loss_sum / tokens, tokens


@pytest.fixture
def hparams(tiny_hparams):
    return tiny_hparams


@pytest.fixture(scope="module")
def one_replica():
    """One step of one replica on the whole global batch: the reference for the module."""
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256")
    return hparams, _run(hparams, ["/cpu:0"], [_global_batch()])


def _assert_same_update(reference, other):
    _, ref_weights, ref_loss, ref_tokens = reference
    _, weights, loss, tokens = other
    assert tokens == ref_tokens
    assert loss == pytest.approx(ref_loss, rel=1e-6)
    for a, b in zip(ref_weights, weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.guarantee("replicas", "one training step on two replicas gives the weights of one "
                       "replica with the same global batch (rtol 1e-5)")
def test_two_replicas_equal_one(one_replica):
    hparams, one = one_replica
    two = _run(hparams, ["/cpu:0", "/cpu:1"], [_global_batch()], weights=one[0])
    moved = max(np.abs(a - b).max() for a, b in zip(one[0], one[1]))
    assert moved > 1e-4  # The step did change the weights.
    _assert_same_update(one, two)


@pytest.mark.guarantee("replicas", "two accumulated half batches, on one replica and on two, give "
                       "the update of one whole batch")
def test_accumulation_equals_one_big_step(one_replica):
    hparams, one = one_replica
    batch = _global_batch()
    halves = [{k: v[:2] for k, v in batch.items()}, {k: v[2:] for k, v in batch.items()}]
    accumulated = _run(hparams.override("accum_steps=2"), ["/cpu:0"], halves, weights=one[0])
    _assert_same_update(one, accumulated)
    # And with two replicas accumulating.
    both = _run(hparams.override("accum_steps=2"), ["/cpu:0", "/cpu:1"], halves,
                weights=one[0])
    _assert_same_update(one, both)


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_a_second_strategy_in_the_process_trains_another_model(hparams):
    """Two MirroredStrategy objects number their collectives from the same keys unless
    told otherwise: a second training of another shape in one process (a notebook, a
    test run) would fail with "Shape mismatch in the collective instance"."""
    batch = _global_batch()
    _run(hparams, ["/cpu:0", "/cpu:1"], [batch])
    wider = hparams.override("d_model=48,d_ff=80")
    initial, weights, loss, _ = _run(wider, ["/cpu:0", "/cpu:1"], [batch])
    assert np.isfinite(loss) and weights[0].shape[-1] == 48
    assert max(np.abs(a - b).max() for a, b in zip(initial, weights)) > 1e-4
