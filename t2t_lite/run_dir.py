"""The output directory of a run: resolved hparams, problem name, atomic writes.

`hparams.json` (the resolved HParams) and `problem.json` (problem name and
vocabulary size) are written next to the checkpoints, and every later tool
reads them back. A new run in a directory that already holds a run must agree
on the problem and on every model-shaping hparam.
"""

from __future__ import annotations

import json
import os
import tempfile

from t2t_lite.hparams.hparams import HParams

HPARAMS_FILE = "hparams.json"
PROBLEM_FILE = "problem.json"


class RunDirError(ValueError):
    """An output directory that cannot be used as asked."""


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Writes `data` to a temporary file beside `path`, then renames it."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 -> what open() would give.
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def atomic_write_text(path: str, text: str) -> None:
    """`atomic_write_bytes` of UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_run(output_dir: str) -> tuple[HParams, dict]:
    """(hparams, {"problem": name, "vocab_size": V}) saved in `output_dir`."""
    hparams_path = os.path.join(output_dir, HPARAMS_FILE)
    problem_path = os.path.join(output_dir, PROBLEM_FILE)
    for path in (hparams_path, problem_path):
        if not os.path.exists(path):
            raise RunDirError(
                f"{path} not found: {output_dir} holds no t2t_lite run; "
                "pass the --output_dir that t2t_lite-trainer wrote"
            )
    with open(hparams_path, encoding="utf-8") as f:
        hparams = HParams.from_json(f.read())
    with open(problem_path, encoding="utf-8") as f:
        info = json.load(f)
    return hparams, info


def prepare_run(output_dir: str, hparams: HParams, problem_name: str,
                vocab_size: int, data_dir: str | None = None) -> None:
    """Checks `output_dir` against an earlier run there, then saves this one's hparams.

    Raises:
      RunDirError: when the directory holds a run of another problem or with
        different model-shaping hparams.
    """
    if os.path.exists(os.path.join(output_dir, HPARAMS_FILE)):
        old_hparams, info = read_run(output_dir)
        if info.get("problem") != problem_name:
            raise RunDirError(
                f"{output_dir} holds a run of problem {info.get('problem')!r}, not "
                f"{problem_name!r}; use another --output_dir"
            )
        diff = hparams.model_shaping_diff(old_hparams)
        if diff:
            raise RunDirError(
                f"{output_dir} holds checkpoints of a different model ({'; '.join(diff)}); "
                "use another --output_dir or the same hparams"
            )
    atomic_write_text(os.path.join(output_dir, HPARAMS_FILE), hparams.to_json() + "\n")
    atomic_write_text(
        os.path.join(output_dir, PROBLEM_FILE),
        json.dumps({"problem": problem_name, "vocab_size": vocab_size,
                    "data_dir": os.path.abspath(data_dir) if data_dir else None},
                   indent=2) + "\n",
    )
