"""Beam search over grouped beams: no cache reordering, no repeated keys (issue 28).

Without XLA the decoder's beam search keeps the K beams of a sentence in one
group (`t2t_lite.layers.beam_decoder`): the encoder's keys are not repeated per
beam and the self-attention cache is never reordered; each beam attends to the
rows of its own history through an ancestry the search reorders instead. These
tests state that a grouped step gives every beam the logits the plain step
gives it after arbitrary reorderings, that the grouped search decodes what the
plain search decodes (eager, traced with in-place writes, XLA, through cache
growth), that the decoder uses it exactly without XLA, and that a model whose
cached decoder differs (the parsers') keeps the plain search.
"""

import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from conftest import SEARCH_VOCAB, search_model
from t2t_lite.decoding import beam_search
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.search import decode_padded, search
from t2t_lite.models.transformer import Transformer
from t2t_lite.models.parsing.aligned_model import AlignedTransformer

VOCAB, BEAM = SEARCH_VOCAB, 3


@pytest.fixture(scope="module")
def model():
    return search_model()


def _inputs(seed, batch=3, length=8):
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, VOCAB, size=(batch, length))
    ids[:, -1] = 1
    ids[1, 4:] = 0  # A shorter source: its padding must stay masked.
    ids[1, 3] = 1
    return tf.constant(ids.astype(np.int32))


def test_a_grouped_step_gives_each_beam_the_plain_steps_logits(model):
    inputs, steps = _inputs(0), 12
    batch = inputs.shape[0]
    plain_cache, cross = model.init_cache(inputs, steps)
    slot_cache = model.beam_self_cache(plain_cache, BEAM)
    plain_cache = beam_search._tile_beams(plain_cache, BEAM)
    plain_cross = {"layers": beam_search._tile_beams(cross["layers"], BEAM),
                   "input_mask": ops.repeat(cross["input_mask"], BEAM, axis=0)}
    ancestry = np.zeros((batch, BEAM, steps), np.int32)
    rng = np.random.default_rng(1)
    ids = tf.zeros([batch * BEAM], tf.int32)
    reordered = 0
    for index in range(steps):
        ancestry[:, :, index] = np.arange(BEAM)
        plain, plain_cache = model.decode_step(ids, index, plain_cache, plain_cross)
        grouped, slot_cache = model.decode_beams_step(ids, index, slot_cache, cross,
                                                      tf.constant(ancestry))
        np.testing.assert_allclose(grouped.numpy(), plain.numpy(), rtol=1e-5, atol=1e-5)
        parents = rng.integers(0, BEAM, size=(batch, BEAM)).astype(np.int32)
        reordered += int((parents != np.arange(BEAM)).any())
        plain_cache = beam_search._reorder_beams(plain_cache, tf.constant(parents), BEAM)
        ancestry = np.take_along_axis(ancestry, parents[:, :, None], axis=1)
        ids = tf.constant(rng.integers(2, VOCAB, size=batch * BEAM).astype(np.int32))
    assert reordered == steps  # The check saw beams reselected at every step.


@pytest.mark.parametrize("mode", ["eager", "traced_in_place", "xla"])
def test_the_grouped_search_decodes_what_the_plain_search_decodes(model, mode):
    # 20 forced tokens grow the cache through 16 -> 20 positions.
    kwargs = dict(min_decode_length=20, in_place=mode == "traced_in_place")

    def decode(grouped):
        def run(x):
            return search(model, x, BEAM, 0.6, 20, grouped=grouped, **kwargs)
        return run if mode == "eager" else tf.function(run, jit_compile=mode == "xla")

    plain, grouped = decode(False), decode(True)
    # Repeated static shapes: a traced loop reuses its buffers (eager has none to reuse).
    for seed in (0,) if mode == "eager" else (0, 1, 0):
        inputs = _inputs(seed)
        ids, scores = plain(inputs)
        grouped_ids, grouped_scores = grouped(inputs)
        np.testing.assert_array_equal(grouped_ids.numpy(), ids.numpy())
        np.testing.assert_allclose(grouped_scores.numpy(), scores.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_the_decoder_groups_its_beams_exactly_without_xla(model, jit, monkeypatch):
    calls = []
    step = Transformer.decode_beams_step

    def spy(self, *args, **kwargs):
        calls.append(1)
        return step(self, *args, **kwargs)

    monkeypatch.setattr(Transformer, "decode_beams_step", spy)
    options = DecodeOptions(beam_size=BEAM, extra_length=10, jit_compile=jit)
    spec = tf.TensorSpec([None, 8], tf.int32)
    tf.function(lambda x: decode_padded(model, x, options),
                jit_compile=jit).get_concrete_function(spec)
    assert bool(calls) == (not jit)
    greedy = DecodeOptions(beam_size=1, extra_length=10)
    calls.clear()
    decode_padded(model, _inputs(0), greedy)
    assert not calls  # One beam: nothing to group.


def test_a_model_with_its_own_cached_decoder_keeps_the_plain_search(model):
    assert model.decodes_grouped_beams()
    assert not AlignedTransformer.decodes_grouped_beams(object.__new__(AlignedTransformer))
