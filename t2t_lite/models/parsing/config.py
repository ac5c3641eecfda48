"""The configs of the parsing models: `AlignedConfig` (`aligned_transformer`,
`t2t_lite.models.parsing.aligned_model`) and `SpanConfig` (`span_transformer`,
`t2t_lite.models.parsing.span_model`), without TensorFlow (`t2t_lite.hparams.config`).

Each field is a keyword argument of its model's constructor, of the same name.
"""

from __future__ import annotations

import dataclasses

from t2t_lite.hparams.config import ModelConfig, check, shaping
from t2t_lite.registry import register_config


@register_config("aligned_transformer")
@dataclasses.dataclass(frozen=True)
class AlignedConfig(ModelConfig):
    """The parsing levers of `aligned_transformer` (t2t_lite.models.parsing.aligned_model)."""

    word_class_features: bool = shaping(False)  # Encoder input + an embedding of the word's class.
    tagging_loss: float = shaping(0.0)  # Weight of the encoder's auxiliary POS-tagging loss.
    word_dropout: float = shaping(0.0)  # Training: a source word becomes its class piece.
    # Training: word dropout of alpha / (alpha + the word's training count) on top.
    word_dropout_alpha: float = shaping(0.0)
    # Encoder self-attention + a learned bias per head and relative-distance bucket (T5's);
    # 0: off (t2t_lite.layers.relative_position).
    relative_position_buckets: int = shaping(0)

    def __post_init__(self):
        check(self.tagging_loss >= 0.0, f"tagging_loss must be >= 0, got {self.tagging_loss}")
        check(0.0 <= self.word_dropout < 1.0,
              f"word_dropout must be in [0, 1), got {self.word_dropout}")
        check(self.word_dropout_alpha >= 0.0,
              f"word_dropout_alpha must be >= 0, got {self.word_dropout_alpha}")
        check(self.relative_position_buckets == 0 or (
                  self.relative_position_buckets >= 4 and self.relative_position_buckets % 2 == 0),
              "relative_position_buckets must be 0 (off) or even and at least 4, got "
              f"{self.relative_position_buckets}")


@register_config("span_transformer")
@dataclasses.dataclass(frozen=True)
class SpanConfig(AlignedConfig):
    """`AlignedConfig` and the span chart of `span_transformer` (t2t_lite.models.parsing.span_model)."""

    span_loss: float = shaping(1.0)  # Weight of the summed span-class cross entropy.
    span_classes: int = shaping(64)  # "No phrase" + the phrase labels and unary chains kept.
    span_bias: float = 1.0  # Decoding: added to each span's log-odds of a phrase (recall).
    # Weight of the decoder's token loss in training; 0: the decoder is neither run nor
    # trained (the chart and the tagger decode without it).
    token_loss: float = shaping(1.0)

    def __post_init__(self):
        super().__post_init__()
        check(self.span_loss >= 0.0 and self.span_classes >= 2,
              f"span_loss must be >= 0 and span_classes >= 2, got {self.span_loss} and "
              f"{self.span_classes}")
        check(self.token_loss >= 0.0, f"token_loss must be >= 0, got {self.token_loss}")
        check(self.tagging_loss > 0.0,
              "model=span_transformer takes the POS tags from the encoder's tagger: "
              "pass tagging_loss > 0")
