"""`cluster.agree`: time-based decisions (a --train_minutes budget, a checkpoint every
M minutes) are one decision for every worker, true when the flag is true on any worker."""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from conftest import free_ports
from t2t_lite.training import cluster

# (worker 0's flag, worker 1's flag) -> what both must decide: any worker's true flag wins.
CASES = [((True, False), True), ((False, True), True), ((False, False), False),
         ((True, True), True)]

WORKER = """
import json, os, sys
from t2t_lite.training import cluster
strategy = cluster.strategy_from_environment()
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
assert cluster.is_multi_worker_strategy(strategy)
print("decisions", json.dumps([cluster.agree(strategy, flags[index])
                               for flags in json.loads(sys.argv[1])]))
"""


def test_one_machine_decides_by_its_own_flag_without_a_collective():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])  # Two replicas, one worker.
    assert [cluster.agree(strategy, flag) for flag in (True, False)] == [True, False]
    assert strategy not in cluster._ANY_TRUE  # No all-reduce was built.


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_two_workers_take_the_decision_any_of_them_asks_for():
    """Two processes under MultiWorkerMirroredStrategy (TF_CONFIG), ~10 s."""
    workers = [f"localhost:{port}" for port in free_ports(2)]
    flags = json.dumps([list(pair) for pair, _ in CASES])
    processes = []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_CONFIG=json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
        processes.append(subprocess.Popen([sys.executable, "-c", WORKER, flags], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
    try:
        outputs = [p.communicate(timeout=240)[0] for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=60)
    expected = [decision for _, decision in CASES]
    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output[-3000:]
        decided = [line for line in output.splitlines() if line.startswith("decisions ")]
        assert decided and json.loads(decided[-1].split(" ", 1)[1]) == expected, output[-3000:]
