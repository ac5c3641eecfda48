"""Two trainer processes on localhost under MultiWorkerMirroredStrategy (TF_CONFIG).

They must train in lockstep to the weights one process reaches on the same
global batch, leave OUTPUT_DIR to the chief, and, after a worker is killed,
resume together from the last checkpoint to the weights of an unbroken run.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import free_ports
from t2t_lite.runs.run import Run
from t2t_lite.runs import checkpoints
from t2t_lite.runs import weights
from t2t_lite.training import cluster

# dropout 0: every process computes exactly the same function.
OVERRIDES = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size={}"
PER_REPLICA_TOKENS = 256


def _command(output_dir, steps, batch_size):
    return [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
            "--hparams=tiny", f"--hparams_overrides={OVERRIDES.format(batch_size)}",
            f"--output_dir={output_dir}", f"--train_steps={steps}",
            "--save_checkpoints_steps=5", "--log_every_steps=5", "--eval_every_steps=0"]


def _start_workers(output_dir, steps, ports):
    workers = [f"localhost:{port}" for port in ports]
    processes = []
    for index in range(len(workers)):
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
        processes.append(subprocess.Popen(
            _command(output_dir, steps, PER_REPLICA_TOKENS), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    return processes


def _finish(processes, timeout=300):
    outputs = []
    for process in processes:
        out, _ = process.communicate(timeout=timeout)
        outputs.append((process.returncode, out))
    return outputs


def _single_process(output_dir, steps):
    """One replica on the same global batch (two replicas' worth of tokens)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    subprocess.run(_command(output_dir, steps, 2 * PER_REPLICA_TOKENS), env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    model = Run.open(str(output_dir)).model()
    return [np.array(w) for w in model.weights]


def _assert_same_weights(output_dir, expected):
    model = Run.open(str(output_dir)).model()
    for a, b in zip([np.array(w) for w in model.weights], expected):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_tf_config_parsing(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert cluster.tf_config() == {} and not cluster.is_multi_worker()
    one = {"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}
    assert not cluster.is_multi_worker(one)
    assert cluster.is_multi_worker({"cluster": {"chief": ["a:1"], "worker": ["b:2"]}})
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(cluster.ClusterError, match="not valid JSON"):
        cluster.tf_config()


def test_bad_tf_config_is_one_line(tmp_path):
    env = dict(os.environ, TF_CONFIG="[1, 2]")
    result = subprocess.run(_command(tmp_path, 2, 256), env=env, capture_output=True,
                            text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1
    assert lines[0].startswith("t2t_lite-trainer: error: TF_CONFIG must be a JSON object")


@pytest.mark.slow  # ~25-35 s: two worker processes.
@pytest.mark.guarantee("replicas", "two worker processes (MultiWorkerMirroredStrategy) train 10 "
                       "steps to the weights of one process")
def test_two_workers_train_in_lockstep_like_one_process(tmp_path):
    outputs = _finish(_start_workers(tmp_path / "cluster", 10, free_ports(2)))
    for code, out in outputs:
        assert code == 0, out[-3000:]
        assert "on 2 replica(s)" in out
    # The chief wrote the run; worker 1's scratch folder is gone.
    assert checkpoints.list_checkpoints(str(tmp_path / "cluster"))[-1] == "ckpt-10"
    assert not [n for n in os.listdir(tmp_path / "cluster") if n.startswith(".worker")]
    _assert_same_weights(tmp_path / "cluster", _single_process(tmp_path / "single", 10))


@pytest.mark.slow
@pytest.mark.guarantee("resume", "a worker of two killed: the chief stops with an error, and the "
                       "cluster resumes from the last checkpoint")
def test_a_killed_worker_and_the_others_resume_from_the_last_checkpoint(tmp_path):
    output_dir, steps = tmp_path / "cluster", 60
    processes = _start_workers(output_dir, steps, free_ports(2))
    deadline = time.time() + 240
    while not os.path.exists(output_dir / "ckpt-10.index"):
        assert time.time() < deadline and processes[1].poll() is None, "no ckpt-10"
        time.sleep(0.2)
    processes[1].send_signal(signal.SIGKILL)
    # The chief notices its peer is gone and stops with an error (no hang).
    code, out = _finish(processes[:1], timeout=240)[0]
    processes[1].wait(timeout=60)
    assert code != 0, out[-3000:]
    newest = checkpoints.list_checkpoints(str(output_dir))[-1]
    assert int(newest.split("-")[1]) < steps

    outputs = _finish(_start_workers(output_dir, steps, free_ports(2)))
    for code, out in outputs:
        assert code == 0, out[-3000:]
        assert f"resumed from" in out and f"at step {newest.split('-')[1]}" in out
    _assert_same_weights(output_dir, _single_process(tmp_path / "single", steps))
