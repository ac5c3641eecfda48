"""Training: loss falls, resume is exact, a SIGKILL never leaves a bad checkpoint."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry
from t2t_lite.runs import checkpoints
from t2t_lite.runs import weights
from t2t_lite.training import trainer
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.runs.run_dir import RunDirError
from t2t_lite.training.schedules import paper_learning_rate

TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"


def _train(hparams, output_dir, steps, **options):
    options.setdefault("log_every_steps", 5)
    options.setdefault("save_checkpoints_steps", 1000)
    options.setdefault("eval", EvalOptions(eval_every_steps=0))  # Not under test here.
    lines = []
    result = trainer.train(
        registry.problem("algorithmic_reverse"), hparams, str(output_dir),
        options=TrainOptions(train_steps=steps, **options),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)
    return result, lines


def _weights(output_dir):
    model = Run.open(str(output_dir)).model()
    return [np.array(w) for w in model.weights]


@pytest.mark.guarantee("resume", "a run stopped at step 15 and resumed to 30 ends with the "
                       "weights of a straight 30-step run (same step, learning rate, Adam slots "
                       "and data order)")
def test_loss_falls_and_resume_is_exact(tiny_hparams, tmp_path):
    straight, lines = _train(tiny_hparams, tmp_path / "a", 30, log_every_steps=10)
    steps = [line for line in lines if line.startswith("step ")]
    losses = [float(line.split("loss ")[1].split()[0]) for line in steps]
    assert len(losses) == 3 and losses[-1] < losses[0] - 0.3, losses
    assert all("tok/s" in line for line in steps)

    _train(tiny_hparams, tmp_path / "b", 15)
    resumed, lines = _train(tiny_hparams, tmp_path / "b", 30)
    assert any("resumed from" in line and "at step 15" in line for line in lines)
    assert resumed.step == 30
    # Same step, learning rate, Adam slots and data order: the same weights.
    for a, b in zip(_weights(tmp_path / "a"), _weights(tmp_path / "b")):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_checkpoints_every_n_steps_keep_last_k(tiny_hparams, tmp_path):
    _train(tiny_hparams, tmp_path, 12, save_checkpoints_steps=3, keep_checkpoint_max=2)
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-9", "ckpt-12"]
    assert os.path.exists(tmp_path / "hparams.json")
    assert os.listdir(tmp_path / "train")  # TensorBoard events.


def test_incompatible_output_dir_is_refused(tiny_hparams, tmp_path):
    _train(tiny_hparams, tmp_path, 2)
    with pytest.raises(RunDirError, match="num_layers: 1 -> 2"):
        _train(tiny_hparams.override("num_layers=2"), tmp_path, 4)
    # Non-shaping hparams may change on resume (as in tensor2tensor).
    _train(tiny_hparams.override("dropout_rate=0.2"), tmp_path, 4)


def _cli(*args):
    return [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
            "--hparams=tiny", f"--hparams_overrides={TINY}", *args]


@pytest.mark.slow  # ~20-30 s; kept out of `make test` for the 15-minute budget.
@pytest.mark.guarantee("resume", "the trainer command killed mid-run: every checkpoint on disk is "
                       "readable, and the first step after the restart uses the learning rate of "
                       "its step")
def test_sigkill_then_resume(tmp_path):
    out = str(tmp_path)
    process = subprocess.Popen(
        _cli(f"--output_dir={out}", "--train_steps=100000", "--save_checkpoints_steps=4",
             "--log_every_steps=1000"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and len(checkpoints.list_checkpoints(out)) < 3:
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)  # Mid-run, possibly mid-write.
    process.wait(timeout=60)
    names = checkpoints.list_checkpoints(out)
    assert len(names) >= 3
    for name in names:  # Every checkpoint on disk is readable.
        reader = tf.train.load_checkpoint(os.path.join(out, name))
        step = int(name.split("-")[1])
        assert reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE") == step
    last = int(names[-1].split("-")[1])
    resumed = subprocess.run(
        _cli(f"--output_dir={out}", f"--train_steps={last + 2}", "--log_every_steps=1"),
        capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"at step {last}" in resumed.stdout
    # The first step after the resume uses the learning rate of step last + 1.
    h = registry.hparams("tiny")
    expected = float(paper_learning_rate(last + 1, 32, h.warmup_steps))
    line = [x for x in resumed.stdout.splitlines() if x.startswith(f"step {last + 1}/")][0]
    assert float(line.split("lr ")[1].split()[0]) == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("args, message", [
    (["--problem=nope", "--hparams=tiny"], "unknown problem 'nope'"),
    (["--problem=algorithmic_reverse", "--hparams=tinyy"], "Did you mean 'tiny'?"),
    (["--problem=algorithmic_reverse", "--hparams=tiny", "--hparams_overrides=layers=2"],
     "unknown hparam 'layers'"),
    (["--problem=algorithmic_reverse", "--hparams=tiny", "--hparams_overrides=d_model"],
     "malformed override"),
    (["--problem=algorithmic_reverse", "--hparams=tiny", "--hparams_overrides=d_model=x"],
     "bad value for d_model"),
])
@pytest.mark.guarantee("one-line-errors", "unknown problem, unknown hparams set (with 'Did you "
                       "mean'), unknown hparam, malformed override, bad value")
def test_cli_errors_are_one_line(args, message, tmp_path, capsys):
    code = trainer_cli.main(args + [f"--output_dir={tmp_path}"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("t2t_lite-trainer: error: ") and message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.slow  # ~20-30 s; test_incompatible_output_dir_is_refused stays fast.
def test_cli_incompatible_dir(tmp_path, capsys):
    base = ["--problem=algorithmic_reverse", "--hparams=tiny", f"--output_dir={tmp_path}",
            "--train_steps=1", f"--hparams_overrides={TINY}"]
    assert trainer_cli.main(base) == 0
    capsys.readouterr()
    assert trainer_cli.main(base[:-1] + [f"--hparams_overrides={TINY},d_ff=128"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "d_ff: 64 -> 128" in err


def test_checkpoints_every_m_minutes(tiny_hparams, tmp_path):
    # A tiny interval: every step is past it, the step interval never is.
    _train(tiny_hparams, tmp_path, 3, save_checkpoints_steps=1000,
           save_checkpoints_minutes=1e-9)
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-1", "ckpt-2", "ckpt-3"]


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_train_minutes_stops_at_the_budget_with_a_checkpoint(tiny_hparams, tmp_path):
    # A budget shorter than the first step: one step, then a clean stop.
    result, lines = _train(tiny_hparams, tmp_path, 1000, train_minutes=1e-6)
    assert result.step == 1
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-1"]
    assert any("time budget of 1e-06 minutes reached at step 1" in line for line in lines)
    resumed, _ = _train(tiny_hparams, tmp_path, 1000, train_minutes=1e-6)
    assert resumed.step == 2  # The budget counts from each start.


def test_mixed_precision_keeps_logits_float32(tiny_hparams, tmp_path):
    from t2t_lite.models.transformer import Transformer

    hparams = tiny_hparams.override("mixed_precision=true")
    result, _ = _train(hparams, tmp_path, 2)
    assert result.step == 2 and np.isfinite(result.loss)
    model = Transformer.from_hparams(hparams, 12)
    assert model.encoder_layers[0].compute_dtype == "float16"
    ids = np.array([[3, 4, 1]], np.int32)
    assert model({"inputs": ids, "targets": ids}).dtype == "float32"
