"""Time and size of `t2t_lite-exporter` for a randomly initialized model.

    python benchmarks/export_time.py                    # base, 37,000-token vocabulary
    python benchmarks/export_time.py --hparams tiny --vocab 16

Writes a run directory (hparams, problem, one checkpoint of random weights) for the
ids-only problem algorithmic_reverse with the given vocabulary size, exports it with
`export.export` (the exporter CLI's library call: `translate_ids`, one traced search per
padded source length), and prints one JSON line: seconds, MiB on disk, parameters.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from t2t_lite import registry  # noqa: E402
from t2t_lite.runs import weights
from t2t_lite.decoding import decode_policy
from t2t_lite.serving import export
from t2t_lite.runs import run_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hparams", default="base")
    parser.add_argument("--vocab", type=int, default=37000)
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(2)
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
        print(json.dumps({
            "bench": "export", "hparams": args.hparams, "vocab": args.vocab,
            "params": model.count_params(), "seconds": round(result.seconds, 1),
            "mib": round(result.size_bytes / 2**20, 1),
            "source_lengths": decode_policy.source_buckets(hparams.max_length),
            "signatures": list(result.signatures), "tensorflow": tf.__version__,
        }), flush=True)


if __name__ == "__main__":
    main()
