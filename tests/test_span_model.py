"""The span chart (issue 23): span classes from linearized trees, the span loss, and
decoding by CKY through the model contract."""

import collections

import keras
import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.decoding.search import search
from t2t_lite.hparams.hparams import HParamsError
from t2t_lite.parsing import ptb
from t2t_lite.models.parsing.span_model import SpanTransformer, chain_table, target_chains
from t2t_lite.parsing.tree_constraint import TreeConstraint, token_tables
from t2t_lite.runs import weights
from t2t_lite.training.evaluation import model_loss_sums
from t2t_lite.training.train_step import StepRunner

MARK = "\u2581"
TARGET = ["<pad>", "</s>", "<unk>"] + [MARK + t for t in (
    "(S", ")S", "(NP", ")NP", "(VP", ")VP", "DT", "NN", "VB", "(PP", ")PP", "IN")]
ID = {p[1:]: i for i, p in enumerate(TARGET) if p.startswith(MARK)}
SOURCE = ["<pad>", "</s>", "<unk>"] + [f"{MARK}w{i}" for i in range(9)]
TREES = ["(S (NP DT NN )NP (VP VB )VP )S",   # Spans (0, 2) S, (0, 1) NP, (2, 2) VP.
         "(S (VP VB (NP NN )NP )VP )S",      # (0, 1) S over VP, (1, 1) NP.
         "(NP (NP DT NN )NP (PP IN (NP NN )NP )PP )NP"]


def _ids(tree):
    return [ID[t] for t in tree.split()] + [1]


class _Problem:
    name = "spans"

    def __init__(self, trees=TREES):
        self.trees = trees

    def word_slot_ids(self):
        return [ID[t] for t in ("DT", "NN", "VB", "IN")]

    def target_token_tables(self):
        kinds, labels = token_tables(TARGET)
        return kinds.tolist(), labels.tolist()

    def span_label_chains(self):
        return target_chains((_ids(t) for t in self.trees), self.target_token_tables()[0])


def _hparams(tiny_hparams, overrides=""):
    return tiny_hparams.override(
        "model=span_transformer,shared_embedding=false,num_layers=1,tagging_loss=1.0,"
        "span_classes=8" + ("," + overrides if overrides else ""))


@pytest.fixture
def model(tiny_hparams):
    keras.utils.set_random_seed(5)
    model = weights.build_model(_hparams(tiny_hparams), len(SOURCE), len(TARGET))
    model.adapt(_Problem())
    return model


def _gold_spans(tree):
    """{(first, last): labels top first} of a linearization, read with a stack."""
    spans, stack, words = collections.defaultdict(list), [], 0
    for token in tree.split():
        kind = ptb.token_kind(token)
        if kind == "open":
            stack.append((token[1:], words))
        elif kind == "close":
            label, first = stack.pop()
            spans[(first, words - 1)].insert(0, label)
        else:
            words += 1
    return dict(spans)


def _batch(trees=TREES):
    words = [sum(ptb.token_kind(x) == "tag" for x in t.split()) for t in trees]
    width_s, width_t = max(words) + 1, max(len(_ids(t)) for t in trees)
    inputs = np.zeros((len(trees), width_s), np.int32)
    targets = np.zeros((len(trees), width_t), np.int32)
    for row, (tree, n) in enumerate(zip(trees, words)):
        inputs[row, :n + 1] = list(range(3, 3 + n)) + [1]
        targets[row, :len(_ids(tree))] = _ids(tree)
    return inputs, targets, words


def test_chain_table_keeps_every_label_then_the_most_frequent_chains():
    kinds, labels = _Problem().target_token_tables()
    chains = target_chains([_ids(t) for t in TREES], kinds)
    assert chains == {(ID["(S"],): 1, (ID["(NP"],): 5, (ID["(VP"],): 1,
                      (ID["(S"], ID["(VP"]): 1, (ID["(PP"],): 1}
    opens, closes = chain_table(kinds, labels, chains, 6)
    assert opens.tolist() == [[0, 0, 0], [ID["(S"], 0, 0], [ID["(NP"], 0, 0],
                              [ID["(VP"], 0, 0], [ID["(PP"], 0, 0],
                              [ID["(S"], ID["(VP"], 0]]
    assert closes[5].tolist() == [ID[")S"], ID[")VP"], 0]
    assert chain_table(kinds, labels, chains, 5)[0].shape == (5, 3)  # No room for the chain.
    with pytest.raises(ValueError, match="span_classes=5 or more"):
        chain_table(kinds, labels, chains, 4)


def test_span_targets_are_the_trees_labelled_spans(model):
    inputs, targets, words = _batch()
    length = inputs.shape[1]
    labels = keras.ops.convert_to_numpy(model.span_targets(targets, length))
    opens = keras.ops.convert_to_numpy(model.span_chains).astype(int).tolist()
    for row, tree in enumerate(TREES):
        expected = np.zeros((length, length), int)
        for (first, last), chain in _gold_spans(tree).items():
            key = [ID["(" + label] for label in chain] + [0] * (3 - len(chain))
            expected[first, last] = opens.index(key)
        np.testing.assert_array_equal(labels[row], expected, err_msg=tree)
    assert labels[1, 0, 1] == opens.index([ID["(S"], ID["(VP"], 0])  # The unary chain.


def test_span_loss_is_the_cross_entropy_of_every_span_within_the_words(model):
    inputs, targets, words = _batch()
    logits, auxiliary = model({"inputs": inputs, "targets": targets}, training=False,
                              return_auxiliary_loss=True)
    encoder_output, _ = model.encode(inputs, training=False)
    scores = keras.ops.convert_to_numpy(model.span_scores(encoder_output))
    labels = keras.ops.convert_to_numpy(model.span_targets(targets, inputs.shape[1]))
    log_p = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    expected = sum(-log_p[b, i, j, labels[b, i, j]]
                   for b, n in enumerate(words) for i in range(n) for j in range(i, n))
    tagging = float(model.tagging_loss_sum(targets, encoder_output))
    assert float(auxiliary) == pytest.approx(tagging + expected, rel=1e-4)
    assert logits.shape == (3, targets.shape[1], len(TARGET))


def test_the_span_set_is_the_recipe_with_the_chart(tiny_hparams):
    span = registry.hparams("parsing_small_span")
    assert (span.model, span.beam_size, span.model_config.span_loss) == (
        "span_transformer", 1, 1.0)
    assert span.replace(model="aligned_transformer", beam_size=21) == \
        registry.hparams("parsing_small_word_dropout")
    assert registry.model("span_transformer") is SpanTransformer
    chart = registry.hparams("parsing_small_chart")
    assert chart.model_config.relative_position_buckets == 32
    assert chart.replace(span_loss=1.0, token_loss=1.0, relative_position_buckets=0) == span
    with pytest.raises(HParamsError, match="tagging_loss > 0"):
        tiny_hparams.override("model=span_transformer")


def _gold_scores(model, trees, length):
    """Span scores [B, S, S, C] that put the gold class of every span far ahead."""
    _, targets, _ = _batch(trees)
    labels = keras.ops.convert_to_numpy(model.span_targets(targets, length))
    return 10.0 * np.eye(model.span_classes, dtype=np.float32)[labels]


def _gold_tags(trees, length):
    """Tagger logits [B, S, V] that put each word's gold tag far ahead."""
    tags = np.zeros((len(trees), length, len(TARGET)), np.float32)
    for row, tree in enumerate(trees):
        slots = [ID[t] for t in tree.split() if ptb.token_kind(t) == "tag"]
        tags[row, np.arange(len(slots)), slots] = 10.0
    return tags


def _decoded(ids):
    """The rows of search's best ids up to their EOS, as id lists."""
    rows = keras.ops.convert_to_numpy(ids)[:, 0, :].tolist()
    return [row[:row.index(1) + 1] if 1 in row else row for row in rows]


@pytest.mark.parametrize("beam_size, constrained", [(1, False), (3, True)])
def test_decoding_writes_the_charts_best_tree(model, monkeypatch, beam_size, constrained):
    """With the gold spans and tags scored highest, the cached search writes the gold
    linearizations (a unary chain, a one-word phrase, n-ary phrases)."""
    inputs, _, _ = _batch()
    length = inputs.shape[1]
    monkeypatch.setattr(model, "span_scores", lambda h: _gold_scores(model, TREES, length))
    monkeypatch.setattr(model, "tagger", lambda h: _gold_tags(TREES, length))
    constraint = TreeConstraint(TARGET, SOURCE) if constrained else None
    ids, _ = search(model, inputs, beam_size, 0.6, 40, constraint=constraint)
    assert _decoded(ids) == [_ids(tree) for tree in TREES]


def test_an_untrained_chart_writes_one_tree_over_the_words(model):
    rng = np.random.default_rng(0)
    lengths = [1, 2, 5, 8]
    inputs = np.zeros((len(lengths), 9), np.int32)
    for row, n in enumerate(lengths):
        inputs[row, :n + 1] = list(rng.integers(3, len(SOURCE), n)) + [1]
    ids, _ = search(model, inputs, 1, 0.6, 9 + 60)
    pieces = [[TARGET[i][1:] for i in row[:-1]] for row in _decoded(ids)]
    for n, tokens in zip(lengths, pieces):
        assert ptb.is_well_formed(" ".join(tokens), n), tokens
        assert tokens[0].startswith("(")  # The root always has a phrase.


def test_span_bias_trades_precision_for_recall(model):
    """A span keeps its phrase where its log-odds + span_bias > 0: a very negative
    bias leaves the root alone, a very large one labels all 2n - 1 spans of the
    binary tree."""
    inputs = np.array([[3, 4, 5, 6, 7, 1]], np.int32)
    opens = {}
    for bias in (-100.0, 0.0, 100.0):
        model.span_bias = bias
        ids, _ = search(model, inputs, 1, 0.6, 6 + 60)
        tokens = [TARGET[i][1:] for i in _decoded(ids)[0][:-1]]
        assert ptb.is_well_formed(" ".join(tokens), 5), tokens
        heads = [t for t in tokens if t.startswith("(")]
        # Each labelled span opens its chain; count the spans by their first open.
        opens[bias] = len(heads)
    assert opens[-100.0] <= 3 and opens[-100.0] <= opens[0.0] <= opens[100.0]
    assert opens[100.0] >= 2 * 5 - 1


def _step_changes(model, one_device):
    """One Adam step on the batch: (the logged loss sum, {variable path: moved})."""
    with one_device.scope():
        optimizer = keras.optimizers.Adam(1e-2)
        optimizer.build(model.trainable_variables)
    runner = StepRunner(model, optimizer, one_device, label_smoothing=0.1)
    before = {v.path: np.array(v) for v in model.weights}  # Keys: without the model's name.
    inputs, targets, _ = _batch()
    loss_sum, _, _ = runner.step([{"inputs": inputs, "targets": targets}])
    return loss_sum, {v.path.split("/", 1)[1]: bool(np.abs(np.array(v) - before[v.path]).max() > 0)
                      for v in model.weights}


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_token_loss_zero_trains_the_chart_and_tagger_not_the_decoder(tiny_hparams, one_device):
    """token_loss=0: the decoder's weights exist (same checkpoint) but neither train
    nor run; the step logs the chart's and tagger's loss; the chart still decodes."""
    keras.utils.set_random_seed(5)
    with one_device.scope():
        chart_only = weights.build_model(_hparams(tiny_hparams, "token_loss=0"),
                                         len(SOURCE), len(TARGET))
        full = weights.build_model(_hparams(tiny_hparams), len(SOURCE), len(TARGET))
    for model in (chart_only, full):
        model.adapt(_Problem())
    def paths(model):
        return sorted(v.path.split("/", 1)[1] for v in model.weights)

    assert paths(chart_only) == paths(full)
    inputs, targets, _ = _batch()
    logits, auxiliary = chart_only({"inputs": inputs, "targets": targets}, training=False,
                                   return_auxiliary_loss=True)
    assert not np.any(keras.ops.convert_to_numpy(logits))
    dev = model_loss_sums(chart_only, {"inputs": inputs, "targets": targets}, 0.1)
    assert [float(v) for v in dev] == pytest.approx(
        [float(auxiliary), float(auxiliary), float(np.sum(targets > 0))])
    loss_sum, moved = _step_changes(chart_only, one_device)
    assert loss_sum == pytest.approx(float(auxiliary), rel=1e-4)  # Dropout is 0 here.
    decoder = [p for p in moved if "decoder_layer" in p or "target_embedding" in p
               or "count_embedding" in p or "alignment_projection" in p]
    assert decoder and not any(moved[p] for p in decoder)
    for name in ("span_output", "tagger", "encoder_layer_0", "source_embedding"):
        assert any(moved[p] for p in moved if name in p), name
    _, moved_full = _step_changes(full, one_device)
    assert all(moved_full[p] for p in decoder if "kernel" in p or "embeddings" in p)
    ids, _ = search(chart_only, inputs, 1, 0.6, 40)
    for row, n in zip(_decoded(ids), _batch()[2]):
        assert ptb.is_well_formed(" ".join(TARGET[i][1:] for i in row[:-1]), n)


def test_token_loss_other_than_one_needs_the_span_model(tiny_hparams):
    with pytest.raises(HParamsError, match="only model=span_transformer"):
        tiny_hparams.override("model=aligned_transformer,tagging_loss=1,token_loss=0")
    assert _hparams(tiny_hparams, "token_loss=0").model_config.token_loss == 0.0
