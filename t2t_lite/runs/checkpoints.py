"""Finding and loading checkpoints written by the trainer.

A checkpoint is named by its step (`ckpt-1200`), by a path, or left out for the
newest. Loading rebuilds the model from the hparams saved beside the
checkpoints, so every tool gets the model that was trained. Every tool builds
its model with `build_model`: the class registered as `hparams.model`.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile

import tensorflow as tf

from t2t_lite import registry
from t2t_lite.runs import run_dir


AVERAGED_DIR = "averaged"  # t2t_lite-avg-checkpoints writes OUTPUT_DIR/averaged/ckpt.
UNREADABLE_DIR = "unreadable"  # The trainer moves checkpoints it cannot read here.


class CheckpointError(ValueError):
    """A checkpoint that cannot be found or read; the message says what to do."""


def checkpoint_path(output_dir: str, checkpoint: str | None = None) -> str:
    """The checkpoint prefix to load: the newest one, or the one named.

    Args:
      output_dir: the trainer's output directory.
      checkpoint: None (newest), a name such as "ckpt-1200", or a path prefix.
    """
    if checkpoint is None:
        path = tf.train.latest_checkpoint(output_dir)
        if path is None:
            raise CheckpointError(
                f"no checkpoint in {output_dir}; train first with t2t_lite-trainer "
                f"--output_dir={output_dir}"
            )
        return path
    candidates = [checkpoint, os.path.join(output_dir, checkpoint)]
    for path in candidates:
        if os.path.exists(path + ".index"):
            return path
    directory = os.path.join(output_dir, checkpoint)
    if os.path.isdir(directory):
        if os.path.exists(os.path.join(directory, "ckpt.index")):  # averaged/
            return os.path.join(directory, "ckpt")
        path = tf.train.latest_checkpoint(directory)
        if path:
            return path
    if checkpoint == AVERAGED_DIR:
        raise CheckpointError(
            f"{directory} not found; write it with t2t_lite-avg-checkpoints "
            f"--output_dir={output_dir}")
    raise CheckpointError(
        f"checkpoint {checkpoint!r} not found in {output_dir}; "
        f"available: {', '.join(list_checkpoints(output_dir)) or 'none'}"
    )


def build_model(hparams, source_vocab_size: int, target_vocab_size: int | None = None):
    """The model `hparams` describe, with its weights created.

    The class registered as `hparams.model` (`t2t_lite.registry.register_model`).

    Raises:
      RegistryError: no model is registered under that name.
      HParamsError: the hparams do not fit the vocabularies (shared_embedding).
    """
    model_class = registry.model(hparams.model)
    return model_class.from_hparams(hparams, source_vocab_size, target_vocab_size)


def build_run_model(hparams, info: dict):
    """`build_model` for a run's saved hparams and `run_dir.read_run` info."""
    return build_model(hparams, info["source_vocab_size"], info["target_vocab_size"])


def model_weights(model) -> tf.Module:
    """A flat trackable holding every model weight under its Keras path.

    Checkpoints store the model as `model/<path>` (e.g.
    `model/encoder_layer_0-self_attention-query-kernel`), one level below the
    root, so the names are stable, readable, and found before the optimizer's
    references to the same variables.
    """
    weights = tf.Module(name="model_weights")
    for name, weight in _named_weights(model).items():
        setattr(weights, name, weight)
    return weights


def _named_weights(model) -> dict[str, object]:
    """Weight name relative to the model ("-" for "/") -> the weight."""
    prefix = model.name + "/"
    named = {}
    for weight in model.weights:
        path = weight.path[len(prefix):] if weight.path.startswith(prefix) else weight.path
        named[path.replace("/", "-")] = weight
    return named


def weight_keys(model) -> dict[str, object]:
    """Checkpoint key of every model weight -> the weight."""
    return {f"model/{name}/.ATTRIBUTES/VARIABLE_VALUE": weight
            for name, weight in _named_weights(model).items()}


def list_checkpoints(output_dir: str) -> list[str]:
    """Names of the checkpoints the trainer keeps, oldest first."""
    state = tf.train.get_checkpoint_state(output_dir)
    if state is None:
        return []
    return [os.path.basename(p) for p in state.all_model_checkpoint_paths]


def load_model(output_dir: str, checkpoint: str | None = None):
    """Rebuilds the trained model and restores its weights.

    Returns:
      (model, hparams, info, checkpoint path); info as `run_dir.read_run` gives it
      ({"problem", "source_vocab_size", "target_vocab_size", "data_dir"}).
    """
    hparams, info = run_dir.read_run(output_dir)
    path = checkpoint_path(output_dir, checkpoint)
    model = build_run_model(hparams, info)
    try:
        saved = dict(tf.train.list_variables(path))
        expected = weight_keys(model)
        extra = sorted(k for k in saved if k.startswith("model/") and k not in expected)
        if extra:
            raise ValueError(f"it has a weight the model lacks ({extra[0]}): the hparams "
                             f"in {output_dir} describe another model")
        for key, weight in expected.items():
            if key not in saved:
                raise ValueError(f"it has no weight {key}: the hparams in {output_dir} "
                                 "describe another model")
            if tuple(saved[key]) != tuple(weight.shape):
                raise ValueError(f"{key} has shape {saved[key]}, the model expects "
                                 f"{tuple(weight.shape)}")
        tf.train.Checkpoint(model=model_weights(model)).read(path).expect_partial()
    except (tf.errors.OpError, ValueError, IndexError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(
            f"cannot read checkpoint {path}: {first_line}; pick another with --checkpoint"
        ) from None
    return model, hparams, info, path


def write_weights_dir(model, directory: str, record: dict, record_file: str) -> str:
    """Writes the model's weights as `directory/ckpt`, `record` as `directory/record_file`.

    Everything goes to a staging directory beside `directory`, which then
    replaces it, so a killed run leaves the old directory or the new one, never
    a mix. Returns the checkpoint prefix.
    """
    parent = os.path.dirname(os.path.abspath(directory))
    base = os.path.basename(directory)
    staging = tempfile.mkdtemp(prefix=f".{base}-tmp-", dir=parent)
    try:
        tf.train.Checkpoint(model=model_weights(model)).write(os.path.join(staging, "ckpt"))
        with open(os.path.join(staging, record_file), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
        old = None
        if os.path.exists(directory):
            old = tempfile.mkdtemp(prefix=f".{base}-old-", dir=parent)
            os.replace(directory, os.path.join(old, base))
        os.replace(staging, directory)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return os.path.join(directory, "ckpt")


def remove_staging(directory: str, base: str) -> list[str]:
    """Removes what a killed `write_weights_dir(directory/base)` left: `.BASE-tmp-*`, `.BASE-old-*`.

    A kill between its two renames leaves the old `base/` only inside
    `.BASE-old-*`; it is moved back when `base/` is missing. Returns what was removed.
    """
    final = os.path.join(directory, base)
    removed = []
    for kind in ("old", "tmp"):
        for stale in sorted(glob.glob(os.path.join(glob.escape(directory), f".{base}-{kind}-*"))):
            inner = os.path.join(stale, base)
            if kind == "old" and os.path.isdir(inner) and not os.path.exists(final):
                os.replace(inner, final)
            shutil.rmtree(stale, ignore_errors=True)
            removed.append(stale)
    return removed


def remove_save_temporaries(output_dir: str) -> list[str]:
    """Removes the `ckpt-N_temp` folders TensorFlow leaves when a save is killed."""
    stale = [path for path in glob.glob(os.path.join(glob.escape(output_dir), "ckpt-*_temp"))
             if re.fullmatch(r"ckpt-\d+_temp", os.path.basename(path))]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale


def restore_newest_readable(checkpoint, make_manager, output_dir: str, warn=print):
    """Restores the newest checkpoint that reads back; returns (manager, its path or None).

    An unreadable checkpoint (truncated, corrupted) is reported with a warning
    and moved to `OUTPUT_DIR/unreadable/` (kept for inspection, no longer
    listed), and the one before it is tried.

    Args:
      checkpoint: the `tf.train.Checkpoint` to restore into.
      make_manager: fn() -> the run's `tf.train.CheckpointManager` (rebuilt after a move).

    Raises:
      CheckpointError: checkpoints exist but none reads back.
    """
    from tensorflow.python.checkpoint import checkpoint_management

    manager = make_manager()
    listed = list(manager.checkpoints)
    unreadable = []
    for path in reversed(listed):
        try:
            checkpoint.restore(path).assert_existing_objects_matched()
            break
        except (tf.errors.OpError, ValueError, IndexError, AssertionError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            warn(f"warning: checkpoint {path} is unreadable ({first}); trying the one before it")
            unreadable.append(path)
    else:
        if listed:
            raise CheckpointError(
                f"no readable checkpoint in {output_dir} ({', '.join(map(os.path.basename, listed))}"
                " all fail to read); move them away to start over, or use another --output_dir")
        return manager, None
    if not unreadable:
        return manager, path
    aside = os.path.join(output_dir, UNREADABLE_DIR)
    os.makedirs(aside, exist_ok=True)
    for bad in unreadable:
        for name in glob.glob(glob.escape(bad) + ".*"):
            os.replace(name, os.path.join(aside, os.path.basename(name)))
    good = listed[:len(listed) - len(unreadable)]
    checkpoint_management.update_checkpoint_state_internal(
        output_dir, good[-1], good, save_relative_paths=True)
    warn(f"warning: moved {len(unreadable)} unreadable checkpoint(s) to {aside}; "
         f"resuming from {path}")
    return make_manager(), path
