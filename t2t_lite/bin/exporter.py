"""t2t_lite-exporter: export a trained run as a SavedModel for TensorFlow Serving.

    t2t_lite-exporter --output_dir=O --export_dir=E [--checkpoint=averaged|ckpt-N]

writes E/<version>/ (1 + the largest existing version) and prints its path.
Signatures: translate_ids (int32 ids in and out) and, for problems with
SentencePiece vocabularies (translation), serving_default (text in, text out:
tokenized with the source vocabulary and detokenized with the target
vocabulary in the graph, with tensorflow_text, around the same translate_ids).
For translation problems, E/<version>/ids/ is an ids-only copy that loads
without tensorflow_text. A parsing run (wsj_parsing, word-level source) gets
serving_default as sentences in, trees out, with the unknown-word classes, the
tree constraint and the tag dictionary in the graph and no custom op
(`t2t_lite.parsing.serving`).
The beam size, alpha and extra_length default to the run's hparams.
--sampling adds sample_ids (ids in, N samples out; temperature, top_k, top_p,
seed and num_samples are inputs: `t2t_lite.serving.sampling`), to both SavedModels.
"""

from __future__ import annotations

import argparse
import sys

from t2t_lite.bin import common


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="t2t_lite-exporter", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="the trainer's output_dir")
    parser.add_argument("--export_dir", required=True,
                        help="the SavedModel goes to EXPORT_DIR/<version>/")
    parser.add_argument("--checkpoint", default=None,
                        help="e.g. ckpt-1200 or averaged (default newest)")
    parser.add_argument("--data_dir", default=None, help="default: the run's data_dir")
    parser.add_argument("--beam_size", type=int, default=None, help="default: the run's hparams")
    parser.add_argument("--alpha", type=float, default=None, help="default: the run's hparams")
    parser.add_argument("--extra_length", type=int, default=None,
                        help="default: the run's hparams")
    parser.add_argument("--sampling", action="store_true",
                        help="also export sample_ids: sampling instead of beam search")
    common.add_verbose_flag(parser)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)

    def run():
        from t2t_lite.serving import export

        log = lambda message: print(message, file=sys.stderr)  # noqa: E731
        result = export.export(
            args.output_dir, args.export_dir, args.checkpoint, beam_size=args.beam_size,
            alpha=args.alpha, extra_length=args.extra_length, data_dir=args.data_dir, log=log,
            sampling=args.sampling)
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

    return common.run("t2t_lite-exporter", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
