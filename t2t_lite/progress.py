"""Progress of long loops: `Progress` (datagen, decoding) and `TrainProgress` (training).

`Progress` shows done, rate and ETA on stderr: on a terminal one live line is
redrawn (every 0.25 s); otherwise, as in CI logs and files, a plain line every
10 s. Work that ends within `quiet_for` seconds shows nothing.

`TrainProgress` logs the trainer's loss, learning rate, tokens/s and MFU, as a
line every `log_every_steps` or as Keras' live Progbar (which writes to stdout
and, off a terminal, only at the end, so it does not serve `Progress`), and
writes them to TensorBoard.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable


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


class TrainProgress:
    """Logs loss, learning rate and tokens/s to stdout and TensorBoard.

    Args:
      output_dir: TensorBoard events go to OUTPUT_DIR/train.
      total_steps, first_step: the run's last step, and this session's first.
      log: where lines go.
      bar: a live Keras Progbar instead of log lines.
    """

    def __init__(self, output_dir, total_steps, first_step, log: Callable[[str], None],
                 bar: bool = False):
        import keras  # Imported here: `Progress` needs neither.
        import tensorflow as tf

        self.writer = tf.summary.create_file_writer(os.path.join(output_dir, "train"))
        self.total_steps = total_steps
        self.log = log
        self.first_step = self.window_step = first_step
        self.deadline = None  # time.time() at which a --train_minutes budget ends.
        self.peak_flops = 0.0  # FLOP/s that MFU divides by (0: not known).
        # The bar counts this session's steps, so its rate and ETA are right after a resume.
        self.bar = keras.utils.Progbar(
            total_steps - first_step, unit_name="step",
            stateful_metrics=["loss", "lr", "ktok/s", "MFU%"]) if bar else None
        self.reset()

    def step_done(self, step, loss_sum, nll_sum, tokens, learning_rate, flops=0.0):
        """Adds one update's sums and training FLOPs; moves the live bar."""
        self.add(loss_sum, nll_sum, tokens)
        self.flops += flops
        if self.bar is not None:
            elapsed = max(time.time() - self.start, 1e-9)
            values = [("loss", loss_sum / max(tokens, 1.0)), ("lr", learning_rate),
                      ("ktok/s", self.tokens / elapsed / 1000)]
            if self.peak_flops:
                values.append(("MFU%", 100 * self.flops / elapsed / self.peak_flops))
            self.bar.update(step - self.first_step, values=values)

    def message(self, line: str) -> None:
        """A line that is not progress (dev evaluation, ...), on its own line under a bar."""
        self.log(("\n" if self.bar is not None else "") + line)

    def reset(self):
        self.loss = self.nll = self.tokens = self.flops = 0.0
        self.start = time.time()

    def pause(self, seconds: float) -> None:
        """Leaves `seconds` (spent on something else, e.g. dev evaluation) out of the rates."""
        self.start += seconds

    def eta(self, step: int, elapsed: float) -> str:
        """Time left at this window's steps per second, as 1h02m or 3m05s."""
        steps = step - self.window_step
        if steps <= 0:
            return "?"
        seconds = int((self.total_steps - step) * elapsed / steps)
        if self.deadline is not None:  # --train_minutes: whichever ends first.
            seconds = max(0, min(seconds, int(self.deadline - time.time())))
        hours, rest = divmod(seconds, 3600)
        return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"

    def add(self, loss_sum, nll_sum, tokens):
        self.loss += loss_sum
        self.nll += nll_sum
        self.tokens += tokens

    def flush(self, step, learning_rate):
        """Logs and writes this window's means; returns (loss, tokens/s, MFU) and starts anew."""
        import tensorflow as tf

        elapsed = max(time.time() - self.start, 1e-9)
        loss = self.loss / max(self.tokens, 1.0)
        nll = self.nll / max(self.tokens, 1.0)
        rate = self.tokens / elapsed
        mfu = self.flops / elapsed / self.peak_flops if self.peak_flops else float("nan")
        with self.writer.as_default(step=step):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("nll", nll)
            tf.summary.scalar("learning_rate", learning_rate)
            tf.summary.scalar("tokens_per_second", rate)
            tf.summary.scalar("model_flops_per_second", self.flops / elapsed)
            tf.summary.scalar("mfu", mfu)
        if self.bar is None:
            self.log(f"step {step}/{self.total_steps}  loss {loss:.4f}  nll {nll:.4f}  "
                     f"lr {learning_rate:.3e}  {rate:,.0f} tok/s  MFU {100 * mfu:.0f}%  "
                     f"ETA {self.eta(step, elapsed)}")
        self.window_step = step
        self.reset()
        return loss, rate, mfu
