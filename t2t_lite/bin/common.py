"""What every t2t_lite command shares: quiet TensorFlow start-up, one-line errors, defaults.

Without `--verbose`, TensorFlow's start-up chatter (absl's "All log messages
before absl::InitializeLog()", oneDNN notices, "Could not find cuda drivers",
"failed call to cuInit" on a machine without a GPU) and its Python warnings are
kept out of the user's way; real errors still show. `-v/--verbose` shows it all.
An error a user can cause (`t2t_lite.errors.UserError`) becomes one line and exit
code 2, and so does a flag argparse refuses (`ArgumentParser`). A flag that fills an
options dataclass field is made from that field (`add_option_flags`: its type, default,
choices and help), and the parsed flags build the dataclass (`options_from_args`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import sys
import tempfile
import typing
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


def _fields(cls) -> list[tuple[dataclasses.Field, type, str | None]]:
    """(field, its type, its flag) of each field of the options dataclass `cls` that has flags.

    The flag is the field's own name or the one its `option(flag=...)` names; None for
    a nested options dataclass, whose fields have flags of their own. A field marked
    `flag=False`, or not made by `option`, is left out.
    """
    hints = typing.get_type_hints(cls)
    out = []
    for field in dataclasses.fields(cls):
        flag = field.metadata.get("flag", False)
        if flag is not False:
            kind = hints[field.name]
            out.append((field, kind, None if dataclasses.is_dataclass(kind)
                        else field.name if flag is True else flag))
    return out


def option_flags(cls, names=None) -> list[tuple[str, dataclasses.Field, type]]:
    """(flag name, field, its type) of each field of the options dataclass `cls` that is a flag.

    A field whose type is itself an options dataclass (`TrainOptions.eval`) gives its
    own fields' flags in its place; a field marked `flag=False` gives none. `names`
    (field names of `cls` itself) picks some, in that order.

    Raises:
      TypeError: a name in `names` that is no flag field of `cls`.
    """
    if names is not None:
        own = {field.name: (flag, field, kind) for field, kind, flag in _fields(cls) if flag}
        missing = [name for name in names if name not in own]
        if missing:
            raise TypeError(f"{cls.__name__} has no flag field {', '.join(missing)}")
        return [own[name] for name in names]
    flags = []
    for field, kind, flag in _fields(cls):
        flags += option_flags(kind) if flag is None else [(flag, field, kind)]
    return flags


def flag_arguments(field: dataclasses.Field, kind) -> dict[str, Any]:
    """`add_argument`'s keywords for `field` of type `kind`: its type, default, choices, help.

    A bool is a switch, off by default; `int | None` or `float | None` is an int or a
    float flag; a str is argparse's plain string. An `unset` field's flag defaults to None.
    """
    meta = field.metadata
    if kind is bool:
        if field.default is not False:
            raise TypeError(f"{field.name}: a bool flag must be off by default")
        return {"action": "store_true", "help": meta["help"]}
    members = [k for k in typing.get_args(kind) if k is not type(None)] or [kind]
    if len(members) != 1 or members[0] not in (int, float, str):
        raise TypeError(f"{field.name}: no flag for a field of type {kind}")
    if not meta["unset"] and field.default is dataclasses.MISSING:
        raise TypeError(f"{field.name}: a flag needs a plain default, or unset=True")
    arguments = {"default": None if meta["unset"] else field.default, "help": meta["help"]}
    if members[0] is not str:
        arguments["type"] = members[0]
    if meta["choices"]:
        arguments["choices"] = meta["choices"]
    return arguments


def add_option_flags(parser, cls, names=None) -> None:
    """Adds `--NAME` to `parser` (or an argument group) for each flag field of `cls`.

    Each flag's type, default, choices and help are its field's (`option_flags`,
    `flag_arguments`), so they cannot drift from the dataclass the command fills.
    """
    for flag, field, kind in option_flags(cls, names):
        parser.add_argument(f"--{flag}", **flag_arguments(field, kind))


def option_values(cls, args, names=None) -> dict[str, Any]:
    """Field -> value of each flag field of `cls` in the parsed `args` (see `option_flags`).

    A nested options dataclass becomes one value built from its flags; an `unset`
    field's flag left at None is left out, so the field's default applies.
    """
    chosen = None if names is None else {field.name for _, field, _ in option_flags(cls, names)}
    values = {}
    for field, kind, flag in _fields(cls):
        if flag is None and chosen is None:
            values[field.name] = kind(**option_values(kind, args))
        elif flag is not None and (chosen is None or field.name in chosen):
            value = getattr(args, flag)
            if value is not None or not field.metadata["unset"]:
                values[field.name] = value
    return values


def options_from_args(cls, args, names=None, **values):
    """`cls` built from its flags in the parsed `args` (`option_values`), then `values`."""
    return cls(**{**option_values(cls, args, names), **values})


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
