"""MirroredStrategy with 8 replicas, as on the paper's 8 GPUs: it trains as one replica does
on the same global batch, at the same learning rate each step, and resumes after a kill.

The rest of the suite runs with the two logical CPU devices of tests/conftest.py, which
cannot change once TensorFlow has started in the test process; these tests start fresh
processes with T2T_LITE_CPU_REPLICAS=8, which splits the CPU into 8 logical devices before
TensorFlow starts (`cluster.cpu_replica_devices`). tests/eight_replicas_worker.py trains
the tiny Transformer on algorithmic_reverse (d_model 32, no dropout) for STEPS steps on 8
replicas and on one replica with the same global batch; the kill test runs the trainer
command itself on 8 replicas.

Tolerance: the two runs' weights after 12 steps differed by at most 3.0e-8 (float32 rounding:
8 partial sums of the gradient instead of one), Adam's moments by at most 3.3e-7 of each
moment's largest value, while the weights moved by 1.7e-3. WEIGHT_ATOL (1e-6) and
SLOT_RTOL (1e-5) leave 30 times that; an update off by a per-replica normalisation exceeds them.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import eight_replicas_worker as worker
from t2t_lite.runs.run import Run
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.runs import checkpoints, weights
from t2t_lite.training import cluster
from t2t_lite.training.schedules import paper_learning_rate

pytestmark = pytest.mark.slow  # Three fresh TensorFlow processes: about 3 minutes on 2 cores.

STEPS = 12
WEIGHT_ATOL = 1e-6  # Measured: 3.0e-8 (see the module docstring).
SLOT_RTOL = 1e-5  # Of each Adam moment's largest magnitude; measured: 3.3e-7.
HERE = os.path.dirname(os.path.abspath(__file__))

ENV = dict(os.environ, T2T_LITE_CPU_REPLICAS=str(worker.REPLICAS), TF_CPP_MIN_LOG_LEVEL="3")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{replicas: what eight_replicas_worker.py recorded} for 8 replicas and for one."""
    out = tmp_path_factory.mktemp("replicas")
    done = subprocess.run([sys.executable, os.path.join(HERE, "eight_replicas_worker.py"),
                           str(STEPS), str(out)], env=ENV, capture_output=True, text=True,
                          timeout=480)
    assert done.returncode == 0, done.stderr[-3000:]
    return {r: dict(np.load(out / f"replicas-{r}.npz")) for r in (worker.REPLICAS, 1)}


def _numbered(record, prefix):
    return [record[f"{prefix}{k}"] for k in range(sum(
        key[len(prefix):].isdigit() for key in record if key.startswith(prefix)))]


@pytest.mark.guarantee("replicas", "8 replicas (8 logical CPU devices) give the weights and "
                       "Adam moments of one replica with the same global batch after 12 "
                       "steps, within 1e-6, and the same token count and loss at every step")
def test_eight_replicas_train_as_one_replica_on_the_same_global_batch(runs):
    eight, one = runs[worker.REPLICAS], runs[1]
    assert int(eight["replicas"]) == 8 and int(one["replicas"]) == 1
    for a, b in zip(_numbered(eight, "i"), _numbered(one, "i")):
        np.testing.assert_array_equal(a, b)  # The same start.
    # The same global batches, split over the replicas: the target tokens of every step.
    np.testing.assert_array_equal(eight["sums"][:, 2], one["sums"][:, 2])
    final, start = _numbered(eight, "w"), _numbered(eight, "i")
    moved = max(np.abs(a - b).max() for a, b in zip(final, start))
    assert moved > 1000 * WEIGHT_ATOL, moved  # Training moved the weights far past the tolerance.
    diff = max(np.abs(a - b).max() for a, b in zip(final, _numbered(one, "w")))
    assert diff <= WEIGHT_ATOL, f"8 replicas vs one: weights differ by {diff:.3g}"
    for k, (a, b) in enumerate(zip(_numbered(eight, "s"), _numbered(one, "s"))):
        np.testing.assert_allclose(a, b, rtol=0, atol=SLOT_RTOL * np.abs(b).max(),
                                   err_msg=f"Adam moment {k}")
    np.testing.assert_allclose(eight["sums"], one["sums"], rtol=1e-5)  # Each step's loss.


@pytest.mark.guarantee("replicas", "8 replicas apply the learning rate of equation 3 at every "
                       "step, as one replica does: the optimizer's step counts global updates")
def test_eight_replicas_use_each_steps_learning_rate(runs):
    eight, one = runs[worker.REPLICAS], runs[1]
    np.testing.assert_array_equal(eight["iterations"], np.arange(1, STEPS + 1))
    np.testing.assert_array_equal(one["iterations"], eight["iterations"])
    np.testing.assert_array_equal(eight["rates"], one["rates"])
    h = worker.hparams_for(1)
    expected = [float(paper_learning_rate(step, h.d_model, h.warmup_steps))
                for step in range(1, STEPS + 1)]
    np.testing.assert_allclose(eight["rates"], expected, rtol=1e-6)


def _trainer(output_dir, steps, log):
    """The trainer command on 8 CPU replicas, its output in `log`."""
    command = [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
               "--hparams=tiny", f"--output_dir={output_dir}", f"--train_steps={steps}",
               f"--hparams_overrides={worker.TINY},batch_size={worker.PER_REPLICA_TOKENS}",
               "--save_checkpoints_steps=4", "--log_every_steps=1", "--eval_every_steps=0"]
    return subprocess.Popen(command, env=ENV, stdout=log, stderr=subprocess.STDOUT, text=True)


def _kill_after_first_checkpoint(output_dir, log_path):
    """Starts an endless 8-replica run and SIGKILLs it once a checkpoint is on disk."""
    with open(log_path, "w") as log:
        process = _trainer(output_dir, 100_000, log)
        try:
            deadline = time.time() + 400
            while not checkpoints.list_checkpoints(output_dir) and time.time() < deadline:
                assert process.poll() is None, open(log_path).read()[-3000:]
                time.sleep(0.01)
            process.send_signal(signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=60)
    return process.returncode


@pytest.mark.timeout(900)
@pytest.mark.guarantee("replicas", "the trainer command on 8 CPU replicas, killed and resumed, "
                       "ends with the weights of an unbroken 8-replica run and of one replica")
@pytest.mark.guarantee("resume", "an 8-replica trainer killed with SIGKILL after a checkpoint "
                       "resumes at its step, learning rate and data position: its final "
                       "weights are an unbroken run's")
def test_eight_replica_trainer_resumes_exactly_after_a_kill(runs, tmp_path):
    out = str(tmp_path / "run")
    assert _kill_after_first_checkpoint(out, tmp_path / "killed.log") == -signal.SIGKILL
    killed = open(tmp_path / "killed.log").read()
    assert "on 8 replica(s)" in killed, killed[-3000:]
    last = int(checkpoints.list_checkpoints(out)[-1].split("-")[1])
    assert 0 < last < STEPS, f"killed too late: checkpoint {last} of {STEPS}"

    with open(tmp_path / "resumed.log", "w") as log:
        process = _trainer(out, STEPS, log)
        assert process.wait(timeout=480) == 0, open(tmp_path / "resumed.log").read()[-3000:]
    resumed = open(tmp_path / "resumed.log").read()
    assert "on 8 replica(s)" in resumed and f"at step {last}" in resumed, resumed[-3000:]
    line = [x for x in resumed.splitlines() if x.startswith(f"step {last + 1}/")][0]
    rate = float(runs[1]["rates"][last])  # Step last + 1's rate in the unbroken runs.
    assert float(line.split("lr ")[1].split()[0]) == pytest.approx(rate, rel=1e-3)
    model = Run.open(out).model()
    for reference in (runs[worker.REPLICAS], runs[1]):
        diff = max(np.abs(w.numpy() - r).max()
                   for w, r in zip(model.weights, _numbered(reference, "w")))
        assert diff <= WEIGHT_ATOL, (f"resumed at step {last} vs unbroken "
                                     f"{int(reference['replicas'])}-replica run: {diff:.3g}")


def test_cpu_replicas_that_cannot_be_had_are_one_line(monkeypatch, tmp_path, capsys):
    """A bad count, or a count set after TensorFlow started (here: with conftest's 2)."""
    monkeypatch.setenv(cluster.CPU_REPLICAS_ENV, "2")
    assert cluster.cpu_replica_devices() == ["/cpu:0", "/cpu:1"]  # What TensorFlow has.
    assert len(tf.config.list_logical_devices("CPU")) == 2
    for value, message in [("eight", "expected a whole number"), ("0", "expected a whole"),
                           ("8", "TensorFlow already started with 2 CPU device(s)")]:
        monkeypatch.setenv(cluster.CPU_REPLICAS_ENV, value)
        code = trainer_cli.main(["--problem=algorithmic_reverse", "--hparams=tiny",
                                 f"--output_dir={tmp_path}"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith("t2t_lite-trainer: error: T2T_LITE_CPU_REPLICAS=") and \
            message in err, err
