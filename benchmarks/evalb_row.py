"""One JSON row of EVALB figures (COLLINS.prm) for a tree file against gold trees.

    python benchmarks/evalb_row.py --gold=G --test=T --system=NAME [--field key=value ...]

Scores the way `benchmarks/parsing.py` does (every line scored, "strict" F1
counting EVALB's error sentences as unparsed), for a parser that writes its
own trees (the supar anchor of `../shared/bench/parsing/`), and prints one row
with the machine's CPU model, so `parsing_side_by_side.sh` writes every row of
its table itself.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from machine import cpu_model  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gold", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--system", required=True)
    parser.add_argument("--field", action="append", default=[],
                        help="key=value added to the row (numbers stay numbers)")
    args = parser.parse_args()

    from t2t_lite.metrics.evalb import evaluate, load_params, strict_f1

    params = dataclasses.replace(load_params("COLLINS"), max_error=None)  # Score every line.
    with open(args.gold, encoding="utf-8") as f:
        gold = [line.rstrip("\n") for line in f]
    with open(args.test, encoding="utf-8") as f:
        test = [line.rstrip("\n") for line in f]
    result = evaluate(gold, test, params)
    t = result.all
    row = {"system": args.system, "cpu": cpu_model(), "split": "test",
           "sentences": t.sentences, "f1": round(t.fmeasure, 2), "recall": round(t.recall, 2),
           "precision": round(t.precision, 2),
           "f1_errors_as_unparsed": round(strict_f1(result, gold, params), 2),
           "errors": t.errors, "skipped": t.skipped, "tagging": round(t.tag_accuracy, 2)}
    for item in args.field:
        key, value = item.split("=", 1)
        try:
            row[key] = json.loads(value)
        except json.JSONDecodeError:
            row[key] = value
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
