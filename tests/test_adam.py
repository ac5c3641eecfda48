"""FusedAdam: Keras' Adam update, one fused kernel per variable (issue 28)."""

import os

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.training import cluster, trainer
from t2t_lite.training.adam import FusedAdam
from t2t_lite.training.schedules import TransformerSchedule


def _variables(seed=0):
    rng = np.random.default_rng(seed)
    return [keras.Variable(rng.normal(size=shape).astype(np.float32), name=f"w{i}")
            for i, shape in enumerate([(7, 5), (5,), (11, 3)])]


def _gradients(step, sparse=False):
    """Gradients of the three variables; the last one's rows as an embedding lookup's."""
    rng = np.random.default_rng(100 + step)
    dense = [tf.constant(rng.normal(size=s).astype(np.float32)) for s in [(7, 5), (5,)]]
    rows = tf.constant([1, 4, 1], tf.int32)  # A repeated row: the slices add.
    lookup = tf.IndexedSlices(tf.constant(rng.normal(size=(3, 3)).astype(np.float32)),
                              rows, dense_shape=tf.constant([11, 3]))
    return dense + [lookup if sparse else tf.convert_to_tensor(lookup)]


def _train(optimizer_class, steps=6, strategy=None, sparse=False):
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        variables = _variables()
        optimizer = optimizer_class(learning_rate=TransformerSchedule(64, 3, 1.0),
                                    beta_1=0.9, beta_2=0.98, epsilon=1e-9)
        optimizer.build(variables)

    @tf.function
    def apply(step):
        strategy.run(lambda: optimizer.apply_gradients(zip(_gradients(step, sparse),
                                                           variables)))

    for step in range(steps):
        apply(step)
    return variables, optimizer


def test_fused_adam_equals_keras_adam():
    mine, optimizer = _train(FusedAdam)
    theirs, _ = _train(keras.optimizers.Adam)
    assert int(optimizer.iterations.numpy()) == 6
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    assert not np.allclose(mine[0].numpy(), _variables()[0].numpy())  # It did move.


def test_a_lookups_repeated_rows_add_before_the_update():
    """An embedding's gradient arrives as row slices, a word's rows repeated: Adam
    sees their sum, as if dense (Keras' own Adam squares each slice and adds, so
    its second moment of a repeated row is not the square of the gradient)."""
    sparse, _ = _train(FusedAdam, sparse=True)
    dense, _ = _train(keras.optimizers.Adam)
    np.testing.assert_allclose(sparse[2].numpy(), dense[2].numpy(), rtol=1e-6, atol=1e-7)
    keras_sparse, _ = _train(keras.optimizers.Adam, sparse=True)
    assert not np.allclose(keras_sparse[2].numpy()[1], dense[2].numpy()[1], atol=1e-4)


def test_fused_adam_equals_keras_adam_on_two_replicas():
    # cluster.local_strategy: collective keys of its own, so an earlier two-replica
    # strategy in this process (tests/test_distributed.py) cannot clash with it.
    strategy = cluster.local_strategy(["/cpu:0", "/cpu:1"])
    mine, _ = _train(FusedAdam, strategy=strategy)
    twice, _ = _train(keras.optimizers.Adam, strategy=strategy)
    for a, b in zip(mine, twice):  # The replicas' summed gradient, as Keras' Adam takes it,
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
        copies = a.value.values  # ... applied to each replica's copy alike.
        np.testing.assert_array_equal(copies[0].numpy(), copies[1].numpy())


def test_each_update_is_one_apply_adam_kernel():
    variables = _variables()
    optimizer = FusedAdam(learning_rate=1e-3)
    optimizer.build(variables)
    grads = [tf.convert_to_tensor(g) for g in _gradients(0)]
    graph = tf.function(lambda: optimizer.apply_gradients(zip(grads, variables))
                        ).get_concrete_function().graph
    kinds = [op.type for op in graph.get_operations()]
    assert kinds.count("ResourceApplyAdam") == len(variables)
    assert "AssignSubVariableOp" not in kinds  # Keras' own update ends in assign_sub.


def test_the_trainer_uses_it_and_keras_adam_checkpoints_restore(tmp_path):
    hparams = registry.hparams("tiny")
    assert isinstance(trainer.make_optimizer(hparams), FusedAdam)
    variables = _variables()
    theirs = keras.optimizers.Adam(learning_rate=1e-2)
    theirs.apply_gradients(zip([tf.convert_to_tensor(g) for g in _gradients(0)], variables))
    path = tf.train.Checkpoint(optimizer=theirs, weights=variables).save(
        os.path.join(tmp_path, "ckpt"))
    restored_variables = _variables(seed=1)
    mine = FusedAdam(learning_rate=1e-2)
    mine.build(restored_variables)
    tf.train.Checkpoint(optimizer=mine, weights=restored_variables).restore(
        path).assert_consumed()
    assert int(mine.iterations.numpy()) == 1
    for a, b in zip(mine.variables, theirs.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
