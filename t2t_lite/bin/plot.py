"""t2t_lite-plot: training curves of a run as a PNG, read from its TensorBoard events.

    t2t_lite-plot --output_dir=O                       # writes O/curves.png
    t2t_lite-plot --output_dir=O --output_file=curves.png

Draws the training loss, the dev loss, each dev metric of the problem (e.g.
exact_match, sacrebleu) and the learning rate over steps. A run without dev
events still gets its training curves.
"""

from __future__ import annotations

import argparse
import sys

from t2t_lite.bin import common


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    parser = common.ArgumentParser(prog="t2t_lite-plot", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--output_file", default=None, help="default: OUTPUT_DIR/curves.png")
    common.add_common_flags(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)

    def run():
        import matplotlib

        matplotlib.use("Agg")
        from t2t_lite.pictures import plot

        path, panels = plot.plot_run(args.output_dir, args.output_file)
        print(f"wrote {path} ({', '.join(panels)})")

    return common.run("t2t_lite-plot", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
