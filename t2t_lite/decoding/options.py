"""How to decode: beam size, length penalty, maximum length, batching, constraint.

Defaults come from the run's hparams (`DecodeOptions.from_hparams`); CLI flags
left unset keep them.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50
    batch_size: int = 64  # Sentences per decoding batch.
    return_beams: bool = False
    jit_compile: bool = False  # XLA for the decoding loop (faster after compiling).
    # A search constraint (`Problem.decode_constraint()`, e.g. parsing's
    # `t2t_lite.parsing.tree_constraint.TreeConstraint`), or None: the plain search.
    constraint: Any = None

    @classmethod
    def from_hparams(cls, hparams, **overrides):
        values = dict(beam_size=hparams.beam_size, alpha=hparams.alpha,
                      extra_length=hparams.extra_length)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
