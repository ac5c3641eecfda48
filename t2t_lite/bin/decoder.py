"""t2t_lite-decoder: decode a problem's test split, a file, or stdin.

    t2t_lite-decoder --output_dir=O                       # the problem's test split
    t2t_lite-decoder --output_dir=O --decode_from_file=in.txt --decode_to_file=out.txt
    echo "3 1 4" | t2t_lite-decoder --output_dir=O --decode_interactive

The problem, model and default beam size / alpha / extra_length come from the
hparams the trainer saved in --output_dir. The test split, or a file decoded
with --reference, is scored with the problem's own metrics
(`Problem.eval_metrics`: exact-sequence accuracy for the algorithmic problems,
sacreBLEU with its signature and tokenized BLEU in the target language for
translation); every metric prints one line.
"""

from __future__ import annotations

import argparse
import sys
import time

from t2t_lite.bin import common
from t2t_lite.decoding.options import DecodeOptions


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="t2t_lite-decoder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--checkpoint", default=None, help="e.g. ckpt-1200 (default newest)")
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--decode_split", default="test", help="split decoded by default")
    parser.add_argument("--decode_from_file", default=None)
    parser.add_argument("--decode_to_file", default=None)
    parser.add_argument("--decode_interactive", action="store_true")
    for flag, kind in (("beam_size", int), ("alpha", float), ("extra_length", int)):
        parser.add_argument(f"--{flag}", type=kind, default=None,
                            help="default: the run's hparams")
    parser.add_argument("--return_beams", action="store_true")
    parser.add_argument("--batch_size", type=int,
                        default=common.field_default(DecodeOptions, "batch_size"),
                        help="sentences per batch (default: %(default)s)")
    parser.add_argument("--jit", action="store_true", help="compile decoding with XLA")
    parser.add_argument("--unconstrained", action="store_true",
                        help="search without the problem's output constraint (wsj_parsing: "
                        "the beam may then build ill-formed trees)")
    parser.add_argument("--show", type=int, default=5, help="examples to print")
    parser.add_argument("--reference", default=None,
                        help="reference file (one line per input line): print the problem's "
                        "metrics, e.g. sacreBLEU and the paper's tokenized BLEU")
    common.add_verbose_flag(parser)
    return parser.parse_args(argv)


def _progress(label):
    """Progress on stderr (rate, ETA) for decodes that take more than a few seconds."""
    from t2t_lite.progress import Progress

    return lambda total: Progress(sys.stderr, label, total, unit="sentences", quiet_for=3.0)


def _decode_split(args, problem, model, options):
    from t2t_lite.decoding.splits import decode_split

    start = time.time()
    report = decode_split(problem, model, args.decode_split, options, args.data_dir,
                                   _progress("decoding " + args.decode_split))
    seconds = time.time() - start
    for source, hyp, ref in list(zip(report.sources, report.hypotheses, report.references))[
            :args.show]:
        print(f"  {source}  ->  {hyp}   (reference: {ref})")
    search = "greedy" if options.beam_size == 1 else f"beam {options.beam_size}"
    print(f"{args.decode_split}: {len(report.hypotheses)} examples, {search}, {seconds:.1f} s")
    for score in report.scores:
        print(score.line)


def _decode_lines(args, problem, model, hparams, options):
    import glob
    import os

    from t2t_lite import atomic
    from t2t_lite.decoding.splits import decode_lines
    from t2t_lite.decoding.text_io import read_references, read_source_lines, split_source_text

    warn = lambda message: print(f"warning: {message}", file=sys.stderr)  # noqa: E731
    if args.decode_interactive:
        stdin = getattr(sys.stdin, "buffer", None)  # Bytes, so bad UTF-8 is named.
        data = stdin.read() if stdin is not None else sys.stdin.read().encode("utf-8")
        lines = split_source_text(data, "standard input")
    else:
        lines = read_source_lines(args.decode_from_file)
    references = read_references(args.reference, len(lines)) if args.reference \
        else None  # Checked before decoding.
    results = decode_lines(problem, model, lines, options, hparams.max_length, warn,
                                    _progress("decoding"))
    if args.return_beams:
        text = "\n".join("\t".join(f"{t}\t{s:.4f}" for t, s in beams) for beams in results)
    else:
        text = "\n".join(beams[0][0] for beams in results)
    if args.decode_to_file:
        directory, name = os.path.split(os.path.abspath(args.decode_to_file))
        atomic.remove_temporaries(directory, glob.escape(name))  # A killed decode's.
        try:  # Atomic: a full disk or a kill leaves the old file or none, never half.
            atomic.write_text(args.decode_to_file, text + "\n" if results else "")
        except OSError as e:
            from t2t_lite.data.text_encoder import DataError

            raise DataError(f"cannot write {args.decode_to_file}: {e.strerror or e}; "
                            "nothing was written under that name") from None
        print(f"wrote {len(results)} lines to {args.decode_to_file}", file=sys.stderr)
    else:
        print(text)
    if references is not None:
        references = [problem.format_reference(r) for r in references]
        for score in problem.evaluate([beams[0][0] for beams in results], references, lines):
            print(score.line)


def main(argv=None) -> int:
    args = parse_args(argv)

    def run():
        from t2t_lite.runs.load import load_run

        loaded = load_run(args.output_dir, args.checkpoint, args.data_dir)
        problem, model, hparams = loaded.problem, loaded.model, loaded.hparams
        options = DecodeOptions.from_hparams(
            hparams, beam_size=args.beam_size, alpha=args.alpha,
            extra_length=args.extra_length, batch_size=args.batch_size,
            return_beams=args.return_beams or None, jit_compile=args.jit or None,
            constraint=None if args.unconstrained else problem.decode_constraint())
        constrained = "" if options.constraint is None else ", constrained search"
        print(f"decoding with {loaded.checkpoint}{constrained}", file=sys.stderr)
        if args.decode_from_file or args.decode_interactive:
            _decode_lines(args, problem, model, hparams, options)
        else:
            _decode_split(args, problem, model, options)

    return common.run("t2t_lite-decoder", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
