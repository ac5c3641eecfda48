"""t2t_lite-exporter: SavedModels that serve ids and text, loaded in fresh processes."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import NO_EVAL, session_run
from export_parity import assert_same_ids, best_ids, best_scores
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.data.options import DatagenOptions
from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.runs import weights
from t2t_lite.data import datagen
from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.decoder import Decoder
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.serving import export
from t2t_lite.training import trainer
from t2t_lite.bin import decoder as decoder_cli
from t2t_lite.bin import exporter as exporter_cli
from t2t_lite.ids import strip_ids
from t2t_lite.problems.base import Problem


TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"
TESTDATA = pathlib.Path(__file__).parent / "testdata" / "bleu"
SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")


def _quiet(_):
    pass


def _fresh(code: str, payload) -> dict:
    """Runs `code` in a new Python with PAYLOAD (json) bound; returns its json stdout."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PAYLOAD=json.dumps(payload))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reverse_run(tmp_path_factory):
    """algorithmic_reverse, 200 steps: enough that its outputs differ between inputs (at
    20 steps beam 3 gave the empty output for every input). Training 200 steps instead
    of 20 costs about a second (measured: 5.1 s -> 6.2 s; the rest is tracing)."""
    out = tmp_path_factory.mktemp("reverse")
    hparams = registry.hparams("tiny").override(TINY + ",max_length=24")
    trainer.train(registry.problem("algorithmic_reverse"), hparams, str(out),
                  options=TrainOptions(eval=NO_EVAL, train_steps=200, log_every_steps=1000),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=_quiet)
    return str(out)


IDS_CODE = r"""
import json, os, sys
import tensorflow as tf
payload = json.loads(os.environ["PAYLOAD"])
loaded = tf.saved_model.load(payload["path"])
out = loaded.signatures["translate_ids"](inputs=tf.constant(payload["inputs"], tf.int32))
assert "tensorflow_text" not in sys.modules and "t2t_lite" not in sys.modules
print(json.dumps({"ids": out["ids"].numpy().tolist(), "scores": out["scores"].numpy().tolist()}))
"""


def _strip(row):
    return strip_ids(np.asarray(row))


# The SavedModel's scores against the Decoder's. Measured: the same to the bit, whether
# traced in-process or loaded in a fresh process.
SCORE_ATOL = 1e-5
SHORT_SOURCES = [[10, 8, 7, 1], [4, 5, 2, 2, 2, 3, 1], [7, 1], [8, 11, 9, 8, 7, 7, 11, 1],
                 [10, 7, 2, 9, 9, 1], [10, 3, 2, 10, 1]]


@pytest.mark.guarantee("export-parity", "translate_ids, the function the SavedModel serves "
                       "(traced in-process for one padded length), gives the decoder's greedy "
                       "ids for six inputs of a reverse model trained 200 steps, outputs that "
                       "differ between inputs, and its scores within 1e-5")
def test_translate_ids_function_gives_the_decoders_ids_for_each_input(reverse_run):
    """The fast tier's parity check: the module `export.export` saves, its translate_ids
    traced for max_length 8 (one padded length; the saved one holds 8, 16 and 32 and the
    slow test below runs it, beam 3, in a fresh process). Greedy is the same search as
    beam K with K = 1, and the cheapest to trace. Measured: the same ids (5 distinct
    outputs of 6) and the same scores to the bit."""
    model = Run.open(reverse_run).model()
    options = DecodeOptions(beam_size=1, extra_length=7)
    batch = np.zeros((len(SHORT_SOURCES), 10), np.int32)  # Extra padding must not matter.
    for row, ids in enumerate(SHORT_SOURCES):
        batch[row, :len(ids)] = ids
    got = export._IdsModule(model, options, 8).translate_ids(tf.constant(batch))
    want = [best[0] for best in Decoder(model, options).decode(SHORT_SOURCES)]
    assert_same_ids([_strip(row) for row in got["ids"].numpy()], best_ids(want),
                    least_distinct=len(want) // 2)
    np.testing.assert_allclose(got["scores"].numpy(), best_scores(want), rtol=0,
                               atol=SCORE_ATOL)


@pytest.mark.slow  # ~40 s: export, then the SavedModel in a subprocess; out of `make test`.
@pytest.mark.guarantee("export-parity", "the exported translate_ids, loaded in a fresh process "
                       "without tensorflow_text and by a TF1 session, gives the decoder's beam-3 "
                       "ids for six inputs of a reverse model trained 200 steps, outputs that "
                       "differ between inputs, and its scores within 1e-5")
@pytest.mark.guarantee("atomic-writes", "an export that fails while saving leaves no partial "
                       "version in --export_dir")
def test_translate_ids_matches_decoder_without_tensorflow_text(reverse_run, tmp_path, capsys):
    export_dir = tmp_path / "export"
    assert exporter_cli.main([f"--output_dir={reverse_run}", f"--export_dir={export_dir}",
                              "--beam_size=3", "--extra_length=7"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(export_dir / "1")
    assert "translate_ids only" in captured.err
    assert os.listdir(export_dir) == ["1"]
    rng = np.random.default_rng(0)
    sources = [list(map(int, rng.integers(2, 12, n))) + [1] for n in (3, 9, 1, 12, 5, 30)]
    batch = np.zeros((len(sources), 40), np.int32)  # Extra padding must not matter.
    for row, ids in enumerate(sources):
        batch[row, :len(ids)] = ids
    got = _fresh(IDS_CODE, {"path": str(export_dir / "1"), "inputs": batch.tolist()})
    model = Run.open(reverse_run).model()
    expected = sources[:5] + [sources[5][:23] + [1]]  # max_length=24: truncated like files.
    options = DecodeOptions(beam_size=3, extra_length=7)
    want = Decoder(model, options).decode(expected)
    assert_same_ids([_strip(row) for row in got["ids"]], [best[0][0] for best in want],
                    least_distinct=len(want) // 2)
    np.testing.assert_allclose(got["scores"], [best[0][1] for best in want], rtol=0,
                               atol=SCORE_ATOL)
    # Padded length (the longest row, 24, padded to a power of two: 32) + extra_length.
    assert len(got["ids"][0]) == decode_policy.padded_length(24) + 7 == 39

    # A session-based loader (TF Serving's path) runs it too, with the same result.
    session = session_run(export_dir / "1", "translate_ids", batch, tmp_path)
    assert [_strip(row) for row in session["ids"]] == [_strip(row) for row in got["ids"]]
    np.testing.assert_allclose(session["scores"], got["scores"], atol=1e-5)

    # The exported variables hold the checkpoint's weights.
    reader = tf.train.load_checkpoint(str(export_dir / "1" / "variables" / "variables"))
    keys = [k for k in reader.get_variable_to_shape_map() if "model_weights" in k]
    assert len(keys) == len(model.weights)

    # Re-export: version 2; a failing export leaves nothing behind.
    assert exporter_cli.main([f"--output_dir={reverse_run}", f"--export_dir={export_dir}"]) == 0
    assert capsys.readouterr().out.strip() == str(export_dir / "2")
    original = export._save

    def failing(*args):
        raise RuntimeError("disk full")

    export._save = failing
    try:
        with pytest.raises(RuntimeError, match="disk full"):
            export.export(reverse_run, str(export_dir))
    finally:
        export._save = original
    assert sorted(os.listdir(export_dir)) == ["1", "2"]


@pytest.mark.slow  # ~15-25 s; kept out of `make test` for the 15-minute budget.
@pytest.mark.guarantee("atomic-writes", "an export killed by SIGKILL leaves only its temporary "
                       "directory, which the next export into the same --export_dir removes (an "
                       "export still running is left alone)")
def test_export_killed_by_sigkill_is_cleaned_up_by_the_next(reverse_run, tmp_path):
    import signal
    import time

    export_dir = tmp_path / "export"
    exporter = os.path.join(os.path.dirname(sys.executable), "t2t_lite-exporter")
    process = subprocess.Popen([exporter, f"--output_dir={reverse_run}",
                                f"--export_dir={export_dir}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (export_dir.is_dir() and os.listdir(export_dir)) and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    left = os.listdir(export_dir)
    assert len(left) == 1 and left[0].startswith(f".tmp-export-{process.pid}-"), left
    alive = export_dir / f".tmp-export-{os.getpid()}-running"  # An export still running.
    alive.mkdir()
    logged = []
    result = export.export(reverse_run, str(export_dir), log=logged.append)
    assert result.version == 1
    assert sorted(os.listdir(export_dir)) == sorted(["1", alive.name])
    assert any(left[0] in line for line in logged)


@pytest.mark.parametrize("args, message", [
    (["--checkpoint=ckpt-999"], "checkpoint 'ckpt-999' not found"),
    (None, "holds no t2t_lite run"),
    (["--beam_size=0"], "beam_size must be >= 1"),
    (["--extra_length=-1"], "extra_length >= 0"),
])
@pytest.mark.guarantee("one-line-errors", "the exporter: a missing checkpoint, a directory "
                       "without a run, bad decoding values")
def test_errors_are_one_line(reverse_run, tmp_path, args, message, capsys):
    output_dir = reverse_run if args is not None else str(tmp_path / "empty")
    code = exporter_cli.main([f"--output_dir={output_dir}",
                              f"--export_dir={tmp_path / 'e'}"] + (args or []))
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("t2t_lite-exporter: error: ") \
        and message in err[0], err
    assert not os.path.exists(tmp_path / "e") or os.listdir(tmp_path / "e") == []


TEXT_CODE = r"""
import json, os, sys
import tensorflow as tf
payload = json.loads(os.environ["PAYLOAD"])
if payload["tensorflow_text"]:
    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
loaded = tf.saved_model.load(payload["path"])
assert "t2t_lite" not in sys.modules
assert ("tensorflow_text" in sys.modules) == payload["tensorflow_text"]
serve = loaded.signatures["serving_default"]
result = {}
for name, lines in payload["batches"].items():
    out = serve(inputs=tf.constant(lines, tf.string))
    result[name] = [s.decode("utf-8") for s in out["outputs"].numpy().tolist()]
    result[name + "_scores"] = out["scores"].numpy().tolist()
print(json.dumps(result))
"""


@pytest.mark.slow  # ~70 s: datagen, training, two exports, decoder and four subprocesses.
@pytest.mark.guarantee("export-parity", "serving_default (core ops and tensorflow_text), in a "
                       "fresh process and in TF Serving's session loader, writes t2t_lite-"
                       "decoder's beam-2 text for 20 sentences of a model trained 200 steps, "
                       "texts that differ between sentences, and its line for an empty and an "
                       "over-long input")
def test_serving_default_translates_text_like_the_decoder(tmp_path, capsys):
    """A translate_files model trained 200 steps (measured: 2 s more than 3 steps), whose
    outputs differ between sentences (measured: 20 distinct of 20; asserted: half), so a
    signature that ignored its input fails."""
    raw, data_dir, out = tmp_path / "raw", tmp_path / "data", tmp_path / "run"
    raw.mkdir()
    # Any parallel text will do (the model is barely trained): the BLEU test data.
    en, de = _lines(TESTDATA / "newstest2014.ref.de"), _lines(TESTDATA / "newstest2014.hyp.de")
    (raw / "train.en").write_text("\n".join(en * 3) + "\n", encoding="utf-8")
    (raw / "train.de").write_text("\n".join(de * 3) + "\n", encoding="utf-8")
    problem = registry.problem("translate_files")
    datagen.generate(problem, str(data_dir), str(raw), DatagenOptions(vocab_size=500),
                     log=_quiet)
    hparams = registry.hparams("tiny").override(TINY + ",max_length=48")
    trainer.train(problem, hparams, str(out), str(data_dir),
                  TrainOptions(eval=NO_EVAL, train_steps=200, log_every_steps=1000),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=_quiet)
    export_dir = tmp_path / "export"
    for text_ops in ("core", "tensorflow_text"):  # Versions 1 and 2.
        assert exporter_cli.main([f"--output_dir={out}", f"--export_dir={export_dir}",
                                  "--beam_size=2", "--extra_length=4",
                                  f"--text_ops={text_ops}"]) == 0
    assert capsys.readouterr().out.split() == [str(export_dir / "1"), str(export_dir / "2")]
    assert not (export_dir / "1" / "ids").exists() and (export_dir / "2" / "ids").is_dir()

    lines = en[:20]
    source, target = tmp_path / "in.en", tmp_path / "out.de"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert decoder_cli.main([f"--output_dir={out}", f"--decode_from_file={source}",
                             f"--decode_to_file={target}", "--beam_size=2",
                             "--extra_length=4"]) == 0
    expected = target.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(set(expected)) >= len(lines) // 2, expected  # The outputs differ.
    long_line = " ".join(["translation"] * 400)
    batches = {"real": lines, "odd": ["", long_line, "   ", "naïve “quotes” 東京 \u2028 x"]}
    got = _fresh(TEXT_CODE, {"path": str(export_dir / "1"), "batches": batches,
                             "tensorflow_text": False})
    assert got == _fresh(TEXT_CODE, {"path": str(export_dir / "2"), "batches": batches,
                                     "tensorflow_text": True})
    assert got["real"] == expected
    assert got["odd"][0] == "" and got["odd"][2] == "" and got["odd_scores"][0] == 0.0

    # The long line: what the decoder gives for its first max_length - 1 = 47 tokens + EOS.
    model = Run.open(str(out)).model()
    decoder = Decoder(model, DecodeOptions(beam_size=2, extra_length=4))
    tokens = problem.encode(long_line)
    assert len(tokens) > 47
    (want_ids, want_score), = decoder.decode([tokens[:47] + [1]])[0][:1]
    assert got["odd"][1] == problem.decode(want_ids)
    np.testing.assert_allclose(got["odd_scores"][1], want_score, atol=1e-4)

    # TensorFlow Serving's loader (a TF1 session, no tensorflow_text) runs the core-op
    # export's text and ids signatures, and the tensorflow_text export's ids-only copy.
    session = session_run(export_dir / "1", "serving_default",
                          np.array([line.encode("utf-8") for line in lines], dtype=object),
                          tmp_path)
    assert [text.decode("utf-8") for text in session["outputs"]] == expected
    ids = [problem.encode(lines[0]) + [1]]
    want = decoder.decode(ids)
    for path in (export_dir / "1", export_dir / "2" / "ids"):
        got_ids = _fresh(IDS_CODE, {"path": str(path), "inputs": ids})
        assert _strip(got_ids["ids"][0]) == want[0][0][0]
        session = session_run(path, "translate_ids", np.asarray(ids, np.int32), tmp_path)
        assert _strip(session["ids"][0]) == want[0][0][0]

    shown = subprocess.run([SAVED_MODEL_CLI, "show", "--all", "--dir", str(export_dir / "1")],
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "signature_def['serving_default']" in shown.stdout
    assert "signature_def['translate_ids']" in shown.stdout
    assert os.path.exists(export_dir / "1" / "assets" / "vocab.translate_files.model")


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


class _EchoIds(tf.Module):
    """Stands in for _IdsModule: translate_ids returns its inputs (no model)."""

    def __init__(self):
        super().__init__()
        self.translate_ids = tf.function(
            lambda inputs: {"ids": inputs, "scores": tf.reduce_sum(tf.cast(inputs, tf.float32),
                                                                   axis=1)},
            input_signature=[tf.TensorSpec([None, None], tf.int32)])


@pytest.mark.parametrize("text_ops", export.TEXT_OPS)
def test_text_module_tokenizes_source_and_detokenizes_target_around_one_trace(tmp_path, text_ops):
    from t2t_lite.data.text_encoder import train_vocab

    en, de = _lines(TESTDATA / "newstest2014.ref.de"), _lines(TESTDATA / "newstest2014.hyp.de")
    vocabs = {"source": train_vocab([s.upper() for s in en], 420), "target": train_vocab(de, 500)}
    paths = {}
    for side, vocab in vocabs.items():
        paths[side] = str(tmp_path / f"vocab.{side}.model")
        with open(paths[side], "wb") as f:
            f.write(vocab.model_proto)
    echo = _EchoIds()
    module = export._TextModule(echo, 6, paths["source"], paths["target"], text_ops=text_ops)
    module.serve.get_concrete_function()
    assert module.translate_ids is echo.translate_ids
    lines = ["Der Hund läuft schnell nach Hause und bleibt dort.", "ja", ""]
    out = module.serve(tf.constant(lines))
    # The echoed ids: the source tokens as decode_policy cuts them (5 tokens + EOS).
    sources = [decode_policy.source_ids(vocabs["source"].encode(line), 6) for line in lines]
    want = [vocabs["target"].decode(ids) if line else "" for ids, line in zip(sources, lines)]
    assert [s.decode("utf-8") for s in out["outputs"].numpy()] == want
    assert want[0] != vocabs["source"].decode(sources[0])  # The vocabularies differ.
    assert out["scores"].numpy().tolist() == [float(sum(ids)) if line else 0.0
                                              for ids, line in zip(sources, lines)]
    assert echo.translate_ids.experimental_get_tracing_count() == 1  # Traced once, shared.
    assert sorted(os.path.basename(a.asset_path.numpy().decode())
                  for a in module.vocab_assets) == ["vocab.source.model", "vocab.target.model"]


def test_vocab_files_source_and_target(tmp_path):
    source, target = tmp_path / "s.model", tmp_path / "t.model"
    source.write_bytes(b"x")
    target.write_bytes(b"y")

    class Separate(Problem):
        name = "separate"
        examples = encode = decode = None

        def vocab_files(self):
            return str(source), str(target)

    class Shared(Separate):
        name = "shared"

        def vocab_files(self):
            return (str(source),) * 2

    class Ids(Separate):
        name = "ids"

        def vocab_files(self):
            return Problem.vocab_files(self)

    assert export.vocab_files(Separate()) == (str(source), str(target))
    assert export.vocab_files(Shared()) == (str(source), str(source))
    assert export.vocab_files(Ids()) is None
    target.unlink()
    with pytest.raises(export.ExportError, match=f"no vocabulary {target}: run t2t_lite-datagen "
                                           "--problem=separate"):
        export.vocab_files(Separate())
