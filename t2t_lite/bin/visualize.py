"""t2t_lite-visualize: draw what a trained model attends to, for one input.

    t2t_lite-visualize --output_dir=O --input="3 1 4 1 5"                 # O/attention.html
    t2t_lite-visualize --output_dir=O --input="..." --output_file=attention.png
    t2t_lite-visualize --output_dir=O --input="A man rides a horse." \\
                       --target="Ein Mann reitet ein Pferd." --checkpoint=averaged

The input is decoded greedily (or --target is used), then the teacher-forced
forward pass gives the encoder self-attention, decoder self-attention and
encoder-decoder attention of every layer and head, drawn with the subword
tokens on the axes: a PNG grid, or an HTML page (opens offline) where you pick
the kind, layer and head and hover a token to see what it attends to.
"""

from __future__ import annotations

import argparse
import sys

from t2t_lite.bin import common


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="t2t_lite-visualize", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--input", required=True, help="the source sentence")
    parser.add_argument("--target", default=None,
                        help="the target sentence (default: the model's greedy output)")
    parser.add_argument("--checkpoint", default=None,
                        help="ckpt-N, averaged, best or a path (default: the newest)")
    parser.add_argument("--data_dir", default=None,
                        help="the problem's data (vocabulary) dir (default: the run's own)")
    parser.add_argument("--output_file", default=None,
                        help="attention.html (default, in output_dir) or a .png file")
    common.add_verbose_flag(parser)
    args = parser.parse_args(argv)

    def run():
        import matplotlib

        matplotlib.use("Agg")
        from t2t_lite.pictures import visualize

        warn = lambda message: print(f"warning: {message}", file=sys.stderr)  # noqa: E731
        path, maps = visualize.visualize(args.output_dir, args.input, args.target,
                                         args.checkpoint, args.output_file, warn,
                                         data_dir=args.data_dir)
        print(f"source: {' '.join(maps.source)}")
        print(f"target: {' '.join(maps.target)}")
        print(f"wrote {path} ({maps.num_layers} layers x {maps.num_heads} heads x {len(maps.kinds)} kinds)")

    return common.run("t2t_lite-visualize", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
