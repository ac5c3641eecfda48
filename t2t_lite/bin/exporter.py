"""t2t_lite-exporter: export a trained run as a SavedModel for TensorFlow Serving,
or as a CTranslate2 model.

    t2t_lite-exporter --output_dir=O --export_dir=E [--checkpoint=averaged|ckpt-N]
    t2t_lite-exporter --format=ctranslate2 --output_dir=O --export_dir=E
        [--checkpoint=averaged] [--quantization=float32|int8|int8_float32]

writes E/<version>/ (1 + the largest existing version) and prints its path.
Signatures: translate_ids (int32 ids in and out) and, for problems with
SentencePiece vocabularies (translation), serving_default (text in, text out:
tokenized with the source vocabulary and detokenized with the target
vocabulary in the graph, around the same translate_ids). The SentencePiece ops
are core TensorFlow ops (any TensorFlow binary, stock TF Serving included, loads
the export); --text_ops=tensorflow_text uses tensorflow_text's op instead and
adds E/<version>/ids/, an ids-only copy that loads without tensorflow_text. A parsing run (wsj_parsing, word-level source) gets
serving_default as sentences in, trees out, with the unknown-word classes, the
tree constraint and the tag dictionary in the graph and no custom op
(`t2t_lite.parsing.serving`).
The beam size, alpha and extra_length default to the run's hparams.
--sampling adds sample_ids (ids in, N samples out; temperature, top_k, top_p,
seed and num_samples are inputs: `t2t_lite.serving.sampling`), to both SavedModels.

--format=ctranslate2 (needs `pip install "t2t_lite[ctranslate2]"`) writes
E/<version>/ as a CTranslate2 model directory of a translation run (the
Transformer, SentencePiece vocabularies) with its SentencePiece model(s) and
t2t_lite.json (the beam size, alpha and extra_length it decodes with by default):
`t2t_lite.serving.ctranslate2_export`. A run CTranslate2 cannot express (another
model, d_k != d_model / h, no or a word-level vocabulary, a search constraint)
is refused in one line.
"""

from __future__ import annotations

import argparse
import sys

from t2t_lite.bin import common
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.errors import UserError

from t2t_lite.serving.ctranslate2_export import QUANTIZATIONS

FORMATS = ("saved_model", "ctranslate2")


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    parser = common.ArgumentParser(prog="t2t_lite-exporter", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--export_dir", required=True,
                        help="the export goes to EXPORT_DIR/<version>/")
    parser.add_argument("--checkpoint", default=None,
                        help="e.g. ckpt-1200 or averaged (default newest)")
    parser.add_argument("--data_dir", default=None, help="default: the run's data_dir")
    # DecodeOptions' fields: each flag's type, default and help are the field's.
    common.add_option_flags(parser, DecodeOptions, ("beam_size", "alpha", "extra_length"))
    parser.add_argument("--sampling", action="store_true",
                        help="also export sample_ids: sampling instead of beam search")
    parser.add_argument("--text_ops", choices=("core", "tensorflow_text"), default="core",
                        help="serving_default's SentencePiece: core TensorFlow ops (any "
                        "TensorFlow binary, TF Serving's included) or tensorflow_text's op")
    parser.add_argument("--format", choices=FORMATS, default="saved_model",
                        help="saved_model (TensorFlow Serving) or ctranslate2")
    parser.add_argument("--quantization", choices=QUANTIZATIONS, default=None,
                        help="--format=ctranslate2's weights (default float32)")
    common.add_common_flags(parser)
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    log = lambda message: print(message, file=sys.stderr)  # noqa: E731

    def run():
        if args.format == "ctranslate2":
            return _export_ctranslate2(args, log)
        if args.quantization is not None:
            raise ExporterFlagError("--quantization is for --format=ctranslate2; a SavedModel "
                                    "keeps the run's float32 weights")
        return _export_saved_model(args, log)

    return common.run("t2t_lite-exporter", run, args.verbose)


class ExporterFlagError(UserError, ValueError):
    """Exporter flags that do not go together."""


def _export_saved_model(args, log) -> int:
    from t2t_lite.serving import export

    result = export.export(
        args.output_dir, args.export_dir, args.checkpoint, beam_size=args.beam_size,
        alpha=args.alpha, extra_length=args.extra_length, data_dir=args.data_dir, log=log,
        sampling=args.sampling, text_ops=args.text_ops)
    log(f"exported {result.checkpoint} in {result.seconds:.1f} s, "
        f"{result.size_bytes / 2**20:.1f} MiB")
    if "serving_default" in result.signatures and result.ids_path == result.path:
        log("signatures: serving_default (text), translate_ids (ids); core "
            "TensorFlow ops only")
    elif "serving_default" in result.signatures:
        log(f"signatures: serving_default (text), translate_ids (ids); ids-only "
            f"SavedModel (no tensorflow_text needed): {result.ids_path}")
    else:
        log("signatures: translate_ids only (the problem has no SentencePiece "
            "vocabulary, so there is no text signature)")
    if args.sampling:
        log("signature sample_ids: inputs, temperature, top_k, top_p, seed, "
            "num_samples -> ids [B, N, L], scores [B, N]")
    print(result.path)
    return 0


def _export_ctranslate2(args, log) -> int:
    from t2t_lite.serving import ctranslate2_export

    if args.sampling:
        raise ExporterFlagError("--sampling is for --format=saved_model; a CTranslate2 model "
                                "samples at run time (translate_batch's sampling_topk)")
    result = ctranslate2_export.export_ctranslate2(
        args.output_dir, args.export_dir, args.checkpoint,
        quantization=args.quantization or "float32", data_dir=args.data_dir,
        beam_size=args.beam_size, alpha=args.alpha, extra_length=args.extra_length, log=log)
    log(f"exported {result.checkpoint} to CTranslate2 ({result.quantization}) in "
        f"{result.seconds:.1f} s, {result.size_bytes / 2**20:.1f} MiB")
    print(result.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
