"""Checkpoint averaging (section 6.1 of Vaswani et al. 2017).

"For the base models, we used a single model obtained by averaging the last 5
checkpoints [...]. For the big models, we averaged the last 20 checkpoints."
Every model weight is averaged over the chosen checkpoints (optimizer state is
not) and written as `OUTPUT_DIR/averaged/`, which the decoder loads with
`--checkpoint=averaged`. The result replaces `averaged/` atomically
(`atomic.replace_directory`), so a failed run leaves no partial `averaged/`.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from t2t_lite import atomic
from t2t_lite.runs.run import Run
from t2t_lite.runs.checkpoints import (
    AVERAGED_DIR, CheckpointError, checkpoint_path, list_checkpoints,
)
from t2t_lite.runs.weights import weight_keys, write_weights_dir


def choose(output_dir: str, last: int | None = None,
           names: list[str] | None = None, warn=print) -> list[str]:
    """Checkpoint prefixes to average: the `last` newest ones, or those named."""
    if names:
        return [checkpoint_path(output_dir, name) for name in names]
    available = list_checkpoints(output_dir)
    if not available:
        raise CheckpointError(f"no checkpoints in {output_dir}; train first with "
                              f"t2t_lite-trainer --output_dir={output_dir}")
    if last is not None and len(available) < last:
        warn(f"asked for the last {last} checkpoints, {output_dir} has "
             f"{len(available)}: averaging those")
    chosen = available[-last:] if last else available
    return [os.path.join(output_dir, name) for name in chosen]


def _read(path: str, keys: dict) -> dict[str, np.ndarray]:
    """The model weights stored in one checkpoint, checked against the model."""
    try:
        reader = tf.train.load_checkpoint(path)
        shapes = reader.get_variable_to_shape_map()
        values = {}
        for key, weight in keys.items():
            if key not in shapes:
                raise CheckpointError(f"{path} has no weight {key}: it is another model")
            if tuple(shapes[key]) != tuple(weight.shape):
                raise CheckpointError(f"{path}: {key} has shape {tuple(shapes[key])}, "
                                      f"expected {tuple(weight.shape)}: checkpoints of "
                                      "different models cannot be averaged")
            values[key] = reader.get_tensor(key)
        return values
    except (tf.errors.OpError, ValueError, IndexError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"cannot read checkpoint {path}: {first}") from None


def average(output_dir: str, paths: list[str]) -> str:
    """Averages the model weights of `paths` into `output_dir/averaged/`; returns its prefix.

    First removes the temporaries a killed earlier run left (`atomic.remove_temporaries`).
    """
    atomic.remove_temporaries(output_dir, AVERAGED_DIR)
    model = Run.open(output_dir).build_model()
    keys = weight_keys(model)
    sums = {key: np.zeros(weight.shape, np.float64) for key, weight in keys.items()}
    for path in paths:
        for key, value in _read(path, keys).items():
            sums[key] += value
    for key, weight in keys.items():
        weight.assign((sums[key] / len(paths)).astype(weight.dtype))
    record = {"averaged": [os.path.basename(p) for p in paths]}
    return write_weights_dir(model, os.path.join(output_dir, AVERAGED_DIR), record,
                             "averaged.json")
