"""Commands are quiet: no TensorFlow start-up chatter, errors in one line."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(module, *args):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("module,args,message", [
    ("t2t_lite.bin.trainer", ["--problem=no_such_problem", "--output_dir=/tmp/unused"],
     "t2t_lite-trainer: error: unknown problem 'no_such_problem'"),
    ("t2t_lite.bin.avg_checkpoints", ["--output_dir=/nonexistent/run"],
     "t2t_lite-avg-checkpoints: error: "),
])
def test_errors_are_one_line_without_tensorflow_noise(module, args, message):
    result = _run(module, *args)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message)
    for noise in ("absl", "cuInit", "cuda", "oneDNN", "I0000", "E0000", "Traceback"):
        assert noise not in result.stderr + result.stdout
