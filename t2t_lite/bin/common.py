"""What every t2t_lite command shares: quiet TensorFlow start-up, one-line errors."""

from __future__ import annotations

import os
import sys
from typing import Callable

# Before TensorFlow is imported: keep its info/warning start-up lines out of
# the user's way (errors still show).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def user_errors() -> tuple[type, ...]:
    """Exceptions a user can cause; each becomes one line and exit code 2."""
    from t2t_lite.checkpoints import CheckpointError
    from t2t_lite.hparams.hparams import HParamsError
    from t2t_lite.problems.base import ProblemError
    from t2t_lite.registry import RegistryError
    from t2t_lite.run_dir import RunDirError
    from t2t_lite.text_encoder import DataError

    return (CheckpointError, DataError, HParamsError, ProblemError, RegistryError, RunDirError,
            FileNotFoundError, UnicodeDecodeError)


def run(prog: str, main: Callable[[], int | None]) -> int:
    """Runs `main`, turning user errors into `prog: error: message` and exit 2."""
    try:
        return main() or 0
    except user_errors() as e:
        message = str(e) if not isinstance(e, FileNotFoundError) else \
            f"{e.filename}: file not found"
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
