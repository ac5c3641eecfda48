"""Hparams: the frozen `HParams` dataclass, the base of the models' configs and the
registered sets."""

from t2t_lite.hparams import rnn, transformer  # noqa: F401  (registers the sets)
from t2t_lite.hparams.config import ModelConfig
from t2t_lite.hparams.hparams import HParams, HParamsError, parse_overrides

__all__ = ["HParams", "HParamsError", "ModelConfig", "parse_overrides"]
