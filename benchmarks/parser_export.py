"""The exported parser against t2t_lite-decoder on the held-out test sentences.

    python -m benchmarks.parse export --output_dir=RUN --words=TEST.words [--beam_size=N]

Exports the run (`t2t_lite-exporter`, the checkpoint given or the newest), decodes
the sentence file (one sentence per line, e.g. the 245 test sentences of
../shared/bench/parsing's split, /tmp/bench-parse/test.words) with
`t2t_lite-decoder --decode_from_file`, parses the same lines with the SavedModel's
serving_default in a fresh process that imports neither t2t_lite nor
tensorflow_text, and appends one JSON row to --out (identical trees, the first
difference, both wall times, the export's size and time; with the machine's
fields).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

from benchmarks.machine import machine_fields

from benchmarks.rows import append_row, parse_field

SERVE = r"""
import json, sys, time
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
lines = [l.rstrip("\n") for l in open(sys.argv[2], encoding="utf-8")]
start = time.time()
trees = []
for i in range(0, len(lines), 64):
    out = model.signatures["serving_default"](inputs=tf.constant(lines[i:i + 64]))
    trees += [t.decode("utf-8") for t in out["outputs"].numpy().tolist()]
seconds = time.time() - start
assert "t2t_lite" not in sys.modules and "tensorflow_text" not in sys.modules
print(json.dumps({"trees": trees, "seconds": seconds}))
"""


def _cli(module, *args):
    start = time.time()
    result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                            text=True, cwd=os.path.join(HERE, ".."))
    if result.returncode:
        sys.exit(f"{module} failed: {result.stderr.strip().splitlines()[-1:]}")
    return result, time.time() - start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--words", required=True, help="one sentence per line")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--beam_size", type=int, default=None, help="default: the run's")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "parser_export.jsonl"))
    parser.add_argument("--field", action="append", default=[])


def main(args):
    work = tempfile.mkdtemp(prefix="parser_export_")
    common = [f"--output_dir={args.output_dir}"]
    common += [f"--checkpoint={args.checkpoint}"] if args.checkpoint else []
    common += [f"--beam_size={args.beam_size}"] if args.beam_size else []
    decoded = os.path.join(work, "decoded.trees")
    _, decode_seconds = _cli("t2t_lite.bin.decoder", *common, f"--decode_from_file={args.words}",
                             f"--decode_to_file={decoded}")
    export_dir = os.path.join(work, "export")
    result, export_seconds = _cli("t2t_lite.bin.exporter", *common, f"--export_dir={export_dir}")
    path = result.stdout.strip().splitlines()[-1]
    served = subprocess.run([sys.executable, "-c", SERVE, path, args.words], capture_output=True,
                            text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if served.returncode:
        sys.exit(f"serving failed: {served.stderr.strip().splitlines()[-1:]}")
    served = json.loads(served.stdout.strip().splitlines()[-1])
    with open(decoded, encoding="utf-8") as f:
        want = f.read().split("\n")[:len(served["trees"])]
    same = sum(a == b for a, b in zip(served["trees"], want))
    first = next((i for i, (a, b) in enumerate(zip(served["trees"], want)) if a != b), None)
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)
    append_row({"benchmark": "parser_export", **machine_fields(),
                "output_dir": os.path.abspath(args.output_dir), "checkpoint": args.checkpoint,
                "beam_size": args.beam_size, "sentences": len(want), "identical_trees": same,
                "first_difference": first, "decoder_seconds": round(decode_seconds, 1),
                "export_seconds": round(export_seconds, 1),
                "saved_model_seconds": round(served["seconds"], 1),
                "saved_model_mib": round(size / 2**20, 1),
                **dict(parse_field(item) for item in args.field)}, args.out)
