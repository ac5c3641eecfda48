#!/usr/bin/env bash
# Decoding throughput of t2t_lite next to the peers, in one run on one machine.
# Needs the peers' venv from ../shared/bench/setup.sh (TORCH_PY, default /tmp/bench-torch).
# Appends its rows to benchmarks/results/decode_side_by_side.jsonl (each run's rows carry
# its date), with this run's best TensorFlow and torch float32 matmuls
# (../shared/bench/peak.py) as rows of their own.
#
#   benchmarks/decode_side_by_side.sh [--isa=native|avx2]
#
# --isa=avx2 holds oneDNN (TensorFlow, torch) and MKL (torch) to AVX2 on any
# machine (benchmarks/isa.py), and writes ..._avx2.jsonl; every row gets the
# switch, the ISA oneDNN reported and the CPU model.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/isa_args.sh
TORCH_PY=${TORCH_PY:-/tmp/bench-torch/bin/python}
OUT=benchmarks/results/decode_side_by_side$SUFFIX.jsonl
export TF_CPP_MIN_LOG_LEVEL=2 BENCH_THREADS=2
RUN=$(mktemp)  # This run's rows, stamped, then appended to $OUT.
"$TORCH_PY" ../shared/bench/peak.py --framework torch >> "$RUN"
.venv/bin/python ../shared/bench/peak.py --framework tf >> "$RUN"
"$TORCH_PY" ../shared/bench/decode_peers.py --size all --no-int8 >> "$RUN"
.venv/bin/python -m benchmarks.decode speed --size all --jit >> "$RUN"
.venv/bin/python -m benchmarks.decode speed --size all >> "$RUN"
.venv/bin/python -m benchmarks.decode speed --size all --shards 1 >> "$RUN"  # One search.
.venv/bin/python -m benchmarks.decode speed --size all --shards 1 --reorder_beams >> "$RUN"  # Caches reordered, one search.
.venv/bin/python -m benchmarks.isa stamp "$RUN" --isa="$ISA"
cat "$RUN" >> "$OUT"
.venv/bin/python - "$RUN" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    if "peak_gflops" in row and "bench" not in row:
        print(f'matmul peak, {row["framework"]:44s} {row["peak_gflops"]:8.1f} GFLOP/s')
        continue
    size = row.get("size") or row["config"]["name"]
    print(f'{row["system"]:55s} {size:6s} {row["tgt_tokens_per_s"]["median"]:8.1f} tok/s')
PY
rm -f "$RUN"
