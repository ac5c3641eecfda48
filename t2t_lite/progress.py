"""Progress of long loops (datagen, decoding): done, rate and ETA, on stderr.

On a terminal one live line is redrawn (every 0.25 s); otherwise, as in CI logs
and files, a plain line every 10 s. Work that ends within `quiet_for` seconds
shows nothing. (The trainer uses Keras' Progbar; it writes to stdout and, off a
terminal, only at the end, so it does not serve here.)
"""

from __future__ import annotations

import sys
import time


class Progress:
    """`advance(n)` as items are done; `close()` at the end.

    Args:
      stream: where lines go (default sys.stderr).
      label: what is being done, e.g. "wmt_ende train" or "decoding".
      total: items expected.
      unit: what an item is ("pairs", "sentences").
      quiet_for: seconds before anything is shown.
    """

    def __init__(self, stream, label: str, total: int, unit: str = "pairs",
                 quiet_for: float = 0.0):
        self.stream = stream or sys.stderr
        self.label = label
        self.unit = unit
        self.total = max(total, 1)
        self.done = 0
        self.quiet_for = quiet_for
        self.shown = False
        self.start = self.last = time.time()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def advance(self, n: int) -> None:
        self.done += n
        now = time.time()
        if now - self.start < self.quiet_for:
            return
        if now - self.last >= (0.25 if self.tty else 10.0) or not self.shown:
            self.last = now
            self._show()

    def eta(self) -> str:
        elapsed = max(time.time() - self.start, 1e-9)
        if self.done >= self.total:
            return f"{elapsed:.1f} s"
        rate = self.done / elapsed
        return f"ETA {(self.total - self.done) / rate:.0f} s" if rate > 0 else "ETA ?"

    def _show(self, end: str = "") -> None:
        self.shown = True
        rate = self.done / max(time.time() - self.start, 1e-9)
        line = (f"{self.label}: {self.done:,}/{self.total:,} {self.unit} "
                f"({100 * self.done / self.total:.0f}%), {rate:,.0f} {self.unit}/s, {self.eta()}")
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K" + end)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """The final line (only if anything was shown, or `quiet_for` is 0)."""
        if self.shown or self.quiet_for <= 0:
            self._show(end="\n")
