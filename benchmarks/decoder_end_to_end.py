"""`t2t_lite-decoder` end to end, with and without XLA, on real sentences.

    python -m benchmarks.decode decoder --output_dir=RUN --input=FILE \
        [--lines=1000] [--rounds=2] [--threads=2] [--out=benchmarks/results/...]

Runs the decoder CLI as a user does (`python -m t2t_lite.bin.decoder
--output_dir=RUN --decode_from_file=FILE --decode_to_file=...`, beam and alpha
from the run's hparams), without flags and with `--jit`, in turn, `--rounds`
times, each in a fresh process on `--threads` cores (taskset below the machine's; the
decoder splits its threads itself, `t2t_lite.decoding.parallel`).
FILE may be gzipped; its first `--lines` lines are decoded. One JSON row per
process: `wall_seconds` is the whole process (start, model load, tracing or XLA
compiles, decoding, writing), `sentences_per_s` lines over it, `output_pieces`
the whitespace-separated tokens written, and `identical_lines` the fraction of
output lines equal to the first no-flag process's. Rows carry `onednn_isa`
(`benchmarks.isa`; the AVX2 setting: run under `eval "$(.venv/bin/python -m
benchmarks.isa env --isa=avx2)"`) and the machine (`benchmarks.machine`).
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

from benchmarks import isa
from benchmarks.machine import machine_fields
from benchmarks.rows import append_row


def decoder_row(jit: bool, round_: int, seconds: float, outputs: list[str],
                first: list[str] | None, args, machine: dict, onednn_isa) -> dict:
    """One process's row; `first` is the first no-flag output (None: this is it)."""
    same = outputs if first is None else first
    identical = sum(a == b for a, b in zip(outputs, same)) / max(len(outputs), 1)
    return {"bench": "decoder_end_to_end", "output_dir": args.output_dir,
            "input": os.path.basename(args.input), "jit": jit, "round": round_,
            "threads": args.threads, "sentences": len(outputs),
            "wall_seconds": round(seconds, 2),
            "sentences_per_s": round(len(outputs) / seconds, 2),
            "output_pieces": sum(len(line.split()) for line in outputs),
            "identical_lines": round(identical, 4), "onednn_isa": onednn_isa, **machine}


def run_decoder(args, source: str, jit: bool) -> tuple[float, list[str]]:
    """(wall seconds of the decoder process, its output lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "out.txt")
        command = [sys.executable, "-m", "t2t_lite.bin.decoder", f"--output_dir={args.output_dir}",
                   f"--decode_from_file={source}", f"--decode_to_file={target}"]
        # The decoder sets its own thread pools for the cores it may use
        # (`t2t_lite.decoding.parallel`): fewer than the machine's by taskset.
        env = {k: v for k, v in os.environ.items()
               if k not in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        if args.threads < len(os.sched_getaffinity(0)):
            command = ["taskset", "-c", f"0-{args.threads - 1}"] + command
        start = time.perf_counter()
        subprocess.run(command + (["--jit"] if jit else []), env=env, check=True,
                       capture_output=True, cwd=os.path.join(HERE, ".."))
        seconds = time.perf_counter() - start
        with open(target, encoding="utf-8") as f:
            return seconds, f.read().splitlines()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output_dir", required=True, help="a trained run")
    parser.add_argument("--input", required=True, help="sentences, one per line (.gz too)")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None, help="append the rows here too")


def main(args) -> int:
    opener = gzip.open if args.input.endswith(".gz") else open
    with opener(args.input, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for _, line in zip(range(args.lines), f)]
    machine, onednn_isa = machine_fields(), isa.probe()
    first = None
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "in.txt")
        with open(source, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        for round_ in range(args.rounds):
            for jit in (False, True):
                seconds, outputs = run_decoder(args, source, jit)
                append_row(decoder_row(jit, round_, seconds, outputs, first, args, machine,
                                       onednn_isa), args.out)
                first = outputs if first is None else first
    return 0

