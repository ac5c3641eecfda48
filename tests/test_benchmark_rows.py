"""The benchmark scripts' raw rows carry the fields benchmarks/results/README.md documents.

Each script builds its row in one function; these tests call it with fake
measurements (nothing is trained, decoded or exported), so a script that stops
writing a field, or the machine fields, fails here.
"""

import json
import re
import os
import sys
import types

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, ROOT)  # `benchmarks` runs from the repository root; it is not installed.

from benchmarks import ctranslate2_multi30k  # noqa: E402
from benchmarks import decode_profile  # noqa: E402
from benchmarks import demo  # noqa: E402
from benchmarks import export_time  # noqa: E402
from benchmarks import machine  # noqa: E402
from benchmarks import multi30k  # noqa: E402
from benchmarks import train_profile  # noqa: E402
from benchmarks import rows  # noqa: E402
from t2t_lite.problems.algorithmic import AlgorithmicReverse  # noqa: E402
from t2t_lite.registry import register_problem  # noqa: E402

MACHINE = {"cpu", "cores", "load_average", "peak_gflops"}
FAKE_MACHINE = machine.machine_fields(peak_flops=476e9)


def test_machine_fields_and_rows(tmp_path, capsys):
    assert set(FAKE_MACHINE) == MACHINE == set(machine.MACHINE_FIELDS)
    assert FAKE_MACHINE["peak_gflops"] == 476.0 and FAKE_MACHINE["cpu"]
    assert rows.parse_field("minutes=30") == ("minutes", 30)
    assert rows.parse_field("core=one core") == ("core", "one core")
    path = tmp_path / "results" / "rows.jsonl"
    rows.append_row({"a": 1}, str(path))
    rows.append_row({"b": 2, "date": "2000-01-01"}, "-")
    (written,) = [json.loads(line) for line in path.read_text().splitlines()]
    # Every row says when, at which commit and by which benchmark it was measured (the
    # results pages print them); a field the row has itself wins.
    assert written["a"] == 1 and written["benchmark"] == "rows"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", written["date"])
    assert re.fullmatch(r"[0-9a-f]{7}(-dirty)?|unknown", written["commit"])
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed[0] == written and printed[1]["b"] == 2
    assert printed[1]["date"] == "2000-01-01" and "benchmark" not in printed[1]


def test_demo_recipe_is_the_makefiles():
    recipe = demo.demo_recipe(os.path.join(BENCHMARKS, "..", "Makefile"), "/w/demo_out", "/v/bin")
    assert [demo.stage_name(argv) for argv in recipe] == ["clean", "train", "average", "decode"]
    text = " ".join(" ".join(argv) for argv in recipe)
    assert "$(" not in text and "--output_dir=/w/demo_out" in text
    assert recipe[1][0] == "/v/bin/t2t_lite-trainer"
    assert "--hparams_overrides=dropout_rate=0.0,learning_rate_scale=0.5," \
           "min_length_bucket=14" in recipe[1]
    assert recipe[2][1:] == ["--output_dir=/w/demo_out", "--last=5"]
    assert "--checkpoint=averaged" in recipe[3] and "--batch_size=250" in recipe[3]


def _trainer_log(tmp_path):
    """A trainer log: TrainProgress's own window lines, and the dev evaluator's format."""
    from t2t_lite.progress import TrainProgress

    lines = ["training algorithmic_reverse with 924,556 parameters on 1 replica(s), 1400 steps"]
    progress = TrainProgress(str(tmp_path), 1400, 0, lines.append)
    for step, tokens in ((100, 500.0), (200, 800.0), (300, 900.0)):
        progress.add(1.0, 1.0, tokens)
        progress.start -= 0.1  # 0.1 s per window.
        progress.flush(step, 1e-3)
    lines.append("dev step 1000: loss 0.3141  nll 0.1234  exact_match 96.00 "
                 "(200 greedy decodes, 4.2 s)  new best -> best/")
    lines.append("dev step 1400: loss 0.3000  nll 0.1100  exact_match 92.00 "
                 "(200 greedy decodes, 4.0 s)")
    return "\n".join(lines) + "\n"


def _decoder_log(search, correct):
    from t2t_lite.metrics.base import ExactMatch

    score = ExactMatch().score(["1 2"] * correct + ["x"] * (1000 - correct), ["1 2"] * 1000)
    return (f"decoding with /w/demo_out/ckpt-1400\n  3 1  ->  1 3   (reference: 1 3)\n"
            f"test: 1000 examples, {search}, 12.3 s\n{score.line}\n")


def test_demo_row(tmp_path):
    train = demo.parse_trainer_log(_trainer_log(tmp_path))
    assert train["parameters"] == 924_556
    assert [d["step"] for d in train["dev_evaluations"]] == [1000, 1400]
    assert train["dev_evaluations"][0] == {"step": 1000, "loss": 0.3141, "nll": 0.1234,
                                           "exact_match": 96.0, "decoded": 200,
                                           "new_best": True}
    assert not train["dev_evaluations"][1]["new_best"]
    rates = train["tokens_per_s"]
    assert [step for step, _ in rates["windows"]] == [100, 200, 300]
    assert set(rates) == {"windows", "min_after_first", "median_after_first", "max_after_first"}
    averaged, last = demo.parse_decoder_log(_decoder_log("beam 4", 1000)), \
        demo.parse_decoder_log(_decoder_log("greedy", 951))
    assert (averaged["percent"], averaged["correct"], averaged["total"]) == (100.0, 1000, 1000)
    assert (last["percent"], last["search"], last["checkpoint"]) == (95.1, "greedy", "ckpt-1400")
    held_out = {"test": {"sequences": 1000, "distinct": 1000, "in_training": 0}}
    recipe = demo.demo_recipe(os.path.join(BENCHMARKS, "..", "Makefile"), "/w/d", "/v/bin")
    seconds = {"clean": 0.1, "train": 100.0, "average": 5.0, "decode": 20.0, "last_greedy": 9.0}
    row = demo.demo_row(recipe, ["t2t_lite-decoder", "--beam_size=1"], seconds, train,
                        averaged, last, held_out, FAKE_MACHINE, {"tensorflow": "2.x"})
    assert set(row) == {"bench", "date", "recipe", "last_greedy_command", "problem",
                        "parameters", "seconds", "accuracy", "last_checkpoint",
                        "dev_evaluations", "tokens_per_s", "held_out", "tensorflow"} | MACHINE
    assert row["seconds"]["make_demo"] == 125.1 and row["last_checkpoint"] == "ckpt-1400"
    assert row["accuracy"]["averaged"]["percent"] == 100.0
    assert row["held_out"]["test"]["distinct"] == 1000
    json.dumps(row)  # A JSON line.


@register_problem("test_rows_small_reverse")
class _SmallReverse(AlgorithmicReverse):
    """algorithmic_reverse with small splits, for `held_out_counts`."""

    split_sizes = {"train": 3000, "dev": 30, "test": 40}


def test_demo_held_out_counts():
    counts = demo.held_out_counts("test_rows_small_reverse")
    assert counts["test"] == {"sequences": 40, "distinct": 40, "in_training": 0}
    assert counts["dev"] == {"sequences": 30, "distinct": 30, "in_training": 0}


def test_export_row():
    result = types.SimpleNamespace(seconds=29.84, size_bytes=int(15.6 * 2**20),
                                   signatures=("translate_ids",))
    row = export_time.export_row("tiny", 12, 924_556, result, (8, 16, 32, 64), FAKE_MACHINE)
    assert set(row) == {"bench", "date", "hparams", "vocab", "params", "seconds", "mib",
                        "source_lengths", "signatures", "tensorflow"} | MACHINE
    assert (row["seconds"], row["mib"], row["source_lengths"]) == (29.8, 15.6, [8, 16, 32, 64])


def test_multi30k_rows():
    args = multi30k.parse_args(["--raw_dir=r", "--work_dir=w", "--system=t2t_lite multi30k"])
    result = types.SimpleNamespace(tokens_per_second=2812.34)
    scored = {"checkpoint": "ckpt-200", "step": 200, "averaged": ["ckpt-200"],
              "bleu": {}, "decode_seconds": {}, "dev_loss": 3.0, "dev_nll": 2.0}
    windows = [(100, 1000.0), (200, 2800.0), (300, 2900.0)]
    rates = multi30k.train_rates(windows, 200)
    assert (rates["windows"], rates["min"], rates["max"]) == (2, 1000.0, 2800.0)
    assert multi30k.train_rates([], 200) is None
    common = {"system": args.system, "core": 1, **FAKE_MACHINE}
    row = multi30k.stage_row(common, multi30k.trained_fields(30.0, args, "d", 1800.0, result),
                             scored, rates)
    assert set(row) == {"system", "minutes", "hparams", "scored_on", "data_dir", "overrides",
                        "wall_seconds", "tokens_per_second", "checkpoint", "step", "averaged",
                        "bleu", "decode_seconds", "dev_loss", "dev_nll", "train_tokens_per_s",
                        "core"} | MACHINE
    assert row["system"] == "t2t_lite multi30k" and row["tokens_per_second"] == 2812.3
    evaluated = multi30k.stage_row({**FAKE_MACHINE}, {"minutes": 60.0, "scored_on": "val"},
                                   scored, None)
    assert "system" not in evaluated and "train_tokens_per_s" in evaluated


def test_ctranslate2_multi30k_rows(monkeypatch):
    vocab = types.SimpleNamespace(encode=lambda text: text.split())  # One piece per word.
    common = {"test": "test_2016_flickr", "beam_size": 4, "threads": 2, **FAKE_MACHINE}
    outputs = ["ein Hund läuft .", "zwei Männer"]
    row = ctranslate2_multi30k.row("CTranslate2 int8", outputs, 0.5, outputs, vocab, common,
                                   export_mib=8.6, quantization="int8")
    assert set(row) == {"system", "test", "beam_size", "threads", "sentences", "bleu",
                        "signature", "decode_seconds", "sentences_per_s",
                        "target_tokens_per_s", "export_mib", "quantization"} | MACHINE
    assert (row["bleu"], row["sentences_per_s"], row["target_tokens_per_s"]) == (100.0, 4.0, 12.0)
    assert row["signature"].startswith("nrefs:1|case:mixed")
    monkeypatch.setattr(sys, "argv", ["x", "--run_dir=r", "--raw_dir=d", "--test=test_2017_mscoco"])
    with pytest.raises(SystemExit, match="held out"):
        ctranslate2_multi30k.main()


def test_decode_profile_rows():
    args = types.SimpleNamespace(size="bench", jit=False, threads=1, batches=2, top=2,
                                 core="dedicated (taskset, nothing else on it)")
    row = decode_profile.profile_row(args, 1.39, {"_MklMatMul": 1.0, "GatherV2": 0.2,
                                                  "TopKV2": 0.1}, {"_MklMatMul": 2048,
                                                                   "GatherV2": 1360,
                                                                   "TopKV2": 80},
                                     "/tmp/log", FAKE_MACHINE)
    assert set(row) == {"bench", "size", "jit", "threads", "wall_seconds_per_batch",
                        "kernel_seconds_per_batch", "op_executions_per_step", "top",
                        "logdir", "core"} | MACHINE
    assert [item["op"] for item in row["top"]] == ["_MklMatMul", "GatherV2"]
    assert row["core"] == args.core and row["kernel_seconds_per_batch"] == 0.65
    write = decode_profile.cache_write_row(args, "slice_update", [0.5, 0.52, 0.6], FAKE_MACHINE)
    assert set(write) == {"bench", "size", "jit", "threads", "cache_write", "batches",
                          "median_seconds_per_batch", "tgt_tokens_per_s", "core"} | MACHINE
    assert write["median_seconds_per_batch"] == 0.52


def test_train_profile_rows():
    args = types.SimpleNamespace(size="base", jit=False, steps=2, top=2, core="dedicated")
    row = train_profile.profile_row(args, 7.1, {"_MklMatMul": 18.4, "Mul": 0.7, "Sub": 0.3},
                                    {"_MklMatMul": 582, "Mul": 2416, "Sub": 1546},
                                    FAKE_MACHINE, "Intel AVX2")
    assert set(row) == {"bench", "size", "jit", "threads", "steps", "wall_seconds_per_step",
                        "kernel_seconds_per_step", "op_executions_per_step", "top",
                        "onednn_isa", "core"} | MACHINE
    assert [item["op"] for item in row["top"]] == ["_MklMatMul", "Mul"]
    assert row["kernel_seconds_per_step"] == 9.7 and row["op_executions_per_step"] == 2272.0
    assert row["top"][0]["per_step"] == 291.0 and row["onednn_isa"] == "Intel AVX2"


def test_multi30k_dev_curve_counts_training_minutes_only():
    # Two trainer calls of 30 minutes with 10 minutes of scoring between them.
    spans = [(1000.0, 2800.0), (3400.0, 5200.0)]
    assert multi30k.training_minutes(1600.0, spans) == 10.0
    assert multi30k.training_minutes(4000.0, spans) == 40.0  # the pause does not count
    assert multi30k.training_minutes(3000.0, spans) is None
    events = [(4000.0, 2000, 1.71234), (1600.0, 1000, 2.5)]
    assert multi30k.dev_curve(events, spans, 2000) == [[10.0, 1000, 2.5], [40.0, 2000, 1.7123]]
    assert multi30k.dev_curve(events, spans, 1500) == [[10.0, 1000, 2.5]]


def test_parsing_rows_split_tagging_by_unknown_words():
    from benchmarks import parsing

    from t2t_lite.data import word_classes

    mark = word_classes.SPACE_MARK
    pieces = ["<pad>", "</s>", "<unk>", mark + "dogs", mark + ".", *word_classes.CLASS_PIECES]
    index = {piece: i for i, piece in enumerate(pieces)}

    class Vocab:
        model_type, vocab_size = "word", len(pieces)

        def id_to_piece(self, i):
            return pieces[i]

    problem = types.SimpleNamespace(source_vocab=Vocab(), encode=lambda text: [
        index.get(mark + w, index[word_classes.word_class(w)]) for w in text.split()])
    gold = "(TOP (S (NP (NNP Zorblax) (NNS dogs)) (VP (VBD barked)) (. .)))"
    hypothesis = "(TOP (S (NP (NN Zorblax) (NNS dogs)) (VP (VBD barked)) (. .)))"
    assert parsing.unknown_word_tagging(problem, [hypothesis], [gold]) == {
        "unknown_share": 50.0, "tagging_known": 100.0, "tagging_unknown": 50.0}
    # An unparsed line (other words) counts every word wrong; a BPE source has no split.
    assert parsing.unknown_word_tagging(problem, ["(TOP (XX a))"], [gold]) == {
        "unknown_share": 50.0, "tagging_known": 0.0, "tagging_unknown": 0.0}
    Vocab.model_type = "bpe"
    assert parsing.unknown_word_tagging(problem, [hypothesis], [gold]) == {}


def test_decoder_end_to_end_systems_and_ratios():
    from benchmarks import decoder_end_to_end

    args = types.SimpleNamespace(output_dir="runs/m30k", tree=["before=/tmp/old"],
                                 modes="plain,jit,--batch_size=128 --shards=1",
                                 ctranslate2="int8=ct2/1", threads=2)
    runs = decoder_end_to_end.systems(args, "in.txt", "out.txt")
    assert [fields for fields, _, _ in runs] == [
        {"system": "t2t_lite-decoder", "tree": "before", "jit": False, "flags": ""},
        {"system": "t2t_lite-decoder", "tree": "before", "jit": True, "flags": "--jit"},
        {"system": "t2t_lite-decoder", "tree": "before", "jit": False,
         "flags": "--batch_size=128 --shards=1"},
        {"system": "CTranslate2", "export": "int8"}]
    (_, plain, cwd), (_, jit, _), (_, flagged, _), (_, ct2, _) = runs
    assert flagged[-2:] == ["--batch_size=128", "--shards=1"]
    assert cwd == "/tmp/old" and plain[1:3] == ["-m", "t2t_lite.bin.decoder"]
    assert "--decode_from_file=in.txt" in plain and jit[-1] == "--jit"
    assert ct2[-4:] == [os.path.abspath("ct2/1"), "in.txt", "out.txt", "2"]
    args.tree, args.modes = ["before=/tmp/old", "after=/tmp/new"], "plain,after:--shards=1"
    runs = decoder_end_to_end.systems(args, "in.txt", "out.txt")
    assert [(f.get("tree"), f.get("flags")) for f, _, _ in runs] == [
        ("before", ""), ("after", ""), ("after", "--shards=1"), (None, None)]
    rows = [{"system": "t2t_lite-decoder", "sentences_per_s": 30.0},
            {"system": "CTranslate2", "sentences_per_s": 60.0}]
    assert [r["ratio_to_ctranslate2"] for r in decoder_end_to_end.with_ratios(rows)] == [0.5, 1]
    assert decoder_end_to_end.with_ratios(rows[:1]) == rows[:1]


def test_evalb_rows_by_length_band_partition_the_sentences(tmp_path, capsys, monkeypatch):
    from benchmarks import evalb_row

    gold = ["(TOP (S (NP (DT a) (NN b)) (VP (VB c))))",
            "(TOP (S (NP (DT a) (NN b) (NN d) (NN e)) (VP (VB c))))",
            "(TOP (S (NP (NN " + ") (NN ".join("w" * 7) + ")) (VP (VB c))))"]
    test = [gold[0], "(TOP (S (NP (NP (DT a) (NN b)) (NN d) (NN e)) (VP (VB c))))", gold[2]]
    paths = []
    for name, trees in (("gold", gold), ("test", test)):
        paths.append(tmp_path / f"{name}.trees")
        paths[-1].write_text("\n".join(trees) + "\n")
    monkeypatch.setattr(sys, "argv", ["evalb_row.py", f"--gold={paths[0]}", f"--test={paths[1]}",
                                      "--system=s", "--split=dev", "--by_length=3,5",
                                      "--field=session=x"])
    evalb_row.main()
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["length"] for r in rows] == ["1-3", "4-5", "6+"]
    assert [r["sentences"] for r in rows] == [1, 1, 1]
    assert rows[0]["f1"] == rows[2]["f1"] == 100.0
    assert rows[1]["recall"] == 100.0 and rows[1]["precision"] < 100.0  # One extra NP.
    assert all(r["split"] == "dev" and r["session"] == "x" and r["cpu"] for r in rows)
    monkeypatch.setattr(sys, "argv", sys.argv[:-2])
    evalb_row.main()
    (whole,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert whole["gold_brackets"] == sum(r["gold_brackets"] for r in rows)
    assert 0 < whole["f1"] < 100 and "length" not in whole


def test_train_interleaved_rows():
    from benchmarks import train_interleaved

    args = types.SimpleNamespace(change="loss", size="bench")
    times = {"before": [0.5, 0.6, 0.7], "after": [0.4, 0.5, 0.6]}
    row = train_interleaved.interleaved_row(args, "after", times, 1024.0, FAKE_MACHINE)
    assert row["tgt_tokens_per_s"] == {"median": 2048.0, "best": 2560.0, "worst": 1706.7}
    assert row["after_over_before"] == 1.2 and row["steps"] == 3
    assert MACHINE <= set(row) and (row["change"], row["setting"]) == ("loss", "after")
