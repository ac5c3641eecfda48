"""The model contract (t2t_lite/models/contract.py): declared, checked once, never probed.

Every built-in model satisfies the `Seq2SeqModel` protocol and declares what it
can do in `capabilities`; a registered class that lacks a member, or declares a
capability without its members, is refused in one line when it is built; and no
library code asks a model what it has (`hasattr`/`getattr` on a model).
"""

import ast
import pathlib

import keras
import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.models.contract import (
    Capabilities,
    ModelBase,
    ModelContractError,
    Seq2SeqModel,
)
from t2t_lite.runs.weights import build_model

ROOT = pathlib.Path(__file__).resolve().parents[1]

EXPECTED = {  # model -> (in-place cache, grouped beams, attention maps)
    "transformer": (True, True, True),
    "aligned_transformer": (True, False, True),
    "span_transformer": (True, False, True),
    "rnn_seq2seq": (False, False, False),
    "bahdanau": (False, False, True),
    "luong": (False, False, True),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_built_in_model_keeps_the_contract_and_declares_its_capabilities(
        name, tiny_hparams):
    hparams = tiny_hparams.override(f"model={name}" + (
        ",tagging_loss=1.0" if name == "span_transformer" else ""))
    model = build_model(hparams, 12)
    assert isinstance(model, Seq2SeqModel)
    caps = model.capabilities
    assert (caps.in_place_cache, caps.grouped_beams, caps.attention_maps) == EXPECTED[name]
    ids = np.array([[3, 4, 1]], np.int32)
    sums = model.loss_sums({"inputs": ids, "targets": ids}, 0.1, training=False)
    assert float(sums.tokens) == 3.0 and np.isfinite(float(sums.objective))
    assert model.flop_profile().decoder_weights > 0


class _NoDecoder(ModelBase, keras.Model):
    """Trains, but has no cached decoder: not a model of the contract."""

    def __init__(self, vocab_size, **kwargs):
        super().__init__(**kwargs)
        self.target_vocab_size = vocab_size
        self.output_dense = keras.layers.Dense(vocab_size)

    @classmethod
    def from_hparams(cls, hparams, source_vocab_size, target_vocab_size=None):
        return cls(target_vocab_size or source_vocab_size)

    def call(self, features, training=None):
        return self.output_dense(keras.ops.one_hot(features["targets"], self.target_vocab_size))


class _Boasting(_NoDecoder):
    """Declares attention maps without `attention_weights`."""

    capabilities = Capabilities(attention_maps=True)

    def init_cache(self, inputs, max_decode_length):
        return {}, {}

    def decode_step(self, ids, index, self_cache, cross_cache):
        return keras.ops.zeros((1, self.target_vocab_size)), self_cache

    @staticmethod
    def grow_self_cache(self_cache, length):
        return self_cache


registry.register_model("contract_test_no_decoder")(_NoDecoder)
registry.register_model("contract_test_boasting")(_Boasting)


def test_a_model_without_a_member_is_refused_in_one_line(tiny_hparams):
    with pytest.raises(ModelContractError) as caught:
        build_model(tiny_hparams.override("model=contract_test_no_decoder"), 12)
    message = str(caught.value)
    assert "init_cache, decode_step, grow_self_cache" in message and "ModelBase" in message
    assert len(message.splitlines()) == 1


def test_a_capability_without_its_members_is_refused(tiny_hparams):
    with pytest.raises(ModelContractError, match="without attention_weights"):
        build_model(tiny_hparams.override("model=contract_test_boasting"), 12)


def _probes(path: pathlib.Path) -> list[str]:
    """`hasattr(model, ...)` / `getattr(model, ...)` / on `self.model` in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("hasattr", "getattr") and node.args):
            target = ast.unparse(node.args[0])
            if target in ("model", "self.model", "run.model") or target.endswith("_model"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_library_code_probes_a_model_for_a_member():
    probes = [p for path in sorted((ROOT / "t2t_lite").rglob("*.py")) for p in _probes(path)]
    assert probes == []
