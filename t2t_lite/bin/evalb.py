"""t2t_lite-evalb: EVALB's labelled bracketing scores (recall, precision, F1, tagging).

    t2t_lite-evalb --gold sec23.gold --test sec23.parsed              # COLLINS.prm
    t2t_lite-evalb --gold G --test T --prm new                        # new.prm (2006)
    t2t_lite-evalb --gold G --test T --prm path/to/sample.prm

One bracketed tree per line in each file. Prints EVALB's report (one row per
sentence, then the summary for all sentences and for length <= CUTOFF_LEN) on
standard output and EVALB's error lines ("ID : Length unmatch (4|5)") on
standard error, as `evalb -p PRM GOLD TEST` does.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from t2t_lite.bin import common


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    parser = common.ArgumentParser(prog="t2t_lite-evalb", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gold", required=True, help="gold trees, one per line")
    parser.add_argument("--test", required=True, help="parser output, one tree per line")
    parser.add_argument("--prm", default="COLLINS",
                        help="parameter file, or the built-in COLLINS (default) or new")
    parser.add_argument("-c", "--cutoff_len", type=int, default=None,
                        help="override the parameter file's CUTOFF_LEN (EVALB's -c)")
    parser.add_argument("-e", "--max_error", type=int, default=None,
                        help="override the parameter file's MAX_ERROR (EVALB's -e)")
    common.add_common_flags(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)

    def run():
        from t2t_lite.metrics import evalb, trees

        params = evalb.load_params(args.prm)
        if args.cutoff_len is not None:
            params = dataclasses.replace(params, cutoff_len=args.cutoff_len)
        if args.max_error is not None:
            params = dataclasses.replace(params, max_error=args.max_error)
        for warning in params.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        gold, test = trees.read_file(args.gold, "gold"), trees.read_file(args.test, "test")
        result = evalb.evaluate(gold, test, params, files=(f"the gold file {args.gold}",
                                                           f"the test file {args.test}"))
        for message in result.messages:
            print(message, file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.write(result.report())

    return common.run("t2t_lite-evalb", run, args.verbose, tensorflow=False)


if __name__ == "__main__":
    sys.exit(main())
