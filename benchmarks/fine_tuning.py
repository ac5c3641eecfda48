"""Fine-tuning against training from scratch: dev BLEU over wall-clock minutes.

    python -m benchmarks.quality fine_tuning --work_dir=W [--general_minutes=10] [--minutes=10] \
        [--reverse]

1. Datagen: a general EN-DE corpus (`translate_files` over the OpenNMT toy corpus, WMT news
   text, Moses-tokenized: `--general_raw`; written back as raw text by `detokenize.py`, as
   Multi30k and its references are, unless `--keep_tokenized`) trains the shared SentencePiece
   vocabulary; Multi30k (`--multi30k_raw`) is then generated with that same vocabulary file
   (copied into its data dir, which datagen reuses).
2. A general run of `--hparams` trains on the general corpus for `--general_minutes` (all cores;
   an existing WORK_DIR/runs/general is reused as it is).
3. Two Multi30k runs train side by side for `--minutes`, each pinned to one core with one
   intra-op thread: `from_scratch`, and `fine_tuned` (`--init_from=GENERAL_RUN`: its weights,
   a fresh optimizer, step counter and schedule). Both evaluate on Multi30k's dev split (val)
   every `--eval_every_steps` steps (`--fine_tune_overrides` changes the fine-tuned run's
   hparams only, e.g. a lower learning rate): dev NLL and sacreBLEU of greedy decodes of the first
   `--eval_decode_examples` dev sentences, as the trainer logs them.

`--multi30k_split=N` takes both corpora from Multi30k instead (one domain, disjoint pairs):
the general run trains on its training pairs after the first N, the two side-by-side runs on
the first N (a small in-domain corpus), all evaluated on Multi30k's val; the vocabulary is
trained on the general part. The news corpus is then not read.

`--reverse` swaps the corpora's roles (the issue's "or the reverse"): the general run trains
on Multi30k (WORK_DIR/runs/general_multi30k) and the two side-by-side runs on the news corpus,
evaluated on its dev split (the toy corpus's val), with the same shared vocabulary.

Each side-by-side run appends one JSON row to `--out` (and prints it): its evaluations as
[step, seconds since the run started, dev sacreBLEU, dev NLL], with the machine's fields
(`benchmarks/machine.py`). Never touches Multi30k's test sets.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import threading
import time

from benchmarks.detokenize import moses_detokenize
from benchmarks.machine import machine_fields
from benchmarks.rows import append_row

from t2t_lite import atomic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
BIN = os.path.dirname(sys.executable)
DEV_LINE = re.compile(r"^dev step (\d+): loss \S+\s+nll (\S+)\s+.*sacrebleu ([0-9.]+)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--general_raw", default=os.path.join(SHARED, "opennmt_toy_ende"))
    parser.add_argument("--multi30k_raw", default=os.path.join(SHARED, "multi30k"))
    parser.add_argument("--keep_tokenized", action="store_true",
                        help="train the general run on the Moses-tokenized text as it is")
    parser.add_argument("--reverse", action="store_true",
                        help="general run on Multi30k, fine-tuning on the news corpus")
    parser.add_argument("--multi30k_split", type=int, default=0,
                        help="general run on Multi30k's training pairs after the first N, "
                             "the side-by-side runs on the first N (0: the news corpus)")
    parser.add_argument("--hparams", default="multi30k")
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--general_minutes", type=float, default=10.0)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--fine_tune_overrides", default="",
                        help="--hparams_overrides for the fine-tuned run only, e.g. "
                             "learning_rate_scale=0.5,warmup_steps=100 (recorded in its row)")
    parser.add_argument("--eval_every_steps", type=int, default=200)
    parser.add_argument("--eval_decode_examples", type=int, default=200)
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results",
                                                      "fine_tuning.jsonl"))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser.parse_args(argv)


def tool(name: str, *args: str, env=None) -> None:
    subprocess.run([os.path.join(BIN, f"t2t_lite-{name}"), *args], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def copy_general(source: str, target: str, keep_tokenized: bool) -> None:
    """The general corpus file, detokenized unless `keep_tokenized` (then a link)."""
    if os.path.exists(target):
        return
    if keep_tokenized:
        os.symlink(source, target)
        return
    with open(source, encoding="utf-8") as f:
        atomic.write_text(target, "".join(moses_detokenize(line) + "\n" for line in f))


def read_multi30k(raw: str, name: str, side: str) -> list[str]:
    """Lines of Multi30k's `name`.`side` (plain or .gz) in `raw`, with their newlines."""
    path = os.path.join(raw, f"{name}.{side}")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return f.readlines()
    with gzip.open(path + ".gz", "rt", encoding="utf-8") as f:
        return f.readlines()


def split_multi30k(raw: str, n: int, general_raw: str, small_raw: str) -> None:
    """Raw dirs for `translate_files`: Multi30k's training pairs after the first `n`
    (general) and the first `n` (small), each with Multi30k's val as its dev split."""
    for side in ("en", "de"):
        train, val = read_multi30k(raw, "train", side), read_multi30k(raw, "val", side)
        if not 0 < n < len(train):
            raise SystemExit(f"--multi30k_split={n}: must lie in 1..{len(train) - 1}")
        for directory, part in ((general_raw, train[n:]), (small_raw, train[:n])):
            os.makedirs(directory, exist_ok=True)
            atomic.write_text(os.path.join(directory, f"train.{side}"), "".join(part))
            atomic.write_text(os.path.join(directory, f"dev.{side}"), "".join(val))


def datagen_split(args) -> tuple[str, str]:
    """--multi30k_split's general and small data dirs, sharing one vocabulary file."""
    general, small = (os.path.join(args.work_dir, n) for n in ("general_m30k", "small_m30k"))
    if not os.path.exists(os.path.join(small, "translate_files.datagen.json")):
        raws = [os.path.join(args.work_dir, "raw_" + os.path.basename(d)) for d in (general, small)]
        split_multi30k(args.multi30k_raw, args.multi30k_split, *raws)
        datagen_sharing_vocab(args, (general, raws[0]), ("translate_files", small, raws[1]))
    return general, small


def datagen_sharing_vocab(args, general: tuple[str, str], target: tuple[str, str, str]) -> None:
    """Datagen of the general corpus (data dir, raw dir), which trains the vocabulary, then of
    the target (problem, data dir, raw dir) with that vocabulary file copied in (reused)."""
    (general_dir, general_raw), (problem, target_dir, target_raw) = general, target
    tool("datagen", "--problem=translate_files", f"--data_dir={general_dir}",
         f"--raw_dir={general_raw}", f"--vocab_size={args.vocab_size}")
    os.makedirs(target_dir, exist_ok=True)
    shutil.copy(os.path.join(general_dir, "vocab.translate_files.model"),
                os.path.join(target_dir, f"vocab.{problem}.model"))
    tool("datagen", f"--problem={problem}", f"--data_dir={target_dir}",
         f"--raw_dir={target_raw}", f"--vocab_size={args.vocab_size}")


def datagen(args) -> tuple[str, str]:
    """The general and the Multi30k data dirs, sharing one vocabulary file."""
    raw, general, m30k = (os.path.join(args.work_dir, n) for n in ("raw", "general", "m30k"))
    if not os.path.exists(os.path.join(m30k, "multi30k_ende.datagen.json")):
        os.makedirs(raw, exist_ok=True)
        for side, prefix in (("en", "src"), ("de", "tgt")):
            for split, name in (("train", "train"), ("dev", "val")):
                copy_general(os.path.join(args.general_raw, f"{prefix}-{name}.txt"),
                             os.path.join(raw, f"{split}.{side}"), args.keep_tokenized)
        datagen_sharing_vocab(args, (general, raw), ("multi30k_ende", m30k, args.multi30k_raw))
    return general, m30k


def train_logged(command: list[str], core: int) -> tuple[subprocess.Popen, float]:
    env = dict(os.environ, TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="2")
    process = subprocess.Popen(["taskset", "-c", str(core), *command], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return process, time.time()


def evaluations(process: subprocess.Popen, start: float) -> list[list[float]]:
    """[step, seconds, dev sacreBLEU, dev NLL] of each dev line the trainer prints."""
    rows = []
    for line in process.stdout:
        match = DEV_LINE.match(line)
        if match:
            rows.append([int(match[1]), round(time.time() - start, 1), float(match[3]),
                         float(match[2])])
    process.wait()
    if process.returncode:
        print(f"trainer failed (exit {process.returncode})", file=sys.stderr)
    return rows


def roles(args, general_data: str, m30k: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """(problem, data dir) of the general run and of the two side-by-side runs."""
    if args.multi30k_split:
        return ("translate_files", general_data), ("translate_files", m30k)
    general, target = ("translate_files", general_data), ("multi30k_ende", m30k)
    return (target, general) if args.reverse else (general, target)


def multi30k_commands(args, general_run: str, m30k: str,
                      problem: str = "multi30k_ende") -> dict[str, list[str]]:
    """The two side-by-side trainer commands (on `problem` in data dir `m30k`: Multi30k unless
    `--reverse`), by run name; `--fine_tune_overrides` goes to the fine-tuned run only."""
    tuned = [f"--init_from={general_run}"] + (
        [f"--hparams_overrides={args.fine_tune_overrides}"] if args.fine_tune_overrides else [])
    return {name: [os.path.join(BIN, "t2t_lite-trainer"), f"--problem={problem}",
                   f"--hparams={args.hparams}", f"--data_dir={m30k}",
                   f"--output_dir={os.path.join(args.work_dir, 'runs', name)}",
                   f"--train_minutes={args.minutes}", "--log_every_steps=100000",
                   f"--eval_every_steps={args.eval_every_steps}",
                   f"--eval_decode_examples={args.eval_decode_examples}", *extra]
            for name, extra in (("from_scratch", []), ("fine_tuned", tuned))}


def general_run_name(args) -> str:
    if args.multi30k_split:
        return f"general_multi30k_after_{args.multi30k_split}"
    return "general_multi30k" if args.reverse else "general"


def main(args=None):
    """`args` from the entry point, or parsed from the command line."""
    args = args or parse_args()
    dirs = datagen_split(args) if args.multi30k_split else datagen(args)
    (general_problem, general_data), (problem, data) = roles(args, *dirs)
    general_run = os.path.join(args.work_dir, "runs", general_run_name(args))
    if not os.path.exists(os.path.join(general_run, "checkpoint")):  # Else reused as it is.
        tool("trainer", f"--problem={general_problem}", f"--hparams={args.hparams}",
             f"--data_dir={general_data}", f"--output_dir={general_run}",
             f"--train_minutes={args.general_minutes}", "--eval_every_steps=0")
    from t2t_lite.runs.checkpoints import checkpoint_path

    general_step = int(checkpoint_path(general_run).rsplit("-", 1)[1])
    common = machine_fields()
    runs = multi30k_commands(args, general_run, data, problem)
    for name in runs:  # A fresh start each time (the general run is kept).
        shutil.rmtree(os.path.join(args.work_dir, "runs", name), ignore_errors=True)
    started = {}
    for core, (name, command) in enumerate(runs.items()):
        started[name] = train_logged(command, core % (os.cpu_count() or 1))
    results = {}  # Each trainer's lines read as they come, so their times are right.
    readers = [threading.Thread(target=lambda n=name, p=pair: results.setdefault(
        n, evaluations(*p))) for name, pair in started.items()]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    for name in started:
        append_row({"benchmark": "fine_tuning", "run": name, "hparams": args.hparams,
                    "general_minutes": args.general_minutes, "general_step": general_step,
                    "general_detokenized": not args.keep_tokenized, "minutes": args.minutes,
                    "general_problem": general_problem, "problem": problem,
                    "multi30k_split": args.multi30k_split,
                    "overrides": args.fine_tune_overrides if name == "fine_tuned" else "",
                    "vocab_size": args.vocab_size, "dev_decode_examples":
                    args.eval_decode_examples, "evals": results[name], **common},
                   args.out)
