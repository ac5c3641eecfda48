"""A trained Multi30k run served three ways, side by side in one process:
t2t_lite's decoder, and its CTranslate2 exports in float32 and int8; one JSON row each.

    python -m benchmarks.export ctranslate2 --run_dir=runs/m30k/run \
        --raw_dir=../shared/data/multi30k --checkpoint=averaged --threads=2 \
        --out=benchmarks/results/ctranslate2_multi30k.jsonl

The run is one of `benchmarks/multi30k.py` (the README recipe; `averaged` is the
average it wrote for its last stage). test_2016_flickr's English lines are
translated with beam 4 (the recipe's alpha) by each system in turn, on the same
number of threads (TensorFlow's intra-op pool and CTranslate2's intra_threads),
each timed from text in to text out (t2t_lite on its second pass, after tracing
its searches; CTranslate2 after loading), and scored with cased sacreBLEU (13a)
against the raw references. Speed is sentences/s and target tokens/s, the tokens being
the target SentencePiece pieces of each system's own output (one count for all).
Each export is written by `t2t_lite.serving.ctranslate2_export.export_ctranslate2`
(what `t2t_lite-exporter --format=ctranslate2` runs) into WORK_DIR (a temporary
directory unless given). Rows carry the machine (`machine.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


from benchmarks.machine import machine_fields


from benchmarks.rows import append_row, parse_field
from benchmarks.multi30k import read_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run_dir", required=True, help="a multi30k_ende run")
    parser.add_argument("--raw_dir", required=True, help="Multi30k task 1 raw files")
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--test", default="test_2016_flickr",
                        help="never a held-out test_2017 set (they are not for comparisons)")
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quantizations", default="float32,int8")
    parser.add_argument("--limit", type=int, default=0, help="first N lines only (smoke runs)")
    parser.add_argument("--work_dir", default=None, help="where the exports go")
    parser.add_argument("--field", action="append", default=[],
                        help="key=value added to every row")
    parser.add_argument("--out", default=None, help="also append the rows here")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser.parse_args(argv)


def t2t_lite_translate(run_dir, checkpoint, lines, beam_size):
    """(outputs, seconds, first-pass seconds, checkpoint path) of t2t_lite's decoder.

    Timed on its second pass over `lines`, as CTranslate2 is after loading: the
    first pass (kept in the row) includes tracing the search functions.
    """
    from t2t_lite.decoding.options import DecodeOptions
    from t2t_lite.decoding.splits import decode_lines
    from t2t_lite.runs.run import Run

    run = Run.open(run_dir)
    path = run.checkpoint(checkpoint)
    model, hparams, problem = run.model(path), run.hparams, run.problem
    options = DecodeOptions.from_hparams(hparams, beam_size=beam_size, batch_size=64)
    start = time.time()  # The first pass traces one search per padded source length.
    decode_lines(problem, model, lines, options, hparams.max_length, warn=lambda _: None)
    first = time.time() - start
    start = time.time()
    results = decode_lines(problem, model, lines, options, hparams.max_length,
                           warn=lambda _: None)
    return [beams[0][0] for beams in results], time.time() - start, first, path


def ctranslate2_translate(export_path, lines, beam_size, threads):
    """(outputs, seconds) of a CTranslate2 export on `lines`, loading outside the timing."""
    from t2t_lite.serving import ctranslate2_serving

    model = ctranslate2_serving.load(export_path, intra_threads=threads, inter_threads=1)
    ctranslate2_serving.translate_text(model, lines[:8], beam_size=beam_size)
    start = time.time()
    outputs = ctranslate2_serving.translate_text(model, lines, beam_size=beam_size,
                                                 max_batch_size=64)
    return outputs, time.time() - start


def row(system, outputs, seconds, references, target_vocab, common, **extra) -> dict:
    from t2t_lite.metrics.bleu import sacrebleu_score

    result = sacrebleu_score(outputs, references)
    tokens = sum(len(target_vocab.encode(text)) for text in outputs)
    return {"system": system, **common, "sentences": len(outputs),
            "bleu": round(result.score, 2), "signature": result.signature,
            "decode_seconds": round(seconds, 2),
            "sentences_per_s": round(len(outputs) / seconds, 1),
            "target_tokens_per_s": round(tokens / seconds, 1), **extra}


def main(args=None):
    """`args` from the entry point, or parsed from the command line."""
    args = args or parse_args()
    if args.test.startswith("test_2017"):
        sys.exit("ctranslate2_multi30k.py: the 2017 test sets are held out; use test_2016_flickr")
    os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.threads)
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    from t2t_lite.data.text_encoder import SubwordVocab
    from t2t_lite.serving.ctranslate2_export import METADATA_FILE, export_ctranslate2

    limit = args.limit or None
    lines = read_text(args.raw_dir, args.test + ".en")[:limit]
    references = read_text(args.raw_dir, args.test + ".de")[:limit]
    common = {"test": args.test, "beam_size": args.beam_size, "threads": args.threads,
              **dict(parse_field(item) for item in args.field),
              **machine_fields()}
    outputs, seconds, first, path = t2t_lite_translate(args.run_dir, args.checkpoint, lines,
                                                args.beam_size)
    work = args.work_dir or tempfile.mkdtemp(prefix="ct2_m30k_")
    exports = {q: export_ctranslate2(args.run_dir, os.path.join(work, q), args.checkpoint, q)
               for q in args.quantizations.split(",")}
    export_dir = next(iter(exports.values())).path
    with open(os.path.join(export_dir, METADATA_FILE), encoding="utf-8") as f:
        target_vocab = SubwordVocab.load(os.path.join(export_dir, json.load(f)["target_spm"]))
    common["checkpoint"] = os.path.basename(path)
    append_row(row("t2t_lite decoder", outputs, seconds, references, target_vocab, common,
                   first_pass_seconds=round(first, 2)), args.out)
    for quantization, export in exports.items():
        outputs, seconds = ctranslate2_translate(export.path, lines, args.beam_size,
                                                 args.threads)
        append_row(row(f"CTranslate2 {quantization}", outputs, seconds, references,
                       target_vocab, common, export_mib=round(export.size_bytes / 2**20, 1),
                       quantization=quantization), args.out)
