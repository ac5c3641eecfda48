"""A config per model family (t2t_lite.hparams.config): the shared HParams hold none of a
model's own fields, overrides reach them by plain name, and an hparams.json written in
the flat form (every field at the top level, as before the configs) reads as the same
hparams and passes the run directory's model-shaping check.

OLD_CHART and OLD_LUONG are the hparams.json texts of `parsing_small_chart` and
`luong_tiny` as the flat form wrote them (`to_json` of the HParams with 44 fields).
"""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import NO_EVAL

from t2t_lite import registry
from t2t_lite.hparams import HParams, HParamsError
from t2t_lite.hparams import config as configs
from t2t_lite.models.parsing.config import AlignedConfig, SpanConfig
from t2t_lite.records import RecordError
from t2t_lite.models.rnn.config import LuongConfig, RNNConfig
from t2t_lite.runs import run_dir
from t2t_lite.runs.run import Run
from t2t_lite.training import trainer
from t2t_lite.training.options import TrainOptions

OLD_CHART = """{
  "accum_steps": 1,
  "adam_beta1": 0.9,
  "adam_beta2": 0.98,
  "adam_epsilon": 1e-09,
  "alpha": 0.3,
  "attention_dropout_rate": 0.1,
  "attention_score": "general",
  "batch_size": 2048,
  "beam_size": 1,
  "d_ff": 1024,
  "d_k": null,
  "d_model": 256,
  "d_v": null,
  "dropout_rate": 0.1,
  "extra_length": 300,
  "input_feeding": true,
  "label_smoothing": 0.1,
  "layer_norm_epsilon": 1e-06,
  "learning_rate_scale": 1.0,
  "length_bucket_step": 1.1,
  "max_length": 256,
  "min_length_bucket": 8,
  "mixed_precision": false,
  "model": "span_transformer",
  "normalize_before": false,
  "num_heads": 4,
  "num_layers": 3,
  "positional_encoding": "sinusoid",
  "precision": "float32",
  "relative_position_buckets": 32,
  "relu_dropout_rate": 0.0,
  "reverse_source": false,
  "rnn_cell": "lstm",
  "shared_embedding": false,
  "span_bias": 1.0,
  "span_classes": 64,
  "span_loss": 2.0,
  "tagging_loss": 1.0,
  "token_loss": 0.0,
  "train_steps": 100000,
  "warmup_steps": 1000,
  "word_class_features": false,
  "word_dropout": 0.1,
  "word_dropout_alpha": 0.0
}"""

OLD_LUONG = """{
  "accum_steps": 1,
  "adam_beta1": 0.9,
  "adam_beta2": 0.98,
  "adam_epsilon": 1e-09,
  "alpha": 0.6,
  "attention_dropout_rate": 0.0,
  "attention_score": "general",
  "batch_size": 256,
  "beam_size": 4,
  "d_ff": 2048,
  "d_k": null,
  "d_model": 32,
  "d_v": null,
  "dropout_rate": 0.0,
  "extra_length": 50,
  "input_feeding": true,
  "label_smoothing": 0.1,
  "layer_norm_epsilon": 1e-06,
  "learning_rate_scale": 1.0,
  "length_bucket_step": 1.1,
  "max_length": 16,
  "min_length_bucket": 8,
  "mixed_precision": false,
  "model": "luong",
  "normalize_before": false,
  "num_heads": 8,
  "num_layers": 1,
  "positional_encoding": "sinusoid",
  "precision": "float32",
  "relative_position_buckets": 0,
  "relu_dropout_rate": 0.0,
  "reverse_source": false,
  "rnn_cell": "lstm",
  "shared_embedding": true,
  "span_bias": 1.0,
  "span_classes": 64,
  "span_loss": 1.0,
  "tagging_loss": 0.0,
  "token_loss": 1.0,
  "train_steps": 2000,
  "warmup_steps": 100,
  "word_class_features": false,
  "word_dropout": 0.0,
  "word_dropout_alpha": 0.0
}"""

MODEL_FIELDS = {"word_class_features", "tagging_loss", "word_dropout", "word_dropout_alpha",
                "relative_position_buckets", "span_loss", "span_classes", "span_bias",
                "token_loss", "rnn_cell", "reverse_source", "attention_score", "input_feeding"}


def test_hparams_hold_no_field_of_one_model():
    shared = {f.name for f in dataclasses.fields(HParams)}
    assert shared & MODEL_FIELDS == set()
    assert {name: configs.config_class(name) for name in (
        "transformer", "aligned_transformer", "span_transformer", "rnn_seq2seq", "bahdanau",
        "luong")} == {"transformer": configs.ModelConfig, "aligned_transformer": AlignedConfig,
                      "span_transformer": SpanConfig, "rnn_seq2seq": RNNConfig,
                      "bahdanau": RNNConfig, "luong": LuongConfig}
    owned = {f.name for config in (SpanConfig, LuongConfig) for f in dataclasses.fields(config)}
    assert owned == MODEL_FIELDS


@pytest.mark.parametrize("name, old", [("parsing_small_chart", OLD_CHART),
                                       ("luong_tiny", OLD_LUONG)])
def test_the_flat_form_reads_as_the_same_hparams(name, old):
    assert len(json.loads(old)) == 44
    hparams = HParams.from_json(old)
    assert hparams == registry.hparams(name)
    assert hparams.model_shaping_diff(registry.hparams(name)) == []
    assert registry.hparams(name).model_shaping_diff(hparams) == []
    new = json.loads(hparams.to_json())  # The form a run writes now: the config nested.
    assert set(new["model_config"]) == {f.name for f in dataclasses.fields(hparams.model_config)}
    assert not set(new) & MODEL_FIELDS and HParams.from_json(hparams.to_json()) == hparams


@pytest.mark.parametrize("name, old", [("parsing_small_chart", OLD_CHART),
                                       ("luong_tiny", OLD_LUONG)])
def test_a_run_dir_of_the_flat_form_takes_the_same_hparams(tmp_path, name, old):
    out = str(tmp_path)
    (tmp_path / "hparams.json").write_text(old)
    (tmp_path / "problem.json").write_text(json.dumps(
        {"problem": "p", "source_vocab_size": 10, "target_vocab_size": 12, "data_dir": None}))
    (tmp_path / "ckpt-1.index").write_text("")  # A checkpoint: the directory is checked.
    hparams, _ = run_dir.read_run(out)
    assert hparams == registry.hparams(name)
    run_dir.prepare_run(out, registry.hparams(name), "p", 10, 12)  # No model-shaping diff.
    assert "model_config" in json.loads((tmp_path / "hparams.json").read_text())
    assert run_dir.read_run(out)[0] == registry.hparams(name)
    with pytest.raises(run_dir.RunDirError, match="span_loss: 2.0 -> 1.0" if
                       name == "parsing_small_chart" else "rnn_cell: 'lstm' -> 'gru'"):
        run_dir.prepare_run(out, registry.hparams(name).override(
            "span_loss=1.0" if name == "parsing_small_chart" else "rnn_cell=gru"), "p", 10, 12)


def test_the_flat_form_drops_other_models_defaults_and_refuses_their_values(tmp_path):
    old = json.loads(OLD_LUONG)  # rnn_cell, attention_score, ... at their defaults.
    assert HParams.from_dict({**old, "model": "transformer"}) == registry.hparams(
        "luong_tiny").replace(model="transformer")
    with pytest.raises(HParamsError) as info:
        HParams.from_dict({**old, "model": "transformer", "rnn_cell": "gru"})
    assert str(info.value) == ("saved hparam rnn_cell='gru' is a field of bahdanau, luong and "
                               "rnn_seq2seq, not of model=transformer")
    (tmp_path / "hparams.json").write_text(OLD_CHART.replace('"span_transformer"',
                                                             '"transformer"'))
    (tmp_path / "problem.json").write_text(json.dumps({"problem": "p", "vocab_size": 10}))
    with pytest.raises(RecordError) as info:
        run_dir.read_run(str(tmp_path))
    message = str(info.value)
    assert "hparams.json: saved hparam relative_position_buckets=32 is a field of " \
        "aligned_transformer and span_transformer, not of model=transformer" in message
    assert "\n" not in message
    with pytest.raises(HParamsError, match="unknown hparams in saved file: span_los"):
        HParams.from_dict({**json.loads(OLD_CHART), "span_los": 1.0})


def test_overrides_reach_a_config_field_by_its_plain_name():
    tiny = registry.hparams("tiny")
    for text in ("model=aligned_transformer,tagging_loss=1.0",
                 "tagging_loss=1.0,model=aligned_transformer"):  # `model` first either way.
        assert tiny.override(text).model_config == AlignedConfig(tagging_loss=1.0)
    tagged = registry.hparams("parsing_small_tagged").override("tagging_loss=0.5")
    assert tagged.model_config.tagging_loss == 0.5
    # A change of model keeps the fields both configs have.
    span = tagged.override("model=span_transformer,span_loss=2")
    assert span.model_config == SpanConfig(tagging_loss=0.5, span_loss=2.0)
    assert tagged.override("model=span_transformer").override("model=aligned_transformer") \
        == tagged


@pytest.mark.parametrize("hparams, text, message", [
    ("tiny", "tagging_loss=1.0", "tagging_loss is a field of aligned_transformer and "
     "span_transformer, not of model=transformer; set model=... first"),
    ("luong_tiny", "span_classes=8", "span_classes is a field of span_transformer, not of "
     "model=luong; set model=... first"),
    ("tiny", "taging_loss=1.0", "unknown hparam 'taging_loss' (did you mean tagging_loss?)"),
    ("parsing_small_tagged", "model=transformer", "tagging_loss=1.0 is a field of "
     "aligned_transformer and span_transformer, not of model=transformer"),
    ("luong_tiny", "attention_score=dot,model=bahdanau", "attention_score is a field of luong, "
     "not of model=bahdanau"),
    ("tiny", "model=span_transformer", "pass tagging_loss > 0"),
])
def test_a_field_of_another_model_is_one_error_naming_its_models(hparams, text, message):
    with pytest.raises(HParamsError) as info:
        registry.hparams(hparams).override(text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_hparams_change_the_model_only_through_replace():
    with pytest.raises(HParamsError,
                       match="model=luong takes the config LuongConfig, not ModelConfig"):
        dataclasses.replace(registry.hparams("tiny"), model="luong")
    assert HParams(model="luong").model_config == LuongConfig()
    # A name no model registered builds its model nowhere, but its hparams save and read.
    assert HParams(model="my_model").model_config == configs.ModelConfig()


def test_hparams_and_configs_load_without_keras():
    code = ("import sys; from t2t_lite import registry; "
            "h = registry.hparams('parsing_small_chart').override('span_loss=1.5'); "
            "assert registry.model_config('luong').__name__ == 'LuongConfig'; "
            "assert 'keras' not in sys.modules and 'tensorflow' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.slow  # Trains twice (about 30 s).
def test_a_run_of_the_flat_form_resumes_and_decodes(tmp_path):
    """A run whose hparams.json is the flat form resumes training and decodes."""
    out, problem = str(tmp_path), registry.problem("algorithmic_reverse")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    options = TrainOptions(eval=NO_EVAL, train_steps=2, save_checkpoints_steps=2,
                           log_every_steps=1)
    trainer.train(problem, registry.hparams("luong_tiny"), out, options=options,
                  strategy=strategy, log=lambda _: None)
    (tmp_path / "hparams.json").write_text(OLD_LUONG)
    before = Run.open(out).model()
    result = trainer.train(problem, registry.hparams("luong_tiny"), out,
                           options=dataclasses.replace(options, train_steps=4),
                           strategy=strategy, log=lambda _: None)
    assert result.step == 4 and np.isfinite(result.loss)
    opened = Run.open(out)
    assert opened.hparams == registry.hparams("luong_tiny")
    assert os.path.basename(opened.checkpoint()) == "ckpt-4"
    model = opened.model()
    assert type(model) is type(before) and model.count_params() == before.count_params()


def test_replace_takes_a_whole_config_or_its_fields():
    tiny = registry.hparams("tiny")
    aligned = tiny.replace(model="aligned_transformer",
                           model_config=AlignedConfig(word_dropout=0.2))
    assert aligned == tiny.override("model=aligned_transformer,word_dropout=0.2")
    with pytest.raises(HParamsError, match="pass model_config or its fields, not both: "
                                           "tagging_loss"):
        tiny.replace(model="aligned_transformer", model_config=AlignedConfig(), tagging_loss=1.0)
