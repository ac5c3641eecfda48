"""The model contract (t2t_lite/models/contract.py): a second model plugs in with no library edit.

`BagAttention`, defined and registered here with its own config (`BagConfig`), is not a
Transformer: its decoder
state is the running mean of the target embeddings so far (a [B, D] sum as its
self_cache, with no length axis), and one single-head attention from that
state over the source embeddings gives the logits. It trains, averages,
decodes and exports through the library exactly as the Transformer does.
Also here: separate source/target vocabularies, registry and run-dir errors.
"""

import dataclasses
import json
import math
import os

import keras
import numpy as np
import pytest
from conftest import NO_EVAL
import tensorflow as tf
from keras import ops

from t2t_lite.runs.run import Run
from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.runs import averaging
from t2t_lite.runs import checkpoints
from t2t_lite.runs import weights as run_weights
from t2t_lite.decoding.decoder import Decoder
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.search import search
from t2t_lite.decoding.splits import decode_lines
from t2t_lite.serving import export
from t2t_lite.runs import run_dir
from t2t_lite.training import trainer
from t2t_lite.hparams import HParams, HParamsError
from t2t_lite.hparams.config import ModelConfig, shaping
from t2t_lite.models.transformer import Transformer
from t2t_lite.models.contract import ModelBase
from t2t_lite.problems.algorithmic import AlgorithmicReverse
from t2t_lite.data.text_encoder import strip_ids


BAG = "model=bag_attention,d_model=16,batch_size=256,max_length=16,extra_length=5"


@dataclasses.dataclass(frozen=True)
class BagConfig(ModelConfig):
    """The fields of bag_attention alone (`hparams.model_config`)."""

    output_bias: bool = shaping(True)  # A bias on the output layer's logits.


@registry.register_model("bag_attention", config=BagConfig)
class BagAttention(ModelBase, keras.Model):
    """Running mean of target embeddings + one single-head attention over the source."""

    def __init__(self, source_vocab_size, target_vocab_size, d_model, output_bias=True,
                 **kwargs):
        super().__init__(**kwargs)
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.d_model = d_model
        self.source_embedding = keras.layers.Embedding(source_vocab_size, d_model,
                                                       name="source_embedding")
        self.target_embedding = keras.layers.Embedding(target_vocab_size, d_model,
                                                       name="target_embedding")
        self.query = keras.layers.Dense(d_model, use_bias=False, name="query")
        self.key = keras.layers.Dense(d_model, use_bias=False, name="key")
        self.value = keras.layers.Dense(d_model, use_bias=False, name="value")
        self.output_dense = keras.layers.Dense(target_vocab_size, use_bias=output_bias,
                                               name="output")

    @classmethod
    def from_hparams(cls, hparams, source_vocab_size, target_vocab_size=None):
        model = cls(source_vocab_size, target_vocab_size or source_vocab_size, hparams.d_model,
                    **cls.hparams_kwargs(hparams))
        ids = ops.ones((1, 2), "int32")
        model({"inputs": ids, "targets": ids})
        return model

    def _encode(self, inputs):
        source = self.source_embedding(inputs)
        return {"key": self.key(source), "value": self.value(source),
                "mask": ops.not_equal(inputs, 0)}

    def _logits(self, state, cross):
        """state [B, T, D] -> float32 logits [B, T, V]."""
        scores = ops.einsum("btd,bsd->bts", self.query(state), cross["key"])
        scores = ops.where(cross["mask"][:, None, :], scores / math.sqrt(self.d_model), -1e9)
        context = ops.einsum("bts,bsd->btd", ops.softmax(scores, axis=-1), cross["value"])
        return ops.cast(self.output_dense(state + context), "float32")

    def call(self, features, training=None):
        targets = features["targets"]
        previous = self.target_embedding(ops.pad(targets, [[0, 0], [1, 0]])[:, :-1])
        counts = ops.cast(ops.arange(1, ops.shape(targets)[1] + 1), previous.dtype)
        state = ops.cumsum(previous, axis=1) / counts[None, :, None]
        return self._logits(state, self._encode(features["inputs"]))

    def init_cache(self, inputs, max_decode_length):
        return {"sum": ops.zeros((ops.shape(inputs)[0], self.d_model))}, self._encode(inputs)

    def decode_step(self, ids, index, self_cache, cross_cache):
        total = self_cache["sum"] + self.target_embedding(ids)
        state = total / ops.cast(index + 1, total.dtype)
        return self._logits(state[:, None, :], cross_cache)[:, 0], {"sum": total}

    def grow_self_cache(self, self_cache, length):
        return self_cache  # No length axis to grow.


def _sources():
    rng = np.random.default_rng(0)
    return [[int(x) for x in rng.integers(2, 12, n)] + [1] for n in (3, 9, 1, 12, 5)]


@pytest.fixture(scope="module")
def bag_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("bag"))
    lines = []
    result = trainer.train(
        registry.problem("algorithmic_copy"), registry.hparams("tiny").override(BAG), out,
        options=TrainOptions(eval=NO_EVAL, train_steps=24, save_checkpoints_steps=8,
                                     log_every_steps=8),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)
    averaged = averaging.average(out, averaging.choose(out, last=3))
    assert averaged == os.path.join(out, "averaged", "ckpt")
    return out, result, lines


def test_second_model_trains_through_the_registry(bag_run):
    out, result, lines = bag_run
    assert result.step == 24 and np.isfinite(result.loss)
    assert checkpoints.list_checkpoints(out) == ["ckpt-8", "ckpt-16", "ckpt-24"]
    with open(os.path.join(out, "hparams.json")) as f:
        assert json.load(f)["model"] == "bag_attention"
    opened = Run.open(out)
    model, hparams, info, path = opened.model(), opened.hparams, opened.info, opened.checkpoint()
    assert type(model) is BagAttention and hparams.model == "bag_attention"
    assert path.endswith("ckpt-24") and info["target_vocab_size"] == 12
    saved = {k for k, _ in tf.train.list_variables(path) if k.startswith("model/")}
    assert saved == set(run_weights.weight_keys(model))
    assert "model/source_embedding-embeddings/.ATTRIBUTES/VARIABLE_VALUE" in saved
    assert model.count_params() == 2 * 12 * 16 + 3 * 16 * 16 + 16 * 12 + 12


def test_second_model_averages(bag_run):
    out, _, _ = bag_run
    with open(os.path.join(out, "averaged", "averaged.json")) as f:
        assert json.load(f)["averaged"] == ["ckpt-8", "ckpt-16", "ckpt-24"]
    weights = [[np.array(w) for w in Run.open(out).model(name).weights]
               for name in ("ckpt-8", "ckpt-16", "ckpt-24", "averaged")]
    assert max(np.abs(a - b).max() for a, b in zip(weights[0], weights[2])) > 1e-4
    for *each, mean in zip(*weights):
        np.testing.assert_allclose(mean, np.mean(each, axis=0), rtol=1e-5, atol=1e-6)


def test_second_model_decodes_with_its_own_cache(bag_run):
    out, _, _ = bag_run
    model = Run.open(out).model("averaged")
    sources = _sources()
    greedy = Decoder(model, DecodeOptions(beam_size=1, extra_length=5))
    # Greedy through init_cache/decode_step == argmax of the teacher-forced call
    # (on the unpadded source). The batch is padded to 16: at most 16 + 5 tokens.
    for source, [(ids, _)] in zip(sources, greedy.decode(sources)):
        expected = []
        while len(expected) < min(len(ids) + 1, 21):
            targets = np.array([expected + [0]])
            logits = model({"inputs": np.array([source]), "targets": targets})
            expected.append(int(np.argmax(logits[0, -1])))
        assert ids == expected[:len(ids)]
        assert len(ids) == 21 or expected[-1] == 1  # Stopped at EOS or at the limit.
    beams = Decoder(model, DecodeOptions(
        beam_size=3, extra_length=5, return_beams=True)).decode(sources)
    for hypotheses in beams:
        scores = [score for _, score in hypotheses]
        assert len(hypotheses) == 3 and scores == sorted(scores, reverse=True)
    problem = registry.problem("algorithmic_copy")
    texts = decode_lines(problem, model, ["3 1 4", "", "2 7 1 8"],
                                  DecodeOptions(beam_size=2, extra_length=5), 16)
    assert texts[1] == [("", 0.0)]
    assert all(set(text.split()) <= set("0123456789") for [(text, _)] in texts)


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_second_model_exports(bag_run, tmp_path):
    out, _, _ = bag_run
    result = export.export(out, str(tmp_path / "export"), checkpoint="averaged",
                           beam_size=2, extra_length=5)
    loaded = tf.saved_model.load(result.path)
    sources = _sources()
    batch = np.zeros((len(sources), 16), np.int32)
    for row, ids in enumerate(sources):
        batch[row, :len(ids)] = ids
    got = loaded.signatures["translate_ids"](inputs=tf.constant(batch))
    model = Run.open(out).model("averaged")
    want = Decoder(model, DecodeOptions(beam_size=2, extra_length=5)).decode(
        sources)
    assert [strip_ids(row) for row in got["ids"].numpy()] == [best[0][0] for best in want]
    np.testing.assert_allclose(got["scores"].numpy(), [best[0][1] for best in want], atol=1e-4)


def test_run_dir_refuses_another_model(bag_run):
    out, _, _ = bag_run
    hparams = registry.hparams("tiny").override(BAG.replace("bag_attention", "transformer"))
    with pytest.raises(run_dir.RunDirError, match="model: 'bag_attention' -> 'transformer'"):
        trainer.train(registry.problem("algorithmic_copy"), hparams, out,
                      options=TrainOptions(eval=NO_EVAL, train_steps=30),
                      strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    assert Run.open(out).hparams.model == "bag_attention"  # Nothing overwritten.


def test_second_model_has_its_own_config(tiny_hparams):
    plain = tiny_hparams.override(BAG)
    assert plain.model_config == BagConfig()
    hparams = tiny_hparams.override(BAG + ",output_bias=false")
    assert hparams.model_config == BagConfig(output_bias=False)
    model = run_weights.build_model(hparams, 12)
    assert model.count_params() == 2 * 12 * 16 + 3 * 16 * 16 + 16 * 12  # No output bias.
    assert hparams.model_shaping_diff(plain) == ["output_bias: True -> False"]
    assert HParams.from_json(hparams.to_json()) == hparams
    with pytest.raises(HParamsError, match="output_bias is a field of bag_attention, not of "
                                           "model=transformer; set model=... first"):
        tiny_hparams.override("output_bias=false")


def test_unknown_model_lists_the_known_ones(tiny_hparams):
    assert {"transformer", "bag_attention"} <= set(registry.list_models())
    assert registry.model("transformer") is Transformer
    with pytest.raises(registry.RegistryError) as info:
        run_weights.build_model(tiny_hparams.override("model=transfomer"), 12)
    message = str(info.value)
    assert "unknown model 'transfomer'" in message and "Did you mean 'transformer'?" in message
    assert "bag_attention" in message and "--hparams_overrides=model=NAME" in message
    assert "\n" not in message


def test_shared_embedding_refused_for_separate_vocabularies(tiny_hparams):
    with pytest.raises(HParamsError) as info:
        run_weights.build_model(tiny_hparams, 20, 30)
    message = str(info.value)
    assert "separate source (20) and target (30) vocabularies" in message
    assert "--hparams_overrides=shared_embedding=false" in message and "\n" not in message


def test_separate_embeddings_two_matrices_target_tied(tiny_hparams):
    d = tiny_hparams.d_model
    shared = run_weights.build_model(tiny_hparams, 20)
    model = run_weights.build_model(tiny_hparams.override("shared_embedding=false"), 20, 30)
    embeddings = {w.path.split("/", 1)[1]: tuple(w.shape) for w in model.weights
                  if "embedding" in w.path}
    assert embeddings == {"source_embedding/embeddings": (20, d),
                          "target_embedding/embeddings": (30, d)}
    assert model.count_params() == shared.count_params() + 30 * d
    assert model.softmax_embedding is model.target_embedding
    assert model.source_embedding is not model.target_embedding
    table = np.array(model.target_embedding.embeddings)
    x = np.random.default_rng(0).normal(size=(2, 3, d)).astype(np.float32)
    np.testing.assert_allclose(np.array(model.softmax_embedding.project(x)), x @ table.T,
                               rtol=1e-5, atol=1e-5)
    # The encoder reads the source matrix, the decoder input the target one.
    inputs, targets = np.array([[5, 19, 1]]), np.array([[29, 3, 1]])
    before = np.array(model({"inputs": inputs, "targets": targets}))
    assert before.shape == (1, 3, 30)
    model.source_embedding.embeddings.assign(
        np.array(model.source_embedding.embeddings) * 2.0)
    after = np.array(model({"inputs": inputs, "targets": targets}))
    assert np.abs(after - before).max() > 1e-3


def test_old_run_files_still_load(tiny_hparams, tmp_path):
    out = str(tmp_path)
    run_dir.prepare_run(out, tiny_hparams, "algorithmic_reverse", 12, 12)
    model = run_weights.build_model(tiny_hparams, 12)
    tf.train.Checkpoint(model=run_weights.model_weights(model)).write(os.path.join(out, "ckpt"))
    with open(os.path.join(out, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt"\nall_model_checkpoint_paths: "ckpt"\n')
    with open(os.path.join(out, "problem.json")) as f:
        assert json.load(f)["target_vocab_size"] == 12
    # Files written before models were registered and vocabularies separated.
    saved = json.loads(tiny_hparams.to_json())
    del saved["model"]
    with open(os.path.join(out, "hparams.json"), "w") as f:
        json.dump(saved, f)
    with open(os.path.join(out, "problem.json"), "w") as f:
        json.dump({"problem": "algorithmic_reverse", "vocab_size": 12, "data_dir": None}, f)
    opened = Run.open(out)
    loaded, hparams, info = opened.model(), opened.hparams, opened.info
    assert hparams == tiny_hparams and type(loaded) is Transformer
    assert (info["source_vocab_size"], info["target_vocab_size"]) == (12, 12)
    for a, b in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(np.array(a), np.array(b))
    with pytest.raises(run_dir.RunDirError, match="vocabulary sizes: 12/12 -> 12/14"):
        run_dir.prepare_run(out, tiny_hparams, "algorithmic_reverse", 12, 14)


class _ReverseSeparate(AlgorithmicReverse):
    """algorithmic_reverse with a target vocabulary of its own (3 unused ids)."""

    name = "algorithmic_reverse_separate"

    @property
    def shared_vocab(self):
        return False

    @property
    def target_vocab_size(self):
        return 15


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_separate_vocabularies_train_after_a_refused_start(tiny_hparams, tmp_path):
    out, problem = str(tmp_path), _ReverseSeparate()
    options = TrainOptions(eval=NO_EVAL, train_steps=4, log_every_steps=100)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with pytest.raises(HParamsError, match="shared_embedding=false"):
        trainer.train(problem, tiny_hparams, out, options=options, strategy=strategy,
                      log=lambda _: None)
    # Nothing was trained: the corrected hparams may use the same directory.
    hparams = tiny_hparams.override("shared_embedding=false")
    trainer.train(problem, hparams, out, options=options, strategy=strategy,
                  log=lambda _: None)
    opened = Run.open(out)
    model, info = opened.model(), opened.info
    assert (info["source_vocab_size"], info["target_vocab_size"]) == (12, 15)
    assert (model.source_vocab_size, model.target_vocab_size) == (12, 15)
    ids, scores = search(model, tf.constant([[3, 4, 5, 1]], tf.int32), 2, 0.6, 6)
    assert ids.shape == (1, 2, 6) and scores.shape == (1, 2)


@pytest.mark.slow  # ~15 s: three commands in this process (they know the test's model).
def test_second_model_through_the_commands(tmp_path, capsys):
    from t2t_lite.bin import decoder as decoder_cli
    from t2t_lite.bin import exporter as exporter_cli
    from t2t_lite.bin import trainer as trainer_cli

    out, lines = str(tmp_path / "run"), tmp_path / "in.txt"
    lines.write_text("3 1 4\n2 7 1 8\n5 5 9\n", encoding="utf-8")
    assert trainer_cli.main([
        "--problem=algorithmic_copy", "--hparams=tiny", f"--output_dir={out}",
        f"--hparams_overrides={BAG},output_bias=false", "--train_steps=12",
        "--save_checkpoints_steps=6", "--eval_every_steps=0"]) == 0
    opened = Run.open(out)
    assert opened.hparams.model_config == BagConfig(output_bias=False)
    model = opened.model()
    assert type(model) is BagAttention and not model.output_dense.use_bias
    assert decoder_cli.main([f"--output_dir={out}", f"--decode_from_file={lines}",
                             f"--decode_to_file={tmp_path / 'out.txt'}",
                             "--beam_size=2"]) == 0
    options = DecodeOptions.from_hparams(opened.hparams, beam_size=2)
    want = [beams[0][0] for beams in decode_lines(
        opened.problem, model, lines.read_text().splitlines(), options,
        opened.hparams.max_length)]
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() == want
    assert exporter_cli.main([f"--output_dir={out}", f"--export_dir={tmp_path / 'export'}",
                              "--beam_size=2"]) == 0
    loaded = tf.saved_model.load(str(tmp_path / "export" / "1"))
    batch = np.zeros((len(want), 16), np.int32)
    for row, ids in enumerate(_sources()[:len(want)]):
        batch[row, :len(ids)] = ids
    got = loaded.signatures["translate_ids"](inputs=tf.constant(batch))
    expected = Decoder(model, options).decode(_sources()[:len(want)])
    assert [strip_ids(row) for row in got["ids"].numpy()] == [b[0][0] for b in expected]
