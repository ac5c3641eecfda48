"""Hparams sets, overrides and the registry (docs/development/design.md, conventions 2 and 8)."""

import dataclasses

import pytest

from t2t_lite import registry
from t2t_lite.hparams import HParams, HParamsError, parse_overrides


def test_base_is_the_paper():
    h = registry.hparams("base")
    assert (h.num_layers, h.d_model, h.d_ff, h.num_heads) == (6, 512, 2048, 8)
    assert (h.key_dim, h.value_dim) == (64, 64)
    assert h.dropout_rate == 0.1 and h.label_smoothing == 0.1
    assert (h.adam_beta1, h.adam_beta2, h.adam_epsilon) == (0.9, 0.98, 1e-9)
    assert h.warmup_steps == 4000 and h.train_steps == 100_000
    assert h.shared_embedding and not h.normalize_before
    assert h.positional_encoding == "sinusoid"
    assert (h.beam_size, h.alpha, h.extra_length) == (4, 0.6, 50)


def test_big_parsing_tiny():
    big = registry.hparams("big")
    assert (big.d_model, big.d_ff, big.num_heads, big.num_layers) == (1024, 4096, 16, 6)
    assert big.dropout_rate == 0.3 and big.train_steps == 300_000 and big.key_dim == 64
    parsing = registry.hparams("parsing")
    assert (parsing.num_layers, parsing.d_model, parsing.d_ff, parsing.num_heads) == (
        4, 1024, 2048, 8)
    assert parsing.dropout_rate == 0.2 and parsing.max_length == 512
    assert (parsing.beam_size, parsing.alpha, parsing.extra_length) == (21, 0.3, 300)
    tiny = registry.hparams("tiny")
    assert (tiny.num_layers, tiny.d_model, tiny.d_ff, tiny.num_heads) == (2, 128, 512, 4)


def test_multi30k_is_base_at_the_keras_hub_baseline_size():
    """multi30k changes only size, dropout, warm-up and batching: the paper's model."""
    base, m30k = registry.hparams("base"), registry.hparams("multi30k")
    changed = {f.name for f in dataclasses.fields(base)
               if getattr(base, f.name) != getattr(m30k, f.name)}
    assert changed == {"num_layers", "d_model", "d_ff", "num_heads", "dropout_rate",
                       "warmup_steps", "batch_size", "max_length"}
    assert (m30k.num_layers, m30k.d_model, m30k.d_ff, m30k.num_heads) == (3, 256, 1024, 4)
    assert (m30k.dropout_rate, m30k.warmup_steps, m30k.batch_size) == (0.2, 1000, 2048)


@pytest.mark.parametrize("name, field, value, key_dim, value_dim", [
    ("base_a_h1", "num_heads", 1, 512, 512),
    ("base_a_h4", "num_heads", 4, 128, 128),
    ("base_a_h16", "num_heads", 16, 32, 32),
    ("base_a_h32", "num_heads", 32, 16, 16),
    ("base_b_dk16", "d_k", 16, 16, 64),
    ("base_b_dk32", "d_k", 32, 32, 64),
    ("base_c_n2", "num_layers", 2, 64, 64),
    ("base_c_n8", "num_layers", 8, 64, 64),
    ("base_c_d256", "d_model", 256, 32, 32),
    ("base_c_d1024", "d_model", 1024, 128, 128),
    ("base_c_ff4096", "d_ff", 4096, 64, 64),
    ("base_d_drop02", "dropout_rate", 0.2, 64, 64),
    ("base_d_ls0", "label_smoothing", 0.0, 64, 64),
    ("base_e_learned_pe", "positional_encoding", "learned", 64, 64),
])
def test_table3_rows(name, field, value, key_dim, value_dim):
    h = registry.hparams(name)
    assert getattr(h, field) == value
    assert (h.key_dim, h.value_dim) == (key_dim, value_dim)
    # Everything else is the base row.
    base = dataclasses.asdict(registry.hparams("base"))
    changed = {k for k, v in dataclasses.asdict(h).items() if base[k] != v}
    assert changed == {field}


def test_sets_are_frozen_and_fresh():
    h = registry.hparams("base")
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.d_model = 8
    assert registry.hparams("base") == HParams()


def test_overrides_are_typed():
    h = registry.hparams("base").override("dropout_rate=0.3, num_layers=4,normalize_before=true")
    assert h.dropout_rate == 0.3 and h.num_layers == 4 and h.normalize_before is True
    assert isinstance(h.num_layers, int)
    assert parse_overrides("d_k=None") == {"d_k": None}
    assert parse_overrides("d_k=16") == {"d_k": 16}
    assert parse_overrides("") == {}


@pytest.mark.parametrize("text, message", [
    ("dropout_rat=0.3", "unknown hparam 'dropout_rat' (did you mean dropout_rate?)"),
    ("num_layers=four", "bad value for num_layers: 'four' is not a int"),
    ("num_layers", "malformed override 'num_layers'"),
    ("normalize_before=maybe", "bad value for normalize_before"),
    ("dropout_rate=1.5", "dropout_rate must be in [0, 1)"),
    ("num_heads=7", "not divisible by num_heads=7"),
])
def test_bad_overrides(text, message):
    with pytest.raises(HParamsError, match=None) as info:
        registry.hparams("base").override(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_json_round_trip_and_shaping_diff():
    h = registry.hparams("big")
    assert HParams.from_json(h.to_json()) == h
    other = h.override("dropout_rate=0.1,num_layers=4")
    assert other.model_shaping_diff(h) == ["num_layers: 6 -> 4"]


BUILT_IN_MODELS = ("transformer", "aligned_transformer", "span_transformer", "rnn_seq2seq",
                   "bahdanau", "luong")


def test_model_shaping_fields_come_from_field_metadata():
    from t2t_lite.hparams import config as configs
    from t2t_lite.hparams import hparams as hparams_module

    marked = {f.name for f in dataclasses.fields(HParams) if f.metadata.get("model_shaping")}
    assert marked == {"model", "num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v",
                      "positional_encoding", "max_length", "shared_embedding",
                      "normalize_before"}
    assert set(hparams_module.model_shaping_fields()) == marked
    families = {name: configs.config_class(name) for name in BUILT_IN_MODELS}
    config_marked = {f.name for config in families.values() for f in dataclasses.fields(config)
                     if f.metadata.get("model_shaping")}
    assert config_marked == {
        "word_class_features", "tagging_loss", "word_dropout", "word_dropout_alpha",
        "relative_position_buckets", "span_loss", "span_classes", "token_loss",
        "rnn_cell", "reverse_source", "attention_score", "input_feeding"}
    other = {bool: lambda v: not v, int: lambda v: v * 2 or 4, float: lambda v: v * 2 or 0.5,
             type(None): lambda v: 16}
    strings = {"model": "other", "positional_encoding": "learned", "precision": "mixed_bfloat16",
               "rnn_cell": "gru", "attention_score": "dot"}
    # Every marked field, and no other, shows in the diff: the shared ones on the aligned
    # model (which the parsing levers need), each config's on its own model.
    tiny = registry.hparams("tiny")
    cases = [(tiny.override("model=aligned_transformer"), name) for name in tiny.by_name()]
    for model in BUILT_IN_MODELS:
        h = tiny.override(f"model={model}" + (",tagging_loss=1" if model == "span_transformer"
                                              else ""))
        cases += [(h, name) for name in dataclasses.asdict(h.model_config)]
    for h, name in cases:
        old = h.by_name()[name]
        new = strings[name] if isinstance(old, str) else other[type(old)](old)
        assert new != old
        diff = h.replace(**{name: new}).model_shaping_diff(h)
        assert bool(diff) == (name in marked | config_marked), name


def test_model_field_is_saved_and_defaults_to_transformer():
    import json

    h = registry.hparams("tiny")
    assert h.model == "transformer"
    saved = json.loads(h.to_json())
    assert saved["model"] == "transformer"
    other = h.override("model=my_model")
    assert other.model == "my_model" and HParams.from_json(other.to_json()) == other
    del saved["model"]  # An hparams.json written before models were registered.
    assert HParams.from_json(json.dumps(saved)).model == "transformer"
    assert other.model_shaping_diff(h) == ["model: 'transformer' -> 'my_model'"]


def test_unknown_names_list_known_ones():
    with pytest.raises(registry.RegistryError) as info:
        registry.hparams("bigg")
    message = str(info.value)
    assert "Did you mean 'big'?" in message and "base_e_learned_pe" in message
    with pytest.raises(registry.RegistryError) as info:
        registry.problem("algorithmic_revers")
    assert "'algorithmic_reverse'" in str(info.value)
    assert "algorithmic_copy" in str(info.value)
