"""t2t_lite-avg-checkpoints: average the last N checkpoints into OUTPUT_DIR/averaged/.

    t2t_lite-avg-checkpoints --output_dir=O --last=5          # base (section 6.1)
    t2t_lite-avg-checkpoints --output_dir=O --last=20         # big
    t2t_lite-avg-checkpoints --output_dir=O --checkpoints=ckpt-900,ckpt-1000
    t2t_lite-decoder --output_dir=O --checkpoint=averaged
"""

from __future__ import annotations

import argparse
import sys

from t2t_lite.bin import common


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    parser = common.ArgumentParser(prog="t2t_lite-avg-checkpoints", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--last", type=int, default=5, help="average the newest N")
    parser.add_argument("--checkpoints", default=None, help="comma-separated names instead")
    common.add_common_flags(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)

    def run():
        from t2t_lite.runs import averaging

        names = [n.strip() for n in args.checkpoints.split(",")] if args.checkpoints else None
        warn = lambda message: print(f"warning: {message}", file=sys.stderr)  # noqa: E731
        paths = averaging.choose(args.output_dir, args.last, names, warn)
        print("averaging " + ", ".join(paths))
        print(f"wrote {averaging.average(args.output_dir, paths)}")

    return common.run("t2t_lite-avg-checkpoints", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
