"""t2t_lite-bleu: sacreBLEU and the paper's tokenized BLEU of two files (and chrF, TER)."""

from __future__ import annotations

import argparse
from typing import Sequence

from t2t_lite.bin import common
from t2t_lite.metrics import bleu, chrf_ter

# --metrics names -> the metric printing one line each (BLEU prints two).
EXTRA_METRICS = {"chrf": chrf_ter.SacreChrf, "ter": chrf_ter.SacreTer}


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    parser = common.ArgumentParser(
        prog="t2t_lite-bleu",
        description="sacreBLEU (to report) and tokenized multi-bleu BLEU with "
        "compound splitting (comparable with the Transformer paper).")
    for flag, what in (("hypotheses", "system output"), ("reference", "reference")):
        parser.add_argument(f"--{flag}", required=True, metavar="FILE",
                            help=f"detokenized {what}, UTF-8, one segment a line")
    parser.add_argument("--lang", default="de", help="language for Moses tokenization")
    parser.add_argument("--metrics", default="bleu", type=_metric_names,
                        help="comma-separated, printed in this order: bleu (two lines: "
                        "sacreBLEU and tokenized), chrf (sacreBLEU's chrF2), ter "
                        "(sacreBLEU's TER, lower is better); default bleu")
    common.add_common_flags(parser, verbose=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`t2t_lite-bleu --hypotheses=FILE --reference=FILE [--lang=de] [--metrics=bleu,chrf,ter]`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    status = common.run(parser.prog, lambda: _print_bleu(args), tensorflow=False)
    if status:
        parser.exit(status)  # As argparse's own errors: SystemExit, the line already out.
    return 0


def _metric_names(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name != "bleu" and name not in EXTRA_METRICS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown metric {', '.join(unknown) or '(none)'}: use bleu, chrf or ter")
    return names


def _print_bleu(args) -> None:
    """Prints the lines of `main`'s metrics; a file it cannot read is a MetricError."""
    try:
        detok, tok = bleu.bleu_files(args.hypotheses, args.reference, args.lang)
        hyps, refs = bleu.read_lines(args.hypotheses), bleu.read_lines(args.reference)
    except OSError as e:
        raise bleu.MetricError(f"cannot read {e.filename}: {e.strerror or e}") from e
    for name in args.metrics:
        if name != "bleu":
            print(EXTRA_METRICS[name]().score(hyps, refs).line)
            continue
        print(f"sacreBLEU (detokenized, report this): {detok.format()} "
              f"{detok.signature}")
        print("tokenized BLEU (paper-comparable, moses + compound splitting): "
              f"{tok.format()}")


if __name__ == "__main__":
    raise SystemExit(main())
