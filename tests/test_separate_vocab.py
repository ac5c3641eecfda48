"""Separate source and target vocabularies (shared_vocab = False), on real Multi30k lines."""

import gzip
import hashlib
import json
import os

import pytest
from conftest import data_file

from t2t_lite.runs.run import Run
from t2t_lite.data.options import DatagenOptions
from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry
from t2t_lite.data import datagen
from t2t_lite.bin import datagen as datagen_cli
from t2t_lite.ids import EOS_ID
from t2t_lite.problems import ProblemError
from t2t_lite.problems.translate import TranslateFiles
from t2t_lite.registry import register_problem
from t2t_lite.data.text_encoder import DataError, normalize

NAME = "test_separate_vocab_files"
SIZES = DatagenOptions(source_vocab_size=420, target_vocab_size=480, shard_size=100)


@register_problem(NAME)
class SeparateVocabFiles(TranslateFiles):
    """translate_files with a source vocabulary learned on English, a target one on German."""

    shared_vocab = False


class SeparateWithDefaults(TranslateFiles):
    """Separate vocabularies whose sizes the problem sets (not registered)."""

    name = "test_separate_vocab_defaults"
    shared_vocab = False
    default_source_vocab_size = 400
    default_target_vocab_size = 460


@pytest.fixture
def raw(tmp_path):
    """translate_files input: train 300 and dev 40 Multi30k caption pairs (en -> de)."""
    multi30k = data_file("multi30k")
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    for lang in ("en", "de"):
        with gzip.open(os.path.join(multi30k, f"train.{lang}.gz"), "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
        (raw_dir / f"train.{lang}").write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
        (raw_dir / f"dev.{lang}").write_text("\n".join(lines[300:340]) + "\n", encoding="utf-8")
    return raw_dir


def _generate(problem, raw_dir, data_dir, options=SIZES):
    return datagen.generate(problem, str(data_dir), str(raw_dir), options, log=lambda _: None)


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def _snapshot(directory):
    return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(directory))}


def test_two_vocabularies_each_side_its_own(raw, tmp_path):
    data_dir = tmp_path / "data"
    summary = _generate(registry.problem(NAME), raw, data_dir)
    assert [(v.side, v.size, v.trained) for v in summary.vocabs] == [
        ("source", 420, True), ("target", 480, True)]
    assert sorted(n for n in os.listdir(data_dir) if n.startswith("vocab.")) == [
        f"vocab.{NAME}.source.model", f"vocab.{NAME}.source.vocab",
        f"vocab.{NAME}.target.model", f"vocab.{NAME}.target.vocab"]
    with open(data_dir / f"{NAME}.datagen.json", encoding="utf-8") as f:
        plan = json.load(f)["plan"]
    for side, size in (("source", 420), ("target", 480)):
        model = (data_dir / f"vocab.{NAME}.{side}.model").read_bytes()
        assert plan[f"{side}_vocab_sha256"] == hashlib.sha256(model).hexdigest()
        assert plan[f"{side}_vocab_size"] == size
    assert "vocab_sha256" not in plan

    problem = registry.problem(NAME)
    problem.set_data_dir(str(data_dir))
    assert (problem.source_vocab_size, problem.target_vocab_size) == (420, 480)
    assert problem.source_vocab_file == str(data_dir / f"vocab.{NAME}.source.model")
    assert problem.target_vocab_file == str(data_dir / f"vocab.{NAME}.target.model")
    dev = list(problem.examples("dev").as_numpy_iterator())
    sources, targets = _lines(raw / "dev.en"), _lines(raw / "dev.de")
    assert len(dev) == 40
    assert all(ex["inputs"].max() < 420 and ex["targets"].max() < 480 for ex in dev)
    assert any(ex["targets"].max() >= 420 for ex in dev)  # Target ids past the source size.
    assert all(ex["inputs"][-1] == EOS_ID and ex["targets"][-1] == EOS_ID for ex in dev)
    assert [problem.decode_inputs(ex["inputs"]) for ex in dev] == [normalize(s) for s in sources]
    assert [problem.decode(ex["targets"]) for ex in dev] == [normalize(t) for t in targets]
    assert [problem.encode(s) + [EOS_ID] for s in sources] == [ex["inputs"].tolist() for ex in dev]
    # The target vocabulary would have encoded the inputs otherwise.
    assert [problem.target_vocab.encode(normalize(s)) + [EOS_ID] for s in sources] != [
        ex["inputs"].tolist() for ex in dev]
    assert problem.source_text("dev")[0] == (normalize(sources[0]), normalize(targets[0]))


def test_no_single_vocabulary_and_missing_files(raw, tmp_path):
    problem = registry.problem(NAME)
    problem.set_data_dir(str(tmp_path))
    with pytest.raises(ProblemError, match=f"no vocabulary .*vocab.{NAME}.source.model: run "
                                           f"t2t_lite-datagen --problem={NAME}"):
        problem.encode("A dog.")
    with pytest.raises(ProblemError, match=f"vocab.{NAME}.target.model: run t2t_lite-datagen"):
        problem.decode([5, 6, EOS_ID])
    for what in ("vocab", "vocab_size", "vocab_file"):
        with pytest.raises(ProblemError, match="separate source and target vocabularies"):
            getattr(problem, what)


def test_rerun_reuses_both_and_refuses_per_vocabulary(raw, tmp_path):
    data_dir = tmp_path / "data"
    problem = registry.problem(NAME)
    _generate(problem, raw, data_dir)
    before = _snapshot(data_dir)
    again = _generate(registry.problem(NAME), raw, data_dir)
    assert [(v.side, v.trained) for v in again.vocabs] == [("source", False), ("target", False)]
    assert [s.shards_skipped for s in again.splits] == [3, 1]
    assert _snapshot(data_dir) == before
    with pytest.raises(DataError, match=f"vocab.{NAME}.source.model has 420 pieces, not the 500"):
        _generate(problem, raw, data_dir, DatagenOptions(source_vocab_size=500,
                                                                 target_vocab_size=480))
    os.remove(data_dir / f"vocab.{NAME}.target.model")
    with pytest.raises(DataError, match=f"shards but not their vocabulary .*{NAME}.target.model"):
        _generate(problem, raw, data_dir)
    # Without shards, the missing vocabulary alone is trained again; the other is reused.
    for name in os.listdir(data_dir):
        if name.startswith(f"{NAME}-"):
            os.remove(data_dir / name)
    summary = _generate(problem, raw, data_dir)
    assert [(v.side, v.trained) for v in summary.vocabs] == [("source", False), ("target", True)]
    assert _snapshot(data_dir) == before  # Same vocabulary and shards as the first run.


def test_sizes_from_the_problem_then_flags(raw, tmp_path):
    summary = _generate(SeparateWithDefaults(), raw, tmp_path / "a",
                        DatagenOptions(vocab_size=999, shard_size=100))
    assert [(v.side, v.size) for v in summary.vocabs] == [("source", 400), ("target", 460)]
    summary = _generate(SeparateWithDefaults(), raw, tmp_path / "b",
                        DatagenOptions(target_vocab_size=440, shard_size=100))
    assert [(v.side, v.size) for v in summary.vocabs] == [("source", 400), ("target", 440)]
    summary = _generate(registry.problem(NAME), raw, tmp_path / "c",
                        DatagenOptions(vocab_size=430, shard_size=100))
    assert [(v.side, v.size) for v in summary.vocabs] == [("source", 430), ("target", 430)]


def test_cli_flags(raw, tmp_path, capsys):
    args = [f"--problem={NAME}", f"--data_dir={tmp_path / 'data'}", f"--raw_dir={raw}",
            "--source_vocab_size=410", "--target_vocab_size=470", "--shard_size=100"]
    assert datagen_cli.main(args) == 0
    out = capsys.readouterr().out
    assert f"{NAME}: source vocabulary {tmp_path / 'data'}/vocab.{NAME}.source.model (410" in out
    assert f"{NAME}: target vocabulary {tmp_path / 'data'}/vocab.{NAME}.target.model (470" in out


def test_shared_problem_keeps_one_vocabulary(raw, tmp_path, capsys):
    data_dir = tmp_path / "data"
    summary = _generate(registry.problem("translate_files"), raw, data_dir,
                        DatagenOptions(vocab_size=450, shard_size=100))
    assert [(v.side, v.size) for v in summary.vocabs] == [("shared", 450)]
    assert sorted(n for n in os.listdir(data_dir) if n.startswith("vocab.")) == [
        "vocab.translate_files.model", "vocab.translate_files.vocab"]
    with open(data_dir / "translate_files.datagen.json", encoding="utf-8") as f:
        plan = json.load(f)["plan"]
    assert {"vocab_sha256", "vocab_size"} <= set(plan) and "source_vocab_sha256" not in plan
    problem = registry.problem("translate_files")
    problem.set_data_dir(str(data_dir))
    assert problem.source_vocab is problem.target_vocab is problem.vocab
    assert problem.source_vocab_file == problem.target_vocab_file == problem.vocab_file
    assert problem.source_vocab_size == problem.target_vocab_size == problem.vocab_size == 450
    assert problem.vocab_path() == str(data_dir / "vocab.translate_files.model")
    args = ["--problem=translate_files", f"--data_dir={data_dir}", f"--raw_dir={raw}",
            "--source_vocab_size=400"]
    capsys.readouterr()
    assert datagen_cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "shares one vocabulary" in err[0] and "--vocab_size" in err[0]


@pytest.mark.slow  # ~40-60 s: datagen, training, decoding and export.
def test_train_decode_export_with_separate_vocabularies(raw, tmp_path, capsys):
    """The whole chain on a problem whose sides have their own vocabularies."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SentencePiece op for loading)

    from t2t_lite.runs import weights
    from t2t_lite.training import trainer
    from t2t_lite.bin import decoder as decoder_cli
    from t2t_lite.bin import exporter as exporter_cli
    from t2t_lite.hparams import HParamsError

    problem = registry.problem(NAME)
    data_dir, out = tmp_path / "data", tmp_path / "run"
    _generate(problem, raw, data_dir)
    hparams = registry.hparams("tiny").override(
        "num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=512,max_length=64")
    options = TrainOptions(train_steps=3, log_every_steps=100, eval=EvalOptions(
        eval_every_steps=3, eval_examples=16, eval_decode_examples=8))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with pytest.raises(HParamsError, match="shared_embedding=false"):
        trainer.train(problem, hparams, str(out), str(data_dir), options, strategy, log=print)
    result = trainer.train(problem, hparams.override("shared_embedding=false"), str(out),
                           str(data_dir), options, strategy, log=print)
    assert [s.name for s in result.dev.scores] == ["sacrebleu", "bleu_tokenized", "chrf", "ter"]
    model = Run.open(str(out)).model()
    assert (model.source_vocab_size, model.target_vocab_size) == (420, 480)

    lines = _lines(raw / "dev.en")[:6]
    source, target = tmp_path / "in.en", tmp_path / "out.de"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reference = tmp_path / "ref.de"
    reference.write_text("\n".join(_lines(raw / "dev.de")[:6]) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert decoder_cli.main([f"--output_dir={out}", f"--decode_from_file={source}",
                             f"--decode_to_file={target}", f"--reference={reference}",
                             "--beam_size=2", "--extra_length=5"]) == 0
    printed = capsys.readouterr().out
    assert "sacreBLEU" in printed and "tokenized BLEU" in printed and ", de)" in printed
    decoded = _lines(target)

    export_dir = tmp_path / "export"
    assert exporter_cli.main([f"--output_dir={out}", f"--export_dir={export_dir}",
                              "--beam_size=2", "--extra_length=5"]) == 0
    served = tf.saved_model.load(str(export_dir / "1")).signatures["serving_default"](
        inputs=tf.constant(lines))["outputs"].numpy()
    assert [s.decode("utf-8") for s in served] == decoded
    assets = sorted(os.listdir(export_dir / "1" / "assets"))
    assert assets == [f"vocab.{NAME}.source.model", f"vocab.{NAME}.target.model"]
