#!/bin/bash
# Multi30k hparams ablations: one change at a time from the `multi30k` set,
# each trained for MINUTES (default 15) on one pinned core, two at a time,
# and scored on the dev set (val), never on test2016. One JSON line per run
# goes to OUT (default benchmarks/results/multi30k_ablations.jsonl).
#
#   benchmarks/multi30k_ablations.sh RAW_DIR WORK_DIR [MINUTES]
set -euo pipefail
RAW=${1:?RAW_DIR (Multi30k task 1 files)}
WORK=${2:?WORK_DIR}
MINUTES=${3:-15}
OUT=${OUT:-benchmarks/results/multi30k_ablations.jsonl}
PY=${PY:-.venv/bin/python}
mkdir -p "$WORK"

run() {  # core name overrides [vocab_size]
  local core=$1 name=$2 overrides=$3 vocab=${4:-8000}
  taskset -c "$core" "$PY" -m benchmarks.quality multi30k --raw_dir="$RAW" \
    --work_dir="$WORK/$name" --data_dir="$WORK/data$vocab" --vocab_size="$vocab" \
    --minutes="$MINUTES" --score_on=dev --hparams_overrides="$overrides" \
    2> "$WORK/$name.log" | sed "s/^{/{\"ablation\": \"$name\", /" >> "$OUT"
}

pair() {  # name overrides vocab name overrides vocab
  run 0 "$1" "$2" "$3" & run 1 "$4" "$5" "$6" & wait
}

# Each vocabulary is generated once, before the runs that use it.
for v in 8000 4000 16000; do
  [ -e "$WORK/data$v/multi30k_ende.datagen.json" ] || "$PY" -m t2t_lite.bin.datagen \
    --problem=multi30k_ende --raw_dir="$RAW" --data_dir="$WORK/data$v" --vocab_size=$v >&2
done
pair baseline "" 8000                 d512 "d_model=512,d_ff=2048,num_heads=8" 8000
pair batch1024 "batch_size=1024" 8000 batch4096 "batch_size=4096" 8000
pair dropout0.1 "dropout_rate=0.1" 8000 dropout0.3 "dropout_rate=0.3" 8000
pair warmup500 "warmup_steps=500" 8000 warmup2000 "warmup_steps=2000" 8000
pair vocab4k "" 4000                  vocab16k "" 16000
run 0 ls0.0 "label_smoothing=0.0" 8000
# The 30-minute dropout rows of the README: the same multi30k.py command with
# --work_dir=$WORK/dropout0.1 resumes that run for MINUTES more, and
# `--evaluate=ckpt-N --score_on=dev --run_dir=R` scores a checkpoint of another run.
