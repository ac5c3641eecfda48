"""What the fault tests (`make test-slow`) share: the trainer command, process cleanup, polling."""

import os
import signal
import subprocess
import sys
import time

import pytest

TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"


def trainer_command(output_dir, steps, *extra):
    return [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
            "--hparams=tiny", f"--hparams_overrides={TINY}", f"--output_dir={output_dir}",
            f"--train_steps={steps}", *extra]


class Processes:
    """Starts subprocesses and SIGKILLs any still running at the end of a test."""

    def __init__(self):
        self.started = []

    def start(self, command, **kw):
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        process = subprocess.Popen(command, **kw)
        self.started.append(process)
        return process

    def kill(self, process):
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def close(self):
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)


def wait_for(condition, timeout, interval=0.005):
    """Polls `condition()` until true or `timeout` seconds; returns its last value."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    return condition()


def final_names(directory):
    """Files and folders under their final names (not `.x.tmp-*` / staging / `_temp`)."""
    return sorted(n for n in os.listdir(directory)
                  if not n.startswith(".") and not n.endswith("_temp"))


@pytest.fixture
def processes():
    """Subprocesses a test starts; any still running at its end are killed.

    Import it into a test module (`from fault_helpers import processes`): this
    folder has no conftest.py of its own, so `from conftest import data_file`
    always means tests/conftest.py.
    """
    p = Processes()
    yield p
    p.close()
