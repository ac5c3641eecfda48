"""How to decode: beam size, length penalty, maximum length, batching, constraint, sampling.

Defaults come from the run's hparams (`DecodeOptions.from_hparams`); CLI flags
left unset keep them. The search knobs (beam size, alpha, extra length) are
hparams: a `DecodeOptions` built without a run has `HParams`' own defaults.
A `sampling_temperature` samples instead of searching
(`t2t_lite.decoding.sampling`); the other sampling fields only apply then.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from t2t_lite.decoding import parallel
from t2t_lite.errors import UserError
from t2t_lite.hparams.hparams import HParams


class DecodeOptionsError(UserError, ValueError):
    """Decoding options that do not fit together; the message says which flag to change."""


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """How to decode; `from_hparams` takes the search knobs from a run's hparams."""

    beam_size: int = HParams.beam_size  # HParams' defaults: the one place they are set.
    alpha: float = HParams.alpha
    extra_length: int = HParams.extra_length
    batch_size: int = 64  # Sentences per decoding batch.
    return_beams: bool = False
    jit_compile: bool = False  # XLA for the decoding loop (faster after compiling).
    # Without XLA, a batch is decoded as this many searches side by side
    # (`t2t_lite.decoding.parallel`): the process' cores, at most 2.
    shards: int = dataclasses.field(default_factory=parallel.default_shards)
    # A search constraint (`Problem.decode_constraint()`, e.g. parsing's
    # `t2t_lite.parsing.tree_constraint.TreeConstraint`), or None: the plain search.
    constraint: Any = None
    # Sampling (`t2t_lite.decoding.sampling`) instead of beam search: a temperature
    # turns it on (0: the argmax, as greedy; 1: the model's distribution).
    sampling_temperature: float | None = None
    top_k: int = 0  # Sample among the k most likely tokens only; 0: no limit.
    top_p: float = 1.0  # Sample within the nucleus of this probability mass; 1: all.
    seed: int = 0  # Sample n of input i depends on (seed, i, n) only.
    num_samples: int = 1  # Samples per input, in sample order.

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
