"""The configs of the RNN baselines: `RNNConfig` (`rnn_seq2seq`, `bahdanau`) and
`LuongConfig` (`luong`), without TensorFlow (`t2t_lite.hparams.config`).

The RNNs also read the shared `HParams`: d_model is their state size, num_layers the
depth of the encoder and of the decoder RNN. Each field is a keyword argument of the
model's constructor, of the same name.
"""

from __future__ import annotations

import dataclasses

from t2t_lite.hparams.config import ModelConfig, check, shaping
from t2t_lite.registry import register_config

RNN_CELLS = ("lstm", "gru")  # `rnn_cell`.
ATTENTION_SCORES = ("general", "dot", "concat")  # `attention_score` of luong (Luong 2015, 3.1).


@register_config("rnn_seq2seq", "bahdanau")
@dataclasses.dataclass(frozen=True)
class RNNConfig(ModelConfig):
    """The recurrent cell and the source order of every RNN baseline (t2t_lite.models.rnn)."""

    rnn_cell: str = shaping("lstm")  # "lstm" or "gru".
    reverse_source: bool = shaping(False)  # Read the source words backwards (Sutskever 2014).

    def __post_init__(self):
        check(self.rnn_cell in RNN_CELLS,
              f"rnn_cell must be one of {', '.join(RNN_CELLS)}, not {self.rnn_cell!r}")


@register_config("luong")
@dataclasses.dataclass(frozen=True)
class LuongConfig(RNNConfig):
    """`RNNConfig` and Luong et al. 2015's attention (t2t_lite.models.rnn.luong)."""

    attention_score: str = shaping("general")  # "general", "dot" or "concat".
    input_feeding: bool = shaping(True)  # h~_{t-1} joins the decoder input at t.

    def __post_init__(self):
        super().__post_init__()
        check(self.attention_score in ATTENTION_SCORES,
              f"attention_score must be one of {', '.join(ATTENTION_SCORES)}, "
              f"not {self.attention_score!r}")
