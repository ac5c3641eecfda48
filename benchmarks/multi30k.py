"""Multi30k EN-DE on a wall-clock budget: the README recipe end to end, one JSON line per stage.

    python -m benchmarks.quality multi30k --raw_dir=../shared/data/multi30k --work_dir=runs/m30k \
        --minutes=30,60

1. `t2t_lite-datagen --problem=multi30k_ende` into WORK_DIR/data (skipped when
   it is there): a joint 8K BPE vocabulary, train / val (dev) / test_2016_flickr.
2. Trains `--hparams` (default `multi30k`) in WORK_DIR/run until each
   cumulative budget of `--minutes` (30, then 30 more: the trainer's
   `--train_minutes`, dev evaluations included), saving every
   `--save_checkpoints_steps`.
3. At each stage: the dev loss and NLL (label-smoothed / plain, per target
   token, the whole dev set), then test2016 decoded greedily and with beam 4
   (alpha 0.6), from the stage's last checkpoint and from the average of the
   `--average` checkpoints ending at it (section 6.1), each scored with cased
   sacreBLEU (13a) against the raw reference file.

Ablations choose on the dev set, never on test2016: `--score_on=dev` scores
the raw val files instead (the record says `scored_on`), `--data_dir` shares one datagen
between runs and `--vocab_size` sets its vocabulary (a new data dir per size).

`--evaluate=ckpt-A,ckpt-B` scores checkpoints of an existing run (`--run_dir`)
instead of training (`--minutes` then labels them). `--held_out` also scores
test_2017_flickr and test_2017_mscoco with beam 4 and averaging: do it once,
with the final recipe, never to choose anything.

Every row also carries the training rate (`train_tokens_per_s`: target tokens/s
of the trainer's log windows up to the checkpoint, read from the run's
TensorBoard events, so `--evaluate` rows have it too), `--system` (a name for
side-by-side tables), `--field key=value` pairs, and the machine (`machine.py`:
CPU model, cores, load average, float32 matmul peak). Rows go to stdout and,
with `--out=benchmarks/results/multi30k.jsonl`, are appended there too.
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import statistics
import sys
import time


from benchmarks.machine import machine_fields


from benchmarks.rows import append_row, parse_field

TEST = "test_2016_flickr"
DEV = "val"
HELD_OUT = ("test_2017_flickr", "test_2017_mscoco")


def read_text(raw_dir: str, name: str) -> list[str]:
    """Lines of RAW_DIR/name or RAW_DIR/name.gz, newline stripped."""
    path = os.path.join(raw_dir, name)
    opener = open if os.path.exists(path) else gzip.open
    with opener(path if os.path.exists(path) else path + ".gz", "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def bleu(problem, model, hparams, lines, references, beam_size):
    """(sacreBLEU result, seconds) of `lines` decoded with `beam_size` (1 = greedy)."""
    from t2t_lite.decoding.options import DecodeOptions
    from t2t_lite.decoding.splits import decode_lines
    from t2t_lite.metrics.bleu import sacrebleu_score

    options = DecodeOptions.from_hparams(hparams, beam_size=beam_size,
                                                  batch_size=100)
    start = time.time()
    results = decode_lines(problem, model, lines, options, hparams.max_length,
                                    warn=lambda message: None)
    seconds = time.time() - start
    return sacrebleu_score([beams[0][0] for beams in results], references), seconds


def score_checkpoint(run, name, problem, hparams, data_dir, tests, average, held_out):
    """The stage's JSON record for checkpoint `name` of `run`."""
    from t2t_lite.runs import averaging
    from t2t_lite.runs import checkpoints
    from t2t_lite.runs.run import Run
    from t2t_lite.training.evaluation import mean_loss

    names = checkpoints.list_checkpoints(run)
    ending = names[:names.index(name) + 1][-average:]
    averaging.average(run, averaging.choose(run, names=ending))
    record = {"checkpoint": name, "step": int(name.rsplit("-", 1)[1]),
              "averaged": ending, "bleu": {}, "decode_seconds": {}}
    for kind, checkpoint in (("last", name), ("averaged", "averaged")):
        model = Run.open(run).model(checkpoint)
        if kind == "last":
            loss, nll = mean_loss(model, hparams, problem.examples("dev", data_dir))
            record.update(dev_loss=round(loss, 4), dev_nll=round(nll, 4))
        for search, beam in (("greedy", 1), ("beam4", 4)):
            for test, (lines, refs) in tests.items():
                if test not in (TEST, DEV) and not (held_out and kind == "averaged" and beam == 4):
                    continue
                result, seconds = bleu(problem, model, hparams, lines, refs, beam)
                key = f"{kind}_{search}" + ("" if test in (TEST, DEV) else f"_{test}")
                record["bleu"][key] = round(result.score, 2)
                record["decode_seconds"][key] = round(seconds, 1)
                if key == "averaged_beam4":
                    record["signature"] = result.signature
                    record["bleu_line"] = result.line
    return record


def train_rates(windows: list[tuple[int, float]], step: int) -> dict | None:
    """Target tokens/s of the log windows up to `step`: count, median, p10, p90, min, max.

    `windows` are (step, tokens/s) as the trainer wrote them to TensorBoard
    (OUTPUT_DIR/train, tag tokens_per_second); a resumed session's first window
    holds its tracing, hence the deciles. None without any window.
    """
    rates = [rate for at, rate in windows if at <= step]
    if not rates:
        return None
    deciles = statistics.quantiles(rates, n=10) if len(rates) > 1 else [rates[0]] * 9
    return {"windows": len(rates), "median": round(statistics.median(rates), 1),
            "p10": round(deciles[0], 1), "p90": round(deciles[-1], 1),
            "min": round(min(rates), 1), "max": round(max(rates), 1)}


def run_rates(run: str, step: int) -> dict | None:
    """`train_rates` of the run directory `run` (its TensorBoard events)."""
    from t2t_lite.pictures.plot import read_scalars

    return train_rates(read_scalars(os.path.join(run, "train")).get("tokens_per_second", []),
                       step)


def training_minutes(wall: float, spans: list[tuple[float, float]]) -> float | None:
    """Minutes of training before wall time `wall`: the trainer calls' `spans` (start, end)
    summed up to it, so the scoring between stages does not count. None outside every span."""
    done = 0.0
    for start, end in spans:
        if start <= wall <= end:
            return round((done + wall - start) / 60.0, 2)
        done += end - start
    return None


def dev_curve(events: list[tuple[float, int, float]], spans, step: int) -> list[list]:
    """[training minutes, step, dev NLL] of the dev evaluations up to `step` (the lecture's
    "dev loss per minute"); `events` are (wall time, step, NLL) as the trainer wrote them."""
    return [[training_minutes(wall, spans), at, round(nll, 4)]
            for wall, at, nll in sorted(events) if at <= step]


def read_dev_events(run: str) -> list[tuple[float, int, float]]:
    """(wall time, step, dev NLL) of every dev evaluation in RUN/dev's TensorBoard events."""
    import tensorflow as tf

    directory = os.path.join(run, "dev")
    events = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if "tfevents" in name:
            for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
                events += [(event.wall_time, int(event.step), float(tf.make_ndarray(v.tensor))
                            if v.WhichOneof("value") == "tensor" else v.simple_value)
                           for v in event.summary.value if v.tag == "nll"]
    return events


def stage_row(common: dict, trained: dict | None, scored: dict, rates: dict | None) -> dict:
    """One stage's row: `common` (system, fields, machine), what training measured, the scores."""
    row = {}
    if "system" in common:
        row["system"] = common["system"]
    row.update(trained or {})
    row.update(scored)
    row["train_tokens_per_s"] = rates
    row.update({k: v for k, v in common.items() if k != "system"})
    return row


def trained_fields(minutes, args, data_dir, seconds, result) -> dict:
    """What a training stage measured: budget, hparams, wall seconds, last window's tokens/s."""
    rate = result.tokens_per_second
    return {"minutes": minutes, "hparams": args.hparams, "scored_on": scored_split(args),
            "data_dir": data_dir, "overrides": args.hparams_overrides,
            "wall_seconds": round(seconds, 1),
            # The last log window's rate; None (JSON null) when the run was too short to log.
            "tokens_per_second": round(rate, 1) if math.isfinite(rate) else None}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw_dir", required=True, help="Multi30k task 1 raw files")
    parser.add_argument("--work_dir", required=True, help="data/ and run/ go here")
    parser.add_argument("--run_dir", default=None, help="default WORK_DIR/run")
    parser.add_argument("--data_dir", default=None, help="default WORK_DIR/data")
    parser.add_argument("--vocab_size", type=int, default=None,
                        help="datagen's joint vocabulary (default the problem's 8K)")
    parser.add_argument("--score_on", choices=("test", "dev"), default="test",
                        help="dev: BLEU on the raw val files (for ablations)")
    parser.add_argument("--hparams", default="multi30k")
    parser.add_argument("--hparams_overrides", default="")
    parser.add_argument("--minutes", default="30,60", help="cumulative training budgets")
    parser.add_argument("--save_checkpoints_steps", type=int, default=200)
    parser.add_argument("--average", type=int, default=5, help="checkpoints averaged")
    parser.add_argument("--evaluate", default="", help="score these checkpoints, no training")
    parser.add_argument("--eval_decode_examples", type=int, default=200,
                        help="dev sentences decoded at each dev evaluation (the trainer's)")
    parser.add_argument("--test_limit", type=int, default=0,
                        help="score only the first N test sentences (smoke tests)")
    parser.add_argument("--held_out", action="store_true",
                        help="also score the 2017 test sets (once, at the end)")
    parser.add_argument("--system", default=None, help="a name for the rows (side by side)")
    parser.add_argument("--field", action="append", default=[],
                        help="key=value added to every row (numbers stay numbers)")
    parser.add_argument("--out", default=None,
                        help="also append the rows here (benchmarks/results/multi30k.jsonl)")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser.parse_args(argv)


def scored_split(args) -> str:
    """The file stem of the split the stages score: test2016, or val with --score_on=dev."""
    return TEST if args.score_on == "test" else DEV


def read_tests(args) -> dict:
    """name -> (source lines, reference lines) of the scored sets."""
    names = [scored_split(args)] + (list(HELD_OUT) if args.held_out else [])
    limit = args.test_limit or None
    return {name: (read_text(args.raw_dir, name + ".en")[:limit],
                   read_text(args.raw_dir, name + ".de")[:limit]) for name in names}


def main(args=None):
    """`args` from the entry point, or parsed from the command line."""
    args = args or parse_args()
    from t2t_lite import registry
    from t2t_lite.data import datagen
    from t2t_lite.data.options import DatagenOptions
    from t2t_lite.runs.run import Run
    from t2t_lite.training import trainer
    from t2t_lite.training.options import EvalOptions, TrainOptions

    data_dir = args.data_dir or os.path.join(args.work_dir, "data")
    run = args.run_dir or os.path.join(args.work_dir, "run")
    problem = registry.problem("multi30k_ende")
    if not os.path.exists(os.path.join(data_dir, "multi30k_ende.datagen.json")):
        datagen.generate(problem, data_dir, args.raw_dir,
                         DatagenOptions(vocab_size=args.vocab_size),
                         log=lambda line: print(line, file=sys.stderr))
    problem.set_data_dir(data_dir)
    tests = read_tests(args)
    budgets = [float(m) for m in args.minutes.split(",") if m]
    common = {**({"system": args.system} if args.system else {}),
              **dict(parse_field(item) for item in args.field), **machine_fields()}

    spans: list[tuple[float, float]] = []  # (start, end) of each trainer call

    def emit(trained, name, hparams, last):
        scored = score_checkpoint(run, name, problem, hparams, data_dir, tests,
                                  args.average, args.held_out and last)
        if spans:
            scored["dev_nll_by_minute"] = dev_curve(read_dev_events(run), spans, scored["step"])
        append_row(stage_row(common, trained, scored, run_rates(run, scored["step"])),
                   args.out)

    if args.evaluate:
        hparams = Run.open(run).hparams
        names = args.evaluate.split(",")
        for i, name in enumerate(names):
            emit({"minutes": budgets[i] if i < len(budgets) else None,
                  "scored_on": scored_split(args)}, name, hparams, i == len(budgets) - 1)
        return
    hparams = registry.hparams(args.hparams).override(args.hparams_overrides)
    done = 0.0
    for i, minutes in enumerate(budgets):
        start = time.time()
        result = trainer.train(problem, hparams, run, data_dir, TrainOptions(
            train_minutes=minutes - done, save_checkpoints_steps=args.save_checkpoints_steps,
            keep_checkpoint_max=10_000,
            eval=EvalOptions(eval_decode_examples=args.eval_decode_examples)),
            log=lambda line: None)
        spans.append((start, time.time()))
        done = minutes
        emit(trained_fields(minutes, args, data_dir, time.time() - start, result),
             os.path.basename(result.checkpoint), hparams, i == len(budgets) - 1)
