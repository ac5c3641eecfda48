"""The `HParams` dataclass: every knob of the model, its training and decoding.

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
"transformer" is this paper's. Fields declared with `_shaping(...)` change the
model's weights: a run directory refuses a later run that differs in one.

Named sets derive from `base` at most one level deep with `dataclasses.replace`
(hparams/transformer.py). Released sets are never edited in place.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing

from t2t_lite.errors import UserError

MODEL_SHAPING = "model_shaping"
# Keras dtype policies `HParams.precision` accepts (variables are float32 under all).
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
RNN_CELLS = ("lstm", "gru")  # `rnn_cell` of the RNN baselines (t2t_lite.rnn).
ATTENTION_SCORES = ("general", "dot", "concat")  # `attention_score` of luong (Luong 2015, 3.1).


def _shaping(default):
    """A field that changes the model's weights (their shapes or what they mean).

    A run in an output dir that already holds checkpoints must agree on all of
    them (`HParams.model_shaping_diff`).
    """
    return dataclasses.field(default=default, metadata={MODEL_SHAPING: True})


class HParamsError(UserError, ValueError):
    """A bad hparams set, override or value; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class HParams:
    """Hyperparameters of the Transformer (section 3), training (5) and decoding (6.1)."""

    # --- Model (section 3) ---
    model: str = _shaping("transformer")  # Registered model class (t2t_lite.registry).
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
    # --- Parsing levers of `aligned_transformer` (t2t_lite.parsing.aligned_model) ---
    word_class_features: bool = _shaping(False)  # Encoder input + an embedding of the word's class.
    tagging_loss: float = _shaping(0.0)  # Weight of the encoder's auxiliary POS-tagging loss.
    word_dropout: float = _shaping(0.0)  # Training: a source word becomes its class piece.
    # Training: word dropout of alpha / (alpha + the word's training count) on top.
    word_dropout_alpha: float = _shaping(0.0)
    # Encoder self-attention + a learned bias per head and relative-distance bucket (T5's);
    # 0: off (t2t_lite.layers.relative_position).
    relative_position_buckets: int = _shaping(0)
    # --- The span chart of `span_transformer` (t2t_lite.parsing.span_model) ---
    span_loss: float = _shaping(1.0)  # Weight of the summed span-class cross entropy.
    span_classes: int = _shaping(64)  # "No phrase" + the phrase labels and unary chains kept.
    span_bias: float = 1.0  # Decoding: added to each span's log-odds of a phrase (recall).
    # span_transformer: weight of the decoder's token loss in training; 0: the decoder
    # is neither run nor trained (the chart and the tagger decode without it).
    token_loss: float = _shaping(1.0)
    # --- The RNN baselines (t2t_lite.rnn: rnn_seq2seq, bahdanau, luong; hparams/rnn.py) ---
    # d_model is their state size, num_layers the depth of the encoder and of the decoder RNN.
    rnn_cell: str = _shaping("lstm")  # "lstm" or "gru".
    reverse_source: bool = _shaping(False)  # Read the source words backwards (Sutskever 2014).
    attention_score: str = _shaping("general")  # luong's: "general", "dot" or "concat".
    input_feeding: bool = _shaping(True)  # luong: h~_{t-1} joins the decoder input at t.
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
        _check(self.tagging_loss >= 0.0, f"tagging_loss must be >= 0, got {self.tagging_loss}")
        _check(0.0 <= self.word_dropout < 1.0,
               f"word_dropout must be in [0, 1), got {self.word_dropout}")
        _check(self.word_dropout_alpha >= 0.0,
               f"word_dropout_alpha must be >= 0, got {self.word_dropout_alpha}")
        _check(self.model in ("aligned_transformer", "span_transformer")
               or not (self.word_class_features or self.tagging_loss or self.word_dropout
                       or self.word_dropout_alpha or self.relative_position_buckets),
               "word_class_features, tagging_loss, word_dropout, word_dropout_alpha and "
               "relative_position_buckets need "
               "model=aligned_transformer or span_transformer "
               f"(got model={self.model}); use a parsing_*aligned hparams set")
        _check(self.relative_position_buckets == 0 or (
                   self.relative_position_buckets >= 4 and self.relative_position_buckets % 2 == 0),
               "relative_position_buckets must be 0 (off) or even and at least 4, got "
               f"{self.relative_position_buckets}")
        _check(self.span_loss >= 0.0 and self.span_classes >= 2,
               f"span_loss must be >= 0 and span_classes >= 2, got {self.span_loss} and "
               f"{self.span_classes}")
        _check(self.token_loss >= 0.0, f"token_loss must be >= 0, got {self.token_loss}")
        _check(self.token_loss == 1.0 or self.model == "span_transformer",
               "token_loss weighs the decoder's loss against the chart's: only "
               "model=span_transformer takes it (0: its chart and tagger decode alone)")
        _check(self.model != "span_transformer" or self.tagging_loss > 0.0,
               "model=span_transformer takes the POS tags from the encoder's tagger: "
               "pass tagging_loss > 0")
        _check(self.rnn_cell in RNN_CELLS,
               f"rnn_cell must be one of {', '.join(RNN_CELLS)}, not {self.rnn_cell!r}")
        _check(self.attention_score in ATTENTION_SCORES,
               f"attention_score must be one of {', '.join(ATTENTION_SCORES)}, "
               f"not {self.attention_score!r}")
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
        """Returns a copy with `"name=value,name=value"` applied, type-checked."""
        return dataclasses.replace(self, **parse_overrides(overrides))

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
        """The HParams of a dict read from hparams.json (`from_json`'s checks)."""
        _check(isinstance(data, dict), "saved hparams are not a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        shown = ", ".join(name if name.isidentifier() else repr(name) for name in unknown[:5])
        _check(not unknown, f"unknown hparams in saved file: {shown}")
        types_by_name = _field_types()
        return cls(**{name: _saved_value(name, value, types_by_name[name])
                      for name, value in data.items()})

    def model_shaping_diff(self, other: HParams) -> list[str]:
        """Names and values of the model-shaping fields where self and other differ."""
        return [
            f"{name}: {getattr(other, name)!r} -> {getattr(self, name)!r}"
            for name in model_shaping_fields()
            if getattr(self, name) != getattr(other, name)
        ]


def model_shaping_fields() -> tuple[str, ...]:
    """Names of the HParams fields marked model-shaping, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(HParams) if f.metadata.get(MODEL_SHAPING))


MODEL_SHAPING_FIELDS = model_shaping_fields()


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise HParamsError(message)


def _field_types() -> dict[str, typing.Any]:
    return typing.get_type_hints(HParams)


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

    Raises:
      HParamsError: on a malformed item, an unknown name (with the closest known
        one) or a value of the wrong type.
    """
    import difflib

    types_by_name = _field_types()
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
