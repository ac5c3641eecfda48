"""t2t_lite-decoder: decode a problem's test split, a file, or stdin.

    t2t_lite-decoder --output_dir=O                       # the problem's test split
    t2t_lite-decoder --output_dir=O --decode_from_file=in.txt --decode_to_file=out.txt
    echo "3 1 4" | t2t_lite-decoder --output_dir=O --decode_interactive
    t2t_lite-decoder --output_dir=O --decode_from_file=in.txt --sampling_temperature=1 \\
        --top_p=0.9 --num_samples=4 --seed=7          # samples instead of beam search
    t2t_lite-decoder --output_dir=O --score_file=pairs.tsv --score_to_file=scores.txt

The problem, model and default beam size / alpha / extra_length come from the
hparams the trainer saved in --output_dir. The test split, or a file decoded
with --reference, is scored with the problem's own metrics
(`Problem.eval_metrics`: exact-sequence accuracy for the algorithmic problems,
sacreBLEU with its signature and tokenized BLEU in the target language for
translation); every metric prints one line.

--sampling_temperature samples instead of searching (`t2t_lite.decoding.sampling`;
--top_k, --top_p, --seed, --num_samples); N > 1 samples are written as
--return_beams writes beams, text<TAB>score pairs on the input's line.
--score_file reads source<TAB>target lines and writes, for each, the model's
log-probability of the target (summed over its tokens, EOS included), the mean
per token and the number of tokens, tab-separated, by teacher forcing
(`t2t_lite.decoding.scoring`), without searching.
"""

from __future__ import annotations

import argparse
import sys
import time

from t2t_lite.bin import common
from t2t_lite.decoding import parallel
from t2t_lite.decoding.options import DecodeOptions

# The DecodeOptions fields that are flags, in their order on the command line; each
# flag's type, default and help are its field's (`common.add_option_flags`).
SEARCH = ("beam_size", "alpha", "extra_length", "return_beams", "batch_size", "jit_compile",
          "shards")
SAMPLING = ("sampling_temperature", "top_k", "top_p", "seed", "num_samples")


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    parser = common.ArgumentParser(prog="t2t_lite-decoder", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--checkpoint", default=None, help="e.g. ckpt-1200 (default newest)")
    parser.add_argument("--data_dir", default=None,
                        help="the problem's data (vocabulary) dir (default: the run's own)")
    parser.add_argument("--decode_split", default="test", help="split decoded by default")
    parser.add_argument("--decode_from_file", default=None,
                        help="decode this UTF-8 file, one input a line")
    parser.add_argument("--decode_to_file", default=None,
                        help="write one output line per input line here (atomically; "
                        "default: standard output)")
    parser.add_argument("--decode_interactive", action="store_true",
                        help="decode standard input, one line at a time")
    common.add_option_flags(parser, DecodeOptions, SEARCH)
    parser.add_argument("--unconstrained", action="store_true",
                        help="search without the problem's output constraint (wsj_parsing: "
                        "the beam may then build ill-formed trees)")
    sampling = parser.add_argument_group("sampling instead of beam search")
    common.add_option_flags(sampling, DecodeOptions, SAMPLING)
    scoring = parser.add_argument_group("scoring given pairs instead of decoding")
    scoring.add_argument("--score_file", default=None,
                         help="source<TAB>target lines: write each target's log-probability")
    scoring.add_argument("--score_to_file", default=None,
                         help="where --score_file's scores go (default: standard output)")
    parser.add_argument("--show", type=int, default=5, help="examples to print")
    parser.add_argument("--reference", default=None,
                        help="reference file (one line per input line): print the problem's "
                        "metrics, e.g. sacreBLEU and the paper's tokenized BLEU")
    common.add_common_flags(parser)
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


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
    if options.sampling:
        search = f"sampling at temperature {options.sampling_temperature:g}"
    print(f"{args.decode_split}: {len(report.hypotheses)} examples, {search}, {seconds:.1f} s")
    for score in report.scores:
        print(score.line)


def _write(path, text, count):
    """`count` lines of `text` to the file `path` (atomically), or to stdout for None."""
    import glob
    import os

    from t2t_lite import atomic

    if not path:
        print(text)
        return
    directory, name = os.path.split(os.path.abspath(path))
    atomic.remove_temporaries(directory, glob.escape(name))  # A killed decode's.
    try:  # Atomic: a full disk or a kill leaves the old file or none, never half.
        atomic.write_text(path, text + "\n" if count else "")
    except OSError as e:
        from t2t_lite.data.text_encoder import DataError

        raise DataError(f"cannot write {path}: {e.strerror or e}; "
                        "nothing was written under that name") from None
    print(f"wrote {count} lines to {path}", file=sys.stderr)


def _score_file(args, pairs, problem, model, hparams, options):
    from t2t_lite.decoding.scoring import score_pairs

    warn = lambda message: print(f"warning: {message}", file=sys.stderr)  # noqa: E731
    scores = score_pairs(problem, model, pairs, hparams.max_length, options.batch_size,
                         warn, _progress("scoring"))
    _write(args.score_to_file, "\n".join(
        f"{s.log_prob:.6f}\t{s.per_token:.6f}\t{s.num_tokens}" for s in scores), len(scores))
    tokens = sum(s.num_tokens for s in scores)
    total = sum(s.log_prob for s in scores)
    print(f"scored {len(scores)} pairs, {tokens} target tokens: log-probability "
          f"{total:.4f}, {total / tokens:.4f} per token", file=sys.stderr)


def _decode_lines(args, problem, model, hparams, options):
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
    if args.return_beams or options.num_samples > 1:
        text = "\n".join("\t".join(f"{t}\t{s:.4f}" for t, s in beams) for beams in results)
    else:
        text = "\n".join(beams[0][0] for beams in results)
    _write(args.decode_to_file, text, len(results))
    if references is not None:
        references = [problem.format_reference(r) for r in references]
        for score in problem.evaluate([beams[0][0] for beams in results], references, lines):
            print(score.line)


def _mode(args, options) -> str:
    """What the decoder does, in words; a UserError for flags that do not fit together."""
    from t2t_lite.errors import UserError

    if args.score_file and (args.decode_from_file or args.decode_interactive):
        raise UserError("--score_file scores given pairs: drop --decode_from_file and "
                        "--decode_interactive, or drop --score_file to decode")
    if args.score_file and options.sampling:
        raise UserError("--score_file scores given pairs without searching or sampling: "
                        "drop --sampling_temperature")
    if options.sampling and (args.beam_size is not None or args.alpha is not None):
        raise UserError("--beam_size and --alpha choose the search, --sampling_temperature "
                        "samples instead: drop one or the other")
    if args.score_to_file and not args.score_file:
        raise UserError("--score_to_file needs --score_file (source<TAB>target lines)")
    if args.score_file:
        return "scoring pairs, teacher-forced"
    if options.sampling:
        return (f"sampling at temperature {options.sampling_temperature:g}, top_k "
                f"{options.top_k}, top_p {options.top_p:g}, seed {options.seed}, "
                f"{options.num_samples} per input")
    return "greedy" if options.beam_size == 1 else f"beam {options.beam_size}"


def _shards(args) -> int:
    """--shards, or the default; one clear line for a count below 1."""
    from t2t_lite.errors import UserError

    if args.shards is None:
        return parallel.default_shards()
    if args.shards < 1:
        raise UserError(f"--shards must be at least 1 (got {args.shards})")
    return args.shards


def main(argv=None) -> int:
    args = parse_args(argv)

    def run():
        from t2t_lite.decoding.scoring import read_pairs
        from t2t_lite.runs.run import Run

        # Bad flags and files fail before loading.
        _mode(args, common.options_from_args(DecodeOptions, args, SAMPLING))
        pairs = read_pairs(args.score_file) if args.score_file else None
        shards = _shards(args)
        if not args.score_file:  # Thread pools for the searches, before TensorFlow runs.
            parallel.configure_threads(1 if args.jit else shards)
        loaded = Run.open(args.output_dir, args.data_dir)
        checkpoint = loaded.checkpoint(args.checkpoint)
        problem, model, hparams = loaded.problem, loaded.model(checkpoint), loaded.hparams
        options = DecodeOptions.from_hparams(hparams, **{
            **common.option_values(DecodeOptions, args, SEARCH + SAMPLING), "shards": shards,
            "constraint": None if args.unconstrained else problem.decode_constraint()})
        mode = _mode(args, options)
        constrained = "" if options.constraint is None or args.score_file \
            else ", constrained search"
        mode = f", {mode}" if args.score_file or options.sampling else ""
        print(f"decoding with {checkpoint}{mode}{constrained}", file=sys.stderr)
        if args.score_file:
            _score_file(args, pairs, problem, model, hparams, options)
        elif args.decode_from_file or args.decode_interactive:
            _decode_lines(args, problem, model, hparams, options)
        else:
            _decode_split(args, problem, model, options)

    return common.run("t2t_lite-decoder", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
