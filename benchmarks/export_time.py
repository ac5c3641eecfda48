"""Time and size of `t2t_lite-exporter` for a randomly initialized model.

    python -m benchmarks.export time                    # base, 37,000-token vocabulary
    python -m benchmarks.export time --hparams=tiny --vocab=12

Writes a run directory (hparams, problem, one checkpoint of random weights) for the
ids-only problem algorithmic_reverse with the given vocabulary size, exports it with
`export.export` (the exporter CLI's library call: `translate_ids`, one traced search for
every padded source length), and appends one JSON row to --out (default
benchmarks/results/export_time.jsonl; "-" prints only): hparams, vocabulary,
parameters, the padded source lengths served, seconds, MiB on disk, the
signatures, and the machine (`machine.py`: CPU model, cores, load average, float32
matmul peak).
"""

from __future__ import annotations

import argparse
import datetime
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from t2t_lite import registry
from t2t_lite.runs import weights
from t2t_lite.decoding import decode_policy
from t2t_lite.serving import export
from t2t_lite.runs import run_dir
from benchmarks.machine import machine_fields
from benchmarks.rows import RESULTS, append_row


def export_row(hparams_name, vocab, params, result, source_lengths, machine) -> dict:
    """The row of one export: `result` is `export.export`'s (seconds, size_bytes, signatures)."""
    return {"bench": "export", "date": datetime.date.today().isoformat(),
            "hparams": hparams_name, "vocab": vocab, "params": params,
            "seconds": round(result.seconds, 1), "mib": round(result.size_bytes / 2**20, 1),
            "source_lengths": list(source_lengths), "signatures": list(result.signatures),
            "tensorflow": tf.__version__, **machine}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hparams", default="base")
    parser.add_argument("--vocab", type=int, default=37000)
    parser.add_argument("--out", default=os.path.join(RESULTS, "export_time.jsonl"),
                        help="the row is appended here (- : print only)")


def main(args):
    tf.config.threading.set_intra_op_parallelism_threads(2)
    machine = machine_fields()  # Before the export, in the same process.
    hparams = registry.hparams(args.hparams)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run")
        os.makedirs(out)
        run_dir.prepare_run(out, hparams, "algorithmic_reverse", args.vocab, args.vocab)
        model = weights.build_model(hparams, args.vocab)
        tf.train.CheckpointManager(
            tf.train.Checkpoint(model=weights.model_weights(model)), out, max_to_keep=1,
            checkpoint_name="ckpt").save(checkpoint_number=1)
        result = export.export(out, os.path.join(tmp, "export"))
        append_row(export_row(args.hparams, args.vocab, model.count_params(), result,
                              decode_policy.source_buckets(hparams.max_length), machine),
                   args.out)
