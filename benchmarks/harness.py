"""The interleaved harness: settings timed in turn in one process, so a slow spell of a
shared machine hits them all alike.

    from benchmarks import harness
    seconds = harness.interleave({"before": step_a, "after": step_b}, rounds=24)
    harness.rates(seconds["after"], tokens)   # {"median", "best", "worst"} per second

Separate processes on a shared 2-core machine differ by up to 1.3x between runs
of one setting, more than most changes measure. `interleave` calls each
setting's function `repeats` times per round for `rounds` rounds, the order of
the settings reversed every other round; the function gets the call's index
(to pick a batch) and must block until its work is done (return numpy, not a
pending tensor). Warm-up and tracing happen before, by the caller.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable


def interleave(settings: dict[str, Callable[[int], object]], rounds: int,
               repeats: int = 1) -> dict[str, list[float]]:
    """{setting: seconds of each call}, the settings alternated as the module says."""
    seconds = {name: [] for name in settings}
    names = list(settings)
    for round_ in range(rounds):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            for repeat in range(repeats):
                start = time.perf_counter()
                settings[name](round_ * repeats + repeat)
                seconds[name].append(time.perf_counter() - start)
    return seconds


def rates(seconds: list[float], amount: float, digits: int = 1) -> dict:
    """`amount` per second at the median, best (fastest) and worst call."""
    return {"median": round(amount / statistics.median(seconds), digits),
            "best": round(amount / min(seconds), digits),
            "worst": round(amount / max(seconds), digits)}


def ratio(seconds: dict[str, list[float]], before: str = "before", after: str = "after") -> float:
    """Median time of `before` over median time of `after` (above 1: `after` is faster)."""
    return round(statistics.median(seconds[before]) / statistics.median(seconds[after]), 4)
