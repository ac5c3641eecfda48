#!/bin/bash
# Parsing side by side on NLTK's WSJ sample: t2t_lite and the supar anchor of
# ../shared/bench/parsing/ (CRF constituency parser, BiLSTM + char LSTM, from
# scratch), trained at the same time for the same MINUTES, each pinned to one
# core with one thread, then scored on the held-out test files (wsj_0180-0199)
# with t2t_lite's EVALB (COLLINS.prm). One JSON row per result goes to OUT
# (default benchmarks/results/parsing_side_by_side.jsonl), written here.
#
#   benchmarks/parsing_side_by_side.sh WORK_DIR [MINUTES] [HPARAMS]
#
# Needs ../shared/bench/parsing/setup_venv.sh run first (supar's venv and the
# prepared split in $PARSE_WORK, default /tmp/bench-parse). Resuming: a second
# call with the same WORK_DIR trains t2t_lite MINUTES more (the trainer resumes)
# while supar starts afresh with the longer budget, so pass the total for it
# with SUPAR_MINUTES. TRAINER_FLAGS adds flags to t2t_lite-trainer (for example
# "--keep_checkpoint_max=1000 --save_checkpoints_minutes=5" keeps the checkpoint
# of each 5 minutes, so the 30-minute one can be scored after a 60-minute run).
# OVERRIDES passes --hparams_overrides (for example "word_dropout=0.1") and is
# recorded in t2t_lite's rows. AVERAGE_LAST=N averages the newest N checkpoints
# (t2t_lite-avg-checkpoints) and scores that average in place of best/.
set -euo pipefail
WORK=${1:?WORK_DIR}
MINUTES=${2:-30}
HPARAMS=${3:-parsing_small_aligned}
SUPAR_MINUTES=${SUPAR_MINUTES:-$MINUTES}
OUT=${OUT:-benchmarks/results/parsing_side_by_side.jsonl}
PY=${PY:-.venv/bin/python}
RAW=${RAW:-../shared/data/ptb_sample}
BENCH=${BENCH:-../shared/bench/parsing}
PARSE_WORK=${PARSE_WORK:-/tmp/bench-parse}
DATA=$WORK/data
RUN=$WORK/$HPARAMS
ANCHOR=$WORK/supar_$SUPAR_MINUTES
mkdir -p "$WORK"
[ -x "$PARSE_WORK/venv/bin/python" ] || { echo "run $BENCH/setup_venv.sh first" >&2; exit 2; }
[ -e "$DATA/wsj_parsing.datagen.json" ] || "$PY" -m t2t_lite.bin.datagen --problem=wsj_parsing \
  --data_dir="$DATA" --raw_dir="$RAW" --source_vocab_size=5400 >&2

# One core each (TensorFlow sizes its thread pools from the CPU affinity).
ONE="env TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 OMP_NUM_THREADS=1"
TOTAL=${TOTAL_MINUTES:-$MINUTES}  # t2t_lite's training minutes so far, for the rows.
taskset -c 0 $ONE "$PY" -m t2t_lite.bin.trainer --problem=wsj_parsing --hparams="$HPARAMS" \
  --data_dir="$DATA" --output_dir="$RUN" --train_minutes="$MINUTES" \
  --eval_examples=273 --eval_decode_examples=273 ${OVERRIDES:+--hparams_overrides="$OVERRIDES"} \
  ${TRAINER_FLAGS:-} > "$RUN.log" 2>&1 &
TRAINER=$!
taskset -c 1 env THREADS=1 PARSE_WORK="$PARSE_WORK" bash "$BENCH/train.sh" "$SUPAR_MINUTES" \
  "$ANCHOR" > "$ANCHOR.log" 2>&1 &
SUPAR=$!
wait $TRAINER $SUPAR

# Scoring, one core each: the newest checkpoint on core 0, and on core 1 the one
# best on dev (best/, selected on dev F1 while training) or, with AVERAGE_LAST=N,
# the average of the newest N.
SECOND=best
if [ -n "${AVERAGE_LAST:-}" ]; then
  "$PY" -m t2t_lite.bin.avg_checkpoints --output_dir="$RUN" --last="$AVERAGE_LAST" >&2
  SECOND=averaged
fi
CKPT=$(basename "$(sed -n 's/^model_checkpoint_path: "\(.*\)"/\1/p' "$RUN/checkpoint")")
score() {  # core checkpoint
  taskset -c "$1" $ONE "$PY" -m benchmarks.parse scores --output_dir="$RUN" \
    --checkpoints="$2" --modes=constrained --system=t2t_lite \
    --field hparams="$HPARAMS" --field overrides="\"${OVERRIDES:-}\"" --field minutes="$TOTAL" --field cores=1 --field threads=1 \
    --field selected="\"$2\"" --field average_last="${AVERAGE_LAST:-null}" > "$WORK/score_$2.jsonl"
}
score 0 "$CKPT" & score 1 "$SECOND" & wait
cat "$WORK/score_$CKPT.jsonl" "$WORK/score_$SECOND.jsonl" >> "$OUT"
STEPS=$("$PARSE_WORK/venv/bin/python" -c "import json; s = json.load(open('$ANCHOR/train_stats.json')); print(s.get('epochs_run', 'null'))" 2>/dev/null || echo null)
"$PY" -m benchmarks.parse evalb --gold="$PARSE_WORK/test.trees" --test="$ANCHOR/test.pred.trees" \
  --system=supar_crf_con --field minutes="$SUPAR_MINUTES" --field cores=1 --field threads=1 \
  --field epochs="$STEPS" >> "$OUT"
tail -n 3 "$OUT"
