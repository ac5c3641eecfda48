"""t2t_lite-datagen: shards, resume, atomic files, and every kind of bad input."""

import gzip
import hashlib
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf
from conftest import data_file
from disk_faults import held_command, kill_while_held

from t2t_lite.data.options import DatagenOptions
from t2t_lite import registry
from t2t_lite.data import datagen
from t2t_lite.data import datagen_io
from t2t_lite.data import shards
from t2t_lite.bin import datagen as datagen_cli
from t2t_lite.problems import EOS_ID, ProblemError
from t2t_lite.data.text_encoder import DataError, normalize

SMALL = DatagenOptions(vocab_size=800, shard_size=100)


def _lines(path, start=0, stop=None):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()[start:stop]


@pytest.fixture
def raw(tmp_path):
    """translate_files input: train 300, dev 40, test 30 pairs of real newstest2013 text."""
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    for lang in ("en", "de"):
        lines = _lines(data_file("wmt14", f"newstest2013.{lang}", lines=370))
        for split, (a, b) in {"train": (0, 300), "dev": (300, 340), "test": (340, 370)}.items():
            (raw_dir / f"{split}.{lang}").write_text("\n".join(lines[a:b]) + "\n",
                                                     encoding="utf-8")
    return raw_dir


def _generate(raw_dir, data_dir, options=SMALL, **kw):
    problem = registry.problem("translate_files")
    summary = datagen.generate(problem, str(data_dir), raw_dir and str(raw_dir), options,
                               log=lambda _: None, **kw)
    return problem, summary


def _snapshot(directory):
    return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(directory))}


def test_translate_files(raw, tmp_path):
    data_dir = tmp_path / "data"
    problem, summary = _generate(raw, data_dir)
    counts = {s.split: (s.pairs, s.written, s.shards, s.shards_skipped) for s in summary.splits}
    assert counts == {"train": (300, 300, 3, 0), "dev": (40, 40, 1, 0), "test": (30, 30, 1, 0)}
    assert summary.vocab_trained and summary.vocab_size == 800
    names = sorted(os.listdir(data_dir))
    assert names == ["translate_files-dev-00000-of-00001", "translate_files-test-00000-of-00001",
                     "translate_files-train-00000-of-00003", "translate_files-train-00001-of-00003",
                     "translate_files-train-00002-of-00003", "translate_files.datagen.json",
                     "vocab.translate_files.model", "vocab.translate_files.vocab"]
    problem = registry.problem("translate_files")
    problem.set_data_dir(str(data_dir))
    assert problem.vocab_size == 800
    dev = list(problem.examples("dev").as_numpy_iterator())
    sources = _lines(raw / "dev.en")
    targets = _lines(raw / "dev.de")
    assert [problem.decode(ex["inputs"]) for ex in dev] == [normalize(s) for s in sources]
    assert [problem.decode(ex["targets"]) for ex in dev] == [normalize(t) for t in targets]
    assert all(ex["inputs"][-1] == EOS_ID and ex["targets"][-1] == EOS_ID for ex in dev)
    assert dev[0]["inputs"].dtype == "int32"
    train = {problem.decode(ex["inputs"]) for ex in problem.examples("train").as_numpy_iterator()}
    assert train == {normalize(s) for s in _lines(raw / "train.en")}
    table = datagen.format_summary(summary)
    assert "sent/s" in table and "train" in table


def test_rerun_skips_finished_shards(raw, tmp_path):
    data_dir = tmp_path / "data"
    _, first = _generate(raw, data_dir)
    before = {name: os.stat(data_dir / name).st_mtime_ns for name in os.listdir(data_dir)
              if name.startswith("translate_files-")}
    _, again = _generate(raw, data_dir)
    assert not again.vocab_trained
    assert [(s.shards_skipped, s.written) for s in again.splits] == [(3, 300), (1, 40), (1, 30)]
    assert [s.source_tokens for s in again.splits] == [s.source_tokens for s in first.splits]
    after = {name: os.stat(data_dir / name).st_mtime_ns for name in before}
    assert after == before


@pytest.mark.guarantee("atomic-writes", "datagen interrupted half-way through a shard leaves "
                       "no partial shard and no temporary; the rerun removes a stale temporary "
                       "and gives the bytes of an uninterrupted run")
def test_interrupted_shard_leaves_no_partial_file_and_resumes(raw, tmp_path, monkeypatch):
    clean = tmp_path / "clean"
    _generate(raw, clean)
    data_dir = tmp_path / "data"
    calls = []
    real = datagen_io.write_shard

    def dying_write_shard(path, pairs, vocabs, seed, progress=None):
        calls.append(path)
        if len(calls) == 2:  # Dies half-way through the second shard.
            monkeypatch.setattr(tf.io.TFRecordWriter, "write", _die_after(20))
        return real(path, pairs, vocabs, seed, progress)

    monkeypatch.setattr(datagen_io, "write_shard", dying_write_shard)
    with pytest.raises(KeyboardInterrupt):
        _generate(raw, data_dir)
    monkeypatch.undo()
    assert sorted(n for n in os.listdir(data_dir) if "train" in n) == [
        "translate_files-train-00000-of-00003"]  # No partial file, no temporary.
    problem = registry.problem("translate_files")
    with pytest.raises(ProblemError, match="1 of the 3 train shards.*t2t_lite-datagen"):
        problem.examples("train", str(data_dir))
    # A stale temporary, as a SIGKILL would leave it, is removed by the next run.
    (data_dir / ".translate_files-train-00001-of-00003.tmp-99999").write_bytes(b"half")
    _, summary = _generate(raw, data_dir)
    assert summary.splits[0].shards_skipped == 1
    assert _snapshot(data_dir) == _snapshot(clean)  # Same bytes as an uninterrupted run.


def _die_after(n):
    count = [0]
    original = tf.io.TFRecordWriter.write

    def write(self, record):
        count[0] += 1
        if count[0] > n:
            raise KeyboardInterrupt
        return original(self, record)

    return write


@pytest.mark.guarantee("atomic-writes", "datagen killed (SIGKILL) while a shard sits whole "
                       "under its temporary name leaves only whole shards under final names; "
                       "the rerun removes the temporary, skips the whole shards and writes the "
                       "rest")
def test_sigkill_leaves_only_whole_shards(tmp_path):
    MULTI30K = data_file("multi30k")
    data_dir = tmp_path / "data"
    held = "multi30k_ende-train-00003-of-00058"  # The disk never syncs the 4th shard.
    process = subprocess.Popen(
        held_command(held, "t2t_lite.bin.datagen", "--problem=multi30k_ende",
                     f"--data_dir={data_dir}", f"--raw_dir={MULTI30K}", "--vocab_size=1000",
                     "--vocab_sample_size=2000", "--shard_size=500"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        [temporary] = kill_while_held(process, str(data_dir), held, timeout=120)
    finally:
        process.kill()
        process.wait(timeout=30)
    assert sum(1 for _ in tf.data.TFRecordDataset(temporary)) == 500  # Killed mid-write.
    paths, count = shards.shard_files(str(data_dir), "multi30k_ende", "train")
    assert count == 58 and [os.path.basename(p) for p in paths] == [
        shards.shard_name("multi30k_ende", "train", k, 58) for k in range(3)]
    for path in paths:  # Every shard under its final name is whole.
        assert sum(1 for _ in tf.data.TFRecordDataset(path)) == 500
    problem = registry.problem("multi30k_ende")
    summary = datagen.generate(problem, str(data_dir), MULTI30K, DatagenOptions(
        vocab_size=1000, vocab_sample_size=2000, shard_size=500), log=lambda _: None)
    train = summary.splits[0]
    assert train.shards_skipped == 3 and train.written == 29_000
    assert not [n for n in os.listdir(data_dir) if n.startswith(".")]


def test_mismatched_line_counts_name_both_files(raw, tmp_path):
    data_dir = tmp_path / "data"
    _generate(raw, data_dir)
    before = _snapshot(data_dir)
    with open(raw / "dev.de", "a", encoding="utf-8") as f:
        f.write("Eine Zeile zu viel.\n")
    with pytest.raises(ProblemError) as e:
        _generate(raw, data_dir)
    message = str(e.value)
    assert f"{raw / 'dev.en'} has 40 lines" in message and f"{raw / 'dev.de'} has 41" in message
    assert _snapshot(data_dir) == before  # A failed run changes nothing.


def test_invalid_utf8_names_file_and_line(raw, tmp_path):
    lines = (raw / "train.de").read_bytes().split(b"\n")
    lines[6] = lines[6] + b" \xe4rger"  # Latin-1, not UTF-8.
    (raw / "train.de").write_bytes(b"\n".join(lines))
    with pytest.raises(ProblemError, match=r"train\.de, line 7: invalid UTF-8 \(byte 0xe4"):
        _generate(raw, tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_empty_lines_are_skipped_and_counted(raw, tmp_path):
    en = _lines(raw / "train.en")
    de = _lines(raw / "train.de")
    en[3], de[10], en[20], de[20], de[30] = "", "   ", "", "", "\t"
    (raw / "train.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (raw / "train.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    _, summary = _generate(raw, tmp_path / "data")
    train = summary.splits[0]
    assert (train.pairs, train.skipped_empty, train.written) == (300, 4, 296)


def test_missing_files_name_the_expected_path(raw, tmp_path):
    os.remove(raw / "train.de")
    with pytest.raises(ProblemError, match=re.escape(f"{raw / 'train.de'}: file not found")):
        _generate(raw, tmp_path / "data")
    os.remove(raw / "train.en")
    expected = f"{raw / 'train.en'} and {raw / 'train.de'}: file not found"
    with pytest.raises(ProblemError, match=re.escape(expected)):
        _generate(raw, tmp_path / "data")
    with pytest.raises(ProblemError, match="pass --raw_dir=DIR holding train.en and train.de"):
        _generate(None, tmp_path / "data")
    with pytest.raises(ProblemError, match="no such directory"):
        _generate(tmp_path / "nowhere", tmp_path / "data")


def test_gzip_and_languages(raw, tmp_path):
    for split in ("train", "dev"):
        for lang, new in (("en", "en"), ("de", "fr")):
            data = (raw / f"{split}.{lang}").read_bytes()
            (raw / f"{split}.{new}").unlink(missing_ok=True)
            with gzip.open(raw / f"{split}.{new}.gz", "wb") as f:
                f.write(data)
    os.remove(raw / "test.en")  # No test split: optional for translate_files.
    options = DatagenOptions(vocab_size=800, shard_size=1000, source_lang="en",
                                     target_lang="fr")
    _, summary = _generate(raw, tmp_path / "data", options)
    assert [(s.split, s.written) for s in summary.splits] == [("train", 300), ("dev", 40)]


def test_refuses_to_mix_with_other_shards(raw, tmp_path):
    data_dir = tmp_path / "data"
    _generate(raw, data_dir)
    before = _snapshot(data_dir)
    with pytest.raises(DataError, match="has 800 pieces, not the 900 asked"):
        _generate(raw, data_dir, DatagenOptions(vocab_size=900, shard_size=100))
    with pytest.raises(DataError, match=r"made differently \(changed: .*splits.train.shards\b"):
        _generate(raw, data_dir, DatagenOptions(shard_size=50))
    assert _snapshot(data_dir) == before


def test_algorithmic_problems_need_no_datagen(tmp_path):
    with pytest.raises(DataError, match="needs no datagen"):
        datagen.generate(registry.problem("algorithmic_reverse"), str(tmp_path))


def test_cli(raw, tmp_path, capsys):
    data_dir = tmp_path / "data"
    args = ["--problem=translate_files", f"--data_dir={data_dir}", f"--raw_dir={raw}",
            "--vocab_size=800", "--shard_size=100"]
    assert datagen_cli.main(args) == 0
    captured = capsys.readouterr()
    assert "translate_files: vocabulary" in captured.out and "sent/s" in captured.out
    assert "train: 300 pairs from" in captured.err
    os.remove(raw / "test.de")
    assert datagen_cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("t2t_lite-datagen: error: ")
    assert f"{raw / 'test.de'}: file not found" in err[0]


def test_all_empty_training_data(raw, tmp_path):
    (raw / "train.en").write_text("\n \n\t\n", encoding="utf-8")
    (raw / "train.de").write_text("a\nb\nc\n", encoding="utf-8")
    with pytest.raises(DataError, match="every training pair has an empty side"):
        _generate(raw, tmp_path / "data")


def test_corrupt_or_missing_vocabulary(raw, tmp_path):
    data_dir = tmp_path / "data"
    _generate(raw, data_dir)
    (data_dir / "vocab.translate_files.model").write_bytes(b"not a model")
    with pytest.raises(DataError, match="vocab.translate_files.model: not a SentencePiece model"):
        _generate(raw, data_dir)
    os.remove(data_dir / "vocab.translate_files.model")
    with pytest.raises(DataError, match="holds translate_files shards but not their vocabulary"):
        _generate(raw, data_dir)
