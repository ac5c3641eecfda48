#!/usr/bin/env bash
# Training throughput of t2t_lite next to the peers, in one run on one machine.
# Needs the peers' venvs from ../shared/bench/setup.sh (TORCH_PY, default
# /tmp/bench-torch; KERASHUB_PY, default /tmp/bench-tf). Appends its rows (each
# with the run's date) to benchmarks/results/train_side_by_side.jsonl and prints a
# table of this run whose MFU divides every system by the same count
# (../shared/bench/_common.py) and the same peak: the best TensorFlow or torch
# float32 matmul measured in this run.
#
#   benchmarks/train_side_by_side.sh [--isa=native|avx2]
#
# --isa=avx2 holds oneDNN (TensorFlow, torch) and MKL (torch) to AVX2 on any
# machine (benchmarks/isa.py), and writes ..._avx2.jsonl; every row gets the
# switch, the ISA oneDNN reported and the CPU model.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/isa_args.sh
TORCH_PY=${TORCH_PY:-/tmp/bench-torch/bin/python}
KERASHUB_PY=${KERASHUB_PY:-/tmp/bench-tf/bin/python}
SIZES=${SIZES:-"bench base"}
OUT=benchmarks/results/train_side_by_side$SUFFIX.jsonl
export TF_CPP_MIN_LOG_LEVEL=2 BENCH_THREADS=2
RUN=$(mktemp)  # This run's rows, stamped, then appended to $OUT.
"$TORCH_PY" ../shared/bench/peak.py --framework torch >> "$RUN"
.venv/bin/python ../shared/bench/peak.py --framework tf >> "$RUN"
for size in $SIZES; do
  "$TORCH_PY" ../shared/bench/train_torch.py --size "$size" >> "$RUN"
  "$KERASHUB_PY" ../shared/bench/train_kerashub.py --size "$size" --jit on >> "$RUN"
  .venv/bin/python -m benchmarks.train steps --size "$size" --jit off >> "$RUN"
  .venv/bin/python -m benchmarks.train steps --size "$size" --jit on >> "$RUN"
done
.venv/bin/python -m benchmarks.isa stamp "$RUN" --isa="$ISA"
cat "$RUN" >> "$OUT"
.venv/bin/python - "$RUN" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
peak = max(r["peak_gflops"] for r in rows if "peak_gflops" in r and "bench" not in r)
torch = {}
print(f"matmul peak of this run: {peak:.1f} GFLOP/s")
for r in rows:
    if r.get("bench") != "train":
        continue
    size = r.get("size") or r["config"]["name"]
    rate = r["tgt_tokens_per_s"]["median"]
    if r["system"].startswith("torch"):
        torch[size] = rate
    versus = f'{rate / torch[size]:.2f}x torch' if size in torch else ""
    print(f'{r["system"][:60]:60s} {size:6s} {rate:9.1f} tok/s  '
          f'MFU {100 * r["model_gflops_per_s"] / peak:5.1f}%  {versus}')
PY
rm -f "$RUN"
