"""`make demo`, timed stage by stage, and one raw row of every figure the README gives for it.

    python -m benchmarks.quality demo WORK_DIR [--out benchmarks/results/demo.jsonl]

Runs the Makefile's `demo` recipe itself (read from the Makefile, so it is
always the recipe `make demo` runs: the trainer with DEMO_OVERRIDES, averaging
of the last 5 checkpoints, the decoder with --checkpoint=averaged
--batch_size=250), the commands from this Python's bin directory and
DEMO_DIR=WORK_DIR/demo_out, each as a subprocess with its output in
WORK_DIR/<stage>.log. Then decodes the last checkpoint alone greedily (the
README's `t2t_lite-decoder --output_dir=demo_out --beam_size=1`).

The row (one JSON line, printed and appended to --out): the wall seconds of
each stage and of the recipe together, the exact-sequence accuracy of the
averaged model (beam) and of the last checkpoint (greedy), the dev evaluations
and the training rate of every log window (target tokens/s, non-padding), as
the trainer logged them, how many of the held-out test sequences are distinct
and how many also occur in training, and the machine (`machine.py`: CPU
model, cores, load average, measured float32 matmul peak).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.machine import machine_fields

from benchmarks.rows import RESULTS, append_row

PROBLEM = "algorithmic_reverse"
STAGES = {"rm": "clean", "t2t_lite-trainer": "train",
          "t2t_lite-avg-checkpoints": "average", "t2t_lite-decoder": "decode"}


def demo_recipe(makefile: str, demo_dir: str, bin_dir: str) -> list[list[str]]:
    """The `demo` target's commands (argv lists), with BIN, DEMO_DIR and DEMO_OVERRIDES filled in."""
    with open(makefile, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    variables = dict(re.findall(r"^(\w+)\s*:?=\s*(.*?)\s*$", text, re.M))
    values = {"BIN": bin_dir, "DEMO_DIR": demo_dir,
              "DEMO_OVERRIDES": variables["DEMO_OVERRIDES"]}
    recipe = re.search(r"^demo:.*\n((?:\t.*\n?)+)", text, re.M)
    if recipe is None:
        raise SystemExit(f"no demo target in {makefile}")
    commands = []
    for line in recipe.group(1).splitlines():
        line = re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], line.strip())
        commands.append(shlex.split(line))
    return commands


def stage_name(argv: list[str]) -> str:
    return STAGES.get(os.path.basename(argv[0]), os.path.basename(argv[0]))


def run_stage(argv: list[str], log_path: str) -> tuple[float, str]:
    """(wall seconds, stdout and stderr together) of one command; exits if it fails."""
    start = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(result.stdout)
    if result.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed ({result.returncode}); see {log_path}")
    return seconds, result.stdout


_WINDOW = re.compile(r"^step (\d+)/\d+ .*?([\d,]+) tok/s", re.M)
_DEV = re.compile(r"^dev step (\d+): loss ([\d.]+)\s+nll ([\d.]+)\s+exact_match ([\d.]+) "
                  r"\((\d+) greedy decodes.*?\)(\s+new best)?", re.M)
_PARAMETERS = re.compile(r"^training \S+ with ([\d,]+) parameters", re.M)
_ACCURACY = re.compile(r"exact-sequence accuracy: ([\d.]+)% \((\d+)/(\d+)\)")
_SEARCH = re.compile(r"^test: (\d+) examples, (greedy|beam \d+), ([\d.]+) s", re.M)
_CHECKPOINT = re.compile(r"^decoding with (\S+)", re.M)


def parse_trainer_log(text: str) -> dict:
    """parameters, dev evaluations and the tokens/s of every log window, from the trainer's log."""
    windows = [[int(step), float(rate.replace(",", ""))] for step, rate in _WINDOW.findall(text)]
    dev = [{"step": int(step), "loss": float(loss), "nll": float(nll),
            "exact_match": float(match), "decoded": int(decoded), "new_best": bool(best)}
           for step, loss, nll, match, decoded, best in _DEV.findall(text)]
    parameters = _PARAMETERS.search(text)
    return {"parameters": int(parameters.group(1).replace(",", "")) if parameters else None,
            "dev_evaluations": dev, "tokens_per_s": tokens_summary(windows)}


def tokens_summary(windows: list[list[float]]) -> dict:
    """Every window's rate, and min / median / max without the first (it holds the tracing)."""
    rest = [rate for _, rate in windows[1:]]
    summary = {"windows": windows}
    if rest:
        summary.update(min_after_first=min(rest), median_after_first=statistics.median(rest),
                       max_after_first=max(rest))
    return summary


def parse_decoder_log(text: str) -> dict:
    """percent, correct, total, search, decode seconds and checkpoint, from the decoder's output."""
    accuracy, search, checkpoint = (_ACCURACY.search(text), _SEARCH.search(text),
                                    _CHECKPOINT.search(text))
    if accuracy is None:
        raise SystemExit("no exact-sequence accuracy in the decoder's output")
    return {"percent": float(accuracy.group(1)), "correct": int(accuracy.group(2)),
            "total": int(accuracy.group(3)),
            "search": search.group(2) if search else None,
            "decode_seconds": float(search.group(3)) if search else None,
            "checkpoint": os.path.basename(checkpoint.group(1)) if checkpoint else None}


def held_out_counts(problem_name: str = PROBLEM) -> dict:
    """How many test and dev sequences there are, how many distinct, how many also in training."""
    from t2t_lite import registry

    problem = registry.problem(problem_name)
    train = {tuple(int(s) for s in seq) for seq in problem.sequences("train")}
    counts = {}
    for split in ("test", "dev"):
        seqs = [tuple(int(s) for s in seq) for seq in problem.sequences(split)]
        counts[split] = {"sequences": len(seqs), "distinct": len(set(seqs)),
                         "in_training": sum(seq in train for seq in set(seqs))}
    return counts


def demo_row(recipe, last_command, seconds, train, averaged, last, held_out, machine,
             versions) -> dict:
    """The row: `seconds` per stage name, parsed logs (parse_*), held_out_counts, machine_fields."""
    made = sum(s for name, s in seconds.items() if name != "last_greedy")
    return {"bench": "demo", "date": datetime.date.today().isoformat(),
            "recipe": [shlex.join(argv) for argv in recipe],
            "last_greedy_command": shlex.join(last_command), "problem": PROBLEM,
            "parameters": train["parameters"],
            "seconds": {**{k: round(v, 1) for k, v in seconds.items()},
                        "make_demo": round(made, 1)},
            "accuracy": {"averaged": averaged, "last_greedy": last},
            "last_checkpoint": last["checkpoint"],
            "dev_evaluations": train["dev_evaluations"], "tokens_per_s": train["tokens_per_s"],
            "held_out": held_out, **machine, **versions}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("work_dir", help="DEMO_DIR is WORK_DIR/demo_out; logs go here")
    parser.add_argument("--out", default=os.path.join(RESULTS, "demo.jsonl"),
                        help="the row is appended here (- : print only)")
    parser.add_argument("--makefile", default=os.path.join(ROOT, "Makefile"))


def main(args):
    os.makedirs(args.work_dir, exist_ok=True)
    demo_dir = os.path.join(os.path.abspath(args.work_dir), "demo_out")
    bin_dir = os.path.dirname(sys.executable)
    recipe = demo_recipe(args.makefile, demo_dir, bin_dir)

    import keras
    import tensorflow as tf

    machine = machine_fields()  # Before the runs: the peak of an otherwise idle process.
    versions = {"tensorflow": tf.__version__, "keras": keras.__version__}
    seconds, logs = {}, {}
    for argv in recipe:
        name = stage_name(argv)
        seconds[name], logs[name] = run_stage(argv, os.path.join(args.work_dir, name + ".log"))
    last_argv = [os.path.join(bin_dir, "t2t_lite-decoder"), f"--output_dir={demo_dir}",
                 "--beam_size=1"]
    seconds["last_greedy"], logs["last_greedy"] = run_stage(
        last_argv, os.path.join(args.work_dir, "last_greedy.log"))
    row = demo_row(recipe, last_argv, seconds, parse_trainer_log(logs["train"]),
                   parse_decoder_log(logs["decode"]), parse_decoder_log(logs["last_greedy"]),
                   held_out_counts(), machine, versions)
    append_row(row, args.out)
