"""Mixed precision: the `precision` hparam, float32 logits and loss, dynamic loss scaling.

The loss-scaling tests run the float32 model with a `LossScaleOptimizer`, so
they test the scaling arithmetic of `StepRunner` and Keras' optimizer alone:
scaling by a power of two and dividing it out again is exact in float32.
"""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.runs import checkpoints
from t2t_lite.runs import weights
from t2t_lite.training import cluster, trainer
from t2t_lite.training.options import EvalOptions
from t2t_lite.hparams import HParams, HParamsError
from t2t_lite.models.losses import smoothed_cross_entropy_sums
from t2t_lite.runs.run_dir import RunDirError
from t2t_lite.training.train_step import StepRunner

VOCAB = 12  # algorithmic_reverse's.
COMPUTE = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


def _batch(rows=8, length=10, seed=0):
    rng = np.random.default_rng(seed)
    return {"inputs": rng.integers(2, VOCAB, (rows, length)).astype("int32"),
            "targets": rng.integers(2, VOCAB, (rows, length)).astype("int32")}


def _values(variables):
    return [np.array(v.numpy()) for v in variables]


def _build(hparams, strategy, scaled=None, runner=StepRunner):
    """Model, optimizer (wrapped in a LossScaleOptimizer with `scaled` kwargs) and runner."""
    keras.utils.set_random_seed(1234)
    with strategy.scope():
        model = weights.build_model(hparams, VOCAB)
        optimizer = trainer.make_optimizer(hparams)
        if scaled is not None:
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer, **scaled)
        optimizer.build(model.trainable_variables)
    return model, optimizer, runner(model, optimizer, strategy, hparams.label_smoothing)


@pytest.fixture
def fast_hparams(tiny_hparams):
    """tiny_hparams whose first step moves every weight by about 0.18 (warmup of 1 step)."""
    return tiny_hparams.override("warmup_steps=1")


# --- The hparam ------------------------------------------------------------------------


def test_precision_hparam_and_its_old_spelling():
    assert HParams().precision == "float32" and HParams().dtype_policy == "float32"
    for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
        h = HParams().override(f"precision={policy}")
        assert h.dtype_policy == policy and HParams.from_json(h.to_json()) == h
    # mixed_precision=true (hparams.json files written before `precision`) is mixed_float16.
    old = json.loads(HParams().to_json())
    del old["precision"]
    old["mixed_precision"] = True
    assert HParams.from_json(json.dumps(old)).dtype_policy == "mixed_float16"
    assert HParams().override("mixed_precision=true,precision=mixed_float16").dtype_policy \
        == "mixed_float16"
    with pytest.raises(HParamsError, match="mixed_precision=true means precision=mixed_float16"):
        HParams().override("mixed_precision=true,precision=mixed_bfloat16")
    with pytest.raises(HParamsError) as info:
        HParams().override("precision=float16")
    assert str(info.value) == ("precision must be one of float32, mixed_float16, "
                               "mixed_bfloat16, not 'float16'")
    assert "precision" not in HParams().override("precision=mixed_bfloat16").model_shaping_diff(
        HParams())


# --- What runs in which dtype ----------------------------------------------------------


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_policies_compute_low_keep_variables_logits_and_loss_float32(
        tiny_hparams, policy):
    hparams = tiny_hparams.override(f"precision={policy}")
    model = weights.build_model(hparams, VOCAB)
    assert keras.config.dtype_policy().name == "float32"  # Nothing global changed.
    assert model.dtype_policy.name == policy
    attention = model.encoder_layers[0].self_attention
    assert (attention.compute_dtype, attention.variable_dtype) == (COMPUTE[policy], "float32")
    assert {w.dtype for w in model.weights} == {"float32"}
    batch = _batch()
    hidden, _ = model.encode(batch["inputs"])
    assert hidden.dtype == COMPUTE[policy]  # The layers do compute in 16 bits...
    logits = model(batch)
    assert logits.dtype == "float32"  # ... and the logits and the loss are float32.
    sums = smoothed_cross_entropy_sums(logits, batch["targets"], hparams.label_smoothing)
    assert [s.dtype for s in sums] == ["float32"] * 3 and math.isfinite(float(sums[0]))
    optimizer = trainer.make_optimizer(hparams)
    # bfloat16 has float32's exponent range: only float16 needs loss scaling.
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer) == (
        policy == "mixed_float16")


# --- Loss scaling in StepRunner --------------------------------------------------------


def test_a_loss_scaled_step_updates_like_an_unscaled_one(fast_hparams, one_device):
    model, plain, runner = _build(fast_hparams, one_device)
    scaled_model, scaled, scaled_runner = _build(
        fast_hparams, one_device, scaled={"initial_scale": 2.0 ** 15})
    before = _values(model.trainable_variables)
    for a, b in zip(before, _values(scaled_model.trainable_variables)):
        np.testing.assert_array_equal(a, b)
    batch = _batch()
    assert runner.step([batch]) == scaled_runner.step([batch])  # The loss is never scaled.
    after = _values(model.trainable_variables)
    assert all(np.max(np.abs(a - b)) > 0.1 for a, b in zip(after, before))
    for a, b in zip(_values(scaled_model.trainable_variables), after):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    # Adam's moments saw the unscaled gradients (a scaled one would be 2**15 times m).
    inner = scaled.inner_optimizer
    assert len(inner.variables) == len(plain.variables) > 2
    for a, b in zip(_values(inner.variables), _values(plain.variables)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)
    assert float(scaled.dynamic_scale.numpy()) == 2.0 ** 15
    assert int(scaled.iterations.numpy()) == int(plain.iterations.numpy()) == 1


def test_an_overflowing_step_is_skipped_and_halves_the_scale(fast_hparams, one_device):
    model, optimizer, runner = _build(fast_hparams, one_device,
                                      scaled={"initial_scale": 2.0 ** 10})
    runner.step([_batch(seed=1)])  # A finite step: applied.
    assert int(optimizer.iterations.numpy()) == 1 and int(optimizer.step_counter.numpy()) == 1
    optimizer.dynamic_scale.assign(2.0 ** 127)  # loss_sum x 2**127: the gradients overflow.
    weights, slots = _values(model.trainable_variables), _values(optimizer.variables)
    sums = runner.step([_batch(seed=2)])
    assert all(math.isfinite(s) for s in sums)  # The loss itself is reported unscaled.
    for a, b in zip(_values(model.trainable_variables), weights):
        np.testing.assert_array_equal(a, b)
    inner = optimizer.inner_optimizer
    for a, b in zip(_values(inner.variables), slots[-len(inner.variables):]):
        np.testing.assert_array_equal(a, b)  # Adam: same step count, same moments.
    assert int(inner.iterations.numpy()) == int(optimizer.iterations.numpy()) == 1
    assert float(optimizer.dynamic_scale.numpy()) == 2.0 ** 126
    assert int(optimizer.step_counter.numpy()) == 0  # Growth counts again from 0.


def test_the_scale_doubles_after_dynamic_growth_steps_finite_steps(fast_hparams, one_device):
    _, optimizer, runner = _build(fast_hparams, one_device,
                                  scaled={"initial_scale": 2.0 ** 10, "dynamic_growth_steps": 2})
    scales = []
    for seed in range(3):
        runner.step([_batch(seed=seed)])
        scales.append(float(optimizer.dynamic_scale.numpy()))
    # Doubled after the second update, which still used 2**10.
    assert scales == [2.0 ** 10, 2.0 ** 11, 2.0 ** 11]
    assert int(optimizer.iterations.numpy()) == 3


class _InfOnSecondReplica(StepRunner):
    """A StepRunner whose second replica's first gradient is +inf (an overflow there only)."""

    def _gradients(self, batch):
        grads, *sums = super()._gradients(batch)
        second = tf.distribute.get_replica_context().replica_id_in_sync_group == 1
        grads[0] = grads[0] + tf.where(second, float("inf"), 0.0)
        return (grads, *sums)


def test_an_overflow_on_one_replica_skips_the_update_on_all(fast_hparams):
    # Keras takes the first replica's verdict: without StepRunner's agreement
    # the second replica's inf reaches the summed gradient and every weight is NaN.
    # The library's strategy (collective all-reduce, keys past earlier strategies').
    two = cluster.local_strategy(["/cpu:0", "/cpu:1"])
    model, optimizer, runner = _build(fast_hparams, two, scaled={"initial_scale": 2.0 ** 10},
                                      runner=_InfOnSecondReplica)
    weights = _values(model.trainable_variables)
    runner.step([_batch()])
    for a, b in zip(_values(model.trainable_variables), weights):
        np.testing.assert_array_equal(a, b)
    assert int(optimizer.iterations.numpy()) == 0
    assert float(optimizer.dynamic_scale.numpy()) == 2.0 ** 9


# --- Training --------------------------------------------------------------------------


def _train(hparams, output_dir, steps):
    lines = []
    result = trainer.train(
        registry.problem("algorithmic_reverse"), hparams, str(output_dir),
        options=TrainOptions(train_steps=steps, log_every_steps=1,
                                     eval=EvalOptions(eval_every_steps=0)),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)
    return result, lines


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_training_gives_finite_losses_and_a_checkpoint_that_loads(
        tiny_hparams, tmp_path, policy):
    result, lines = _train(tiny_hparams.override(f"precision={policy}"), tmp_path, 3)
    steps = [line for line in lines if line.startswith("step ")]
    # One line per applied update: a step skipped for an overflow neither logs nor saves.
    assert [line.split()[1] for line in steps] == ["1/3", "2/3", "3/3"]
    assert all(math.isfinite(float(line.split("loss ")[1].split()[0])) for line in steps)
    assert result.step == 3 and math.isfinite(result.loss)
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-3"]
    reader = tf.train.load_checkpoint(result.checkpoint)
    scale_key = "optimizer/dynamic_scale/.ATTRIBUTES/VARIABLE_VALUE"
    if policy == "mixed_float16":
        # The summed loss x 2**15 overflows float16 at first: the scale came down.
        assert reader.get_tensor(scale_key) < 2.0 ** 15
    else:
        assert not reader.has_tensor(scale_key)  # No loss scaling in bfloat16.
    opened = Run.open(str(tmp_path))
    model, hparams = opened.model(), opened.hparams
    assert hparams.dtype_policy == model.dtype_policy.name == policy
    for key, weight in weights.weight_keys(model).items():
        saved = reader.get_tensor(key)
        assert np.all(np.isfinite(saved))
        np.testing.assert_array_equal(np.array(weight.numpy()), saved)
    assert model(_batch()).dtype == "float32"


@pytest.mark.slow  # ~11-16 s; kept out of `make test` for the 15-minute budget.
def test_resume_may_change_precision_but_not_loss_scaling(tiny_hparams, tmp_path):
    _train(tiny_hparams, tmp_path, 1)
    # A LossScaleOptimizer's checkpoint does not fit Adam's, nor Adam's it.
    with pytest.raises(RunDirError, match="precision=float32 run.*precision=mixed_float16"):
        _train(tiny_hparams.override("precision=mixed_float16"), tmp_path, 2)
    with pytest.raises(RunDirError, match="precision=float32 run"):
        _train(tiny_hparams.override("mixed_precision=true"), tmp_path, 2)
    result, lines = _train(tiny_hparams.override("precision=mixed_bfloat16"), tmp_path, 2)
    assert any("resumed from" in line and "at step 1" in line for line in lines)
    assert result.step == 2
