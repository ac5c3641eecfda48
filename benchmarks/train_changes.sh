#!/usr/bin/env bash
# Before and after one change to the training step, interleaved in one run on one
# machine: benchmarks/train_speed.py (the trainer's StepRunner on the peers'
# workload, no XLA) with Keras' own Adam and with the trainer's FusedAdam, at each
# size, ROUNDS times in turn (default 2), so drifts of a shared machine hit both.
# Writes benchmarks/results/train_changes.jsonl (..._avx2.jsonl with --isa=avx2);
# every row gets the switch, the ISA oneDNN reported and the CPU model, and
# prints the median of each pair's medians.
#
#   benchmarks/train_changes.sh [--isa=native|avx2]
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/isa_args.sh
SIZES=${SIZES:-"bench base"}
ROUNDS=${ROUNDS:-2}
OUT=benchmarks/results/train_changes$SUFFIX.jsonl
export TF_CPP_MIN_LOG_LEVEL=2 BENCH_THREADS=2
SCRATCH=$(mktemp)
for round in $(seq "$ROUNDS"); do
  for size in $SIZES; do
    for adam in keras fused; do
      .venv/bin/python benchmarks/train_speed.py --size "$size" --jit off --adam "$adam" \
        >> "$SCRATCH"
    done
  done
done
.venv/bin/python benchmarks/isa.py stamp "$SCRATCH" --isa="$ISA"
cat "$SCRATCH" >> "$OUT"
.venv/bin/python - "$SCRATCH" <<'PY'
import collections, json, statistics, sys
rates = collections.defaultdict(list)
for line in open(sys.argv[1]):
    row = json.loads(line)
    rates[row["size"], row["adam"]].append(row["tgt_tokens_per_s"]["median"])
for size in dict.fromkeys(size for size, _ in rates):
    before, after = (statistics.median(rates[size, a]) for a in ("keras", "fused"))
    print(f"{size:6s} keras Adam {before:8.1f} tok/s   FusedAdam {after:8.1f} tok/s   "
          f"{after / before:.3f}x")
PY
rm -f "$SCRATCH"
