"""Model configs: the fields one model family adds to the shared `HParams`.

A registered model names its config class (`t2t_lite.registry.register_model(name,
config=...)`), a frozen dataclass subclassing `ModelConfig` that checks its own values
in `__post_init__` and lives beside the model in a module without TensorFlow (its
`register_config` lets hparams find it without importing the model). `HParams.model_config`
holds the config of `HParams.model`: the empty `ModelConfig` for "transformer" and for
a model registered without one. Overrides, sets and saved hparams reach a config field
by its plain name (`tagging_loss=1.0`); this module routes each name to its config and
refuses, in one line, a field of another model's config.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing

from t2t_lite import registry
from t2t_lite.errors import UserError

MODEL_SHAPING = "model_shaping"


class HParamsError(UserError, ValueError):
    """A bad hparams set, override or value; the message says what to do."""


def shaping(default):
    """A field that changes the model's weights (their shapes or what they mean).

    A run in an output dir that already holds checkpoints must agree on all of
    them (`HParams.model_shaping_diff`).
    """
    return dataclasses.field(default=default, metadata={MODEL_SHAPING: True})


def check(condition: bool, message: str) -> None:
    """Raises HParamsError(message) unless `condition`."""
    if not condition:
        raise HParamsError(message)


@registry.register_config("transformer")
@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The base of every model's config; itself the Transformer's, with no field."""


def config_class(model: str) -> type:
    """The config class of `model`; `ModelConfig` for a name no model registered (the
    model itself is looked up, and refused, when it is built)."""
    try:
        return registry.model_config(model) or ModelConfig
    except registry.RegistryError:
        return ModelConfig


def families() -> dict[str, type]:
    """Every registered model name -> its config class."""
    return {name: config or ModelConfig for name, config in registry.model_configs().items()}


def owners(name: str) -> list[str]:
    """The registered models whose config has a field `name`, sorted."""
    return sorted(model for model, config in families().items()
                  if name in {f.name for f in dataclasses.fields(config)})


def field_types() -> dict[str, typing.Any]:
    """Plain name -> declared type of every field of every registered model's config."""
    types: dict[str, typing.Any] = {}
    for config in families().values():
        types.update(typing.get_type_hints(config))
    return types


def shaping_values(config) -> dict[str, typing.Any]:
    """The model-shaping fields of `config` by name, in declaration order."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if f.metadata.get(MODEL_SHAPING)}


def values(config) -> dict[str, typing.Any]:
    """Every field of `config` by name: the keyword arguments its model takes."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def default_of(name: str) -> typing.Any:
    """The default of config field `name` (the same in every config that has it)."""
    for config in families().values():
        for f in dataclasses.fields(config):
            if f.name == name:
                return f.default
    raise KeyError(name)


def not_of(name: str, model: str, known: typing.Iterable[str] = ()) -> str:
    """The one-line error for `name`, not a field of `model`'s config (nor among `known`)."""
    models = owners(name)
    if not models:
        close = difflib.get_close_matches(name, [*known, *field_types()], n=1)
        return f"unknown hparam {name!r}" + (f" (did you mean {close[0]}?)" if close else "")
    if len(models) == 1:
        return (f"{name} is a field of {models[0]}, not of model={model}; set model=... first "
                f"(only model={models[0]} has it)")
    return (f"{name} is a field of {listed(models)}, not of model={model}; set model=... first "
            f"(you need model={listed(models, 'or')})")


def convert(config, model: str, changes: dict[str, typing.Any]):
    """`config` as the config of `model`, with `changes` (plain names) applied.

    Fields `model`'s config shares with `config` keep their values; a field it lacks
    must be at its default.

    Raises:
      HParamsError: a change names a field `model`'s config lacks, a dropped field has
        a value of its own, or a value is out of its range (the config's own check).
    """
    target = config_class(model)
    names = {f.name for f in dataclasses.fields(target)}
    for name in changes:
        check(name in names, not_of(name, model))
    if type(config) is target and not changes:
        return config
    kept = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.name in names:
            kept[field.name] = value
        else:
            check(value == field.default, f"{field.name}={value!r} is a field of "
                  f"{listed(owners(field.name))}, not of model={model}; start from an "
                  f"hparams set of model={model}")
    return target(**{**kept, **changes})


def listed(models: list[str], conjunction: str = "and") -> str:
    """"a", "a and b", "a, b and c"."""
    if len(models) < 2:
        return "".join(models)
    return ", ".join(models[:-1]) + f" {conjunction} {models[-1]}"
