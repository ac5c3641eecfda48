"""SIGKILL the trainer at 10 seeded random moments; it must end where an unkilled run ends.

Moments: while TensorFlow writes a checkpoint (its `ckpt-N_temp` folder exists),
right after a checkpoint's `.index` appears (before the `checkpoint` state file
names it), while the dev evaluation writes `best/` (its `.best-tmp-*` staging
exists), and at a random delay after the run has made progress. Every run
evaluates on dev (cheaply) every EVAL steps, so `best/` is written while kills
happen. After every kill each listed checkpoint reads back at its own step,
`best/` (if there) loads whole, the restart resumes from the newest checkpoint
(so at the learning rate of that step), and the weights after N steps equal
those of a run that was never killed. Some kills must land mid-checkpoint and
mid-`best/` write, or the cleanup checks would check nothing.
"""

import glob
import json
import os
import random
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from fault_helpers import processes, trainer_command, wait_for  # noqa: F401 (fixture)

from t2t_lite.runs.run import Run
from t2t_lite.runs import checkpoints
from t2t_lite.runs import weights

STEPS, SAVE, EVAL, KILLS = 150, 5, 25, 10
# Both the reference and the killed runs: a checkpoint every SAVE steps, a cheap
# dev evaluation (16 examples, 8 greedy decodes) every EVAL steps.
ARGS = (f"--save_checkpoints_steps={SAVE}", "--log_every_steps=100000",
        f"--eval_every_steps={EVAL}", "--eval_examples=16", "--eval_decode_examples=8")
MODES = ["during_write"] * 3 + ["after_index"] * 2 + ["during_best"] * 2 + ["delay"] * 3
ENV = dict(os.environ, PYTHONUNBUFFERED="1")


def _steps(out):
    return [int(n.split("-")[1]) for n in checkpoints.list_checkpoints(str(out))]


def _check_readable(out):
    for name in checkpoints.list_checkpoints(str(out)):
        reader = tf.train.load_checkpoint(os.path.join(out, name))
        step = reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")
        assert step == int(name.split("-")[1]), name
    if os.path.exists(os.path.join(out, "best")):  # Old or new, whole either way.
        Run.open(str(out)).model("best")
        with open(os.path.join(out, "best", "best.json")) as f:
            assert json.load(f)["step"] % EVAL == 0


def _index_times(out):
    return {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(out, "ckpt-*.index"))}


def _new_index(out, old):
    """A `.index` written since `old` (a stale one of a killed run is rewritten, not new)."""
    return any(old.get(p) != t for p, t in _index_times(out).items())


def _weights(out):
    model = Run.open(str(out)).model()
    return [np.array(w) for w in model.weights]


def _kill_at_moment(processes, process, mode, out, before, indexes, log_path, rng):
    """Waits for `mode`'s moment, SIGKILLs; (a save folder, best/ staging) left after death."""
    # The restart removes what the last kill left before it logs "training ...":
    # only what this run writes counts from here on.
    wait_for(lambda: "training " in log_path.read_text() or process.poll() is not None,
             timeout=120, interval=0.01)
    if mode == "during_write":
        wait_for(lambda: glob.glob(os.path.join(out, "ckpt-*_temp"))
                 or process.poll() is not None, timeout=120, interval=0.001)
    elif mode == "after_index":
        wait_for(lambda: _new_index(out, indexes) or process.poll() is not None,
                 timeout=120, interval=0.001)
    elif mode == "during_best":  # Or, if this evaluation keeps best/ as it is, after it.
        wait_for(lambda: glob.glob(os.path.join(out, ".best-*")) or process.poll() is not None
                 or "dev step" in log_path.read_text(), timeout=120, interval=0.001)
    else:
        wait_for(lambda: max(_steps(out), default=0) > before
                 or process.poll() is not None, timeout=120, interval=0.01)
        wait_for(lambda: process.poll() is not None, timeout=rng.uniform(0.0, 1.0))
    assert process.poll() is None, f"{mode}: the run ended before its kill"
    processes.kill(process)
    return (bool(glob.glob(os.path.join(out, "ckpt-*_temp"))),
            bool(glob.glob(os.path.join(out, ".best-*"))))


@pytest.mark.slow
@pytest.mark.guarantee("resume", "10 seeded SIGKILLs (while a checkpoint is written, right after "
                       "its `.index` appears, while `best/` is written, after a random delay) "
                       "with dev evaluations on: some kills land mid-checkpoint and mid-`best/`, "
                       "every listed checkpoint and `best/` reads back whole after each kill, "
                       "each restart resumes from the newest checkpoint, no staging is left, and "
                       "the final weights equal an unkilled run's")
def test_ten_sigkills_then_the_weights_of_an_unkilled_run(tmp_path, processes):
    reference = subprocess.run(trainer_command(tmp_path / "reference", STEPS, *ARGS),
                               capture_output=True, text=True, timeout=600)
    assert reference.returncode == 0, reference.stderr
    assert "new best -> best/" in reference.stdout

    out = str(tmp_path / "killed")
    rng = random.Random(15)
    modes = list(MODES)
    rng.shuffle(modes)
    landed = []  # (mode, mid-checkpoint, mid-best) of each kill.
    for attempt, mode in enumerate(modes[:KILLS]):
        before = max(_steps(out), default=0) if os.path.exists(out) else 0
        indexes = _index_times(out)
        log_path = tmp_path / f"attempt-{attempt}.log"
        with open(log_path, "w") as log:
            process = processes.start(trainer_command(out, STEPS, *ARGS), stdout=log,
                                      stderr=subprocess.STDOUT, env=ENV)
            landed.append((mode, *_kill_at_moment(processes, process, mode, out, before,
                                                  indexes, log_path, rng)))
        text = log_path.read_text()
        if before:  # It resumed from the newest checkpoint listed before it started.
            assert f"resumed from {os.path.join(out, f'ckpt-{before}')} at step {before}" \
                in text, text
        _check_readable(out)
        assert max(_steps(out), default=0) >= before
    mid_checkpoint = [m for m, in_save, _ in landed if in_save]
    mid_best = [m for m, _, in_best in landed if in_best]
    print(f"kills: {len(landed)}/{KILLS}; {len(mid_checkpoint)} landed while a ckpt-N_temp "
          f"folder existed ({', '.join(mid_checkpoint)}), {len(mid_best)} while best/ was "
          f"staged ({', '.join(mid_best)}); modes: {', '.join(m for m, *_ in landed)}")
    assert mid_checkpoint, "no kill landed during a checkpoint write"
    assert mid_best, "no kill landed during a best/ write"

    final = subprocess.run(trainer_command(out, STEPS, *ARGS), capture_output=True, text=True,
                           timeout=600, env=ENV)
    assert final.returncode == 0, final.stderr
    assert "resumed from" in final.stdout and _steps(out)[-1] == STEPS
    assert not glob.glob(os.path.join(out, "ckpt-*_temp"))  # Cleaned by the restarts.
    assert not glob.glob(os.path.join(out, ".best-*"))
    _check_readable(out)
    for a, b in zip(_weights(tmp_path / "reference"), _weights(out)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
