"""SIGKILL the trainer at 10 seeded random moments; it must end where an unkilled run ends.

Moments: while TensorFlow writes a checkpoint (its `ckpt-N_temp` folder exists),
right after a checkpoint's `.index` appears (before the `checkpoint` state file
names it), and at a random delay after the run has made progress. After every
kill each listed checkpoint reads back at its own step, the restart resumes
from the newest one (so at the learning rate of that step), and the weights
after N steps equal those of a run that was never killed.
"""

import glob
import os
import random
import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from fault_helpers import processes, trainer_command, wait_for  # noqa: F401 (fixture)

from t2t_lite.runs import checkpoints
from t2t_lite.runs import weights

STEPS, SAVE, KILLS = 600, 5, 10
ENV = dict(os.environ, PYTHONUNBUFFERED="1")


def _steps(out):
    return [int(n.split("-")[1]) for n in checkpoints.list_checkpoints(str(out))]


def _check_readable(out):
    for name in checkpoints.list_checkpoints(str(out)):
        reader = tf.train.load_checkpoint(os.path.join(out, name))
        step = reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")
        assert step == int(name.split("-")[1]), name


def _new_index(out, before):
    for path in glob.glob(os.path.join(out, "ckpt-*.index")):
        if int(re.search(r"ckpt-(\d+)\.index$", path).group(1)) > before:
            return True
    return False


def _weights(out):
    model, *_ = weights.load_model(str(out))
    return [np.array(w) for w in model.weights]


@pytest.mark.slow
def test_ten_sigkills_then_the_weights_of_an_unkilled_run(tmp_path, processes):
    args = (f"--save_checkpoints_steps={SAVE}", "--log_every_steps=100000")
    reference = subprocess.run(trainer_command(tmp_path / "reference", STEPS, *args),
                               capture_output=True, text=True, timeout=600)
    assert reference.returncode == 0, reference.stderr

    out = str(tmp_path / "killed")
    rng = random.Random(15)
    modes = ["during_write", "after_index", "delay"] * 4
    rng.shuffle(modes)
    survived = []
    for attempt, mode in enumerate(modes[:KILLS]):
        before = max(_steps(out), default=0) if os.path.exists(out) else 0
        log_path = tmp_path / f"attempt-{attempt}.log"
        with open(log_path, "w") as log:
            process = processes.start(trainer_command(out, STEPS, *args), stdout=log,
                                      stderr=subprocess.STDOUT, env=ENV)
            if mode == "during_write":
                wait_for(lambda: glob.glob(os.path.join(out, "ckpt-*_temp"))
                         or process.poll() is not None, timeout=120, interval=0.001)
            elif mode == "after_index":
                wait_for(lambda: _new_index(out, before) or process.poll() is not None,
                         timeout=120, interval=0.001)
            else:
                wait_for(lambda: max(_steps(out), default=0) > before
                         or process.poll() is not None, timeout=120, interval=0.01)
                wait_for(lambda: process.poll() is not None, timeout=rng.uniform(0.0, 1.0))
            assert process.poll() is None, f"attempt {attempt} ended before its kill"
            processes.kill(process)
        text = log_path.read_text()
        if before:  # It resumed from the newest checkpoint listed before it started.
            assert f"resumed from {os.path.join(out, f'ckpt-{before}')} at step {before}" \
                in text, text
        _check_readable(out)
        assert max(_steps(out), default=0) >= before
        survived.append(mode)
    print(f"kills survived: {len(survived)}/{KILLS} ({', '.join(survived)})")

    final = subprocess.run(trainer_command(out, STEPS, *args), capture_output=True, text=True,
                           timeout=600, env=ENV)
    assert final.returncode == 0, final.stderr
    assert "resumed from" in final.stdout and _steps(out)[-1] == STEPS
    assert not glob.glob(os.path.join(out, "ckpt-*_temp"))  # Cleaned by the restarts.
    assert not glob.glob(os.path.join(out, ".best-*"))
    for a, b in zip(_weights(tmp_path / "reference"), _weights(out)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
