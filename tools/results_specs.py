"""Which rows each results page shows, and how (rendered by tools/results_pages.py)."""

from __future__ import annotations

from tools.results_pages import Page, Table, get


def median(path: str):
    """A column: the median of a {median, ...} field, or the field itself."""
    def value(row):
        found = get(path)(row)
        return found.get("median", "") if isinstance(found, dict) else found
    return value


def percent(path: str):
    def value(row):
        found = get(path)(row)
        return f"{100 * found:.1f}%" if isinstance(found, (int, float)) else ""
    return value


def size_of(row: dict) -> str:
    config = row.get("config") if isinstance(row.get("config"), dict) else {}
    return row.get("size") or config.get("name", "")


def is_system(row: dict) -> bool:
    return bool(row.get("system"))


def last_eval(index: int):
    """fine_tuning rows: (step, seconds, dev NLL, BLEU) of the last dev evaluation."""
    def value(row):
        evals = row.get("evals") or []
        return evals[-1][index] if evals else ""
    return value


PARSE_COLUMNS = (("split", "split"), ("checkpoint", "checkpoint"), ("search", "mode"),
                 ("beam", "beam_size"), ("EVALB F1", "f1"), ("strict F1", "f1_errors_as_unparsed"),
                 ("errors", "errors"), ("tagging", "tagging"), ("decode s", "decode_seconds"))
BLEU_COLUMNS = (("minutes", "minutes"), ("step", "step"),
                ("BLEU last, greedy", "bleu.last_greedy"), ("last, beam 4", "bleu.last_beam4"),
                ("averaged, greedy", "bleu.averaged_greedy"),
                ("averaged, beam 4", "bleu.averaged_beam4"), ("dev NLL", "dev_nll"))

DEMO = Page("results/demo.md", "The demo and export", """
`make demo` trains the `tiny` Transformer on `algorithmic_reverse`, averages its last 5
checkpoints and beam-decodes the 1,000 held-out sequences; `benchmarks/demo.py` runs the same
recipe stage by stage and writes the row. The export rows time `t2t_lite-exporter`.
""", (
    Table("demo.jsonl", "make demo", "Exact-sequence accuracy on the 1,000 held-out test "
          "sequences (beam 4, last-5 average), the seconds of each stage, and the training "
          "rate in non-padding target tokens per second.",
          "python -m benchmarks.quality demo WORK_DIR",
          (("problem", "problem"), ("parameters", "parameters"),
           ("accuracy, averaged, beam 4", "accuracy.averaged.percent"),
           ("last checkpoint, greedy", "accuracy.last_greedy.percent"), ("seconds", "seconds"),
           ("tokens/s (median window)", "tokens_per_s.median_after_first"),
           ("dev exact match by step", lambda r: ", ".join(
               f"{e['step']}: {e['exact_match']}" for e in r.get("dev_evaluations", []))))),
    Table("export_time.jsonl", "t2t_lite-exporter", "Wall time of one SavedModel export and "
          "its size on disk. Exports before commit 43c90dc traced one search per padded source "
          "length; later ones trace one search for them all.", "python -m benchmarks.export time [--hparams=tiny --vocab=12]",
          (("hparams", "hparams"), ("parameters", "params"),
           ("vocabulary", "vocab"), ("padded source lengths", "source_lengths"),
           ("signatures", "signatures"),
           ("seconds", "seconds"), ("MiB", "mib"))),
))

TRANSLATION = Page("results/translation.md", "Translation quality", """
Multi30k EN-DE on a CPU budget: models trained for a fixed number of minutes, then scored with
cased sacreBLEU (13a) on test2016 (or on val where a row says `val`; settings are chosen on val,
never on test). `averaged` is the mean of the last 5 checkpoints, as section 6.1 of the paper.
""", (
    Table("multi30k.jsonl", "The multi30k recipe and the keras-hub baseline",
          "`t2t_lite-trainer --problem=multi30k_ende --hparams=multi30k` for 30 and 60 minutes "
          "(the system column says when a run had one core of two), and the keras-hub model of "
          "`../shared/bench/` trained as its own script does.",
          "python -m benchmarks.quality multi30k --raw_dir=../shared/data/multi30k "
          "--work_dir=W --minutes=60",
          (("system", "system"), ("scored on", "scored_on"), *BLEU_COLUMNS,
           ("keras-hub BLEU 30 / 60 min", lambda r: (
               f"{r['bleu_test2016_30min']} / {r['bleu_test2016_60min']}"
               if "bleu_test2016_30min" in r else "")),
           ("train tokens/s", lambda r: r.get("tokens_per_second") or r.get("tgt_tokens_per_s", "")))),
    Table("multi30k_ablations.jsonl", "How the multi30k set was chosen (val)",
          "One change at a time against the `multi30k` set, each trained 15 minutes (or resumed "
          "to 30 and 60), scored on val.",
          "benchmarks/multi30k_ablations.sh W",
          (("change", "ablation"), ("overrides", "overrides"), *BLEU_COLUMNS)),
    Table("lecture_multi30k.jsonl", "RNN baselines against the Transformer",
          "The lecture's comparison: `rnn_multi30k` (Sutskever et al.), `bahdanau_multi30k`, "
          "`luong_multi30k` and `multi30k`, two at a time, one core each, scored on test2016.",
          "benchmarks/lecture_side_by_side.sh W MINUTES",
          (("hparams", "hparams"), *BLEU_COLUMNS, ("train tokens/s", "tokens_per_second"))),
    Table("ctranslate2_multi30k.jsonl", "CTranslate2 exports of a trained model",
          "The averaged 30-minute `multi30k` model, decoded by `t2t_lite-decoder`'s search and by "
          "its CTranslate2 exports: all 1,000 test2016 sentences, beam 4, 2 threads each, text "
          "in to text out.",
          "python -m benchmarks.export ctranslate2 --run_dir=RUN "
          "--raw_dir=../shared/data/multi30k",
          (("system", "system"), ("BLEU", "bleu"), ("sentences/s", "sentences_per_s"),
           ("target tokens/s", "target_tokens_per_s"), ("export MiB", "export_mib"))),
    Table("fine_tuning.jsonl", "Fine-tuning against training from scratch",
          "`--init_from` a general run, side by side with the same model trained from scratch "
          "for the same minutes, one core each; the last dev evaluation (greedy decodes of "
          "`dev_decode_examples` dev sentences).",
          "python -m benchmarks.quality fine_tuning --work_dir=W [--multi30k_split=5000]",
          (("run", "run"), ("target problem", "problem"), ("general problem", "general_problem"),
           ("in-domain split", "multi30k_split"), ("overrides", "overrides"),
           ("minutes", "minutes"), ("last step", last_eval(0)), ("dev NLL", last_eval(2)),
           ("dev BLEU", last_eval(3)))),
))

PARSING = Page("results/parsing.md", "Constituency parsing", """
NLTK's 10% sample of the Penn Treebank: wsj_0001-0159 train (3,396 trees), 0160-0179 dev (273),
0180-0199 test (245), scored with t2t_lite's EVALB (COLLINS.prm). "Strict F1" counts EVALB's
error sentences as unparsed. The anchor is supar's CRF constituency parser
(`../shared/bench/parsing/`) trained on the same split in the same hour on the same machine.
""", (
    Table("parsing_side_by_side.jsonl", "t2t_lite beside supar, same hour, same machine",
          "Both trained for `minutes` on one pinned core and thread, then scored once on test.",
          "benchmarks/parsing_side_by_side.sh WORK 60 parsing_small_chart",
          (("system", "system"), ("hparams", "hparams"), ("overrides", "overrides"),
           ("minutes", "minutes"), ("selected", "selected"), ("epochs", "epochs"),
           ("test F1", "f1"), ("strict F1", "f1_errors_as_unparsed"), ("tagging", "tagging"),
           ("unknown words tagged", "tagging_unknown"), ("decode s", "decode_seconds"))),
    Table("parsing_by_length.jsonl", "Dev F1 by sentence length",
          "EVALB on the dev trees of each system, split by sentence length; `session` pairs a "
          "t2t_lite model with the supar model of its hour.",
          "python -m benchmarks.parse evalb --by_length=15,25,35 ...",
          (("system", "system"), ("session", "session"), ("words", "length"),
           ("sentences", "sentences"), ("F1", "f1"), ("recall", "recall"),
           ("precision", "precision"))),
    Table("parsing_dev_ablations.jsonl", "Levers measured on dev",
          "One change at a time against the set named in `system`, scored on the 273 dev "
          "sentences.", "python -m benchmarks.parse scores --split=dev --modes=constrained ...",
          (("system", "system"), ("lever", "lever"), ("overrides", "overrides"),
           ("minutes", "minutes"), ("span bias", "span_bias"), *PARSE_COLUMNS[1:6])),
    Table("parsing_ptb_sample.jsonl", "Sequence-to-sequence sets on test",
          "The plain and aligned sequence-to-sequence sets, beam 21, alpha 0.3.",
          "python -m benchmarks.parse scores --output_dir=RUN --checkpoints=...",
          (("system", "system"), ("overrides", "overrides"), ("minutes", "minutes"),
           *PARSE_COLUMNS)),
    Table("parsing_word_source.jsonl", "`parsing_small` with a word-level source, on test",
          "Constrained (tree constraint and tag dictionary), tree constraint only, and "
          "unconstrained search.",
          "python -m benchmarks.parse scores --output_dir=RUN --checkpoints=ckpt-A,ckpt-B",
          PARSE_COLUMNS),
    Table("parser_export.jsonl", "The exported parser against t2t_lite-decoder",
          "The SavedModel, loaded in a process without t2t_lite or tensorflow-text, parses the "
          "245 test sentences; trees compared with the decoder's.",
          "python -m benchmarks.parse export --output_dir=RUN --words=test.words",
          (("checkpoint", "checkpoint"), ("beam", "beam_size"), ("sentences", "sentences"),
           ("identical trees", "identical_trees"), ("export s", "export_seconds"),
           ("SavedModel MiB", "saved_model_mib"), ("decoder s", "decoder_seconds"),
           ("SavedModel s", "saved_model_seconds"))),
))

TRAINING = Page("results/training-speed.md", "Training speed", """
The peers' workload of `../shared/bench/`: random ids, no padding, 32 x (32 + 32) tokens at
`bench` (N=3, d_model=256, V=8192) and 64 x (32 + 32) at `base` (N=6, d_model=512, V=32768),
2 threads. Target tokens per second are medians; MFU is the shared analytic FLOP count per
second over the best float32 matmul measured in the same run. A figure counts only beside its
peers of the same run (same date, commit and machine).
""", (
    Table("train_side_by_side.jsonl", "Side by side, native instruction set",
          "torch.nn.Transformer, keras-hub layers under `model.fit` (XLA) and t2t_lite's "
          "training step, one after another in one run.", "benchmarks/train_side_by_side.sh",
          (("system", "system"), ("size", size_of), ("target tokens/s", median("tgt_tokens_per_s")),
           ("MFU", percent("mfu"))), is_system),
    Table("train_side_by_side_avx2.jsonl", "Side by side, oneDNN held to AVX2",
          "The same, with TensorFlow's oneDNN and torch held to AVX2.",
          "benchmarks/train_side_by_side.sh --isa=avx2",
          (("system", "system"), ("size", size_of), ("target tokens/s", median("tgt_tokens_per_s")),
           ("MFU", percent("mfu"))), is_system),
    Table("trainer_end_to_end.jsonl", "The trainer end to end against its own step",
          "`t2t_lite-trainer` on Multi30k for `minutes` (model build, tracing, input pipeline and "
          "checkpoints included) against the step alone on fixed shapes in the same process; "
          "`python -m benchmarks.train trainer` times the trainer command on fixed shapes.",
          "",
          (("steps", "steps"), ("end to end tokens/s", "end_to_end_tokens_per_s"),
           ("steady tokens/s", "steady_tokens_per_s"), ("step alone", "train_speed_tokens_per_s"),
           ("ratio", "ratio"), ("padding", percent("padding_fraction")))),
    Table("train_interleaved.jsonl", "One change, before and after, interleaved",
          "Both settings built and warmed up in one process, their steps alternated.",
          "python -m benchmarks.train interleaved --after=OVERRIDES --size=bench",
          (("change", "change"), ("setting", "setting"), ("size", "size"),
           ("target tokens/s", median("tgt_tokens_per_s")), ("after / before", "after_over_before"))),
    Table("train_changes.jsonl", "Changes in separate processes, native",
          "The step timed per setting in separate processes, rounds interleaved.", "",
          (("system", "system"), ("size", "size"), ("Adam", "adam"), ("loss", "loss"),
           ("target tokens/s", median("tgt_tokens_per_s")), ("MFU", percent("mfu")))),
    Table("train_changes_avx2.jsonl", "Changes in separate processes, AVX2",
          "The same under `--isa=avx2`.", "",
          (("system", "system"), ("size", "size"), ("Adam", "adam"), ("loss", "loss"),
           ("target tokens/s", median("tgt_tokens_per_s")), ("MFU", percent("mfu")))),
    Table("adam_update.jsonl", "The optimizer update alone",
          "Keras' Adam against `FusedAdam` (one `ResourceApplyAdam` per variable), the update "
          "timed without the rest of the step.", "python -m benchmarks.train adam --size=base",
          (("size", "size"), ("Adam", "adam"), ("parameters", "params"),
           ("ms per update", median("ms_per_update")))),
    Table("train_profile.jsonl", "Where a training step's time goes",
          "TensorFlow's profiler over a few steps; the three costliest ops.",
          "python -m benchmarks.train profile --size base",
          (("size", "size"), ("wall s/step", "wall_seconds_per_step"),
           ("ops/step", "op_executions_per_step"),
           ("top ops (share)", lambda r: ", ".join(
               f"{t['op']} {100 * t['share']:.1f}%" for t in r.get("top", [])[:3])))),
    Table("jax_speed.jsonl", "The JAX backend, CPU and GPU",
          "Keras 3 on JAX: a training step and a beam-4 decode of `base` and `big`, bfloat16.",
          "benchmarks/gpu_check.sh (GPU) or python -m benchmarks.jax_speed",
          (("platform", "platform"), ("hparams", "hparams"), ("measure", "measure"),
           ("batch", "batch"), ("compile s", "compile_seconds"),
           ("target tokens/s", lambda r: r.get("tgt_tokens_per_s") or r.get("tokens_per_s", "")),
           ("MFU", percent("mfu")))),
))

DECODING = Page("results/decoding-speed.md", "Decoding and serving speed", """
Fixed shapes (the peers' workload: batches of 32 sources of 30 tokens, beam 4, alpha 0.6,
exactly 40 generated tokens) and real test sets (Multi30k test2016, newstest2014; whole files,
process start included). Target tokens per second are medians. A figure counts only beside its peers of the
same run.
""", (
    Table("decode_test_set.jsonl", "A test set end to end, beside CTranslate2",
          "`t2t_lite-decoder --decode_from_file` and CTranslate2 (t2t_lite's own export of the "
          "same checkpoint) on a real test set (`input`), beam 4, 2 threads, each a fresh "
          "process timed from its start to its exit; `tree` names the t2t_lite checkout (before "
          "and after a change, each lever of a change, in one run), the ratio is sentences/s "
          "over CTranslate2 float32's in that run.",
          "python -m benchmarks.decode decoder --output_dir=RUN --input=FILE --references=REF "
          "--ctranslate2=float32=EXPORT,int8=EXPORT [--tree=NAME=DIR ...] [--modes=...]",
          (("input", "input"), ("system", "system"), ("tree", "tree"), ("XLA", "jit"),
           ("flags", "flags"), ("export", "export"),
           ("seconds", "wall_seconds"), ("sentences/s", "sentences_per_s"),
           ("ratio to CTranslate2", "ratio_to_ctranslate2"), ("BLEU", "bleu"),
           ("identical lines", "identical_lines"), ("note", "note"))),
    Table("decode_side_by_side.jsonl", "Beam search side by side, native instruction set",
          "Hugging Face MarianMT (torch), CTranslate2 float32 and t2t_lite's search, one after "
          "another in one run, on randomly initialized models of the same shape.",
          "benchmarks/decode_side_by_side.sh",
          (("system", "system"), ("size", size_of),
           ("target tokens/s", median("tgt_tokens_per_s"))), is_system),
    Table("decode_side_by_side_avx2.jsonl", "Beam search side by side, AVX2",
          "The same, held to AVX2.", "benchmarks/decode_side_by_side.sh --isa=avx2",
          (("system", "system"), ("size", size_of),
           ("target tokens/s", median("tgt_tokens_per_s"))), is_system),
    Table("decoder_end_to_end.jsonl", "t2t_lite-decoder on a test file, native",
          "`t2t_lite-decoder --decode_from_file` on the first 1,000 lines of Multi30k "
          "test2016, beam 4, a fresh process each (start, load, tracing, writing included).",
          "",
          (("XLA", "jit"), ("round", "round"), ("threads", "threads"), ("sentences", "sentences"),
           ("seconds", "wall_seconds"), ("sentences/s", "sentences_per_s"),
           ("identical lines", "identical_lines"))),
    Table("decoder_end_to_end_avx2.jsonl", "t2t_lite-decoder on a test file, AVX2",
          "The same, held to AVX2.",
          "",
          (("XLA", "jit"), ("round", "round"), ("threads", "threads"), ("sentences", "sentences"),
           ("seconds", "wall_seconds"), ("sentences/s", "sentences_per_s"),
           ("identical lines", "identical_lines"))),
    Table("decode_profile.jsonl", "Decoding step variants, interleaved",
          "Ways of writing the self-attention cache and of keeping the beams, timed in one "
          "process on `bench`.", "python -m benchmarks.decode cache_writes (or beams)",
          (("measure", "bench"), ("size", "size"), ("threads", "threads"),
           ("cache write", "cache_write"), ("beams", "beams"), ("core", "core"),
           ("target tokens/s", "tgt_tokens_per_s")),
          lambda row: row.get("bench") != "decode_profile"),
    Table("serving_speed.jsonl", "The serving signature: core ops against tensorflow_text",
          "`serving_default` of a `tiny` model (beam 4, batches of 64 newstest2014 sentences) "
          "with the SentencePiece tokenizer in core TensorFlow ops or tensorflow_text's op.",
          "python -m benchmarks.export serving WORK_DIR",
          (("--text_ops", "text_ops"), ("serving_default sentences/s",
                                        "serving_default_sentences_per_s"),
           ("tokenizer sentences/s", "tokenize_sentences_per_s"))),
))

PAGES = (DEMO, TRANSLATION, PARSING, TRAINING, DECODING)
