"""Training from Keras itself: model.fit with the paper's schedule, loss and averaging."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry
from t2t_lite.training import cluster
from t2t_lite.training.callbacks import CheckpointAveraging, TransformerLearningRate
from t2t_lite.models.losses import LabelSmoothedCrossEntropy, smoothed_cross_entropy
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.schedules import paper_learning_rate


def test_loss_is_mean_smoothed_loss_per_real_token():
    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(size=(3, 5, 11)), tf.float32)
    targets = tf.constant([[4, 5, 1, 0, 0], [3, 1, 0, 0, 0], [2, 2, 2, 2, 1]], tf.int32)
    loss = LabelSmoothedCrossEntropy(0.1)
    expected = float(smoothed_cross_entropy(logits, targets, 0.1))
    assert float(loss(targets, logits)) == pytest.approx(expected, rel=1e-6)
    # By hand for one token: -(0.9 log p(t) + 0.1/10 sum_{v != t} log p(v)).
    one = tf.constant([[[1.0, 2.0, 0.5]]])
    log_p = np.log(np.exp([1.0, 2.0, 0.5]) / np.exp([1.0, 2.0, 0.5]).sum())
    by_hand = -(0.9 * log_p[1] + 0.05 * (log_p[0] + log_p[2]))
    assert float(loss(tf.constant([[1]]), one)) == pytest.approx(by_hand, rel=1e-5)
    # Padding adds nothing: the mean is over real tokens only.
    padded = tf.concat([one, tf.zeros((1, 2, 3))], axis=1)
    assert float(loss(tf.constant([[1, 0, 0]]), padded)) == pytest.approx(by_hand, rel=1e-5)


class _Recorder(keras.callbacks.Callback):
    """Learning rate used by each update, and the weights after chosen steps."""

    def __init__(self, keep_steps=()):
        super().__init__()
        self.rates, self.weights, self.keep_steps = [], {}, set(keep_steps)

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step in self.keep_steps:
            self.weights[step] = [np.array(w) for w in self.model.weights]


def _compiled(hparams, strategy, problem, **compile_args):
    with strategy.scope():
        model = Transformer.from_hparams(hparams, problem.vocab_size)
        model.compile(optimizer=keras.optimizers.Adam(
                          0.0, hparams.adam_beta1, hparams.adam_beta2, hparams.adam_epsilon),
                      loss=LabelSmoothedCrossEntropy(hparams.label_smoothing), **compile_args)
    return model


def test_fit_with_schedule_and_checkpoint_averaging(tiny_hparams):
    problem = registry.problem("algorithmic_reverse")
    keras.utils.set_random_seed(1)
    model = _compiled(tiny_hparams, tf.distribute.MirroredStrategy(["/cpu:0"]), problem)
    recorder = _Recorder(keep_steps=(6, 8, 10))
    averaging = CheckpointAveraging(last=3, every_steps=2)
    model.fit(problem.dataset("train", tiny_hparams, repeat=True), steps_per_epoch=10,
              epochs=1, verbose=0, callbacks=[
                  TransformerLearningRate(tiny_hparams.d_model, tiny_hparams.warmup_steps),
                  recorder, averaging])
    # Equation 3 at steps 1..10, set before each update.
    expected = [float(paper_learning_rate(s, tiny_hparams.d_model, tiny_hparams.warmup_steps))
                for s in range(1, 11)]
    np.testing.assert_allclose(recorder.rates, expected, rtol=1e-6)
    # The final weights are the mean of the snapshots at steps 6, 8 and 10.
    assert averaging.averaged_steps == [6, 8, 10]
    for i, weight in enumerate(model.weights):
        mean = np.mean([recorder.weights[s][i] for s in (6, 8, 10)], axis=0)
        np.testing.assert_allclose(np.array(weight), mean, rtol=1e-5, atol=1e-7)
    assert not np.allclose(np.array(model.weights[0]), recorder.weights[10][0])


@pytest.mark.slow  # ~20-30 s; kept out of `make test` for the 15-minute budget.
def test_fit_learns_under_mirrored_strategy_with_keras_callbacks(tiny_hparams, tmp_path):
    """The issue's recipe: two replicas, BackupAndRestore and TensorBoard; the loss falls."""
    problem = registry.problem("algorithmic_reverse")
    hparams = tiny_hparams.override("warmup_steps=50")
    keras.utils.set_random_seed(2)
    # The library's strategy: collective all-reduce, its keys past earlier strategies'.
    strategy = cluster.local_strategy(["/cpu:0", "/cpu:1"])
    model = _compiled(hparams, strategy, problem)
    history = model.fit(
        problem.dataset("train", hparams, num_replicas=2, repeat=True), steps_per_epoch=20,
        epochs=3, verbose=0, validation_data=problem.dataset("dev", hparams).take(5),
        callbacks=[TransformerLearningRate(hparams.d_model, hparams.warmup_steps),
                   CheckpointAveraging(last=2),
                   keras.callbacks.BackupAndRestore(str(tmp_path / "backup")),
                   keras.callbacks.TensorBoard(str(tmp_path / "logs"))])
    losses = history.history["loss"]
    assert losses[-1] < losses[0] - 0.3, losses
    assert history.history["learning_rate"][-1] == pytest.approx(
        float(paper_learning_rate(60, hparams.d_model, 50)), rel=1e-6)
    assert "val_loss" in history.history
    assert (tmp_path / "logs").exists()


def test_checkpoint_averaging_rejects_bad_arguments():
    with pytest.raises(ValueError):
        CheckpointAveraging(last=0)


def test_dataset_pads_rows_to_a_multiple_of_the_replicas(tiny_hparams):
    problem = registry.problem("algorithmic_reverse")
    tripled = tiny_hparams.override(f"batch_size={3 * tiny_hparams.batch_size}")
    plain = list(problem.dataset("dev", tripled).take(8).as_numpy_iterator())
    padded = list(problem.dataset("dev", tiny_hparams, num_replicas=3).take(8).as_numpy_iterator())
    assert any(len(x["targets"]) % 3 for x, _ in plain)  # Uneven batches exist...
    for (x, y), (px, py) in zip(plain, padded):
        rows = len(x["targets"])
        assert len(px["targets"]) % 3 == 0 and len(px["targets"]) - rows < 3
        np.testing.assert_array_equal(px["inputs"][:rows], x["inputs"])  # ...same examples,
        np.testing.assert_array_equal(py, px["targets"])
        assert not px["inputs"][rows:].any() and not px["targets"][rows:].any()  # + padding.


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_fit_gives_the_trainers_weights_and_learning_rates(tiny_hparams, tmp_path):
    """Same data, hparams, seed and steps: model.fit + callbacks == t2t_lite's trainer."""
    from t2t_lite.runs import weights
    from t2t_lite.training import trainer

    problem, steps = registry.problem("algorithmic_reverse"), 8
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    trainer.train(problem, tiny_hparams, str(tmp_path), options=TrainOptions(
        train_steps=steps, eval=EvalOptions(eval_every_steps=0)),
        strategy=strategy, log=lambda _: None)
    trained = Run.open(str(tmp_path)).model()

    keras.utils.set_random_seed(1234)  # The trainer's seed, before the model is built.
    model = _compiled(tiny_hparams, strategy, problem, jit_compile=False)  # As the trainer.
    recorder = _Recorder()
    model.fit(problem.dataset("train", tiny_hparams, repeat=True, seed=1234),
              steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[
                  TransformerLearningRate(tiny_hparams.d_model, tiny_hparams.warmup_steps),
                  recorder])
    from t2t_lite.training.schedules import TransformerSchedule  # The trainer's optimizer schedule.

    schedule = TransformerSchedule(tiny_hparams.d_model, tiny_hparams.warmup_steps,
                                   tiny_hparams.learning_rate_scale)
    np.testing.assert_allclose(recorder.rates, [float(schedule(i)) for i in range(steps)],
                               rtol=1e-6)
    for mine, theirs in zip(model.weights, trained.weights):
        np.testing.assert_allclose(np.array(mine), np.array(theirs), rtol=1e-3, atol=2e-5)
    # Not equal by accident: the weights moved away from their initial values.
    keras.utils.set_random_seed(1234)
    initial = Transformer.from_hparams(tiny_hparams, problem.vocab_size)
    assert max(float(np.abs(np.array(a) - np.array(b)).max())
               for a, b in zip(initial.weights, trained.weights)) > 10 * 2e-5


FIT_SCRIPT = r"""
import json, os, signal, sys
import keras, tensorflow as tf
from t2t_lite import registry
from t2t_lite.training.callbacks import TransformerLearningRate
from t2t_lite.models.losses import LabelSmoothedCrossEntropy
from t2t_lite.models.transformer import Transformer

backup, record, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
problem = registry.problem("algorithmic_reverse")
hparams = registry.hparams("tiny").override(
    "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256")
keras.utils.set_random_seed(1)
with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
    model = Transformer.from_hparams(hparams, problem.vocab_size)
    model.compile(optimizer=keras.optimizers.Adam(0.0, 0.9, 0.98, 1e-9),
                  loss=LabelSmoothedCrossEntropy(0.1))


class Record(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        with open(record, "a") as f:
            f.write(json.dumps({"epoch": epoch, "lr": logs["learning_rate"],
                                "step": int(self.model.optimizer.iterations.numpy())}) + "\n")
        if epoch == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


model.fit(problem.dataset("train", hparams, repeat=True), steps_per_epoch=5, epochs=4,
          verbose=0, callbacks=[TransformerLearningRate(hparams.d_model, hparams.warmup_steps),
                                keras.callbacks.BackupAndRestore(backup), Record()])
"""


@pytest.mark.slow  # ~20-30 s; kept out of `make test` for the 15-minute budget.
def test_backup_and_restore_resumes_fit_after_a_kill(tmp_path):
    import json
    import os
    import signal
    import subprocess
    import sys

    script, backup, record = tmp_path / "fit.py", tmp_path / "backup", tmp_path / "epochs.jsonl"
    script.write_text(FIT_SCRIPT, encoding="utf-8")
    env = dict(os.environ, KERAS_BACKEND="tensorflow")

    def fit(kill_at):
        return subprocess.run([sys.executable, str(script), str(backup), str(record),
                               str(kill_at)], env=env, capture_output=True, text=True,
                              timeout=300)

    killed = fit(kill_at=1)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    finished = fit(kill_at=-1)
    assert finished.returncode == 0, finished.stderr[-2000:]
    epochs = [json.loads(line) for line in record.read_text().splitlines()]
    # Killed after epoch 1; the rerun starts at epoch 2 with the optimizer's step restored,
    # so equation 3 continues where it stopped.
    assert [(e["epoch"], e["step"]) for e in epochs] == [(0, 5), (1, 10), (2, 15), (3, 20)]
    for e in epochs:
        assert e["lr"] == pytest.approx(float(paper_learning_rate(e["step"], 32, 400)),
                                        rel=1e-6)
