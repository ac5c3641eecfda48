"""Checkpoint averaging (section 6.1): exact means, clear errors, nothing partial."""

import os
import shutil

import numpy as np
import pytest
from conftest import NO_EVAL
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.runs import averaging
from t2t_lite.runs import weights
from t2t_lite.training import trainer
from t2t_lite.bin import avg_checkpoints as avg_cli
from t2t_lite.runs.checkpoints import CheckpointError


TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"


def _train(output_dir, steps, overrides=TINY):
    trainer.train(registry.problem("algorithmic_reverse"),
                  registry.hparams("tiny").override(overrides), str(output_dir),
                  options=TrainOptions(eval=NO_EVAL, train_steps=steps, save_checkpoints_steps=3,
                                               keep_checkpoint_max=10, log_every_steps=100),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return str(output_dir)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("run"), 9)


def _weights(run, name):
    model = Run.open(run).model(name)
    return [np.array(w) for w in model.weights]


def test_copies_of_one_checkpoint_average_to_it(run):
    path = averaging.average(run, [os.path.join(run, "ckpt-6")] * 3)
    assert path == os.path.join(run, "averaged", "ckpt")
    for a, b in zip(_weights(run, "ckpt-6"), _weights(run, "averaged")):
        np.testing.assert_array_equal(a, b)


def test_two_checkpoints_average_to_their_mean(run):
    averaging.average(run, [os.path.join(run, "ckpt-3"), os.path.join(run, "ckpt-9")])
    first, last = _weights(run, "ckpt-3"), _weights(run, "ckpt-9")
    moved = max(np.abs(a - b).max() for a, b in zip(first, last))
    assert moved > 1e-4
    for a, b, mean in zip(first, last, _weights(run, "averaged")):
        np.testing.assert_allclose(mean, (a.astype(np.float64) + b) / 2, rtol=1e-6, atol=1e-7)


def test_cli_last_n_with_fewer_present(run, capsys):
    assert avg_cli.main([f"--output_dir={run}", "--last=5"]) == 0
    captured = capsys.readouterr()
    assert "asked for the last 5 checkpoints" in captured.err and "has 3" in captured.err
    assert "ckpt-3" in captured.out and "ckpt-9" in captured.out
    with open(os.path.join(run, "averaged", "averaged.json")) as f:
        assert "ckpt-6" in f.read()


def test_different_models_fail_and_leave_nothing(run, tmp_path, capsys):
    other = _train(tmp_path / "other", 3, TINY.replace("d_ff=64", "d_ff=48"))
    shutil.rmtree(os.path.join(run, "averaged"), ignore_errors=True)
    with pytest.raises(CheckpointError, match="different models cannot be averaged"):
        averaging.average(run, [os.path.join(run, "ckpt-9"), os.path.join(other, "ckpt-3")])
    assert not os.path.exists(os.path.join(run, "averaged"))
    assert not [n for n in os.listdir(run) if n.startswith(".averaged")]


def test_truncated_checkpoint_fails_cleanly(run, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(run, broken)
    shutil.rmtree(broken / "averaged", ignore_errors=True)
    data = broken / "ckpt-6.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    assert avg_cli.main([f"--output_dir={broken}", "--checkpoints=ckpt-3,ckpt-6"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("t2t_lite-avg-checkpoints: error: cannot read checkpoint")
    assert not os.path.exists(broken / "averaged")


def test_missing_averaged_says_what_to_do(tmp_path):
    out = _train(tmp_path / "fresh", 3)
    with pytest.raises(CheckpointError, match="t2t_lite-avg-checkpoints"):
        Run.open(out).model("averaged")
