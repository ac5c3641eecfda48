"""The real `t2t_lite-trainer` command, timed on a synthetic problem (no download, no datagen).

    python -m benchmarks.train trainer --size bench --steps 200 [--jit]
    python -m benchmarks.train trainer --problem multi30k_ende --data_dir=DATA --hparams multi30k

Runs `python -m t2t_lite.bin.trainer` in a fresh process, as a user does, on
`synthetic_translate` (`problems/synthetic.py`: seeded random pairs of 31 ids +
EOS a side; `synthetic_translate_base` at `--size base`) with the size's model
(`benchmarks.workloads`) and `batch_size` of the peers' batch (32 x 32 target
tokens at bench, 64 x 32 at base), `--steps` steps, no dev evaluation, in a
temporary run directory removed at the end. Another problem (`--problem`,
`--data_dir`, `--hparams`) trains the same way. One row:

- `wall_seconds`: the whole process (start, imports, model build, tracing or XLA
  compiles, the input pipeline, logging, checkpoints);
- `steps_per_s`: steps over `wall_seconds`;
- `windows`: (step, target tokens/s) of each of the trainer's log windows, and
  `steady_tokens_per_s` their median after the first two (the trainer's own
  count of non-padding target tokens).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import isa, workloads
from benchmarks.machine import machine_fields
from benchmarks.rows import append_row

WINDOW = re.compile(r"^step (\d+)/\d+ .* ([\d,.]+) tok/s")
PROBLEMS = {"bench": "synthetic_translate", "base": "synthetic_translate_base"}


def trainer_command(args, output_dir: str) -> list[str]:
    """The trainer's command line for `args`."""
    sentences, _, target_length = workloads.TRAIN_SHAPES[args.size]
    overrides = ",".join(x for x in (
        workloads.SIZES[args.size][0] if args.hparams == "base" else "",
        f"batch_size={sentences * target_length}", args.overrides) if x)
    command = [sys.executable, "-m", "t2t_lite.bin.trainer",
               f"--problem={args.problem or PROBLEMS[args.size]}", f"--hparams={args.hparams}",
               f"--hparams_overrides={overrides}", f"--output_dir={output_dir}",
               f"--train_steps={args.steps}", f"--log_every_steps={args.log_every_steps}",
               "--eval_every_steps=0"]
    if args.data_dir:
        command.append(f"--data_dir={args.data_dir}")
    return command + (["--jit"] if args.jit else [])


def parse_windows(lines) -> list[tuple[int, float]]:
    """(step, tokens/s) of each log window line of the trainer."""
    found = (WINDOW.match(line) for line in lines)
    return [(int(m.group(1)), float(m.group(2).replace(",", ""))) for m in found if m]


def trainer_row(args, command: list[str], seconds: float, windows: list, machine: dict,
                onednn_isa: str | None) -> dict:
    """The row: the process's wall time, steps per second and the log windows' rates."""
    steady = [rate for _, rate in windows[2:]] or [rate for _, rate in windows]
    shown = ["--output_dir=RUN" if a.startswith("--output_dir=") else a for a in command[1:]]
    return {"bench": "trainer_speed", "system": "t2t_lite-trainer" + (" --jit" if args.jit else ""),
            "setting": args.size, "problem": command[3].split("=", 1)[1],
            "hparams": args.hparams, "command": " ".join(shown), "size": args.size,
            "jit": args.jit, "steps": args.steps, "wall_seconds": round(seconds, 2),
            "steps_per_s": round(args.steps / seconds, 3), "windows": windows,
            "steady_tokens_per_s": round(statistics.median(steady), 1) if steady else None,
            "onednn_isa": onednn_isa, **machine}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", choices=sorted(workloads.SIZES), default="bench")
    parser.add_argument("--problem", default=None,
                        help="default: synthetic_translate (bench), synthetic_translate_base")
    parser.add_argument("--hparams", default="base",
                        help="the hparams set (base: with the size's overrides)")
    parser.add_argument("--overrides", default="", help="more hparams overrides")
    parser.add_argument("--data_dir", default=None, help="for a problem that needs datagen")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--log_every_steps", type=int, default=20)
    parser.add_argument("--jit", action="store_true")
    parser.add_argument("--timeout_s", type=float, default=3600.0)
    parser.add_argument("--out", default="-", help="rows are appended here (- : print only)")


def main(args) -> int:
    machine, onednn_isa = machine_fields(), isa.probe()
    output_dir = tempfile.mkdtemp(prefix="trainer_speed_")
    try:
        command = trainer_command(args, os.path.join(output_dir, "run"))
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout_s,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)
    if done.returncode:
        sys.stderr.write(done.stderr[-3000:])
        return done.returncode
    windows = parse_windows((done.stdout + done.stderr).splitlines())
    append_row(trainer_row(args, command, seconds, windows, machine, onednn_isa), args.out,
               benchmark="trainer_speed")
    return 0
