"""What every t2t_lite command shares: quiet TensorFlow start-up, one-line errors, defaults.

Without `--verbose`, TensorFlow's start-up chatter (absl's "All log messages
before absl::InitializeLog()", oneDNN notices, "Could not find cuda drivers",
"failed call to cuInit" on a machine without a GPU) and its Python warnings are
kept out of the user's way; real errors still show. `-v/--verbose` shows it all.
An error a user can cause (`t2t_lite.errors.UserError`) becomes one line and exit
code 2, and so does a flag argparse refuses (`ArgumentParser`). A flag's default is its
options dataclass field's (`field_default`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import sys
import tempfile
from typing import Any, Callable, NoReturn

from t2t_lite.errors import UserError

# Before TensorFlow is imported: keep its info/warning start-up lines out of
# the user's way (errors still show).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Lines TensorFlow's C++ start-up writes to stderr that tell a user nothing.
STARTUP_NOISE = re.compile(
    r"absl::InitializeLog|oneDNN custom operations|cudart_stub|cuda_platform|cuInit|"
    r"Could not find cuda drivers|Unable to register cu(DNN|FFT|BLAS) factory|TF-TRT|"
    r"computation_placer|This TensorFlow binary is optimized|rebuild TensorFlow with")


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line on stderr and exit code 2.

    A bad or missing flag value, an unknown flag or a missing required flag prints
    `PROG: error: MESSAGE (see PROG --help)` instead of the usage block; `--help` and
    `--version` are argparse's own. Subparsers (`add_subparsers`) are of this class too.
    """

    def usage_line(self, message: str) -> str:
        """The one error line for `message` (its whitespace, newlines included, one space)."""
        return f"{self.prog}: error: {' '.join(str(message).split())} (see {self.prog} --help)"

    def error(self, message: str) -> NoReturn:
        """Prints `usage_line(message)` to stderr and exits with code 2."""
        self.exit(2, self.usage_line(message) + "\n")


def add_common_flags(parser, verbose: bool = True) -> None:
    """`--version` on every command; `-v/--verbose` on those that start TensorFlow."""
    from t2t_lite import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                        help="print the version of t2t_lite and exit")
    if verbose:
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


def field_default(cls, name: str) -> Any:
    """The default of the dataclass `cls`'s field `name`: a flag's default, set once.

    Raises:
      TypeError: `cls` has no such field, or the field has no plain default.
    """
    for field in dataclasses.fields(cls):
        if field.name == name:
            if field.default is dataclasses.MISSING:
                raise TypeError(f"{cls.__name__}.{name} has no plain default")
            return field.default
    raise TypeError(f"{cls.__name__} has no field {name!r}")


# What a user can cause, each one line and exit code 2: the package's own errors,
# and a file that is missing or not UTF-8.
USER_ERRORS = (UserError, FileNotFoundError, UnicodeDecodeError)


def run(prog: str, main: Callable[[], int | None], verbose: bool = False,
        tensorflow: bool = True) -> int:
    """Runs `main`, turning user errors into `prog: error: message` and exit 2.

    Args:
      prog: the command's name, the start of its error line.
      main: the command's work; returns its exit code (None: 0).
      verbose: `-v/--verbose`: TensorFlow's start-up lines and warnings shown.
      tensorflow: start TensorFlow first (quietly); False for a command without it.
    """
    try:
        if tensorflow:
            start_tensorflow(verbose)
        return main() or 0
    except USER_ERRORS as e:
        message = str(e) if not isinstance(e, FileNotFoundError) else \
            f"{e.filename}: file not found"
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
