"""The instruction set a side-by-side run used, stamped into its rows.

    python -m benchmarks.isa probe            # prints what oneDNN reports, e.g. "Intel AVX2"
    python -m benchmarks.isa stamp ROWS.jsonl --isa=avx2

`--isa=avx2` in `train_side_by_side.sh` and `decode_side_by_side.sh` holds
TensorFlow's oneDNN to AVX2 (`ONEDNN_MAX_CPU_ISA=AVX2`, read when TensorFlow
starts) and torch's MKL and oneDNN too (`MKL_ENABLE_INSTRUCTIONS=AVX2`,
`DNNL_MAX_CPU_ISA=AVX2`), so an AVX-512 machine measures the AVX2 case as well;
`--isa=native` sets nothing. `probe` runs one TensorFlow matmul in a child
process with `ONEDNN_VERBOSE=1` and prints the ISA line oneDNN writes (so a
setting that had no effect shows in the rows). `stamp` adds `isa` (the switch),
`onednn_isa` (the probe) and the CPU model to every row of the file that lacks
them, rewriting it through a temporary name.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from benchmarks.machine import cpu_model

ISA_ENVIRONMENT = {"avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2",
                            "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
                   "native": {}}
_MATMUL = ("import tensorflow as tf; a = tf.random.normal((256, 256)); "
           "print(float(tf.reduce_sum(tf.matmul(a, a))))")


def parse_isa_line(text: str) -> str | None:
    """oneDNN's verbose output -> the ISA it names ("Intel AVX2"), or None."""
    for line in text.splitlines():
        if line.startswith("onednn_verbose") and ",isa:" in line:
            return line.split(",isa:", 1)[1].strip()
    return None


def probe(python: str = sys.executable) -> str | None:
    """The ISA oneDNN uses for a TensorFlow matmul under this environment."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([python, "-c", _MATMUL], env=env, capture_output=True, text=True,
                          check=False)
    return parse_isa_line(done.stdout + done.stderr)


def stamp(path: str, isa: str, onednn_isa: str | None) -> int:
    """Adds isa / onednn_isa / cpu / date (UTC) to each row of `path` lacking them;
    returns the rows."""
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    fields = {"isa": isa, "onednn_isa": onednn_isa, "cpu": cpu_model(),
              "date": time.strftime("%Y-%m-%d", time.gmtime())}
    rows = [{**row, **{k: v for k, v in fields.items() if k not in row}} for row in rows]
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)
    os.replace(path + ".tmp", path)
    return len(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("probe", "stamp", "env"))
    parser.add_argument("rows", nargs="?")
    parser.add_argument("--isa", choices=sorted(ISA_ENVIRONMENT), default="native")
    args = parser.parse_args(argv)
    if args.command == "env":  # Shell lines to eval: the variables of --isa.
        print("\n".join(f"export {k}={v}" for k, v in ISA_ENVIRONMENT[args.isa].items()))
    elif args.command == "probe":
        print(probe() or "unknown")
    else:
        if not args.rows:
            parser.error("stamp needs ROWS.jsonl")
        print(f"stamped {stamp(args.rows, args.isa, probe())} rows of {args.rows}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
