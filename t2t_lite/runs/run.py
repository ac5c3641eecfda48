"""`Run`: the one handle on a trained run's directory, opened lazily.

Every tool that uses a trained run (decoder, exporters, averaging, pictures,
fine-tuning, benchmarks) opens it with `Run.open(output_dir)`. Opening reads
only the small files the trainer wrote beside the checkpoints (`hparams.json`,
`problem.json`), so a directory that holds no run, or a damaged one, is refused
before anything expensive happens. The problem is looked up when first asked
for, and a model is built and its weights restored only by `model(checkpoint)`:

    run = Run.open("runs/m30k")
    run.hparams.beam_size, run.problem_name     # The files only.
    path = run.checkpoint("averaged")           # Resolved, or CheckpointError.
    model = run.model(path)                     # Built, weights restored.
"""

from __future__ import annotations

import functools

from t2t_lite import registry
from t2t_lite.runs import run_dir, weights
from t2t_lite.runs.checkpoints import checkpoint_path


class Run:
    """A run directory: its hparams and problem record now, the rest when asked.

    Attributes:
      output_dir: the trainer's output directory.
      hparams: the HParams the run was trained with (`hparams.json`).
      info: `problem.json`: {"problem", "source_vocab_size", "target_vocab_size",
        "data_dir"}.
      data_dir: where the problem's data lies; None: the run's own (`info`).
    """

    def __init__(self, output_dir: str, hparams, info: dict, data_dir: str | None = None):
        self.output_dir = output_dir
        self.hparams = hparams
        self.info = info
        self.data_dir = data_dir or info.get("data_dir")

    @classmethod
    def open(cls, output_dir: str, data_dir: str | None = None) -> Run:
        """The run in `output_dir`; `data_dir` overrides the data dir it was trained on.

        Raises:
          RunDirError: `output_dir` holds no run. RecordError: its files are damaged.
        """
        hparams, info = run_dir.read_run(output_dir)
        return cls(output_dir, hparams, info, data_dir)

    @property
    def problem_name(self) -> str:
        return self.info["problem"]

    @functools.cached_property
    def problem(self):
        """The registered problem the run was trained on, its data dir set.

        Raises:
          RegistryError: the run's problem is not registered.
        """
        problem = registry.problem(self.problem_name)
        problem.set_data_dir(self.data_dir)
        return problem

    def checkpoint(self, name: str | None = None) -> str:
        """The checkpoint prefix `name` resolves to: None the newest, a name ("ckpt-1200",
        "averaged", "best") or a path.

        Raises:
          CheckpointError: there is no such checkpoint (none at all: train first).
        """
        return checkpoint_path(self.output_dir, name)

    def build_model(self):
        """The run's model with fresh weights (`t2t_lite.runs.weights.build_model`)."""
        return weights.build_run_model(self.hparams, self.info)

    def model(self, checkpoint: str | None = None):
        """The run's model with the weights of `checkpoint` (as `checkpoint()` resolves it).

        Raises:
          CheckpointError: no such checkpoint, or it cannot be read, or it holds
            another model's weights.
        """
        path = self.checkpoint(checkpoint)
        model = self.build_model()
        weights.read_weights(model, path, self.output_dir)
        return model
