"""Reserved token ids, defined once for the whole library (tensor2tensor's).

0 is padding (and the decoder's start symbol), 1 is EOS. Every vocabulary,
problem, model and decoder uses these.
"""

from __future__ import annotations

from typing import Iterable

PAD_ID = 0
EOS_ID = 1


def strip_ids(ids: Iterable[int]) -> list[int]:
    """Ids up to (not including) the first EOS, padding removed."""
    out = []
    for token in ids:
        token = int(token)
        if token == EOS_ID:
            break
        if token != PAD_ID:
            out.append(token)
    return out
