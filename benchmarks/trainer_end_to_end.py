"""The trainer end to end on Multi30k against its own step on fixed shapes (issue 28).

    python -m benchmarks.trainer_end_to_end --data_dir=DATA --minutes=4 [--jit] \
        [--overrides=length_bucket_step=1.5] [--out=benchmarks/results/...]

`DATA` is a `t2t_lite-datagen --problem=multi30k_ende` directory (with
`--raw_dir=../shared/data/multi30k` it is written first when missing). Trains
the `multi30k` set (the `bench` size of `train_speed.py`: N=3, d_model 256,
d_ff 1024, h=4) with `batch_size=1024` (train_speed.py's 32 x 32 tokens) for
`--minutes` of the trainer's own budget, no dev evaluation, in this process, then
runs `train_speed.py`'s `bench` step (random ids, no padding, the same step
builder, vocabulary 8192; with XLA under `--jit`) in the same process; the run
directory is removed at the end. One JSON line:

- `end_to_end_tokens_per_s`: every non-padding target token the trainer
  trained on (summed as each update reports it) over the wall seconds of the
  whole `trainer.train` call: model build, tracing (and XLA compiles), the input
  pipeline, logging and checkpoints included.
- `steady_tokens_per_s`: the median of the trainer's log windows after the
  first two (its own tok/s lines).
- `train_speed_tokens_per_s`: train_speed.py's median at `bench`;
  `ratio` = end to end / train_speed.
- `padding_fraction`: padded target positions over all target positions.

Every row carries `onednn_isa` (what oneDNN reported, `benchmarks/isa.py`; for the
AVX2 setting run it under `eval "$(.venv/bin/python -m benchmarks.isa env --isa=avx2)"`)
and the machine (`machine.py`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import isa  # noqa: E402
from benchmarks import train_speed  # noqa: E402
from benchmarks.machine import append_row, machine_fields  # noqa: E402

from t2t_lite import registry  # noqa: E402
from t2t_lite.training import trainer  # noqa: E402
from t2t_lite.training.options import EvalOptions, TrainOptions  # noqa: E402
from t2t_lite.training.train_step import StepRunner  # noqa: E402

WINDOW = re.compile(r"^step (\d+)/\d+ .* ([\d,]+) tok/s")


class Counter:
    """Non-padding and padded target tokens of every update the trainer makes."""

    def __init__(self):
        self.tokens = 0.0
        self.positions = 0.0

    def wrap(self, runner_class):
        """Makes `runner_class.step` (StepRunner's) count into this; returns the original."""
        step = runner_class.step
        counter = self

        def counting_step(runner, micro_batches):
            sums = step(runner, micro_batches)
            counter.tokens += sums[2]
            counter.positions += sum(int(b["targets"].shape[0]) * int(b["targets"].shape[1])
                                     for b in micro_batches)
            return sums
        runner_class.step = counting_step
        return step


def end_to_end_row(args, seconds: float, tokens: float, positions: float, windows: list,
                   steps: int, train_speed_rate: float, machine: dict,
                   onednn_isa: str | None) -> dict:
    """The row: end-to-end and steady rates against train_speed.py's."""
    steady = [rate for _, rate in windows[2:]] or [rate for _, rate in windows]
    rate = tokens / seconds
    return {"bench": "trainer_end_to_end", "problem": "multi30k_ende", "hparams": "multi30k",
            "overrides": args.overrides, "jit": args.jit, "minutes": args.minutes,
            "steps": steps, "wall_seconds": round(seconds, 1),
            "target_tokens": int(tokens),
            "padding_fraction": round(1.0 - tokens / positions, 4) if positions else None,
            "end_to_end_tokens_per_s": round(rate, 1),
            "steady_tokens_per_s": round(statistics.median(steady), 1) if steady else None,
            "windows": len(windows),
            "train_speed_tokens_per_s": round(train_speed_rate, 1),
            "ratio": round(rate / train_speed_rate, 3),
            "threads": train_speed.THREADS, "onednn_isa": onednn_isa, **machine}


def train(args, log) -> tuple[float, int]:
    """Runs the trainer for --minutes; (wall seconds of the call, last step)."""
    problem = registry.problem("multi30k_ende")
    hparams = registry.hparams("multi30k").override(
        ",".join(x for x in ("batch_size=1024", args.overrides) if x))
    options = TrainOptions(train_minutes=args.minutes, log_every_steps=args.log_every_steps,
                           jit_compile=args.jit, eval=EvalOptions(eval_every_steps=0))
    output_dir = tempfile.mkdtemp(prefix="trainer_end_to_end_")
    try:
        start = time.perf_counter()
        result = trainer.train(problem, hparams, output_dir, args.data_dir, options, log=log)
        return time.perf_counter() - start, result.step
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--raw_dir", default=None, help="Multi30k raw files, for datagen")
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--jit", action="store_true")
    parser.add_argument("--overrides", default="", help="hparams overrides of the trainer run")
    parser.add_argument("--log_every_steps", type=int, default=50)
    parser.add_argument("--out", default="-", help="rows are appended here (- : print only)")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.data_dir, "multi30k_ende.datagen.json")):
        from t2t_lite.data import datagen
        datagen.generate(registry.problem("multi30k_ende"), args.data_dir, args.raw_dir)
    machine = machine_fields()
    counter, windows = Counter(), []

    def log(line):
        print(line, file=sys.stderr, flush=True)
        match = WINDOW.match(line)
        if match:
            windows.append((int(match.group(1)), float(match.group(2).replace(",", ""))))
    counter.wrap(StepRunner)
    seconds, steps = train(args, log)
    reference = train_speed.run("bench", args.jit, 60.0)["tgt_tokens_per_s"]["median"]
    append_row(end_to_end_row(args, seconds, counter.tokens, counter.positions, windows, steps,
                              reference, machine, isa.probe()), args.out)


if __name__ == "__main__":
    main()
