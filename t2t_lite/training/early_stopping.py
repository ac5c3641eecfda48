"""Early stopping on the dev metric that keeps best/ (`--early_stopping_evals`).

With `EvalOptions.early_stopping_evals` = N > 0 the trainer stops when the
best-keeping dev metric (the problem's first, or `--best_metric`) has not
improved by more than `early_stopping_min_delta` for N dev evaluations in a
row, as `keras.callbacks.EarlyStopping(patience=N, min_delta=D)` does: the
first evaluation sets the reference value, each later one either beats it by
more than D (it becomes the new reference and the count goes back to 0) or
adds one to the count; at N the run saves a final checkpoint and stops, and
the log says why. "Improved" follows the metric's direction
(`Score.higher_is_better`: a lower TER).

The count survives a restart: after every dev evaluation it is written
atomically to `OUTPUT_DIR/early_stopping.json` (metric, reference value and
step, evaluations without improvement, the step of the last one counted). A
resumed run continues the count; an evaluation at a step already counted (a
run restarted from a checkpoint older than its last evaluation replays those
steps) is not counted twice; a run that already stopped stops again at once
(raise N to go on); another metric starts the count afresh.
"""

from __future__ import annotations

import json
import os

from t2t_lite import atomic
from t2t_lite.errors import UserError
from t2t_lite.metrics.base import Score, improvement
from t2t_lite.runs import run_dir

STATE_FILE = "early_stopping.json"
# The state's fields and their types (a damaged file is one error naming it).
STATE_FIELDS = {"metric": str, "step": int, "reference": float, "reference_step": int,
                "evals_without_improvement": int}


class EarlyStoppingError(UserError, ValueError):
    """Early-stopping options that cannot be used."""


def read_state(output_dir: str) -> dict | None:
    """The saved early-stopping state of the run in `output_dir`, None if none."""
    return run_dir.read_record(output_dir, STATE_FILE, STATE_FIELDS)


class EarlyStopping:
    """Counts dev evaluations without improvement; says when to stop.

    Args:
      output_dir: the run's output directory (its state file is read and written there).
      evals: N, evaluations without improvement that stop training (>= 1).
      min_delta: D, how much better than the reference counts as an improvement.
    """

    def __init__(self, output_dir: str, evals: int, min_delta: float = 0.0,
                 resumed: bool = True):
        if evals < 1 or min_delta < 0:
            raise EarlyStoppingError(
                f"early stopping needs --early_stopping_evals >= 1 (got {evals}) and "
                f"--early_stopping_min_delta >= 0 (got {min_delta:g})")
        self.output_dir, self.evals, self.min_delta = output_dir, evals, min_delta
        # A run that starts from step 0 ignores the state of checkpoints that are gone.
        self.state = read_state(output_dir) if resumed else None

    @classmethod
    def create(cls, output_dir: str, options, resumed: bool = True) -> EarlyStopping | None:
        """From `EvalOptions`; None when early stopping (or dev evaluation) is off.

        `resumed`: the run resumed from a checkpoint (else a saved count is stale).
        """
        if options.early_stopping_evals <= 0 or options.eval_every_steps <= 0:
            return None
        return cls(output_dir, options.early_stopping_evals, options.early_stopping_min_delta,
                   resumed)

    def update(self, score: Score, step: int) -> bool:
        """Counts the dev evaluation of `score` at `step`; True when training should stop."""
        state = self.state
        if state is not None and state["metric"] == score.name:
            if step <= state["step"]:  # Replayed after a restart: counted already.
                return self.should_stop()
            if improvement(score, state["reference"]) <= self.min_delta:
                state = dict(state, step=step,
                             evals_without_improvement=state["evals_without_improvement"] + 1)
                return self._save(state)
        return self._save({"metric": score.name, "higher_is_better": score.higher_is_better,
                           "reference": score.value, "reference_step": step,
                           "evals_without_improvement": 0, "step": step})

    def _save(self, state: dict) -> bool:
        atomic.write_text(os.path.join(self.output_dir, STATE_FILE),
                          json.dumps(state, indent=2) + "\n")
        self.state = state
        return self.should_stop()

    def should_stop(self) -> bool:
        """Whether the count has reached N (also true on a restart of a stopped run)."""
        return self.state is not None and self.state["evals_without_improvement"] >= self.evals

    def reason(self) -> str:
        """Why training stops, for the log."""
        s = self.state
        return (f"early stopping: dev {s['metric']} has not improved by more than "
                f"{self.min_delta:g} for {s['evals_without_improvement']} evaluations "
                f"(best {s['reference']:.2f} at step {s['reference_step']})")
