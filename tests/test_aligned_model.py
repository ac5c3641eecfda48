"""The aligned Transformer (issue 23): the decoder reads the encoder output at its next word."""


import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.decoding.beam_search import length_penalty
from t2t_lite.decoding.search import search
from t2t_lite.models.transformer import Transformer
from t2t_lite.parsing import ptb
from t2t_lite.models.parsing.aligned_model import AlignedTransformer, source_last
from t2t_lite.parsing.tree_constraint import TreeConstraint
from t2t_lite.problems.algorithmic import AlgorithmicCopy
from t2t_lite.problems.parsing import WsjParsing
from t2t_lite.runs import weights
from t2t_lite.training import trainer

# Target: pad, EOS, unk, (A (B )A )B, tags x y z u, a byte piece, (C without a close, a
# non-word.
TARGET = ["<pad>", "</s>", "<unk>", "\u2581(A", "\u2581(B", "\u2581)A", "\u2581)B",
          "\u2581x", "\u2581y", "\u2581z", "\u2581u", "<0x41>", "\u2581(C", "ab"]
SLOTS = [7, 8, 9, 10]  # The tags.
V = len(TARGET)
# A word-level source: every id from 3 on is one word.
SOURCE = ["<pad>", "</s>", "<unk>"] + [f"\u2581w{i}" for i in range(17)]


class _SlotProblem:
    """What `adapt` reads from a problem."""

    def __init__(self, ids):
        self.ids = ids

    def word_slot_ids(self):
        return self.ids


def _hparams(tiny_hparams, overrides=""):
    return tiny_hparams.override("model=aligned_transformer,shared_embedding=false,"
                                 "num_layers=2" + ("," + overrides if overrides else ""))


@pytest.fixture
def model(tiny_hparams):
    keras.utils.set_random_seed(3)
    model = weights.build_model(_hparams(tiny_hparams), len(SOURCE), V)
    model.adapt(_SlotProblem(SLOTS))
    return model


def _batch():
    """Sources of 5, 2 and 0 words (EOS, padding); targets rich in slots, padded."""
    inputs = np.array([[3, 9, 4, 15, 6, 1, 0], [12, 5, 1, 0, 0, 0, 0],
                       [1, 0, 0, 0, 0, 0, 0]], np.int32)
    targets = np.array([[3, 7, 4, 10, 9, 6, 8, 5, 1],
                        [3, 8, 7, 9, 8, 7, 5, 1, 0],  # More slots than words: EOS is read.
                        [7, 3, 7, 8, 1, 0, 0, 0, 0]], np.int32)
    return inputs, targets


def _exclusive_counts(targets):
    slot = np.isin(targets, SLOTS).astype(np.int32)
    return np.cumsum(slot, axis=1) - slot


def test_counts_of_call_and_cache_agree_and_cached_decoding_equals_full_forward(model):
    inputs, targets = _batch()
    seen = []
    alignment = model._alignment

    def recording(counts, encoder_output, last):
        seen.append(np.array(counts))
        return alignment(counts, encoder_output, last)

    model._alignment = recording
    full = np.array(model({"inputs": inputs, "targets": targets}))
    expected = _exclusive_counts(targets)
    assert expected[1, -1] == 5 and expected[0, 0] == 0
    np.testing.assert_array_equal(seen[0], expected)  # The k of `call`.
    np.testing.assert_array_equal(np.array(model.slot_counts(targets)), expected)
    self_cache, cross_cache = model.init_cache(inputs, 4)
    np.testing.assert_array_equal(np.array(cross_cache["source_last"]), [5, 2, 0])
    previous = np.zeros(3, np.int32)
    for i in range(targets.shape[1]):
        if i == 4:  # Grown as decoding.search grows it.
            self_cache = model.grow_self_cache(self_cache, targets.shape[1])
        logits, self_cache = model.decode_step(previous, i, self_cache, cross_cache)
        np.testing.assert_array_equal(np.array(self_cache["count"]), expected[:, i])
        np.testing.assert_array_equal(seen[-1][:, 0], expected[:, i])
        np.testing.assert_allclose(np.array(logits), full[:, i], rtol=1e-5, atol=1e-5)
        previous = targets[:, i]


def test_decoder_input_is_the_embedding_plus_the_word_at_k(model):
    """x_t = E[y_{t-1}] + PE(t) + W_a h[min(k_t, EOS)] + C[min(k_t, max_length)]."""
    inputs, targets = _batch()
    encoder_output, mask = model.encode(inputs)
    h = np.array(encoder_output)
    kernel = np.array(model.alignment_projection.kernel)
    table = np.array(model.count_embedding.embeddings)
    counts = _exclusive_counts(targets)
    counts[0, -1] = model.max_length + 7  # Past the count table: its last row.
    got = np.array(model._alignment(counts, encoder_output, source_last(mask)))
    last = np.array([5, 2, 0])
    for b in range(3):
        for t in range(targets.shape[1]):
            word = h[b, min(counts[b, t], last[b])]
            want = word @ kernel + table[min(counts[b, t], model.max_length)]
            np.testing.assert_allclose(got[b, t], want, rtol=1e-5, atol=1e-5)
    shifted = np.pad(targets, [[0, 0], [1, 0]])[:, :-1]
    plain = Transformer._decoder_input(model, shifted, encoder_output, mask, False)
    extra = model._alignment(_exclusive_counts(targets), encoder_output, source_last(mask))
    np.testing.assert_allclose(
        np.array(model._decoder_input(shifted, encoder_output, mask, False)),
        np.array(plain) + np.array(extra), rtol=1e-5, atol=1e-5)
    # Without slots every position reads the first word with count 0.
    model.adapt(_SlotProblem(None))
    np.testing.assert_array_equal(np.array(model.slot_counts(targets)), 0)


def _rescore(model, inputs, ids, alpha):
    """Teacher-forced log-probability / length penalty of each row of ids [B, L]."""
    logits = np.array(model({"inputs": inputs, "targets": ids}))
    log_probs = np.array(tf.nn.log_softmax(logits))
    scores = []
    for row, seq in enumerate(ids):
        n = list(seq).index(1) + 1 if 1 in seq else len(seq)
        total = sum(log_probs[row, t, seq[t]] for t in range(n))
        scores.append(total / float(length_penalty(n, alpha)))
    return np.array(scores), logits


def _sources():
    inputs = np.zeros((3, 7), np.int32)
    for row, words in enumerate([[3, 9, 4, 15, 6, 18], [12, 5], [7, 7, 11]]):
        inputs[row, :len(words) + 1] = words + [1]
    return inputs


def test_greedy_is_the_argmax_of_the_full_forward_pass(trained):
    model, inputs = trained[0], _sources()
    ids, scores = search(model, tf.constant(inputs), 1, 0.0, 20)
    ids = ids.numpy()[:, 0]
    again, logits = _rescore(model, inputs, ids, 0.0)
    assert (np.isin(ids, SLOTS).sum(axis=1) > 0).all()  # The counts move.
    for row, seq in enumerate(ids):
        n = list(seq).index(1) + 1 if 1 in seq else len(seq)
        np.testing.assert_array_equal(logits[row, :n].argmax(-1), seq[:n])
    np.testing.assert_allclose(scores.numpy()[:, 0], again, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("constrained", [False, True])
def test_beam_scores_are_the_full_forward_scores(trained, constrained):
    """Every beam's score, re-scored teacher-forced: the counts followed the beams."""
    model, inputs, alpha, beam_size = trained[0], _sources(), 0.6, 4
    constraint = TreeConstraint(TARGET, SOURCE) if constrained else None
    ids, scores = search(model, tf.constant(inputs), beam_size, alpha, 20,
                         constraint=constraint)
    ids, scores = ids.numpy(), scores.numpy()
    assert len({tuple(seq) for seq in ids[0]}) == beam_size
    for k in range(beam_size):
        again, _ = _rescore(model, inputs, ids[:, k], alpha)
        np.testing.assert_allclose(scores[:, k], again, rtol=1e-4, atol=1e-4)
    if constrained:
        for row, words in enumerate((inputs > 1).sum(axis=1)):
            for seq in ids[row]:
                text = " ".join(TARGET[i][1:] for i in seq if i > 1)
                assert ptb.is_well_formed(text, int(words)), text


@pytest.mark.parametrize("beam_size", [1, 3])
def test_tree_constraint_runs_on_the_aligned_model(model, beam_size):
    inputs = _sources()
    ids, scores = search(model, tf.constant(inputs), beam_size, 0.3, 24,
                         constraint=TreeConstraint(TARGET, SOURCE))
    plain, _ = search(model, tf.constant(inputs), beam_size, 0.3, 24)
    for row, words in enumerate((inputs > 1).sum(axis=1)):
        for k in range(beam_size):
            assert scores.numpy()[row, k] > -1e8
            text = " ".join(TARGET[i][1:] for i in ids.numpy()[row, k] if i > 1)
            assert ptb.is_well_formed(text, int(words)), text
    assert not all(ptb.is_well_formed(" ".join(TARGET[i][1:] for i in seq if i > 1), int(n))
                   for seq, n in zip(plain.numpy()[:, 0], (inputs > 1).sum(axis=1)))


def test_word_slots_are_saved_and_restored(model, tiny_hparams, tmp_path):
    slots = np.array(model.word_slots)
    assert slots.dtype == np.float32 and slots.tolist() == [float(i in SLOTS) for i in range(V)]
    assert "word_slots" not in {w.name for w in model.trainable_weights}
    assert [w.name for w in model.non_trainable_weights] == ["word_slots"]
    path = tf.train.Checkpoint(model=weights.model_weights(model)).write(str(tmp_path / "ckpt"))
    saved = {k for k, _ in tf.train.list_variables(path) if k.startswith("model/")}
    assert saved == set(weights.weight_keys(model))
    assert "model/word_slots/.ATTRIBUTES/VARIABLE_VALUE" in saved
    other = weights.build_model(_hparams(tiny_hparams), len(SOURCE), V)
    assert not np.array(other.word_slots).any()  # Zeros by default.
    tf.train.Checkpoint(model=weights.model_weights(other)).read(path).expect_partial()
    np.testing.assert_array_equal(np.array(other.word_slots), slots)
    inputs, targets = _batch()
    np.testing.assert_array_equal(np.array(other({"inputs": inputs, "targets": targets})),
                                  np.array(model({"inputs": inputs, "targets": targets})))


class _FakeVocab:
    def __init__(self, pieces):
        self.pieces = pieces
        self.vocab_size = len(pieces)

    def id_to_piece(self, i):
        return self.pieces[i]


class _Parsing(WsjParsing):
    """wsj_parsing over a given target vocabulary (no datagen)."""

    @property
    def target_vocab(self):
        return _FakeVocab(TARGET)


def test_adapt_reads_the_problems_word_slots(model):
    assert _Parsing().word_slot_ids() == SLOTS
    model.adapt(_SlotProblem([3, 11]))
    assert np.flatnonzero(np.array(model.word_slots)).tolist() == [3, 11]
    model.adapt(_Parsing())
    assert np.flatnonzero(np.array(model.word_slots)).tolist() == SLOTS
    assert registry.problem("algorithmic_copy").word_slot_ids() is None
    model.adapt(registry.problem("algorithmic_copy"))
    assert not np.array(model.word_slots).any()
    with pytest.raises(ValueError, match="word slot ids must lie in"):
        model.adapt(_SlotProblem([V]))


class _CopyWithSlots(AlgorithmicCopy):
    """algorithmic_copy whose ids 5 and 6 count as word slots."""

    name = "algorithmic_copy_slots"

    def word_slot_ids(self):
        return [5, 6]


def test_the_trainer_adapts_the_model_it_builds(tiny_hparams, one_device):
    hparams = tiny_hparams.override("model=aligned_transformer,max_length=16")
    model, _ = trainer.build_state(_CopyWithSlots(), hparams, one_device)
    assert type(model) is AlignedTransformer
    assert np.flatnonzero(np.array(model.word_slots)).tolist() == [5, 6]
    plain, _ = trainer.build_state(_CopyWithSlots(), tiny_hparams, one_device)
    assert type(plain) is Transformer  # No adapt: built as before.


def test_config_round_trip(model):
    config = model.get_config()
    again = AlignedTransformer.from_config(config)
    assert type(again) is AlignedTransformer and again.get_config() == config
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
    assert type(again) is AlignedTransformer and again.get_config() == config
    assert again.layer_config == model.layer_config


def test_registered_model_and_hparams():
    assert registry.model("aligned_transformer") is AlignedTransformer
    assert "aligned_transformer" in registry.list_models()
    for name, plain in (("parsing_aligned", "parsing"),
                        ("parsing_small_aligned", "parsing_small")):
        aligned = registry.hparams(name)
        assert aligned.model == "aligned_transformer"
        assert aligned.replace(model="transformer") == registry.hparams(plain)
    assert registry.hparams("parsing").model == registry.hparams("parsing_small").model \
        == "transformer"


# --- A tiny model learns: the tag of each word, in the words' order. ---
def _synthetic(rng, batch, max_words=8):
    """Sources of 1-8 words w (ids 3..19); target `(A T(w_1) ... T(w_n) )A`, T(w) = 7 + w % 4."""
    inputs = np.zeros((batch, max_words + 1), np.int32)
    targets = np.zeros((batch, max_words + 3), np.int32)
    for row in range(batch):
        sentence = rng.integers(3, len(SOURCE), rng.integers(1, max_words + 1))
        inputs[row, :len(sentence) + 1] = list(sentence) + [1]
        targets[row, :len(sentence) + 3] = [3] + [7 + w % 4 for w in sentence] + [5, 1]
    return inputs, targets


def _train(model_name, steps=150):
    """(model, teacher-forced tag accuracy on held-out sentences) after `steps` Adam steps."""
    keras.utils.set_random_seed(0)
    hparams = registry.hparams("tiny").override(
        f"model={model_name},shared_embedding=false,max_length=16,dropout_rate=0.0,"
        "num_layers=1,d_model=32,d_ff=64,num_heads=2")
    model = weights.build_model(hparams, len(SOURCE), V)
    if hasattr(model, "adapt"):
        model.adapt(_SlotProblem(SLOTS))
    optimizer = keras.optimizers.Adam(3e-3)

    @tf.function
    def step(inputs, targets):
        with tf.GradientTape() as tape:
            logits = model({"inputs": inputs, "targets": targets}, training=True)
            loss = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
            mask = tf.cast(targets > 0, loss.dtype)
            loss = tf.reduce_sum(loss * mask) / tf.reduce_sum(mask)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    rng = np.random.default_rng(0)
    for _ in range(steps):
        step(*_synthetic(rng, 32))
    inputs, targets = _synthetic(np.random.default_rng(1), 256)
    predicted = np.array(model({"inputs": inputs, "targets": targets})).argmax(-1)
    is_tag = np.isin(targets, SLOTS)
    return model, (predicted[is_tag] == targets[is_tag]).mean()


@pytest.fixture(scope="module")
def trained():
    return _train("aligned_transformer")


def test_a_tiny_aligned_model_learns_the_tags_of_its_words(trained):
    """150 steps: the aligned model tags every word; the plain one (same size) does not."""
    _, aligned = trained
    _, plain = _train("transformer")
    assert aligned > 0.98, (aligned, plain)
    assert aligned > plain + 0.05, (aligned, plain)
