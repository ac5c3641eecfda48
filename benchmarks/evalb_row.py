"""One JSON row of EVALB figures (COLLINS.prm) for a tree file against gold trees.

    python -m benchmarks.parse evalb --gold=G --test=T --system=NAME [--field key=value ...]
    python -m benchmarks.parse evalb --gold=G --test=T --system=NAME --by_length=15,25,35

Scores the way `benchmarks/parsing.py` does (every line scored, "strict" F1
counting EVALB's error sentences as unparsed), for a parser that writes its
own trees (the supar anchor of `../shared/bench/parsing/`), and prints one row
with the machine's CPU model, so `parsing_side_by_side.sh` writes every row of
its table itself. With --by_length, one row per band of EVALB's sentence
length instead (bands end at the given lengths; the last is open), so two
parsers can be compared where they differ: long sentences, or short ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from benchmarks.machine import cpu_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gold", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--system", required=True)
    parser.add_argument("--field", action="append", default=[],
                        help="key=value added to the row (numbers stay numbers)")
    parser.add_argument("--split", default="test", help="recorded in the row")
    parser.add_argument("--by_length", default="",
                        help="comma-separated band ends, e.g. 15,25,35: a row per band")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser.parse_args(argv)


def main(args=None):
    """`args` from the entry point, or parsed from the command line."""
    args = args or parse_args()

    from t2t_lite.metrics.evalb import evaluate, load_params, strict_f1

    params = dataclasses.replace(load_params("COLLINS"), max_error=None)  # Score every line.
    with open(args.gold, encoding="utf-8") as f:
        gold = [line.rstrip("\n") for line in f]
    with open(args.test, encoding="utf-8") as f:
        test = [line.rstrip("\n") for line in f]
    result = evaluate(gold, test, params)
    fields = {"system": args.system, "cpu": cpu_model(), "split": args.split}
    for item in args.field:
        key, value = item.split("=", 1)
        try:
            fields[key] = json.loads(value)
        except json.JSONDecodeError:
            fields[key] = value
    if args.by_length:
        for band, totals in length_bands(result, [int(x) for x in args.by_length.split(",")]):
            print(json.dumps({**fields, "length": band, **_figures(totals)}), flush=True)
        return
    print(json.dumps({**fields, **_figures(result.all),
                      "f1_errors_as_unparsed": round(strict_f1(result, gold, params), 2)}),
          flush=True)


def _figures(t) -> dict:
    return {"sentences": t.sentences, "f1": round(t.fmeasure, 2), "recall": round(t.recall, 2),
            "precision": round(t.precision, 2), "errors": t.errors, "skipped": t.skipped,
            "gold_brackets": t.gold, "tagging": round(t.tag_accuracy, 2)}


def length_bands(result, ends: list[int]):
    """[(band name, Totals of its sentences)] by EVALB's sentence length: "1-15",
    "16-25", ..., then the open band ("36+")."""
    from t2t_lite.metrics.evalb import Totals

    bounds = [0] + sorted(ends)
    names = [f"{a + 1}-{b}" for a, b in zip(bounds, bounds[1:])] + [f"{bounds[-1] + 1}+"]
    totals = [Totals() for _ in names]
    for sentence in result.sentences:
        band = sum(sentence.length > end for end in bounds[1:])
        totals[band].add(sentence)
    return list(zip(names, totals))
