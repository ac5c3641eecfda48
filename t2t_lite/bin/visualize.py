"""t2t_lite-visualize: draw what a trained model attends to, for one input.

    t2t_lite-visualize --output_dir=O --input="3 1 4 1 5"                 # O/attention.html
    t2t_lite-visualize --output_dir=O --input="..." --output_file=attention.png
    t2t_lite-visualize --output_dir=O --input="A man rides a horse." \\
                       --target="Ein Mann reitet ein Pferd." --checkpoint=averaged
    t2t_lite-visualize --output_dir=O --head_roles [--split=dev] [--examples=500]

The input is decoded greedily (or --target is used), then the teacher-forced
forward pass gives the encoder self-attention, decoder self-attention and
encoder-decoder attention of every layer and head, drawn with the subword
tokens on the axes: a PNG grid, or an HTML page (opens offline) where you pick
the kind, layer and head and hover a token to see what it attends to.

--head_roles (a Transformer only) counts instead, over the first --examples
sentences of --split, the share of source tokens whose largest encoder
self-attention weight each head puts on the previous token, the next one,
itself, the sentence's rarest token (by its count in the training sources) and
EOS (Voita et al. 2019; t2t_lite/pictures/head_roles.py defines each count).
It prints one line per layer and head, with the head's role when its largest
share reaches --threshold, and writes O/head_roles.png (or --output_file), a
heat map, with the figures beside it in head_roles.json.
"""

from __future__ import annotations

import argparse
import sys

from t2t_lite.bin import common

PROG = "t2t_lite-visualize"
HEAD_ROLES_FLAGS = ("split", "examples", "frequency_examples", "threshold")


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    from t2t_lite.pictures import head_roles as roles

    parser = common.ArgumentParser(prog=PROG, description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--input", default=None,
                        help="the source sentence (required unless --head_roles)")
    parser.add_argument("--target", default=None,
                        help="the target sentence (default: the model's greedy output)")
    parser.add_argument("--checkpoint", default=None,
                        help="ckpt-N, averaged, best or a path (default: the newest)")
    parser.add_argument("--data_dir", default=None,
                        help="the problem's data (vocabulary) dir (default: the run's own)")
    parser.add_argument("--output_file", default=None,
                        help="attention.html (default, in output_dir) or a .png file; "
                             "with --head_roles, head_roles.png")
    group = parser.add_argument_group("head roles (Voita et al. 2019)")
    group.add_argument("--head_roles", action="store_true",
                       help="count what each encoder head attends to most, over a split")
    group.add_argument("--split", default=None, help="the split counted (default: dev)")
    group.add_argument("--examples", type=int, default=None,
                       help=f"its first N examples (default: {roles.EXAMPLES})")
    group.add_argument("--frequency_examples", type=int, default=None,
                       help="training examples whose source tokens give the rarest token "
                            f"(default: {roles.FREQUENCY_EXAMPLES}; 0: all)")
    group.add_argument("--threshold", type=float, default=None,
                       help=f"the least share that names a head's role "
                            f"(default: {roles.THRESHOLD})")
    common.add_common_flags(parser)
    return parser


def _usage_error(args) -> str | None:
    """The one-line error for flags that do not go together, None if they do."""
    if not args.head_roles:
        if args.input is None:
            return "give --input (the attention of one sentence) or --head_roles"
        given = [f"--{name}" for name in HEAD_ROLES_FLAGS if getattr(args, name) is not None]
        return f"{', '.join(given)} go with --head_roles" if given else None
    if args.input is not None or args.target is not None:
        return "--head_roles counts over a split; leave out --input and --target"
    return None


def _head_roles(args) -> None:
    from t2t_lite.pictures import head_roles

    options = {name: getattr(args, name) for name in HEAD_ROLES_FLAGS
               if getattr(args, name) is not None}
    picture, json_path, roles, about = head_roles.run_head_roles(
        args.output_dir, checkpoint=args.checkpoint, output_file=args.output_file,
        data_dir=args.data_dir, **options)
    print(f"encoder head roles of {about['problem']} ({about['checkpoint']}): "
          f"{roles.tokens} tokens of {roles.examples} {about['split']} examples; rarest by "
          f"{about['frequency_examples']} training sources; role at share >= "
          f"{roles.threshold:g}")
    print("\n".join(head_roles.table(roles)))
    print(f"wrote {picture} and {json_path} ({roles.num_layers} layers x "
          f"{roles.num_heads} heads x {len(roles.roles)} roles)")


def _attention(args) -> None:
    from t2t_lite.pictures import visualize

    warn = lambda message: print(f"warning: {message}", file=sys.stderr)  # noqa: E731
    path, maps = visualize.visualize(args.output_dir, args.input, args.target,
                                     args.checkpoint, args.output_file, warn,
                                     data_dir=args.data_dir)
    print(f"source: {' '.join(maps.source)}")
    print(f"target: {' '.join(maps.target)}")
    print(f"wrote {path} ({maps.num_layers} layers x {maps.num_heads} heads x {len(maps.kinds)} kinds)")


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = _usage_error(args)
    if problem:
        print(parser.usage_line(problem), file=sys.stderr)
        return 2

    def run():
        import matplotlib

        matplotlib.use("Agg")
        (_head_roles if args.head_roles else _attention)(args)

    return common.run(PROG, run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
