"""The output directory of a run: resolved hparams, problem name, checked on resume.

`hparams.json` (the resolved HParams, `model` included, the model's config
nested as "model_config") and `problem.json` (problem name, source and target
vocabulary sizes, data dir) are written next to the checkpoints, and every
later tool reads them back. A new run in a directory that already holds a run
must agree on the problem and on every model-shaping hparam, its config's
included. An hparams.json with every field at the top level (written before
the per-model configs) reads as the same hparams (`HParams.from_dict`); a run
that resumes rewrites it nested. Files written before separate vocabularies
existed hold one "vocab_size"; it is read as both sizes. `precision` may change on resume
except to or from "mixed_float16", whose optimizer checkpoints a loss scale.
A fine-tuned run (`t2t_lite-trainer --init_from`) also holds `init_from.json`,
where it started: the source run, checkpoint and step, and whether the
optimizer's slots came with the weights (`t2t_lite.training.warm_start`).
"""

from __future__ import annotations

import json
import os

from t2t_lite import atomic, records
from t2t_lite.errors import UserError
from t2t_lite.hparams.hparams import HParams, HParamsError

HPARAMS_FILE = "hparams.json"
PROBLEM_FILE = "problem.json"
INIT_FROM_FILE = "init_from.json"


class RunDirError(UserError, ValueError):
    """An output directory that cannot be used as asked."""


def read_run(output_dir: str) -> tuple[HParams, dict]:
    """(hparams, info) saved in `output_dir`: the reader of the two files behind
    `t2t_lite.runs.run.Run.open`, the handle every tool opens a run with.

    info: {"problem": name, "source_vocab_size": int, "target_vocab_size": int,
    "data_dir": str or None}.
    """
    hparams_path = os.path.join(output_dir, HPARAMS_FILE)
    problem_path = os.path.join(output_dir, PROBLEM_FILE)
    for path in (hparams_path, problem_path):
        if not os.path.exists(path):
            raise RunDirError(
                f"{path} not found: {output_dir} holds no t2t_lite run; "
                "pass the --output_dir that t2t_lite-trainer wrote"
            )
    fix = f"the run in {output_dir} is damaged: restore the file or use another --output_dir"
    try:
        hparams = HParams.from_dict(records.read_json(hparams_path, fix))
    except HParamsError as e:
        raise records.RecordError(f"{hparams_path}: {e}; {fix}") from None
    info = records.read_json(problem_path, fix, {"problem": str})
    if "vocab_size" in info:  # Written before separate vocabularies: one size.
        info.setdefault("source_vocab_size", info["vocab_size"])
        info.setdefault("target_vocab_size", info.pop("vocab_size"))
    info.setdefault("data_dir", None)
    records.check_fields(problem_path, info, {"source_vocab_size": int,
                                              "target_vocab_size": int,
                                              "data_dir": (str, type(None))}, fix)
    return hparams, info


def read_record(output_dir: str, name: str, fields=None) -> dict | None:
    """The JSON record file `name` of the run in `output_dir`, None if it has none.

    The one reader of a run's small state files (`init_from.json`,
    `t2t_lite.training.early_stopping`'s state), each written atomically.
    `fields`: name -> type, each required (`t2t_lite.records.read_json`).

    Raises:
      RecordError: the file is damaged (one line naming it).
    """
    path = os.path.join(output_dir, name)
    if not os.path.exists(path):
        return None
    return records.read_json(path, "restore it, or use another --output_dir", fields)


def read_init_from(output_dir: str) -> dict | None:
    """Where the run in `output_dir` started (`init_from.json`), None if from scratch."""
    return read_record(output_dir, INIT_FROM_FILE, {"run_dir": str, "checkpoint": str})


def write_init_from(output_dir: str, record: dict) -> None:
    """Writes `init_from.json` (atomically): the run started from `record`'s checkpoint."""
    atomic.write_text(os.path.join(output_dir, INIT_FROM_FILE),
                      json.dumps(record, indent=2) + "\n")


def holds_weights(output_dir: str) -> bool:
    """True when `output_dir` or a folder in it (best/, averaged/) holds a checkpoint."""
    folders = [output_dir] + [os.path.join(output_dir, name) for name in os.listdir(output_dir)]
    return any(name.endswith(".index") for folder in folders if os.path.isdir(folder)
               for name in os.listdir(folder))


def _loss_scaled(hparams: HParams) -> bool:
    """Whether the optimizer of `hparams` is a LossScaleOptimizer (`trainer.make_optimizer`)."""
    return hparams.dtype_policy == "mixed_float16"


def prepare_run(output_dir: str, hparams: HParams, problem_name: str,
                source_vocab_size: int, target_vocab_size: int,
                data_dir: str | None = None) -> None:
    """Checks `output_dir` against an earlier run there, then saves this one's files.

    Only a directory that holds weights is checked: the files of a run that
    stopped before its first checkpoint (e.g. refused hparams) are replaced.

    Raises:
      RunDirError: when the directory holds checkpoints of another problem, of a
        model with different model-shaping hparams, of other vocabulary sizes, or
        of a run with (or without) the loss scale that this one lacks (has).
    """
    if os.path.exists(os.path.join(output_dir, HPARAMS_FILE)) and holds_weights(output_dir):
        old_hparams, info = read_run(output_dir)
        if info.get("problem") != problem_name:
            raise RunDirError(
                f"{output_dir} holds a run of problem {info.get('problem')!r}, not "
                f"{problem_name!r}; use another --output_dir"
            )
        diff = hparams.model_shaping_diff(old_hparams)
        old_sizes = (info.get("source_vocab_size"), info.get("target_vocab_size"))
        if old_sizes != (source_vocab_size, target_vocab_size):
            diff.append(f"source/target vocabulary sizes: {old_sizes[0]}/{old_sizes[1]} -> "
                        f"{source_vocab_size}/{target_vocab_size}")
        if diff:
            raise RunDirError(
                f"{output_dir} holds checkpoints of a different model ({'; '.join(diff)}); "
                "use another --output_dir or the same hparams"
            )
        if _loss_scaled(hparams) != _loss_scaled(old_hparams):
            raise RunDirError(
                f"{output_dir} holds checkpoints of a precision={old_hparams.dtype_policy} run; "
                f"a precision={hparams.dtype_policy} run cannot resume its optimizer (only "
                "mixed_float16 has a loss scale); use another --output_dir or that precision"
            )
    atomic.write_text(os.path.join(output_dir, HPARAMS_FILE), hparams.to_json() + "\n")
    atomic.write_text(
        os.path.join(output_dir, PROBLEM_FILE),
        json.dumps({"problem": problem_name, "source_vocab_size": source_vocab_size,
                    "target_vocab_size": target_vocab_size,
                    "data_dir": os.path.abspath(data_dir) if data_dir else None},
                   indent=2) + "\n",
    )
