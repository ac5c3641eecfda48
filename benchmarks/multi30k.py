"""Multi30k EN-DE on a wall-clock budget: the README recipe end to end, one JSON line per stage.

    python benchmarks/multi30k.py --raw_dir=../shared/data/multi30k --work_dir=runs/m30k \
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
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

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
    from t2t_lite.runs import weights
    from t2t_lite.training.evaluation import mean_loss

    names = checkpoints.list_checkpoints(run)
    ending = names[:names.index(name) + 1][-average:]
    averaging.average(run, averaging.choose(run, names=ending))
    record = {"checkpoint": name, "step": int(name.rsplit("-", 1)[1]),
              "averaged": ending, "bleu": {}, "decode_seconds": {}}
    for kind, checkpoint in (("last", name), ("averaged", "averaged")):
        model = weights.load_model(run, checkpoint)[0]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
    args = parser.parse_args()

    from t2t_lite import registry
    from t2t_lite.data import datagen
    from t2t_lite.runs import run_dir
    from t2t_lite.training import trainer
    from t2t_lite.data.options import DatagenOptions
    from t2t_lite.training.options import EvalOptions, TrainOptions

    data_dir = args.data_dir or os.path.join(args.work_dir, "data")
    run = args.run_dir or os.path.join(args.work_dir, "run")
    problem = registry.problem("multi30k_ende")
    if not os.path.exists(os.path.join(data_dir, "multi30k_ende.datagen.json")):
        datagen.generate(problem, data_dir, args.raw_dir,
                         DatagenOptions(vocab_size=args.vocab_size),
                         log=lambda line: print(line, file=sys.stderr))
    problem.set_data_dir(data_dir)
    first = TEST if args.score_on == "test" else DEV
    names = [(first, read_text(args.raw_dir, first + ".en"), read_text(args.raw_dir, first + ".de"))]
    if args.held_out:
        names += [(t, read_text(args.raw_dir, t + ".en"), read_text(args.raw_dir, t + ".de"))
                  for t in HELD_OUT]
    limit = args.test_limit or None
    tests = {name: (lines[:limit], refs[:limit]) for name, lines, refs in names}
    budgets = [float(m) for m in args.minutes.split(",") if m]

    if args.evaluate:
        hparams = run_dir.read_run(run)[0]
        for i, name in enumerate(args.evaluate.split(",")):
            record = {"minutes": budgets[i] if i < len(budgets) else None, "scored_on": first}
            record.update(score_checkpoint(run, name, problem, hparams, data_dir, tests,
                                           args.average, args.held_out and i == len(budgets) - 1))
            print(json.dumps(record), flush=True)
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
        done = minutes
        record = {"minutes": minutes, "hparams": args.hparams, "scored_on": first,
                  "data_dir": data_dir,
                  "overrides": args.hparams_overrides,
                  "wall_seconds": round(time.time() - start, 1),
                  # None (JSON null) when the run was too short to log a rate.
                  "tokens_per_second": (round(result.tokens_per_second, 1)
                                        if math.isfinite(result.tokens_per_second) else None)}
        record.update(score_checkpoint(
            run, os.path.basename(result.checkpoint), problem, hparams, data_dir, tests,
            args.average, args.held_out and i == len(budgets) - 1))
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
