"""The aligned parser's levers (issue 23): word-class features, word dropout and the
auxiliary tagging loss."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data import word_classes
from t2t_lite.hparams.hparams import HParamsError
from t2t_lite.runs import weights
from t2t_lite.training.train_step import StepRunner

MARK = word_classes.SPACE_MARK
TARGET = ["<pad>", "</s>", "<unk>", MARK + "(A", MARK + ")A", MARK + "x", MARK + "y", MARK + "z"]
SLOTS = [5, 6, 7]
# A word-level source: control pieces, words, and two class pieces (unknown words).
SOURCE = ["<pad>", "</s>", "<unk>", MARK + "the", MARK + "Corp.", MARK + "1987",
          MARK + "walking", MARK + "<unk:num>", MARK + "<unk:Cap>", MARK + "runs"]
# Training counts of SOURCE's ids: Corp. never seen, 1987 three times.
COUNTS = [0, 50, 0, 100, 0, 3, 1, 7, 9, 1]


class _Problem:
    name = "levers"

    def __init__(self, classes=True):
        self.classes = classes

    def word_slot_ids(self):
        return SLOTS

    def source_word_classes(self):
        return word_classes.class_indices(SOURCE) if self.classes else None

    def source_unknown_ids(self):
        return word_classes.unknown_ids(SOURCE) if self.classes else None

    def source_word_counts(self):
        return COUNTS if self.classes else None


def _model(tiny_hparams, overrides, seed=0):
    keras.utils.set_random_seed(seed)
    hparams = tiny_hparams.override("model=aligned_transformer,shared_embedding=false,"
                                    "num_layers=1," + overrides)
    model = weights.build_model(hparams, len(SOURCE), len(TARGET))
    model.adapt(_Problem())
    return model


def _batch():
    inputs = np.array([[3, 4, 5, 1, 0], [7, 8, 9, 6, 1]], np.int32)
    targets = np.array([[3, 5, 6, 7, 4, 1, 0], [3, 7, 6, 5, 6, 4, 1]], np.int32)
    return inputs, targets


def test_class_indices_of_a_word_vocabulary():
    classes = word_classes.class_indices(SOURCE)
    index = {piece: i + 1 for i, piece in enumerate(word_classes.CLASS_PIECES)}
    assert classes[:3] == [0, 0, 0]  # Control pieces have no class.
    assert classes[5] == classes[7] == index[MARK + "<unk:num>"]  # A number and its class.
    assert classes[4] == classes[8] == index[MARK + "<unk:Cap>"]
    assert classes[6] == index[MARK + "<unk:low-ing>"]
    assert classes[9] == index[MARK + "<unk:low-s>"]


def test_hparams_refuse_the_levers_on_the_plain_transformer(tiny_hparams):
    with pytest.raises(HParamsError, match="aligned_transformer"):
        tiny_hparams.override("word_class_features=true")
    with pytest.raises(HParamsError, match="aligned_transformer"):
        tiny_hparams.override("tagging_loss=0.5")
    with pytest.raises(HParamsError, match=">= 0"):
        tiny_hparams.override("model=aligned_transformer,tagging_loss=-1.0")
    with pytest.raises(HParamsError, match="aligned_transformer"):
        tiny_hparams.override("word_dropout=0.1")
    with pytest.raises(HParamsError, match=r"word_dropout must be in \[0, 1\)"):
        tiny_hparams.override("model=aligned_transformer,word_dropout=1.0")


def test_unknown_ids_send_words_to_their_class_piece():
    # the: <unk:low> is not in SOURCE; Corp.: <unk:Cap> (8); 1987: <unk:num> (7);
    # walking and runs: their classes are not in SOURCE; control and class pieces: themselves.
    assert word_classes.unknown_ids(SOURCE) == [0, 1, 2, 3, 8, 7, 6, 7, 8, 9]


def test_word_dropout_replaces_words_only_while_training(tiny_hparams):
    model = _model(tiny_hparams, "word_dropout=0.5")
    np.testing.assert_array_equal(np.array(model.word_unknown_ids),
                                  word_classes.unknown_ids(SOURCE))
    rng = np.random.default_rng(0)
    inputs = rng.integers(0, len(SOURCE), size=(64, 50)).astype(np.int32)
    dropped = np.array(model.drop_words(inputs))
    unknown = np.array(word_classes.unknown_ids(SOURCE))[inputs]
    changed = dropped != inputs
    np.testing.assert_array_equal(dropped[changed], unknown[changed])  # Only to the class piece.
    can_change = unknown != inputs  # Corp. and 1987 (ids 4 and 5).
    assert not changed[~can_change].any()
    assert 0.4 < changed[can_change].mean() < 0.6  # Probability 0.5.
    assert (np.array(model.drop_words(inputs)) != dropped).any()  # A new draw each call.
    # Not while decoding: the encoder input is the plain word's.
    plain = type(model).__mro__[1]._encoder_input(model, inputs, False)
    np.testing.assert_array_equal(np.array(model._encoder_input(inputs, False)),
                                  np.array(plain))
    # While training, each position embeds the word or its class piece (other dropout off).
    model.source_dropout.rate = 0.0
    embedded = np.array(model._encoder_input(inputs, True))
    as_unknown = np.array(type(model).__mro__[1]._encoder_input(model, unknown, False))
    is_word = np.isclose(embedded, np.array(plain), atol=1e-6).all(-1)
    is_unknown = np.isclose(embedded, as_unknown, atol=1e-6).all(-1)
    assert (is_word | is_unknown).all()
    assert 0.4 < (is_unknown & ~is_word)[can_change].mean() < 0.6


def test_word_dropout_by_frequency_drops_rare_words_more(tiny_hparams):
    # alpha / (alpha + count), on top of word_dropout: Corp. (count 0) always,
    # 1987 (count 3) with 0.1 + 1 / 4; ids without a class piece never change.
    model = _model(tiny_hparams, "word_dropout=0.1,word_dropout_alpha=1.0")
    expected = np.minimum(0.1 + 1.0 / (1.0 + np.array(COUNTS, np.float64)), 1.0)
    np.testing.assert_allclose(np.array(model.word_drop_rates), expected, rtol=1e-6)
    rng = np.random.default_rng(0)
    inputs = rng.integers(0, len(SOURCE), size=(128, 50)).astype(np.int32)
    dropped = np.array(model.drop_words(inputs))
    unknown = np.array(word_classes.unknown_ids(SOURCE))[inputs]
    changed = dropped != inputs
    np.testing.assert_array_equal(dropped[changed], unknown[changed])
    assert not changed[unknown == inputs].any()
    assert changed[inputs == 4].all()  # Corp.: rate 1.
    assert 0.30 < changed[inputs == 5].mean() < 0.40  # 1987: rate 0.35.
    # Alpha alone: the rate of 1987 is 1 / 4.
    alone = _model(tiny_hparams, "word_dropout_alpha=1.0")
    assert 0.20 < (np.array(alone.drop_words(inputs)) != inputs)[inputs == 5].mean() < 0.30
    plain = type(alone).__mro__[1]._encoder_input(alone, inputs, False)
    np.testing.assert_array_equal(np.array(alone._encoder_input(inputs, False)),
                                  np.array(plain))  # Not while decoding.
    with pytest.raises(HParamsError, match="word_dropout_alpha must be >= 0"):
        tiny_hparams.override("model=aligned_transformer,word_dropout_alpha=-1")
    with pytest.raises(HParamsError, match="aligned_transformer"):
        tiny_hparams.override("word_dropout_alpha=0.25")
    bare = weights.build_model(
        tiny_hparams.override("model=aligned_transformer,shared_embedding=false,"
                              "word_dropout_alpha=0.25"), len(SOURCE), len(TARGET))
    with pytest.raises(ValueError, match="word-level source"):
        bare.adapt(_Problem(classes=False))


def test_word_dropout_needs_a_word_level_source(tiny_hparams):
    keras.utils.set_random_seed(0)
    hparams = tiny_hparams.override("model=aligned_transformer,word_dropout=0.2,"
                                    "shared_embedding=false")
    model = weights.build_model(hparams, len(SOURCE), len(TARGET))
    with pytest.raises(ValueError, match="word-level source"):
        model.adapt(_Problem(classes=False))


def test_word_class_features_add_the_class_embedding_and_cache_equals_full(tiny_hparams):
    model = _model(tiny_hparams, "word_class_features=true")
    inputs, targets = _batch()
    np.testing.assert_array_equal(np.array(model.word_classes),
                                  word_classes.class_indices(SOURCE))
    got = np.array(model._encoder_input(inputs, False))
    table = np.array(model.class_embedding.embeddings)
    classes = np.array(word_classes.class_indices(SOURCE))[inputs]
    plain = type(model).__mro__[1]._encoder_input(model, inputs, False)
    np.testing.assert_allclose(got, np.array(plain) + table[classes], rtol=1e-5, atol=1e-6)
    # Cached decoding (init_cache encodes with the features) equals the full pass.
    full = np.array(model({"inputs": inputs, "targets": targets}))
    self_cache, cross_cache = model.init_cache(inputs, targets.shape[1])
    previous = np.zeros(2, np.int32)
    for i in range(targets.shape[1]):
        logits, self_cache = model.decode_step(previous, i, self_cache, cross_cache)
        np.testing.assert_allclose(np.array(logits), full[:, i], rtol=1e-5, atol=1e-5)
        previous = targets[:, i]


def test_word_class_features_need_a_word_level_source(tiny_hparams):
    keras.utils.set_random_seed(0)
    hparams = tiny_hparams.override("model=aligned_transformer,word_class_features=true,"
                                    "shared_embedding=false")
    model = weights.build_model(hparams, len(SOURCE), len(TARGET))
    with pytest.raises(ValueError, match="word-level source"):
        model.adapt(_Problem(classes=False))


def test_word_tags_are_the_slots_in_order(tiny_hparams):
    model = _model(tiny_hparams, "tagging_loss=1.0")
    _, targets = _batch()
    tags, present = model.word_tags(targets, 5)
    np.testing.assert_array_equal(np.array(tags), [[5, 6, 7, 0, 0], [7, 6, 5, 6, 0]])
    np.testing.assert_array_equal(np.array(present), [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])


def test_tagging_loss_is_the_weighted_cross_entropy_of_each_words_tag(tiny_hparams):
    model = _model(tiny_hparams, "tagging_loss=0.5")
    inputs, targets = _batch()
    logits, auxiliary = model({"inputs": inputs, "targets": targets},
                              return_auxiliary_loss=True)
    np.testing.assert_allclose(np.array(logits),
                               np.array(model({"inputs": inputs, "targets": targets})),
                               rtol=1e-6, atol=1e-6)
    encoder_output, _ = model.encode(inputs)
    scores = np.array(model.tagger(encoder_output), np.float64)
    log_p = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    tags = {0: [5, 6, 7], 1: [7, 6, 5, 6]}
    want = -sum(log_p[b, i, tag] for b, row in tags.items() for i, tag in enumerate(row))
    np.testing.assert_allclose(float(auxiliary), 0.5 * want, rtol=1e-5)


@pytest.mark.parametrize("levers, loss_scale", [
    ("tagging_loss=1.0", False),
    ("tagging_loss=1.0,word_dropout=0.3,word_class_features=true", False),
    ("tagging_loss=1.0", True)])  # mixed_float16's optimizer scales the whole loss.
def test_the_train_step_trains_the_tagger(tiny_hparams, one_device, levers, loss_scale):
    """The tagger is used only by the auxiliary loss: it moves only if the step adds it."""
    with one_device.scope():
        model = _model(tiny_hparams, levers)
        optimizer = keras.optimizers.Adam(1e-2)
        if loss_scale:
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        optimizer.build(model.trainable_variables)
    runner = StepRunner(model, optimizer, one_device, label_smoothing=0.1)
    before = np.array(model.tagger.kernel)
    inputs, targets = _batch()
    batch = {"inputs": tf.constant(inputs), "targets": tf.constant(targets)}
    runner.step([batch])
    assert np.abs(np.array(model.tagger.kernel) - before).max() > 1e-4


def test_the_tagged_parsing_set_is_the_aligned_one_with_the_tagging_loss():
    from t2t_lite import registry

    tagged = registry.hparams("parsing_small_tagged")
    assert tagged.model_config.tagging_loss == 1.0
    assert tagged.replace(tagging_loss=0.0) == registry.hparams(
        "parsing_small_aligned")


def test_the_word_dropout_parsing_set_is_the_tagged_one_with_word_dropout():
    from t2t_lite import registry

    recipe = registry.hparams("parsing_small_word_dropout")
    assert (recipe.model_config.tagging_loss, recipe.model_config.word_dropout) == (1.0, 0.1)
    assert recipe.replace(word_dropout=0.0) == registry.hparams(
        "parsing_small_tagged")
