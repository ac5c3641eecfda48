"""Commands are quiet: no TensorFlow start-up chatter, errors in one line."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(module, *args):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


# A fresh process each (TensorFlow's start-up noise comes once a process). The fast tier starts
# the trainer and the exporter, whose imports are the widest; the other three are slow-tier (the
# same filter, `common._filtered_stderr`; their one-line errors are also checked in-process in
# tests/test_cli_usage_errors.py).
FAST_CASES = [
    ("t2t_lite.bin.trainer", ["--problem=no_such_problem", "--output_dir=/tmp/unused"],
     "t2t_lite-trainer: error: unknown problem 'no_such_problem'"),
    ("t2t_lite.bin.exporter", ["--output_dir=/nonexistent/run", "--export_dir=/tmp/unused"],
     "t2t_lite-exporter: error: "),
]
SLOW_CASES = [
    ("t2t_lite.bin.avg_checkpoints", ["--output_dir=/nonexistent/run"],
     "t2t_lite-avg-checkpoints: error: "),
    ("t2t_lite.bin.decoder", ["--output_dir=/nonexistent/run"], "t2t_lite-decoder: error: "),
    ("t2t_lite.bin.datagen", ["--problem=wmt_ende", "--data_dir=/tmp/unused",
                              "--raw_dir=/nonexistent/raw"], "t2t_lite-datagen: error: "),
]


def _check_one_quiet_line(module, args, message):
    result = _run(module, *args)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message)
    for noise in ("absl", "cuInit", "cuda", "oneDNN", "I0000", "E0000", "Traceback"):
        assert noise not in result.stderr + result.stdout


@pytest.mark.parametrize("module,args,message", FAST_CASES)
@pytest.mark.guarantee("one-line-errors", "the trainer's and the exporter's errors, in a fresh "
                       "process, are one line without TensorFlow's start-up noise")
def test_errors_are_one_line_without_tensorflow_noise(module, args, message):
    _check_one_quiet_line(module, args, message)


@pytest.mark.slow  # Three more fresh TensorFlow processes.
@pytest.mark.parametrize("module,args,message", SLOW_CASES)
@pytest.mark.guarantee("one-line-errors", "the averager's, the decoder's and datagen's errors, "
                       "in a fresh process, are one line without TensorFlow's start-up noise")
def test_other_commands_errors_are_one_line_without_tensorflow_noise(module, args, message):
    _check_one_quiet_line(module, args, message)


def test_filter_drops_only_startup_noise(capfd, monkeypatch):
    """What the quiet start-up drops and keeps, and that -v switches TensorFlow's logs on."""
    from t2t_lite.bin import common

    with common._filtered_stderr():
        os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called are "
                    b"written to STDERR\n")
        os.write(2, b"E0000 00:00:1 cuda_platform.cc:52] failed call to cuInit: UNKNOWN\n")
        os.write(2, b"a real problem\n")
    assert capfd.readouterr().err == "a real problem\n"

    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    common.start_tensorflow(verbose=True)
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


def _package_error_classes():
    """Every class named *Error defined in a module of the installed package."""
    import importlib
    import inspect
    import pkgutil

    names = set()
    for root in ("t2t_lite", "t2t_lite.problems", "t2t_lite.hparams"):
        package = importlib.import_module(root)
        names.add(root)
        names.update(info.name for info in pkgutil.walk_packages(package.__path__, root + "."))
    found = []
    for name in sorted(names):
        module = importlib.import_module(name)
        found += [value for _, value in inspect.getmembers(module, inspect.isclass)
                  if value.__name__.endswith("Error") and value.__module__ == name]
    return found


@pytest.mark.guarantee("one-line-errors", "every user error class derives from `UserError`, which "
                       "every command turns into one line")
def test_every_user_error_derives_from_the_one_base():
    from t2t_lite.errors import UserError
    from t2t_lite.metrics import trees
    from t2t_lite.metrics.base import MetricError
    from t2t_lite.parsing import ptb

    errors = _package_error_classes()
    names = sorted(error.__name__ for error in errors)
    assert {"ClusterError", "MetricError", "TreeError", "EvalbError", "DataError",
            "ExportError", "RunDirError", "RegistryError", "CheckpointError", "ProblemError",
            "HParamsError"} <= set(names)
    assert len(names) == len(set(names)), f"one class per name: {names}"
    for error in errors:
        assert issubclass(error, UserError), error
    assert trees.TreeError is ptb.TreeError and issubclass(ptb.TreeError, MetricError)


def test_export_error_in_the_exporter_is_one_line_and_exit_2(tmp_path, monkeypatch, capfd):
    from t2t_lite.bin import exporter
    from t2t_lite.serving import export

    def refuse(*args, **kwargs):
        raise export.ExportError("the export directory is not usable: pick another")

    monkeypatch.setattr(export, "export", refuse)
    status = exporter.main([f"--output_dir={tmp_path / 'run'}",
                            f"--export_dir={tmp_path / 'export'}"])
    captured = capfd.readouterr()
    assert status == 2
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "t2t_lite-exporter: error: the export directory is not usable: pick another"]
