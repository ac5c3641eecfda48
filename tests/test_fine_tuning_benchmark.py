"""benchmarks/fine_tuning.py (issue 26): the general corpus it writes and the two Multi30k
commands it runs; nothing is trained here."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def test_the_fine_tuning_benchmark_writes_the_general_corpus_detokenized(tmp_path):
    from benchmarks import fine_tuning

    source = tmp_path / "tgt-train.txt"
    source.write_text("Er sagte : &quot; Ja &quot; .\nDas ist gut .\n", encoding="utf-8")
    fine_tuning.copy_general(str(source), str(tmp_path / "train.de"), keep_tokenized=False)
    assert (tmp_path / "train.de").read_text(encoding="utf-8") == 'Er sagte: "Ja".\nDas ist gut.\n'
    fine_tuning.copy_general(str(source), str(tmp_path / "kept.de"), keep_tokenized=True)
    assert (tmp_path / "kept.de").read_text(encoding="utf-8") == source.read_text(encoding="utf-8")
    assert fine_tuning.parse_args(["--work_dir=w"]).keep_tokenized is False


def test_fine_tune_overrides_reach_the_fine_tuned_run_only():
    from benchmarks import fine_tuning

    plain = fine_tuning.multi30k_commands(fine_tuning.parse_args(["--work_dir=w"]), "g", "m")
    assert not any(a.startswith("--hparams_overrides") for argv in plain.values() for a in argv)
    assert "--init_from=g" in plain["fine_tuned"] and "--init_from=g" not in plain["from_scratch"]
    args = fine_tuning.parse_args(["--work_dir=w", "--fine_tune_overrides=learning_rate_scale=0.5"])
    commands = fine_tuning.multi30k_commands(args, "g", "m")
    assert "--hparams_overrides=learning_rate_scale=0.5" in commands["fine_tuned"]
    assert not any(a.startswith("--hparams_overrides") for a in commands["from_scratch"])
    assert [a for a in commands["fine_tuned"] if not a.startswith(("--init_from", "--hparams_o"))] \
        == [a.replace("from_scratch", "fine_tuned") for a in commands["from_scratch"]]


def test_reverse_trains_the_general_run_on_multi30k_and_fine_tunes_on_the_news_corpus():
    from benchmarks import fine_tuning

    args = fine_tuning.parse_args(["--work_dir=w"])
    assert fine_tuning.roles(args, "news", "m30k") == (("translate_files", "news"),
                                                       ("multi30k_ende", "m30k"))
    reverse = fine_tuning.parse_args(["--work_dir=w", "--reverse"])
    (general, _), (problem, data) = fine_tuning.roles(reverse, "news", "m30k")
    assert (general, problem, data) == ("multi30k_ende", "translate_files", "news")
    commands = fine_tuning.multi30k_commands(reverse, "g", data, problem)
    for argv in commands.values():
        assert "--problem=translate_files" in argv and "--data_dir=news" in argv


def test_multi30k_split_gives_disjoint_general_and_small_corpora_with_the_same_dev(tmp_path):
    """--multi30k_split=N: the general run's pairs are Multi30k's training pairs after the first
    N, the side-by-side runs' the first N; both keep the pairs aligned and use val as dev."""
    import gzip

    from benchmarks import fine_tuning

    raw = tmp_path / "m30k"
    raw.mkdir()
    for side in ("en", "de"):
        with gzip.open(raw / f"train.{side}.gz", "wt", encoding="utf-8") as f:
            f.writelines(f"{side} train {i}\n" for i in range(5))
        (raw / f"val.{side}").write_text(f"{side} val 0\n{side} val 1\n", encoding="utf-8")
    general, small = tmp_path / "g", tmp_path / "s"
    fine_tuning.split_multi30k(str(raw), 2, str(general), str(small))
    assert (general / "train.en").read_text() == "en train 2\nen train 3\nen train 4\n"
    assert (general / "train.de").read_text() == "de train 2\nde train 3\nde train 4\n"
    assert (small / "train.en").read_text() == "en train 0\nen train 1\n"
    assert (small / "train.de").read_text() == "de train 0\nde train 1\n"
    for directory in (general, small):
        assert (directory / "dev.de").read_text() == "de val 0\nde val 1\n"
    args = fine_tuning.parse_args(["--work_dir=w", "--multi30k_split=2"])
    assert fine_tuning.roles(args, "g", "s") == (("translate_files", "g"), ("translate_files", "s"))
    assert fine_tuning.general_run_name(args) == "general_multi30k_after_2"
    with pytest.raises(SystemExit, match=r"1\.\.4"):  # No general pairs left: one line.
        fine_tuning.split_multi30k(str(raw), 5, str(general), str(small))


def test_both_corpora_are_generated_with_the_general_corpus_vocabulary(tmp_path, monkeypatch):
    """The general corpus's datagen trains the vocabulary; its file is in the target data dir,
    under the target problem's name, before the target's datagen runs (which then reuses it)."""
    from benchmarks import fine_tuning

    calls = []

    def fake_tool(name, *args, env=None):
        del env
        calls.append((name, *args))
        flags = dict(a.split("=", 1) for a in args)
        if flags["--problem"] == "translate_files" and "general" in flags["--data_dir"]:
            os.makedirs(flags["--data_dir"], exist_ok=True)
            with open(os.path.join(flags["--data_dir"], "vocab.translate_files.model"), "w") as f:
                f.write("general vocabulary")
        else:  # The target's datagen: the general vocabulary must already be there.
            problem = flags["--problem"]
            with open(os.path.join(flags["--data_dir"], f"vocab.{problem}.model")) as f:
                assert f.read() == "general vocabulary"

    monkeypatch.setattr(fine_tuning, "tool", fake_tool)
    args = fine_tuning.parse_args([f"--work_dir={tmp_path}", "--vocab_size=123"])
    general, target = str(tmp_path / "general"), str(tmp_path / "m30k")
    fine_tuning.datagen_sharing_vocab(args, (general, "graw"), ("multi30k_ende", target, "mraw"))
    assert calls == [
        ("datagen", "--problem=translate_files", f"--data_dir={general}", "--raw_dir=graw",
         "--vocab_size=123"),
        ("datagen", "--problem=multi30k_ende", f"--data_dir={target}", "--raw_dir=mraw",
         "--vocab_size=123")]
