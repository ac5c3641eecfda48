#!/bin/bash
# One prepared command for the accelerator machine: t2t_lite's
# Transformer under Keras's JAX backend, `base` and `big` training steps with
# precision=mixed_bfloat16 (tokens/s, MFU against the bf16 matmul rate it
# measures itself) and beam-4 decoding tokens/s, by benchmarks/jax_speed.py.
# JSON rows go to $OUT/jax_speed.jsonl. Under 8 minutes on one GPU.
#
# That machine has JAX but no TensorFlow and no Keras, and reaches no package
# index: prepare the wheels here first, then carry them along:
#   benchmarks/gpu_prepare.sh                  # -> build/gpu_check/wheels (~30 MB)
#   run: bash benchmarks/gpu_check.sh          # carry=["build/gpu_check"]
# Here, on the CPU (JAX CPU, tiny shapes: the same code end to end, in minutes):
#   QUICK=1 OUT=/tmp/gpu_check bash benchmarks/gpu_check.sh
# Then copy the rows into benchmarks/results/jax_speed.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu_check/out}
WHEELS=${WHEELS:-build/gpu_check/wheels}
SITE=${SITE:-build/gpu_check/site}
PY=${PY:-python3}
mkdir -p "$OUT"
# Keras and whichever of its dependencies this Python lacks, from the wheels that travelled.
missing=$("$PY" - <<'PYEOF'
import importlib.util
needed = {"keras": "keras", "absl": "absl-py", "h5py": "h5py", "namex": "namex",
          "optree": "optree", "rich": "rich", "markdown_it": "markdown-it-py",
          "mdurl": "mdurl", "pygments": "pygments", "packaging": "packaging",
          "ml_dtypes": "ml-dtypes"}
print(" ".join(wheel for module, wheel in needed.items()
               if importlib.util.find_spec(module) is None))
PYEOF
)
if [ -n "$missing" ]; then
  [ -d "$WHEELS" ] || { echo "missing $missing and no $WHEELS: run benchmarks/gpu_prepare.sh here and carry build/gpu_check" >&2; exit 2; }
  "$PY" -m pip install -q --no-index --no-deps --find-links "$WHEELS" --target "$SITE" $missing
  export PYTHONPATH="$PWD/$SITE:${PYTHONPATH:-}"
fi
"$PY" -c "import jax; print('jax', jax.__version__, jax.devices())" >&2
ARGS=${ARGS:-}
[ -n "${QUICK:-}" ] && ARGS="--quick $ARGS"
# XLA_PYTHON_CLIENT_MEM_FRACTION: leave room for the device's other users.
KERAS_BACKEND=jax XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.8} \
  timeout "${LIMIT_S:-480}" "$PY" -m benchmarks.jax_speed $ARGS --out="$OUT/jax_speed.jsonl"
