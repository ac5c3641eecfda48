"""Name -> Problem class, name -> hparams set, name -> model class and its config class.

Problems register with `@register_problem("wmt_ende")`, hparams sets with
`@register_hparams("big")`, models with `@register_model("span_transformer",
config=SpanConfig)` (the contract a model class keeps is `t2t_lite.models.contract`;
`hparams.model` names the class a run builds, `hparams.model_config` holds an instance
of its config class, `t2t_lite.hparams.config`). A built-in model's config class
lives in a module without TensorFlow and also registers there with
`@register_config(name)`, so that hparams find it without importing the model.
The packages `t2t_lite.problems` and `t2t_lite.hparams` and the modules of the
built-in models and of their configs are imported on the first lookup of their
kind (hparams, configs and models without TensorFlow, so the JAX backend can look
them up; hparams and configs without Keras), so every built-in name is known; an
unknown name fails with one line listing the known names.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Callable

from t2t_lite.errors import UserError

_PROBLEMS: dict[str, type] = {}
_HPARAMS: dict[str, Callable[[], Any]] = {}
_MODELS: dict[str, type] = {}
_CONFIGS: dict[str, type | None] = {}  # Model name -> its config class (None: no fields).


class RegistryError(UserError, KeyError):
    """An unknown or duplicate name; str() is the one-line message."""

    def __str__(self) -> str:
        return str(self.args[0])


def register_problem(name: str):
    """Class decorator: registers a Problem subclass under `name`."""

    def decorator(cls):
        _add(_PROBLEMS, name, cls, "problem")
        cls.name = name
        return cls

    return decorator


def register_hparams(name: str):
    """Function decorator: registers a zero-argument function returning HParams."""

    def decorator(fn):
        _add(_HPARAMS, name, fn, "hparams set")
        return fn

    return decorator


def register_model(name: str, config: type | None = None):
    """Class decorator: registers a model class under `name` (`hparams.model`) with
    its config class (`hparams.model_config`; None: a model without fields of its own)."""

    def decorator(cls):
        _add(_MODELS, name, cls, "model")
        if config is not None or name not in _CONFIGS:
            _add(_CONFIGS, name, config, "model config")
        return cls

    return decorator


def register_config(*names: str):
    """Class decorator: registers a config class as that of the models `names`, from
    a module without TensorFlow (the model's `register_model` names the same class)."""

    def decorator(cls):
        for name in names:
            _add(_CONFIGS, name, cls, "model config")
        return cls

    return decorator


def _add(table: dict, name: str, value: Any, kind: str) -> None:
    if name in table and table[name] is not value:
        raise RegistryError(f"{kind} {name!r} is registered twice")
    table[name] = value


# What each table's lookups import: hparams, configs and models need no TensorFlow (the
# JAX backend looks them up without it; hparams and configs not even Keras); the
# problems' data pipelines do.
_MODULES = {
    "problem": ("t2t_lite.problems",),
    "hparams set": ("t2t_lite.hparams",),
    "model config": ("t2t_lite.hparams.config", "t2t_lite.models.parsing.config",
                     "t2t_lite.models.rnn.config"),
    "model": ("t2t_lite.models.transformer", "t2t_lite.models.parsing.aligned_model",
              "t2t_lite.models.parsing.span_model", "t2t_lite.models.rnn.seq2seq",
              "t2t_lite.models.rnn.bahdanau", "t2t_lite.models.rnn.luong"),
}
_LOADED_KINDS: set[str] = set()


def _ensure_loaded(kind: str | None = None) -> None:
    """Imports the modules registering `kind`'s names (every kind's for None)."""
    for name in [kind] if kind else list(_MODULES):
        if name not in _LOADED_KINDS:
            _LOADED_KINDS.add(name)
            for module in _MODULES[name]:
                importlib.import_module(module)


def _lookup(table: dict, name: str, kind: str, flag: str, load: str | None = None):
    _ensure_loaded(load or kind)
    if name in table:
        return table[name]
    close = difflib.get_close_matches(name, table, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise RegistryError(
        f"unknown {kind} {name!r}.{hint} Known: {', '.join(sorted(table))} "
        f"(pass one with {flag}=NAME)"
    )


def problem(name: str):
    """Returns an instance of the Problem registered as `name`."""
    return _lookup(_PROBLEMS, name, "problem", "--problem")()


def hparams(name: str):
    """Returns the HParams of the set registered as `name`."""
    return _lookup(_HPARAMS, name, "hparams set", "--hparams")()


def model(name: str) -> type:
    """Returns the model class registered as `name`."""
    return _lookup(_MODELS, name, "model", "--hparams_overrides=model")


def model_config(name: str) -> type | None:
    """The config class of the model registered as `name` (None: it has no fields),
    found without importing the model."""
    return _lookup(_CONFIGS, name, "model", "--hparams_overrides=model", load="model config")


def model_configs() -> dict[str, type | None]:
    """Every registered model name -> its config class (None: it has no fields)."""
    _ensure_loaded("model config")
    return dict(_CONFIGS)


def list_problems() -> list[str]:
    _ensure_loaded()
    return sorted(_PROBLEMS)


def list_hparams() -> list[str]:
    _ensure_loaded()
    return sorted(_HPARAMS)


def list_models() -> list[str]:
    _ensure_loaded()
    return sorted(_MODELS)
