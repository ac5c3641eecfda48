"""Naming, finding and listing the checkpoints the trainer writes; crash recovery.

A checkpoint is named by its step (`ckpt-1200`), by a path, or left out for the
newest; `averaged/` and `best/` are found by name too. After a crash the
trainer removes TensorFlow's half-written save folders and restores the newest
checkpoint that reads back. Building the model and loading its weights are in
`t2t_lite.runs.weights`.
"""

from __future__ import annotations

import glob
import os
import re
import shutil

import tensorflow as tf

from t2t_lite.errors import UserError


AVERAGED_DIR = "averaged"  # t2t_lite-avg-checkpoints writes OUTPUT_DIR/averaged/ckpt.
UNREADABLE_DIR = "unreadable"  # The trainer moves checkpoints it cannot read here.


class CheckpointError(UserError, ValueError):
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


def list_checkpoints(output_dir: str) -> list[str]:
    """Names of the checkpoints the trainer keeps, oldest first."""
    state = tf.train.get_checkpoint_state(output_dir)
    if state is None:
        return []
    return [os.path.basename(p) for p in state.all_model_checkpoint_paths]


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
    # With their save times, or the rebuilt manager would forget them (it tracks only
    # checkpoints newer than the last preserved time): they would be neither listed nor
    # rotated out after the next save.
    times = getattr(manager, "_maybe_delete", {})
    checkpoint_management.update_checkpoint_state_internal(
        output_dir, good[-1], good, save_relative_paths=True,
        all_model_checkpoint_timestamps=[times[p] for p in good] if times else None,
        last_preserved_timestamp=getattr(manager, "_last_preserved_timestamp", None))
    warn(f"warning: moved {len(unreadable)} unreadable checkpoint(s) to {aside}; "
         f"resuming from {path}")
    return make_manager(), path
