"""How to decode: beam size, length penalty, maximum length, batching, constraint.

Defaults come from the run's hparams (`DecodeOptions.from_hparams`); CLI flags
left unset keep them. The search knobs (beam size, alpha, extra length) are
hparams: a `DecodeOptions` built without a run has `HParams`' own defaults.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from t2t_lite.hparams.hparams import HParams


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """How to decode; `from_hparams` takes the search knobs from a run's hparams."""

    beam_size: int = HParams.beam_size  # HParams' defaults: the one place they are set.
    alpha: float = HParams.alpha
    extra_length: int = HParams.extra_length
    batch_size: int = 64  # Sentences per decoding batch.
    return_beams: bool = False
    jit_compile: bool = False  # XLA for the decoding loop (faster after compiling).
    # A search constraint (`Problem.decode_constraint()`, e.g. parsing's
    # `t2t_lite.parsing.tree_constraint.TreeConstraint`), or None: the plain search.
    constraint: Any = None

    @classmethod
    def from_hparams(cls, hparams, **overrides) -> DecodeOptions:
        """The search knobs of `hparams`, then each override that is not None."""
        values = dict(beam_size=hparams.beam_size, alpha=hparams.alpha,
                      extra_length=hparams.extra_length)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
