#!/bin/bash
# The seq2seq lecture's comparison on Multi30k EN-DE: two models trained at the
# same time for the same wall-clock budgets, each pinned to one core with one
# thread, by benchmarks/multi30k.py (the README recipe: 30 minutes, scored, 30
# more, scored; test2016 greedy and beam 4, last and averaged, dev loss, target
# tokens/s and dev NLL by training minute). Run it twice to compare four models
# (the pairs share the machine, not the hour). One JSON row per stage and model
# goes to OUT (default benchmarks/results/lecture_multi30k.jsonl), written by
# multi30k.py.
#
#   benchmarks/lecture_side_by_side.sh WORK_DIR HPARAMS_A HPARAMS_B [MINUTES]
#
# e.g. benchmarks/lecture_side_by_side.sh runs/lecture multi30k rnn_multi30k
#      benchmarks/lecture_side_by_side.sh runs/lecture bahdanau_multi30k luong_multi30k
set -euo pipefail
WORK=${1:?WORK_DIR}
A=${2:?HPARAMS_A}
B=${3:?HPARAMS_B}
MINUTES=${4:-30,60}
OUT=${OUT:-benchmarks/results/lecture_multi30k.jsonl}
PY=${PY:-.venv/bin/python}
RAW=${RAW:-../shared/data/multi30k}
DATA=${DATA:-$WORK/data}
mkdir -p "$WORK"
# One datagen for both (a second process must not race the first one writing it).
[ -e "$DATA/multi30k_ende.datagen.json" ] || "$PY" -m t2t_lite.bin.datagen \
  --problem=multi30k_ende --data_dir="$DATA" --raw_dir="$RAW" >&2
ONE="env TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 OMP_NUM_THREADS=1"
core=0
for HP in "$A" "$B"; do
  taskset -c $core $ONE "$PY" -m benchmarks.quality multi30k --raw_dir="$RAW" --work_dir="$WORK" \
    --data_dir="$DATA" --run_dir="$WORK/$HP" --hparams="$HP" --minutes="$MINUTES" \
    --system="lecture $HP (one core, side by side with $A / $B)" --field=core=$core \
    --out="$OUT" > "$WORK/$HP.rows" 2> "$WORK/$HP.log" &
  core=$((core + 1))
done
wait
cat "$WORK/$A.rows" "$WORK/$B.rows"
