"""`LayerConfig`: the widths, dropouts and norm placement every Transformer layer shares.

One frozen object is passed to `EncoderLayer`, `DecoderLayer` (and their
`t2t_lite.layers.residual.ResidualMixin`) and to `Transformer`, instead of the same ten keyword
arguments at every level. Layers store it as a plain dict in `get_config` and
rebuild it in `from_config`, so the Keras config round-trips.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class LayerConfig:
    """What shapes one encoder or decoder layer (section 3 of Vaswani et al. 2017).

    Attributes:
      d_model: D, width of every sub-layer output.
      d_ff: inner width of the position-wise feed-forward network.
      num_heads: h, attention heads.
      key_dim: d_k, query/key width per head.
      value_dim: d_v, value width per head.
      dropout_rate: P_drop on each sub-layer output (section 5.4).
      attention_dropout_rate: dropout on the attention weights.
      relu_dropout_rate: dropout inside the feed-forward network.
      normalize_before: False = post-norm LayerNorm(x + Sublayer(x)) (the paper).
      layer_norm_epsilon: LayerNorm's epsilon.
    """

    d_model: int = 512
    d_ff: int = 2048
    num_heads: int = 8
    key_dim: int = 64
    value_dim: int = 64
    dropout_rate: float = 0.1
    attention_dropout_rate: float = 0.0
    relu_dropout_rate: float = 0.0
    normalize_before: bool = False
    layer_norm_epsilon: float = 1e-6

    @classmethod
    def from_hparams(cls, hparams) -> LayerConfig:
        """The layer fields of an `HParams` (d_k, d_v resolved)."""
        return cls(
            d_model=hparams.d_model, d_ff=hparams.d_ff, num_heads=hparams.num_heads,
            key_dim=hparams.key_dim, value_dim=hparams.value_dim,
            dropout_rate=hparams.dropout_rate,
            attention_dropout_rate=hparams.attention_dropout_rate,
            relu_dropout_rate=hparams.relu_dropout_rate,
            normalize_before=hparams.normalize_before,
            layer_norm_epsilon=hparams.layer_norm_epsilon,
        )

    @classmethod
    def coerce(cls, value) -> LayerConfig:
        """A LayerConfig from itself or from its `to_dict()` (a Keras config)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return cls(**value)
        raise TypeError(f"expected a LayerConfig or a dict, got {type(value).__name__}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def in_keras_config(cls, config: dict) -> dict:
        """A copy of a Keras config whose "layer_config" dict is a LayerConfig again."""
        config = dict(config)
        config["layer_config"] = cls.coerce(config["layer_config"])
        return config
