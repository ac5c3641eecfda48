"""What every t2t_lite command shares: quiet TensorFlow start-up, one-line errors.

Without `--verbose`, TensorFlow's start-up chatter (absl's "All log messages
before absl::InitializeLog()", oneDNN notices, "Could not find cuda drivers",
"failed call to cuInit" on a machine without a GPU) and its Python warnings are
kept out of the user's way; real errors still show. `-v/--verbose` shows it all.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from typing import Callable

# Before TensorFlow is imported: keep its info/warning start-up lines out of
# the user's way (errors still show).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Lines TensorFlow's C++ start-up writes to stderr that tell a user nothing.
STARTUP_NOISE = re.compile(
    r"absl::InitializeLog|oneDNN custom operations|cudart_stub|cuda_platform|cuInit|"
    r"Could not find cuda drivers|Unable to register cu(DNN|FFT|BLAS) factory|TF-TRT|"
    r"computation_placer|This TensorFlow binary is optimized|rebuild TensorFlow with")


def add_verbose_flag(parser) -> None:
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show TensorFlow's own log lines and warnings")


@contextlib.contextmanager
def _filtered_stderr():
    """Sends file descriptor 2 to a file for the block, then replays its useful lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            for line in capture.read().decode("utf-8", "replace").splitlines():
                if line.strip() and not STARTUP_NOISE.search(line):
                    print(line, file=sys.stderr)


def start_tensorflow(verbose: bool = False) -> None:
    """Imports TensorFlow and finds its devices, quietly unless `verbose`."""
    if verbose:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        import tensorflow as tf

        tf.config.list_physical_devices()
        return
    import warnings

    warnings.filterwarnings("ignore", module=r"(tensorflow|keras|tf_keras|absl)(\.|$)")
    with _filtered_stderr():
        import tensorflow as tf

        tf.config.list_physical_devices()
    tf.get_logger().setLevel("ERROR")
    import absl.logging

    absl.logging.set_verbosity(absl.logging.ERROR)


def user_errors() -> tuple[type, ...]:
    """Exceptions a user can cause; each becomes one line and exit code 2."""
    from t2t_lite.runs.checkpoints import CheckpointError
    from t2t_lite.training.cluster import ClusterError
    from t2t_lite.hparams.hparams import HParamsError
    from t2t_lite.metrics.base import MetricError
    from t2t_lite.problems.base import ProblemError
    from t2t_lite.registry import RegistryError
    from t2t_lite.runs.run_dir import RunDirError
    from t2t_lite.data.text_encoder import DataError

    return (CheckpointError, ClusterError, DataError, HParamsError, MetricError, ProblemError,
            RegistryError, RunDirError, FileNotFoundError, UnicodeDecodeError)


def run(prog: str, main: Callable[[], int | None], verbose: bool = False) -> int:
    """Runs `main`, turning user errors into `prog: error: message` and exit 2."""
    try:
        start_tensorflow(verbose)
        return main() or 0
    except user_errors() as e:
        message = str(e) if not isinstance(e, FileNotFoundError) else \
            f"{e.filename}: file not found"
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
