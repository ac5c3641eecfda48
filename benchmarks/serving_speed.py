"""serving_default's speed with core-op SentencePiece against tensorflow_text's op.

    python -m benchmarks.export serving WORK_DIR [--batch=64 --batches=4 --threads=1]

Builds a small translation run in WORK_DIR (datagen of `translate_files` over newstest2013
EN-DE with an 8,000-piece vocabulary, a `tiny` model trained `--train_steps` steps), exports it
twice (`--text_ops=core`, the default, and `--text_ops=tensorflow_text`), loads each SavedModel
and times, on the same batches of newstest2014 EN lines: the whole `serving_default` signature
(tokenize, beam search, detokenize) and the source tokenizer alone (the one the export holds,
built in this process). Appends one JSON row per
variant to --out (sentences/s, the machine's fields: `machine.py`).
"""

from __future__ import annotations

import argparse
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.machine import machine_fields

from benchmarks.rows import RESULTS, append_row

DATA = os.path.join(HERE, "..", "..", "shared", "data", "wmt14")


def build_run(work_dir: str, steps: int) -> str:
    from t2t_lite import registry
    from t2t_lite.data import datagen
    from t2t_lite.data.options import DatagenOptions
    from t2t_lite.training import trainer
    from t2t_lite.training.options import EvalOptions, TrainOptions

    raw, data, run = (os.path.join(work_dir, n) for n in ("raw", "data", "run"))
    if os.path.exists(os.path.join(run, "checkpoint")):
        return run
    os.makedirs(raw, exist_ok=True)
    for side in ("en", "de"):
        link = os.path.join(raw, f"train.{side}")
        if not os.path.exists(link):
            os.symlink(os.path.abspath(os.path.join(DATA, f"newstest2013.{side}")), link)
    problem = registry.problem("translate_files")
    datagen.generate(problem, data, raw, DatagenOptions(vocab_size=8000), log=lambda _: None)
    trainer.train(problem, registry.hparams("tiny"), run, data,
                  TrainOptions(eval=EvalOptions(eval_every_steps=0), train_steps=steps),
                  log=lambda _: None)
    return run


def rate(fn, batches) -> float:
    """Sentences/s of fn over the batches, after one warm-up call."""
    fn(batches[0])
    start = time.perf_counter()
    for batch in batches:
        fn(batch)
    return sum(len(b) for b in batches) / (time.perf_counter() - start)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("work_dir")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train_steps", type=int, default=300)
    parser.add_argument("--out", default=os.path.join(RESULTS, "serving_speed.jsonl"))


def main(args):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    import tensorflow_text  # noqa: F401  (registers the op for the tensorflow_text export)
    from t2t_lite.serving import export

    machine = machine_fields()
    run = build_run(args.work_dir, args.train_steps)
    with open(os.path.join(DATA, "newstest2014.en"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f][:args.batch * args.batches]
    batches = [tf.constant(lines[i:i + args.batch]) for i in range(0, len(lines), args.batch)]
    for text_ops in export.TEXT_OPS:
        result = export.export(run, os.path.join(args.work_dir, f"export_{text_ops}"),
                               text_ops=text_ops)
        loaded = tf.saved_model.load(result.path)
        serve = loaded.signatures["serving_default"]
        with open(os.path.join(args.work_dir, "data", "vocab.translate_files.model"), "rb") as f:
            tokenize = tf.function(export._tokenizer(f.read(), 0, text_ops).tokenize)
        append_row({"bench": "serving_speed", "text_ops": text_ops, "batch": args.batch,
                    "batches": len(batches), "threads": args.threads,
                    "train_steps": args.train_steps,
                    "serving_default_sentences_per_s": round(rate(
                        lambda b: serve(inputs=b), batches), 1),
                    "tokenize_sentences_per_s": round(rate(tokenize, batches), 1),
                    "tensorflow": tf.__version__, **machine}, args.out)
