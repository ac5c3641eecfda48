"""t2t_lite-bleu: sacreBLEU and the paper's tokenized BLEU of two files."""

from __future__ import annotations

import argparse
from typing import Sequence

from t2t_lite.bin import common
from t2t_lite.metrics import bleu


def main(argv: Sequence[str] | None = None) -> int:
    """`t2t_lite-bleu --hypotheses=FILE --reference=FILE [--lang=de]`."""
    parser = argparse.ArgumentParser(
        prog="t2t_lite-bleu",
        description="sacreBLEU (to report) and tokenized multi-bleu BLEU with "
        "compound splitting (comparable with the Transformer paper).")
    for flag, what in (("hypotheses", "system output"), ("reference", "reference")):
        parser.add_argument(f"--{flag}", required=True, metavar="FILE",
                            help=f"detokenized {what}, UTF-8, one segment a line")
    parser.add_argument("--lang", default="de", help="language for Moses tokenization")
    args = parser.parse_args(argv)
    status = common.run(parser.prog, lambda: _print_bleu(args), tensorflow=False)
    if status:
        parser.exit(status)  # As argparse's own errors: SystemExit, the line already out.
    return 0


def _print_bleu(args) -> None:
    """Prints both BLEU lines of `main`; a file it cannot read is a MetricError."""
    try:
        detok, tok = bleu.bleu_files(args.hypotheses, args.reference, args.lang)
    except OSError as e:
        raise bleu.MetricError(f"cannot read {e.filename}: {e.strerror or e}") from e
    print(f"sacreBLEU (detokenized, report this): {detok.format()} "
          f"{detok.signature}")
    print("tokenized BLEU (paper-comparable, moses + compound splitting): "
          f"{tok.format()}")


if __name__ == "__main__":
    raise SystemExit(main())
