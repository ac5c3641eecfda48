#!/bin/bash
# Wheels for benchmarks/gpu_check.sh on a machine with JAX but no Keras and no
# package index: Keras and its dependencies (besides numpy and ml-dtypes, which
# JAX brings), for CPython 3.11-3.13 on x86-64 Linux, into build/gpu_check/wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-build/gpu_check/wheels}
PY=${PY:-.venv/bin/python}
mkdir -p "$WHEELS"
KERAS=$("$PY" -c "import keras; print(keras.__version__)" 2>/dev/null || echo "")
for version in 3.11 3.12 3.13; do  # Keras 3.15 needs Python 3.11+
  "$PY" -m pip download -q --no-deps --only-binary=:all: --dest "$WHEELS" \
    --python-version "$version" --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    "keras${KERAS:+==$KERAS}" absl-py h5py namex optree rich markdown-it-py mdurl pygments \
    packaging ml-dtypes
done
du -sh "$WHEELS"
