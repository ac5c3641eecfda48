"""A test set decoded end to end: `t2t_lite-decoder` beside CTranslate2, with BLEU.

    python -m benchmarks.decode decoder --output_dir=RUN --input=FILE \
        [--references=FILE] [--ctranslate2=[NAME=]EXPORT,...] [--tree=NAME=DIR ...] \
        [--modes=plain,jit] [--lines=1000] [--rounds=1] [--threads=2] [--out=ROWS]

The real workload: sentences of a test set with a trained run, each system in a
fresh process timed from its start to its exit (interpreter and library start,
model load, tracing or XLA compiles, decoding, writing the file), in turn, on
the same `--threads` cores (taskset below the machine's):

- `t2t_lite-decoder --output_dir=RUN --decode_from_file=FILE --decode_to_file=...`,
  beam and alpha from the run's hparams, per `--modes` (`plain`; `jit` adds
  `--jit`; any other entry is decoder flags, e.g. `--batch_size=128`; an entry
  `NAME:mode` runs from tree NAME alone), from each `--tree` (NAME=DIR, a
  checkout of t2t_lite, e.g. a worktree of an earlier commit, so before and
  after are measured in one run; default this checkout, named "HEAD");
- each `--ctranslate2` export (`t2t_lite-exporter --format=ctranslate2`, its
  EXPORT_DIR/<version>, or NAME=EXPORT to name it in the rows, e.g.
  float32=...): `t2t_lite.serving.ctranslate2_serving.translate_text` with the
  export's settings (beam size, length penalty, length limit), 64
  sentences a batch, `intra_threads=--threads`.

FILE may be gzipped; its first `--lines` lines are decoded. One JSON row per
process: `wall_seconds`, `sentences_per_s`, `output_pieces` (whitespace-separated
tokens written), `identical_lines` (the fraction of lines equal to the first
t2t_lite process's), `bleu` (cased sacreBLEU 13a against `--references`, when
given) and `ratio_to_ctranslate2` (sentences/s over the first CTranslate2
export's in the same round). Rows carry `onednn_isa` (`benchmarks.isa`) and the
machine (`benchmarks.machine`).
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

# The CTranslate2 process: load the export, translate the file, write the lines.
CT2_SCRIPT = """
import sys
from t2t_lite.serving import ctranslate2_serving
export, source, target, threads = sys.argv[1:5]
model = ctranslate2_serving.load(export, intra_threads=int(threads), inter_threads=1)
with open(source, encoding="utf-8") as f:
    lines = f.read().splitlines()
outputs = ctranslate2_serving.translate_text(model, lines, max_batch_size=64)
with open(target, "w", encoding="utf-8") as f:
    f.write("\\n".join(outputs) + "\\n")
"""


def read_lines(path: str, limit: int) -> list[str]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(limit), f)]


def timed(command: list[str], threads: int, target: str, cwd: str) -> tuple[float, list[str]]:
    """(wall seconds of the process, its output lines), on the first `threads` cores."""
    # The decoder sets its own thread pools for the cores it may use
    # (`t2t_lite.decoding.parallel`): fewer than the machine's by taskset.
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=cwd)
    if threads < len(os.sched_getaffinity(0)):
        command = ["taskset", "-c", f"0-{threads - 1}"] + command
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=cwd)
    seconds = time.perf_counter() - start
    with open(target, encoding="utf-8") as f:
        return seconds, f.read().splitlines()


def systems(args, source: str, target: str) -> list[tuple[dict, list[str], str]]:
    """(row fields, command, cwd) of every process of a round."""
    runs = []
    for tree in args.tree or [f"HEAD={os.path.dirname(HERE)}"]:
        name, directory = tree.split("=", 1)
        for mode in tree_modes(args.modes, name):
            flags = mode_flags(mode)
            command = [sys.executable, "-m", "t2t_lite.bin.decoder",
                       f"--output_dir={os.path.abspath(args.output_dir)}",
                       f"--decode_from_file={source}", f"--decode_to_file={target}"]
            runs.append(({"system": "t2t_lite-decoder", "tree": name, "jit": "--jit" in flags,
                          "flags": " ".join(flags)}, command + flags,
                         os.path.abspath(directory)))
    for export in filter(None, args.ctranslate2.split(",")):
        name, _, directory = export.rpartition("=")
        runs.append(({"system": "CTranslate2", "export": name or directory},
                     [sys.executable, "-c", CT2_SCRIPT, os.path.abspath(directory), source,
                      target, str(args.threads)], os.path.dirname(HERE)))
    return runs


def tree_modes(modes: str, tree: str) -> list[str]:
    """The `--modes` entries a tree runs: unprefixed ones, and `TREE:mode` ones of its name."""
    chosen = []
    for mode in modes.split(","):
        prefix, colon, rest = mode.partition(":")
        if not colon or prefix.startswith("-"):
            chosen.append(mode)
        elif prefix == tree:
            chosen.append(rest)
    return chosen


def mode_flags(mode: str) -> list[str]:
    """A `--modes` entry -> decoder flags: plain (none), jit (--jit) or flags, space-separated."""
    return {"plain": [], "jit": ["--jit"]}.get(mode, mode.split())


def bleu(outputs: list[str], references: list[str] | None):
    if references is None:
        return None
    from t2t_lite.metrics.bleu import sacrebleu_score

    return round(sacrebleu_score(outputs, references).score, 2)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output_dir", required=True, help="a trained run")
    parser.add_argument("--input", required=True, help="sentences, one per line (.gz too)")
    parser.add_argument("--references", default=None, help="the reference translations")
    parser.add_argument("--ctranslate2", default="", help="CTranslate2 exports of the run")
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=DIR: a t2t_lite checkout to run the decoder from")
    parser.add_argument("--modes", default="plain,jit",
                        help="comma-separated: plain, jit, or decoder flags (--batch_size=128); "
                             "TREE:mode for one tree's runs alone")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--note", default=None, help="what the run is (goes in every row)")
    parser.add_argument("--out", default=None, help="append the rows here too")


def main(args) -> int:
    lines = read_lines(args.input, args.lines)
    references = read_lines(args.references, args.lines) if args.references else None
    common = {"benchmark": "decoder_end_to_end", "input": os.path.basename(args.input),
              "threads": args.threads, "sentences": len(lines), "note": args.note,
              "onednn_isa": isa.probe(), **machine_fields()}
    first = None
    with tempfile.TemporaryDirectory() as tmp:
        source, target = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
        with open(source, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        for round_ in range(args.rounds):
            rows = []
            for fields, command, cwd in systems(args, source, target):
                seconds, outputs = timed(command, args.threads, target, cwd)
                first = outputs if first is None else first
                same = sum(a == b for a, b in zip(outputs, first)) / max(len(outputs), 1)
                rows.append({**fields, **common, "round": round_,
                             "wall_seconds": round(seconds, 2),
                             "sentences_per_s": round(len(lines) / seconds, 2),
                             "output_pieces": sum(len(line.split()) for line in outputs),
                             "identical_lines": round(same, 4),
                             "bleu": bleu(outputs, references)})
            for row in with_ratios(rows):
                append_row(row, args.out)
    return 0


def with_ratios(rows: list[dict]) -> list[dict]:
    """A round's rows, each with its sentences/s over the first CTranslate2 row's (if any)."""
    peer = next((row for row in rows if row["system"] == "CTranslate2"), None)
    if peer is None:
        return rows
    return [{**row, "ratio_to_ctranslate2": round(
        row["sentences_per_s"] / peer["sentences_per_s"], 3)} for row in rows]
