#!/usr/bin/env bash
# Before and after one change to the training step, interleaved in one run on one
# machine: benchmarks/train_speed.py (the trainer's StepRunner on the peers'
# workload, no XLA) with and without the change, at each size, ROUNDS times in
# turn (default 2), so drifts of a shared machine hit both. CHANGE picks it:
#   adam (default): Keras' own Adam, then the trainer's FusedAdam;
#   loss: the backend-neutral label-smoothed loss, then the fused kernel.
# Writes benchmarks/results/train_changes.jsonl (..._avx2.jsonl with --isa=avx2);
# every row gets the switch, the ISA oneDNN reported and the CPU model, and
# prints the median of each pair's medians.
#
#   [CHANGE=loss] benchmarks/train_changes.sh [--isa=native|avx2]
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/isa_args.sh
SIZES=${SIZES:-"bench base"}
ROUNDS=${ROUNDS:-2}
CHANGE=${CHANGE:-adam}
case $CHANGE in
  adam) SETTINGS="keras fused" ;;
  loss) SETTINGS="plain fused" ;;
  *) echo "CHANGE must be adam or loss" >&2; exit 2 ;;
esac
OUT=benchmarks/results/train_changes$SUFFIX.jsonl
export TF_CPP_MIN_LOG_LEVEL=2 BENCH_THREADS=2
SCRATCH=$(mktemp)
for round in $(seq "$ROUNDS"); do
  for size in $SIZES; do
    for setting in $SETTINGS; do
      .venv/bin/python -m benchmarks.train_speed --size "$size" --jit off \
        "--$CHANGE" "$setting" >> "$SCRATCH"
    done
  done
done
.venv/bin/python -m benchmarks.isa stamp "$SCRATCH" --isa="$ISA"
cat "$SCRATCH" >> "$OUT"
.venv/bin/python - "$SCRATCH" "$CHANGE" $SETTINGS <<'PY'
import collections, json, statistics, sys
path, change, before, after = sys.argv[1:]
rates = collections.defaultdict(list)
for line in open(path):
    row = json.loads(line)
    rates[row["size"], row.get(change, "fused")].append(row["tgt_tokens_per_s"]["median"])
for size in dict.fromkeys(size for size, _ in rates):
    old, new = (statistics.median(rates[size, s]) for s in (before, after))
    print(f"{size:6s} {change} {before} {old:8.1f} tok/s   {after} {new:8.1f} tok/s   "
          f"{new / old:.3f}x")
PY
rm -f "$SCRATCH"
