"""Loading a trained run: its model with the weights restored, hparams and problem.

Every tool that uses a trained run (decoder, exporter, visualize, benchmarks)
starts with `load_run`, so each gets the same model, the problem it was
trained on and that problem's data dir (the run's own unless overridden).
"""

from __future__ import annotations

import dataclasses

from t2t_lite import registry
from t2t_lite.runs import weights


@dataclasses.dataclass(frozen=True)
class Run:
    """A loaded run."""

    model: object  # The Keras model, weights restored.
    hparams: object  # The HParams the run was trained with.
    problem: object  # The registered Problem, its data dir set.
    info: dict  # `run_dir.read_run`'s: problem, vocabulary sizes, data_dir.
    checkpoint: str  # The checkpoint prefix the weights came from.


def load_run(output_dir: str, checkpoint: str | None = None,
             data_dir: str | None = None) -> Run:
    """Loads the run in `output_dir`: model, hparams, problem and checkpoint.

    Args:
      output_dir: the trainer's output directory.
      checkpoint: None (newest), a name ("ckpt-1200", "averaged", "best") or a path.
      data_dir: where the problem's data lies; None: the run's own (problem.json).

    Raises:
      RunDirError, CheckpointError: no run, or no readable checkpoint, there.
      RegistryError: the run's problem is not registered.
    """
    model, hparams, info, path = weights.load_model(output_dir, checkpoint)
    problem = registry.problem(info["problem"])
    problem.set_data_dir(data_dir or info.get("data_dir"))
    return Run(model=model, hparams=hparams, problem=problem, info=info, checkpoint=path)
