"""Fine-tuning: a new run that starts from another run's weights (`--init_from`).

    t2t_lite-trainer --problem=translate_files --data_dir=NEW_DATA --output_dir=FINE \
        --hparams=multi30k --init_from=GENERAL_RUN:averaged --train_steps=2000

`--init_from=RUN_DIR` starts from RUN_DIR's newest checkpoint; `RUN_DIR:ckpt-N`,
`RUN_DIR:averaged` and `RUN_DIR:best` from that one. The new run gets the
source's model weights and nothing else: its step counter starts at 0, so
equation 3's warm-up and decay start again, Adam's slots start at zero, and it
reads its own data from the beginning. `--init_from_optimizer` also copies
Adam's slots (first and second moments) from the source checkpoint (only a
`ckpt-N` holds them; `averaged/` and `best/` hold weights only); the step
counter still starts at 0, so Adam's bias correction treats the copied moments
as new ones for the first few hundred steps.

The source must describe the same model: every model-shaping hparam
(`HParams.model_shaping_diff`: d_model, num_layers, num_heads, d_ff,
shared_embedding, model, ...) and the vocabulary sizes must match, and where
both runs have SentencePiece files those must hold the same vocabulary; a
mismatch is one `WarmStartError` line naming each field that differs. The
problem may differ (fine-tuning on another corpus is the point). To fine-tune
on new text, give `t2t_lite-datagen` the source run's vocabulary: copy its
`vocab.*.model` into the new data dir (under the new problem's file name)
before running datagen there, which then reuses it.

Where the run started is written to `OUTPUT_DIR/init_from.json`
(`run_dir.write_init_from`). Started again, a fine-tuned run resumes from its
own checkpoints like any run, never from the source again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re

import tensorflow as tf

from t2t_lite import registry
from t2t_lite.errors import UserError
from t2t_lite.runs import weights
from t2t_lite.runs.run import Run
from t2t_lite.training.evaluation import BEST_FILE, read_best_file

_CHECKPOINT_TAIL = re.compile(r"ckpt-\d+|averaged|best")
_ITERATIONS_KEY = "_iterations/.ATTRIBUTES/VARIABLE_VALUE"


class WarmStartError(UserError, ValueError):
    """An --init_from source that this run cannot start from; the message says why."""


@dataclasses.dataclass(frozen=True)
class InitFrom:
    """A parsed --init_from: the source run directory and its checkpoint (None: newest)."""

    run_dir: str
    checkpoint: str | None = None

    @classmethod
    def parse(cls, text: str) -> InitFrom:
        """"RUN_DIR" or "RUN_DIR:ckpt-N|averaged|best" (a ":" elsewhere belongs to the path)."""
        head, sep, tail = text.rpartition(":")
        if sep and head and _CHECKPOINT_TAIL.fullmatch(tail):
            return cls(head, tail)
        return cls(text)


def compatibility_diff(source_hparams, source_info: dict, hparams, problem) -> list[str]:
    """What differs between the source run and this one ("field: source -> this run")."""
    diff = hparams.model_shaping_diff(source_hparams)
    sizes = (source_info.get("source_vocab_size"), source_info.get("target_vocab_size"))
    if sizes != (problem.source_vocab_size, problem.target_vocab_size):
        diff.append(f"source/target vocabulary sizes: {sizes[0]}/{sizes[1]} -> "
                    f"{problem.source_vocab_size}/{problem.target_vocab_size}")
    else:
        diff += _vocab_file_diff(source_info, problem)
    return diff


def _vocab_files(problem) -> tuple[str, str] | None:
    try:
        files = problem.vocab_files()
    except (UserError, OSError):  # No data dir, or its files are gone: sizes only.
        return None
    if files is None or not all(os.path.exists(path) for path in files):
        return None
    return files


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _vocab_file_diff(source_info: dict, problem) -> list[str]:
    """The vocabulary files (sides) whose contents differ; [] where either run has none."""
    try:
        source_problem = registry.problem(source_info.get("problem", ""))
    except UserError:  # Its problem is not registered here: compare the sizes only.
        return []
    source_problem.set_data_dir(source_info.get("data_dir"))
    old, new = _vocab_files(source_problem), _vocab_files(problem)
    if old is None or new is None:
        return []
    diff = []
    for side, old_path, new_path in zip(("source", "target"), old, new):
        if _digest(old_path) != _digest(new_path):
            diff.append(f"{side} vocabulary: {old_path} -> {new_path} (another vocabulary)")
    if len(diff) == 2 and old[0] == old[1] and new[0] == new[1]:
        diff = [f"shared vocabulary: {old[0]} -> {new[0]} (another vocabulary)"]
    return diff


def _source_step(path: str) -> int | None:
    """The optimizer step of the checkpoint `path` (best/'s record step), None if unknown."""
    reader = tf.train.load_checkpoint(path)
    for key in reader.get_variable_to_shape_map():
        if key.startswith("optimizer/") and key.endswith(_ITERATIONS_KEY):
            return int(reader.get_tensor(key))
    record = os.path.join(os.path.dirname(path), BEST_FILE)
    if os.path.exists(record):  # best/: weights only, its step in best.json.
        return read_best_file(record)["step"]
    return None  # averaged/: the mean of several steps.


def _read_optimizer(model, optimizer, path: str) -> None:
    """Copies the optimizer's slots from `path`, then sets its step counter to 0."""
    if not any(key.startswith("optimizer/") for key, _ in tf.train.list_variables(path)):
        raise WarmStartError(
            f"--init_from_optimizer: {path} holds model weights only (no optimizer slots); "
            "name a ckpt-N of that run, or leave --init_from_optimizer out")
    checkpoint = tf.train.Checkpoint(model=weights.model_weights(model), optimizer=optimizer)
    try:
        checkpoint.read(path).expect_partial().assert_existing_objects_matched()
    except (tf.errors.OpError, ValueError, AssertionError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise WarmStartError(f"--init_from_optimizer: cannot read the optimizer of {path} "
                             f"({first}); leave --init_from_optimizer out") from None
    optimizer.iterations.assign(0)


def check_source(init_from: str, hparams, problem, output_dir: str):
    """The parsed --init_from and the source `Run`, once it is known to fit this run.

    Cheap (no model is built): the trainer calls it before building anything.

    Raises:
      WarmStartError: the source is this run, or describes another model or vocabulary.
      RunDirError: RUN_DIR holds no run.
    """
    spec = InitFrom.parse(init_from)
    if os.path.abspath(spec.run_dir) == os.path.abspath(output_dir):
        raise WarmStartError(f"--init_from={init_from} names this run's own --output_dir; "
                             "fine-tune into a new --output_dir")
    source = Run.open(spec.run_dir)
    diff = compatibility_diff(source.hparams, source.info, hparams, problem)
    if diff:
        raise WarmStartError(
            f"cannot fine-tune from {spec.run_dir}: {'; '.join(diff)} (its value -> this "
            "run's); use the same model-shaping hparams and vocabularies as the source run")
    return spec, source


def warm_start(model, optimizer, init_from: str, hparams, problem, output_dir: str,
               keep_optimizer: bool = False) -> dict:
    """Loads the --init_from checkpoint's weights (and slots) into a new run; its record.

    Args:
      model, optimizer: the new run's, built, at step 0.
      init_from: "RUN_DIR" or "RUN_DIR:ckpt-N|averaged|best".
      hparams, problem: the new run's (its data dir set).
      output_dir: the new run's output directory.
      keep_optimizer: copy Adam's slots too (--init_from_optimizer).

    Returns:
      The record for `init_from.json`: run_dir, checkpoint, step, optimizer, problem.

    Raises:
      WarmStartError: `check_source`'s, or slots asked of a checkpoint without them.
      RunDirError, CheckpointError: no run, or no such checkpoint, in RUN_DIR.
    """
    spec, source = check_source(init_from, hparams, problem, output_dir)
    if keep_optimizer and (hparams.dtype_policy == "mixed_float16") != (
            source.hparams.dtype_policy == "mixed_float16"):
        raise WarmStartError(
            f"--init_from_optimizer: {spec.run_dir} trained with precision="
            f"{source.hparams.dtype_policy}, this run with {hparams.dtype_policy} (only "
            "mixed_float16 has a loss scale); use its precision or leave the flag out")
    path = source.checkpoint(spec.checkpoint)
    weights.read_weights(model, path, spec.run_dir,
                         hint="name another checkpoint in --init_from=RUN_DIR:ckpt-N")
    if keep_optimizer:
        _read_optimizer(model, optimizer, path)
    return {"run_dir": os.path.abspath(spec.run_dir), "checkpoint": os.path.abspath(path),
            "step": _source_step(path), "optimizer": keep_optimizer,
            "problem": source.problem_name}


def describe(record: dict) -> str:
    """One log line: where a run started."""
    step = f" (step {record['step']})" if record.get("step") is not None else ""
    slots = "its Adam slots" if record.get("optimizer") else "a fresh optimizer"
    return (f"fine-tuning from {record['checkpoint']}{step}: its weights, {slots}, "
            "step counter and schedule from 0")
