"""Translation problems on the real files in ../shared/data: Multi30k, WMT, tfds, trainer."""

import gzip
import os
import socket

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from conftest import NO_EVAL, DATA, needs_data

from t2t_lite.runs.run import Run
from t2t_lite.data.options import DatagenOptions
from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.data import datagen
from t2t_lite.runs import run_dir
from t2t_lite.training import trainer
from t2t_lite.bin import datagen as datagen_cli
from t2t_lite.bin import decoder as decoder_cli
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.problems import ProblemError
from t2t_lite.data.text_encoder import normalize


pytestmark = needs_data("multi30k", "wmt14", "wmt14_enfr", "opennmt_toy_ende")
WMT14 = os.path.join(DATA, "wmt14")
OPENNMT = os.path.join(DATA, "opennmt_toy_ende")
TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=512"


def _lines(path, start=0, stop=None):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()[start:stop]


def _write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def _quiet(_):
    pass


def test_multi30k(tmp_path):
    problem = registry.problem("multi30k_ende")
    raw = os.path.join(DATA, "multi30k")
    summary = datagen.generate(problem, str(tmp_path), raw, DatagenOptions(
        vocab_size=2000, vocab_sample_size=5000), log=_quiet)
    assert [(s.split, s.written, s.skipped_empty) for s in summary.splits] == [
        ("train", 29_000, 0), ("dev", 1014, 0), ("test", 1000, 0)]
    with open(tmp_path / "multi30k_ende.datagen.json", encoding="utf-8") as f:
        manifest = f.read()
    assert "test_2016_flickr" in manifest and "test_2017" not in manifest  # Held out.
    problem.set_data_dir(str(tmp_path))
    dev = list(problem.examples("dev").as_numpy_iterator())
    with gzip.open(os.path.join(raw, "val.de.gz"), "rt", encoding="utf-8") as f:
        references = f.read().splitlines()
    assert [problem.decode(ex["targets"]) for ex in dev] == [normalize(r) for r in references]


def test_wmt_raw_dir_layouts(tmp_path):
    raw = tmp_path / "raw"
    en, de = _lines(f"{OPENNMT}/src-train.txt", 0, 300), _lines(f"{OPENNMT}/tgt-train.txt", 0, 300)
    _write(f"{raw}/training/europarl-v7.de-en.en", en[:200])  # As the WMT archives unpack.
    _write(f"{raw}/training/europarl-v7.de-en.de", de[:200])
    _write(f"{raw}/commoncrawl.de-en.en.gz.tmp", [])  # Not a name it reads.
    _write(f"{raw}/commoncrawl.de-en.en", en[200:])
    _write(f"{raw}/commoncrawl.de-en.de", de[200:])
    for lang in ("en", "de"):
        os.symlink(f"{WMT14}/newstest2013.{lang}", f"{raw}/newstest2013.{lang}")
    problem = registry.problem("wmt_ende")
    options = DatagenOptions(vocab_size=1000)
    summary = datagen.generate(problem, str(tmp_path / "a"), str(raw), options, log=_quiet)
    assert [(s.split, s.pairs) for s in summary.splits] == [("train", 300), ("dev", 3000)]
    # train.en/train.de, when present, are the whole training set; newstest2014 is test.
    _write(f"{raw}/train.en", en[:50])
    _write(f"{raw}/train.de", de[:50])
    for lang in ("en", "de"):
        os.symlink(f"{WMT14}/newstest2014.{lang}", f"{raw}/newstest2014.{lang}")
    summary = datagen.generate(problem, str(tmp_path / "b"), str(raw), options, log=_quiet)
    assert [(s.split, s.pairs) for s in summary.splits] == [
        ("train", 50), ("dev", 3000), ("test", 3003)]
    problem.set_data_dir(str(tmp_path / "b"))
    test = list(problem.examples("test").as_numpy_iterator())
    for name, key in (("newstest2014.en", "inputs"), ("newstest2014.de", "targets")):
        lines = _lines(f"{WMT14}/{name}")
        assert [problem.decode(ex[key]) for ex in test] == [normalize(x) for x in lines]
    os.remove(f"{raw}/newstest2013.de")
    with pytest.raises(ProblemError, match=f"{raw}/newstest2013.de: file not found"):
        datagen.generate(problem, str(tmp_path / "c"), str(raw), options, log=_quiet)


def _network_up(monkeypatch):
    """Any connection 'succeeds' without touching the network."""
    hosts = []

    class Connection:
        def close(self):
            pass

    def connect(address, *args, **kwargs):
        hosts.append(address[0])
        return Connection()

    monkeypatch.setattr(socket, "create_connection", connect)
    return hosts


@pytest.mark.parametrize("name,builder,config,target,files", [
    ("wmt_ende", "wmt_t2t_translate", "de-en", "de", "wmt14"),
    ("wmt_enfr", "wmt14_translate", "fr-en", "fr", "wmt14_enfr"),
])
def test_tensorflow_datasets_path(name, builder, config, target, files, tmp_path, monkeypatch):
    hosts = _network_up(monkeypatch)
    text = {lang: _lines(f"{DATA}/{files}/newstest2014.{lang}") for lang in ("en", target)}
    spans = {"train": (0, 400), "validation": (400, 450), "test": (450, 480)}
    asked = []

    def as_dataset(self, split, **kwargs):
        asked.append((self.name, self.builder_config.name, split))
        a, b = spans[split]
        return tf.data.Dataset.from_tensor_slices({k: v[a:b] for k, v in text.items()})

    problem = registry.problem(name)
    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        summary = datagen.generate(problem, str(tmp_path / "data"), None, DatagenOptions(
            vocab_size=1000, tfds_dir=str(tmp_path / "tfds")), log=_quiet)
    assert hosts == ["www.statmt.org"]
    assert {(b, c) for b, c, _ in asked} == {(builder, config)}
    assert [(s.split, s.written) for s in summary.splits] == [
        ("train", 400), ("dev", 50), ("test", 30)]
    problem.set_data_dir(str(tmp_path / "data"))
    dev = list(problem.examples("dev").as_numpy_iterator())
    assert [problem.decode(ex["inputs"]) for ex in dev] == text["en"][400:450]
    assert [problem.decode(ex["targets"]) for ex in dev] == text[target][400:450]


def test_offline_download_fails_with_one_clear_message(tmp_path, monkeypatch, capsys):
    def unreachable(address, *args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    args = ["--problem=wmt_ende", f"--data_dir={tmp_path / 'data'}",
            f"--tfds_dir={tmp_path / 'tfds'}"]
    assert datagen_cli.main(args) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("t2t_lite-datagen: error: could not download wmt_t2t_translate/de-en")
    assert "www.statmt.org is unreachable" in last and "--raw_dir=DIR" in last
    assert "newstest2013.en" in last

    # The host answers, but the download itself fails (as requests reports it).
    import requests
    _network_up(monkeypatch)

    def download_fails(self, *args, **kwargs):
        raise requests.exceptions.ConnectionError("Max retries exceeded with url: /x.tgz")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", download_fails)
    with pytest.raises(ProblemError, match="could not download .*ConnectionError.*--raw_dir"):
        datagen.generate(registry.problem("wmt_enfr"), str(tmp_path / "data"), None,
                         DatagenOptions(tfds_dir=str(tmp_path / "tfds")), log=_quiet)
    assert not os.path.exists(tmp_path / "data")


def test_problem_needs_its_data_dir(tmp_path, capsys):
    problem = registry.problem("wmt_ende")
    with pytest.raises(ProblemError, match="needs its data_dir"):
        problem.vocab_size
    problem.set_data_dir(str(tmp_path))
    command = f"t2t_lite-datagen --problem=wmt_ende --data_dir={tmp_path}"
    with pytest.raises(ProblemError, match=f"no vocabulary .*: run {command}"):
        problem.vocab_size
    with pytest.raises(ProblemError, match=f"no train data for wmt_ende .*: run {command}"):
        problem.examples("train")
    code = trainer_cli.main(["--problem=multi30k_ende", "--hparams=tiny",
                             f"--output_dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "multi30k_ende needs its data_dir" in err[0]


def test_languages_fixed_for_wmt(tmp_path):
    options = DatagenOptions(source_lang="de", target_lang="en")
    with pytest.raises(ProblemError, match="wmt_ende translates en -> de"):
        datagen.generate(registry.problem("wmt_ende"), str(tmp_path), str(tmp_path), options)


def test_trainer_and_decoder_find_the_vocabulary(tmp_path):
    raw, data_dir, out = tmp_path / "raw", tmp_path / "data", tmp_path / "run"
    _write(f"{raw}/train.en", _lines(f"{WMT14}/newstest2013.en", 0, 200))
    _write(f"{raw}/train.de", _lines(f"{WMT14}/newstest2013.de", 0, 200))
    datagen.generate(registry.problem("translate_files"), str(data_dir), str(raw),
                     DatagenOptions(vocab_size=600), log=_quiet)
    hparams = registry.hparams("tiny").override(TINY)
    trainer.train(registry.problem("translate_files"), hparams, str(out), str(data_dir),
                  TrainOptions(eval=NO_EVAL, train_steps=1, log_every_steps=100),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=_quiet)
    info = Run.open(str(out)).info
    assert (info["problem"], info["source_vocab_size"], info["target_vocab_size"],
            info["data_dir"]) == ("translate_files", 600, 600, str(data_dir))
    source, target = tmp_path / "in.en", tmp_path / "out.de"
    _write(str(source), _lines(f"{WMT14}/newstest2014.en", 0, 3))
    assert decoder_cli.main([f"--output_dir={out}", f"--decode_from_file={source}",
                             f"--decode_to_file={target}", "--beam_size=1",
                             "--extra_length=5"]) == 0  # No --data_dir: problem.json has it.
    decoded = target.read_text(encoding="utf-8").split("\n")
    assert len(decoded) == 4 and "\u2581" not in "".join(decoded)


@pytest.mark.slow
def test_real_data_datagen_train_decode(tmp_path, capsys):
    """Multi30k and WMT-sample datagen, a short tiny run whose loss falls, newstest2014 out."""
    m30k = tmp_path / "multi30k"
    assert datagen_cli.main(["--problem=multi30k_ende", f"--data_dir={m30k}",
                             f"--raw_dir={DATA}/multi30k"]) == 0
    figures = [capsys.readouterr().out]
    raw, data_dir, out = tmp_path / "raw", tmp_path / "ende", tmp_path / "run"
    raw.mkdir()
    links = {"train.en": f"{OPENNMT}/src-train.txt", "train.de": f"{OPENNMT}/tgt-train.txt"}
    for lang in ("en", "de"):
        links[f"newstest2013.{lang}"] = f"{WMT14}/newstest2013.{lang}"  # Dev.
        links[f"newstest2014.{lang}"] = f"{WMT14}/newstest2014.{lang}"  # Test.
    for name, target in links.items():
        os.symlink(target, raw / name)
    assert datagen_cli.main(["--problem=wmt_ende", f"--data_dir={data_dir}", f"--raw_dir={raw}",
                             "--vocab_size=8000"]) == 0
    figures.append(capsys.readouterr().out)
    assert trainer_cli.main(["--problem=wmt_ende", "--hparams=tiny", f"--data_dir={data_dir}",
                             f"--output_dir={out}", "--train_steps=300",
                             "--log_every_steps=50"]) == 0
    log = capsys.readouterr().out
    losses = [float(line.split("loss ")[1].split()[0]) for line in log.splitlines()
              if line.startswith("step ")]
    assert len(losses) == 6 and losses[-1] < losses[0] - 1.5
    source, target = tmp_path / "newstest2014.20.en", tmp_path / "out.de"
    _write(str(source), _lines(f"{WMT14}/newstest2014.en", 0, 20))
    assert decoder_cli.main([f"--output_dir={out}", f"--decode_from_file={source}",
                             f"--decode_to_file={target}"]) == 0
    decoded = target.read_text(encoding="utf-8").splitlines()
    assert len(decoded) == 20 and sum(bool(line) for line in decoded) >= 15
    assert all(line == normalize(line) and "\u2581" not in line and "<unk>" not in line
               for line in decoded)
    words = {w.lower().strip(".,") for line in decoded for w in line.split()}
    assert words & {"die", "der", "und", "das", "ist", "in", "zu"}
    with capsys.disabled():
        print("\n" + "\n".join(figures))
        print(f"losses every 50 steps: {losses}")
        for src, hyp in list(zip(_lines(str(source)), decoded))[:3]:
            print(f"  {src}\n  -> {hyp}")
