"""A run's model and its weights: building it, naming, loading and writing its weights.

Loading rebuilds the model from the hparams saved beside the checkpoints, so
every tool gets the model that was trained. Every tool builds its model with
`build_model`: the class registered as `hparams.model`. Checkpoints are named
and found by `t2t_lite.runs.checkpoints`.
"""

from __future__ import annotations

import json
import os

import tensorflow as tf

from t2t_lite import atomic, registry
from t2t_lite.models import contract
from t2t_lite.runs.checkpoints import CheckpointError


def build_model(hparams, source_vocab_size: int, target_vocab_size: int | None = None):
    """The model `hparams` describe, with its weights created.

    The class registered as `hparams.model` (`t2t_lite.registry.register_model`).

    Raises:
      RegistryError: no model is registered under that name.
      ModelContractError: the class lacks a member of the model contract, or declares
        a capability without its members (`t2t_lite.models.contract`).
      HParamsError: the hparams do not fit the vocabularies (shared_embedding).
    """
    model_class = registry.model(hparams.model)
    contract.check_model_class(model_class, hparams.model)
    model = model_class.from_hparams(hparams, source_vocab_size, target_vocab_size)
    contract.check_capabilities(model)
    return model


def build_run_model(hparams, info: dict):
    """`build_model` for a run's saved hparams and `run_dir.read_run` info."""
    return build_model(hparams, info["source_vocab_size"], info["target_vocab_size"])


def model_weights(model, backing: bool = False) -> tf.Module:
    """A flat trackable holding every model weight under its Keras path.

    `backing`: hold each Keras variable's backing `tf.Variable` instead (same checkpoint
    keys), which a SavedModel needs to be runnable by session-based loaders
    (TensorFlow Serving, `saved_model_cli run`); Keras variables tracked directly save
    values those loaders cannot bind to the graph's variable handles.

    Checkpoints store the model as `model/<path>` (e.g.
    `model/encoder_layer_0-self_attention-query-kernel`), one level below the
    root, so the names are stable, readable, and found before the optimizer's
    references to the same variables.
    """
    weights = tf.Module(name="model_weights")
    for name, weight in _named_weights(model).items():
        setattr(weights, name, weight.value if backing else weight)
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


def read_weights(model, path: str, output_dir: str,
                 hint: str = "pick another with --checkpoint") -> None:
    """Restores `model`'s weights from the checkpoint `path` of the run in `output_dir`.

    Every weight of the model must be in the checkpoint with its shape, and the
    checkpoint may hold no model weight the model lacks. `hint`: what the
    error tells the user to do.

    Raises:
      CheckpointError: it cannot be read, or it holds another model's weights.
    """
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
            f"cannot read checkpoint {path}: {first_line}; {hint}") from None


def write_weights_dir(model, directory: str, record: dict, record_file: str) -> str:
    """Writes the model's weights as `directory/ckpt`, `record` as `directory/record_file`.

    The directory is replaced atomically (`atomic.replace_directory`): a killed
    run leaves the old directory or the new one, never a mix. Returns the
    checkpoint prefix.
    """
    def fill(staging):
        tf.train.Checkpoint(model=model_weights(model)).write(os.path.join(staging, "ckpt"))
        with open(os.path.join(staging, record_file), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)

    atomic.replace_directory(directory, fill)
    return os.path.join(directory, "ckpt")
