"""The `HParams` dataclass: the knobs every model shares (the Transformer's shape, training,
data, decoding) and the config of the model's own.

Paper symbol -> field (Vaswani et al. 2017):

| paper            | field                    | base   |
|------------------|--------------------------|--------|
| N                | num_layers               | 6      |
| d_model          | d_model                  | 512    |
| d_ff             | d_ff                     | 2048   |
| h                | num_heads                | 8      |
| d_k, d_v         | d_k, d_v (None = d_model / h) | 64 |
| P_drop           | dropout_rate             | 0.1    |
| epsilon_ls       | label_smoothing          | 0.1    |
| warmup_steps     | warmup_steps             | 4000   |
| beta1, beta2, eps| adam_beta1/2, adam_epsilon | 0.9, 0.98, 1e-9 |
| beam size, alpha | beam_size, alpha         | 4, 0.6 |

`model` names the registered model class (`t2t_lite.registry.register_model`);
"transformer" is this paper's. `model_config` holds the fields of that model's family
alone (`t2t_lite.hparams.config`: e.g. `tagging_loss` of aligned_transformer); every
other field is shared by all models (the RNNs reuse the shape fields). Overrides,
`HParams.replace` and saved hparams reach a config field by its plain name. Fields
declared with `shaping(...)`, here or in a config, change the model's weights: a run
directory refuses a later run that differs in one.

Named sets derive from the named set they extend with `HParams.replace`
(hparams/transformer.py, hparams/rnn.py). Released sets are never edited in place.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing

from t2t_lite.hparams import config as configs
from t2t_lite.hparams.config import MODEL_SHAPING, HParamsError, ModelConfig  # noqa: F401
from t2t_lite.hparams.config import shaping as _shaping

# Keras dtype policies `HParams.precision` accepts (variables are float32 under all).
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class HParams:
    """Hyperparameters of the Transformer (section 3), training (5) and decoding (6.1)."""

    # --- Model (section 3) ---
    model: str = _shaping("transformer")  # Registered model class (t2t_lite.registry).
    # The fields of `model`'s family alone (its registered config class; the Transformer's
    # has none). None: that config's defaults.
    model_config: ModelConfig = None
    num_layers: int = _shaping(6)  # N, identical layers in the encoder and in the decoder.
    d_model: int = _shaping(512)  # Width of every sub-layer output and embedding.
    d_ff: int = _shaping(2048)  # Inner size of the position-wise feed-forward network.
    num_heads: int = _shaping(8)  # h, attention heads.
    d_k: int | None = _shaping(None)  # Query/key size per head; None = d_model // num_heads.
    d_v: int | None = _shaping(None)  # Value size per head; None = d_model // num_heads.
    positional_encoding: str = _shaping("sinusoid")  # "sinusoid" (paper) or "learned" (row E).
    shared_embedding: bool = _shaping(True)  # One matrix: source, target and pre-softmax.
    normalize_before: bool = _shaping(False)  # False = post-norm LayerNorm(x + Sublayer(x)).
    layer_norm_epsilon: float = 1e-6  # Epsilon of every layer normalization (tensor2tensor's).
    # --- Regularization (section 5.4) ---
    dropout_rate: float = 0.1  # P_drop: sub-layer outputs and embeddings + PE.
    attention_dropout_rate: float = 0.0  # On attention weights (not in the paper).
    relu_dropout_rate: float = 0.0  # Inside the FFN (not in the paper).
    label_smoothing: float = 0.1  # epsilon_ls.
    # --- Optimizer and schedule (section 5.3, equation 3) ---
    adam_beta1: float = 0.9  # Adam's beta_1 (section 5.3).
    adam_beta2: float = 0.98  # Adam's beta_2 (section 5.3).
    adam_epsilon: float = 1e-9  # Adam's epsilon (section 5.3).
    warmup_steps: int = 4000  # Equation 3: the rate rises linearly for this many steps.
    learning_rate_scale: float = 1.0  # Multiplies equation 3 (1.0 = the paper).
    # --- Data and batching (section 5.1) ---
    batch_size: int = 4096  # Tokens per replica per step (not sentences).
    max_length: int = _shaping(256)  # Longer training examples are dropped (tensor2tensor).
    min_length_bucket: int = 8  # First length-bucket boundary (tensor2tensor).
    length_bucket_step: float = 1.1  # Each boundary is this times the previous one.
    accum_steps: int = 1  # Gradient accumulation: 8 emulates the paper's 8 GPUs.
    train_steps: int = 100_000  # Optimizer steps of a run (base: 100K; big: 300K).
    # Keras dtype policy: "float32", "mixed_bfloat16" (TPUs, recent GPUs) or
    # "mixed_float16" (dynamic loss scaling). Logits and loss stay float32.
    precision: str = "float32"
    mixed_precision: bool = False  # Old spelling of precision=mixed_float16 (hparams.json).
    # --- Decoding (section 6.1) ---
    beam_size: int = 4  # Hypotheses kept by beam search; 1 is greedy search.
    alpha: float = 0.6  # GNMT length penalty exponent.
    extra_length: int = 50  # Maximum output length = input length + extra_length.

    def __post_init__(self):
        config = configs.config_class(self.model)
        if self.model_config is None:
            object.__setattr__(self, "model_config", config())
        _check(type(self.model_config) is config,
               f"model={self.model} takes the config {config.__name__}, not "
               f"{type(self.model_config).__name__}; change the model with HParams.replace")
        _check(self.num_layers >= 1, "num_layers must be >= 1")
        _check(self.d_model >= 1 and self.d_ff >= 1, "d_model and d_ff must be >= 1")
        _check(self.num_heads >= 1, "num_heads must be >= 1")
        _check(
            self.d_k is not None or self.d_model % self.num_heads == 0,
            f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}; "
            "set d_k and d_v explicitly or change num_heads",
        )
        _check(
            self.positional_encoding in ("sinusoid", "learned"),
            "positional_encoding must be 'sinusoid' or 'learned', "
            f"not {self.positional_encoding!r}",
        )
        for name in ("dropout_rate", "attention_dropout_rate", "relu_dropout_rate",
                     "label_smoothing"):
            value = getattr(self, name)
            _check(0.0 <= value < 1.0, f"{name} must be in [0, 1), got {value}")
        for name in ("warmup_steps", "batch_size", "max_length", "min_length_bucket",
                     "accum_steps",
                     "train_steps", "beam_size"):
            _check(getattr(self, name) >= 1, f"{name} must be >= 1")
        _check(self.extra_length >= 0, "extra_length must be >= 0")
        _check(self.length_bucket_step > 1.0, "length_bucket_step must be > 1")
        _check(self.precision in PRECISIONS,
               f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        _check(not self.mixed_precision or self.precision in ("float32", "mixed_float16"),
               f"mixed_precision=true means precision=mixed_float16 and contradicts "
               f"precision={self.precision}; set only precision")

    @property
    def key_dim(self) -> int:
        """d_k, per head."""
        return self.d_k if self.d_k is not None else self.d_model // self.num_heads

    @property
    def value_dim(self) -> int:
        """d_v, per head."""
        return self.d_v if self.d_v is not None else self.d_model // self.num_heads

    @property
    def dtype_policy(self) -> str:
        """The Keras dtype policy in effect: `precision`; "mixed_float16" for mixed_precision."""
        return "mixed_float16" if self.mixed_precision else self.precision

    def override(self, overrides: str) -> HParams:
        """Returns a copy with `"name=value,name=value"` applied, type-checked (`replace`)."""
        return self.replace(**parse_overrides(overrides))

    def replace(self, **changes) -> HParams:
        """A copy with `changes` by plain name: shared fields and the fields of the model's
        config (or a whole `model_config`); `model` first, so a config field may follow a
        change of model.

        Raises:
          HParamsError: a name no field has, a field of another model's config, or a value
            out of its range.
        """
        model = changes.pop("model", self.model)
        shared = {name: changes.pop(name) for name in list(changes) if name in _shared_types()}
        config = changes.pop("model_config", None)
        if config is None:
            config = configs.convert(self.model_config, model, changes)
        else:
            _check(not changes, f"pass model_config or its fields, not both: "
                                f"{', '.join(changes)}")
        return dataclasses.replace(self, model=model, model_config=config, **shared)

    def by_name(self) -> dict[str, typing.Any]:
        """Every value by its plain name: the shared fields, then the model config's."""
        return {**{name: getattr(self, name) for name in _shared_types()},
                **configs.values(self.model_config)}

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HParams:
        """The HParams `to_json` wrote (fields it lacks keep their defaults).

        Raises:
          HParamsError: the text is not a JSON object of HParams fields, or a value is not
            of its field's type or out of its range.
        """
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise HParamsError(f"saved hparams are not valid JSON "
                               f"({' '.join(str(e).split())})") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: typing.Any) -> HParams:
        """The HParams of a dict read from hparams.json (`from_json`'s checks).

        The model config's fields are in "model_config", or, in the flat form of every
        field at the top level, among the shared ones: those of the model's config move
        into it, those of other models' configs must hold their defaults and are dropped.
        """
        _check(isinstance(data, dict), "saved hparams are not a JSON object")
        nested = data.get("model_config", {})
        _check(isinstance(nested, dict), "saved hparam model_config is not a JSON object")
        shared_types, config_types = _shared_types(), configs.field_types()
        flat = {k: v for k, v in data.items() if k != "model_config" and k not in shared_types}
        unknown = sorted(set(flat) - set(config_types) | set(nested) - set(config_types))
        shown = ", ".join(name if name.isidentifier() else repr(name) for name in unknown[:5])
        _check(not unknown, f"unknown hparams in saved file: {shown}")
        shared = {name: _saved_value(name, value, shared_types[name])
                  for name, value in data.items() if name in shared_types}
        model = shared.get("model", "transformer")
        config = configs.config_class(model)
        names = {f.name for f in dataclasses.fields(config)}
        kept = {}
        for name, value in [*flat.items(), *nested.items()]:
            value = _saved_value(name, value, config_types[name])
            if name in names:
                kept[name] = value
            else:
                _check(value == configs.default_of(name),
                       f"saved hparam {name}={value!r} is a field of "
                       f"{configs.listed(configs.owners(name))}, not of model={model}")
        return cls(model_config=config(**kept), **shared)

    def model_shaping_diff(self, other: HParams) -> list[str]:
        """Names and values of the model-shaping fields where self and other differ
        (a config's fields where both models' configs have them)."""
        theirs = {**{name: getattr(other, name) for name in model_shaping_fields()},
                  **configs.shaping_values(other.model_config)}
        mine = {**{name: getattr(self, name) for name in model_shaping_fields()},
                **configs.shaping_values(self.model_config)}
        return [f"{name}: {theirs[name]!r} -> {value!r}" for name, value in mine.items()
                if name in theirs and theirs[name] != value]


def model_shaping_fields() -> tuple[str, ...]:
    """Names of the shared HParams fields marked model-shaping, in declaration order
    (a config's are `t2t_lite.hparams.config.shaping_values`)."""
    return tuple(f.name for f in dataclasses.fields(HParams) if f.metadata.get(MODEL_SHAPING))


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise HParamsError(message)


def _shared_types() -> dict[str, typing.Any]:
    """Shared field -> declared type (every HParams field but `model_config`)."""
    types = typing.get_type_hints(HParams)
    del types["model_config"]
    return types


def field_types() -> dict[str, typing.Any]:
    """Plain name -> declared type of every field an override may set: the shared ones,
    then those of every registered model's config."""
    return {**_shared_types(), **configs.field_types()}


def _parse_value(name: str, text: str, annotation) -> typing.Any:
    """Parses one override value to the field's declared type."""
    text = text.strip()
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        if text.lower() == "none" and type(None) in args:
            return None
        (annotation,) = [a for a in args if a is not type(None)]
    bad = HParamsError(
        f"bad value for {name}: {text!r} is not a {annotation.__name__}"
    )
    if annotation is bool:
        lowered = text.lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise bad
    if annotation is int:
        try:
            return int(text.replace("_", ""))
        except ValueError:
            raise bad from None
    if annotation is float:
        try:
            value = float(text)
        except ValueError:
            raise bad from None
        if not math.isfinite(value):
            raise HParamsError(f"bad value for {name}: {text!r} is not a finite float")
        return value
    return text


def _saved_value(name: str, value: typing.Any, annotation) -> typing.Any:
    """A value read from hparams.json, checked against its field's declared type."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        if value is None and type(None) in args:
            return None
        (annotation,) = [a for a in args if a is not type(None)]
    if annotation is float and type(value) in (int, float) and math.isfinite(value):
        return float(value)
    if type(value) is annotation and annotation is not float:
        return value
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise HParamsError(f"saved hparam {name}: {shown} is not a "
                       f"{'finite ' if annotation is float else ''}{annotation.__name__}")


def parse_overrides(overrides: str) -> dict[str, typing.Any]:
    """Parses `"dropout_rate=0.3,num_layers=4"` into typed values.

    Every name is a field's plain name, shared or of any model's config
    (`HParams.replace` refuses a field of another model's config).

    Raises:
      HParamsError: on a malformed item, an unknown name (with the closest known
        one) or a value of the wrong type.
    """
    import difflib

    types_by_name = field_types()
    result: dict[str, typing.Any] = {}
    for item in filter(None, (s.strip() for s in (overrides or "").split(","))):
        if "=" not in item:
            raise HParamsError(
                f"malformed override {item!r}: expected name=value, "
                "e.g. --hparams_overrides=dropout_rate=0.3,num_layers=4"
            )
        name, value = (s.strip() for s in item.split("=", 1))
        if name not in types_by_name:
            close = difflib.get_close_matches(name, types_by_name, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise HParamsError(f"unknown hparam {name!r}{hint}")
        result[name] = _parse_value(name, value, types_by_name[name])
    return result
