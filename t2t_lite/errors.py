"""The one base class of the errors a user can cause (a bad flag, file, run or name).

Every such error derives from `UserError` (and keeps its other base, e.g.
`ValueError` or `KeyError`, for callers that catch that); every command
catches this one class (`t2t_lite.bin.common.run`).
"""

from __future__ import annotations


class UserError(Exception):
    """An error a user can cause; its message says what to do.

    Every command prints it as one line, `PROG: error: MESSAGE`, and exits 2.
    """
