"""How to decode: beam size, length penalty, maximum length, batching, constraint, sampling.

Defaults come from the run's hparams (`DecodeOptions.from_hparams`); CLI flags
left unset keep them. Each field's flag (its type, default and help) is built from
the field (`t2t_lite.data.options.option`). The search knobs (beam size, alpha,
extra length) are hparams: a `DecodeOptions` built without a run has `HParams`'
own defaults.
A `sampling_temperature` samples instead of searching
(`t2t_lite.decoding.sampling`); the other sampling fields only apply then.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from t2t_lite.data.options import option
from t2t_lite.decoding import parallel
from t2t_lite.errors import UserError
from t2t_lite.hparams.hparams import HParams


class DecodeOptionsError(UserError, ValueError):
    """Decoding options that do not fit together; the message says which flag to change."""


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """How to decode; `from_hparams` takes the search knobs from a run's hparams."""

    # HParams' defaults: the one place they are set. A command's flag left unset keeps
    # the run's hparams (`from_hparams`).
    beam_size: int = option(HParams.beam_size, "default: the run's hparams", unset=True)
    alpha: float = option(HParams.alpha, "default: the run's hparams", unset=True)
    extra_length: int = option(HParams.extra_length, "default: the run's hparams", unset=True)
    batch_size: int = option(64, "sentences per batch (default: %(default)s)")
    return_beams: bool = option(
        False, "write every beam as text<TAB>score on the input's line")
    # XLA for the decoding loop (faster after compiling).
    jit_compile: bool = option(False, "compile decoding with XLA", flag="jit")
    # Without XLA, a batch is decoded as this many searches side by side
    # (`t2t_lite.decoding.parallel`).
    shards: int = option(
        default_factory=parallel.default_shards, unset=True,
        help="without --jit, decode each batch as this many searches side by side, one per "
        "core (default: the cores, at most 2; 1: one search)")
    # A search constraint (`Problem.decode_constraint()`, e.g. parsing's
    # `t2t_lite.parsing.tree_constraint.TreeConstraint`), or None: the plain search.
    constraint: Any = option(None, "a search constraint, or None: the plain search",
                             flag=False)
    # Sampling (`t2t_lite.decoding.sampling`) instead of beam search: a temperature
    # turns it on (0: the argmax, as greedy; 1: the model's distribution).
    sampling_temperature: float | None = option(
        None, "sample at this temperature (0: argmax, 1: the model's distribution); "
        "unset: beam search")
    top_k: int = option(  # Sampling only.
        0, "sample among the k most likely tokens (0: no limit) (default: %(default)s)")
    top_p: float = option(  # 1: all.
        1.0, "sample within the nucleus of this probability mass (default: %(default)s)")
    seed: int = option(  # Sample n of input i depends on (seed, i, n) only.
        0, "the same seed gives the same samples (default: %(default)s)")
    num_samples: int = option(  # In sample order.
        1, "samples per input (default: %(default)s)")

    def __post_init__(self):
        if self.beam_size < 1 or self.batch_size < 1 or self.extra_length < 0:
            raise DecodeOptionsError(
                "--beam_size must be >= 1, --batch_size >= 1 and --extra_length >= 0 "
                "(beam 1 is greedy search)")
        if self.sampling_temperature is None:
            if (self.top_k, self.top_p, self.num_samples) != (0, 1.0, 1):
                raise DecodeOptionsError(
                    "--top_k, --top_p and --num_samples choose how to sample: pass "
                    "--sampling_temperature too (1.0 samples the model's distribution)")
            return
        if self.sampling_temperature < 0 or self.top_k < 0 or self.num_samples < 1 \
                or not 0 < self.top_p <= 1:
            raise DecodeOptionsError(
                "sampling needs --sampling_temperature >= 0, --top_k >= 0 (0: no limit), "
                "0 < --top_p <= 1 and --num_samples >= 1")

    @property
    def sampling(self) -> bool:
        """True when decoding samples (a temperature is set) instead of searching."""
        return self.sampling_temperature is not None

    @classmethod
    def from_hparams(cls, hparams, **overrides) -> DecodeOptions:
        """The search knobs of `hparams`, then each override that is not None."""
        values = dict(beam_size=hparams.beam_size, alpha=hparams.alpha,
                      extra_length=hparams.extra_length)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
