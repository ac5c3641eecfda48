"""Head roles of the encoder heads (Voita et al. 2019): t2t_lite/pictures/head_roles.py
and `t2t_lite-visualize --head_roles`.

Golden counts on hand-made attention, the rarest token on a hand-made frequency
table, the vectorized count against a per-token loop of the documented
definition, and a tiny trained Transformer through the CLI.
"""

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
from conftest import NO_EVAL  # noqa: E402

from t2t_lite.runs.run import Run
from t2t_lite import registry  # noqa: E402
from t2t_lite.bin import visualize as visualize_cli  # noqa: E402
from t2t_lite.ids import EOS_ID, PAD_ID  # noqa: E402
from t2t_lite.pictures import attention  # noqa: E402
from t2t_lite.pictures import head_roles as hr  # noqa: E402
from t2t_lite.runs import run_dir, weights  # noqa: E402
from t2t_lite.training import trainer  # noqa: E402
from t2t_lite.training.options import TrainOptions  # noqa: E402

E = EOS_ID
# Two sentences, padded: 4 real tokens + EOS, and 2 real tokens + EOS.
IDS = np.array([[5, 3, 7, 4, E, 0, 0],
                [6, 2, E, 0, 0, 0, 0]], np.int32)
# id -> count: 7 is the first sentence's rarest (position 2), 2 the second's (position 1).
FREQUENCIES = np.array([0, 0, 3, 40, 50, 60, 70, 2])
PREVIOUS, NEXT, SELF, RARE, EOS_ROLE = range(5)


def _one_hot(keys, length=7):
    return np.eye(length)[keys]


def _golden_weights():
    """[L=1, B=2, H=5, S, S]: previous, next, rarest, uniform and self heads.

    Rows that must not count hold a trap: padding and EOS queries put all their
    weight on the previous position (a hit for "previous" if they were counted).
    """
    w = np.zeros((1, 2, 5, 7, 7))
    lengths, rarest = [5, 3], [2, 1]  # Non-padding length (EOS included), rarest position.
    for b in range(2):
        n = lengths[b]
        for i in range(7):
            if i >= n - 1:  # EOS and padding queries: the trap.
                w[0, b, :, i] = _one_hot(max(i - 1, 0))
                continue
            w[0, b, 0, i] = _one_hot(i - 1 if i > 0 else n - 1)  # The first token: EOS.
            w[0, b, 1, i] = _one_hot(i + 1)  # The last real token's "next" is EOS.
            w[0, b, 2, i] = _one_hot(rarest[b])
            w[0, b, 3, i, :n] = 1.0 / n  # Uniform over the sentence: ties, no role.
            w[0, b, 4, i] = _one_hot(i)
    return w


def test_golden_shares_on_hand_made_attention():
    keys, applies = hr.role_keys(IDS, FREQUENCIES)
    totals = applies.sum(axis=(0, 1))
    # 6 real tokens; 2 first tokens have no previous, 2 last ones no next (EOS is not
    # a next), and the 2 rarest tokens are no "rare" query of their own.
    np.testing.assert_array_equal(totals, [4, 4, 6, 4, 6])
    hits = hr.count_hits(_golden_weights(), keys, applies)
    roles = hr.HeadRoles(hits=hits, totals=totals, examples=2, tokens=6)
    expected = np.array([
        [1.0, 0, 0, 1 / 4, 2 / 6],  # previous; the first tokens hit EOS, row 0's 3 -> 2 rare.
        [0, 1.0, 0, 2 / 4, 2 / 6],  # next; 1 -> 2 and 0 -> 1 rare; the last tokens hit EOS.
        [1 / 4, 2 / 4, 2 / 6, 1.0, 0],  # rare; 3 -> 2, and 1 -> 2, 0 -> 1 are neighbours.
        [0, 0, 0, 0, 0],  # uniform: no unique maximum.
        [0, 0, 1.0, 0, 0],  # self.
    ])
    np.testing.assert_allclose(roles.shares[0], expected)
    assert [roles.role(0, h) for h in range(5)] == ["previous", "next", "rare", None, "self"]


def test_rarest_token_on_a_hand_made_table():
    frequencies = np.array([0, 0, 9, 2, 5, 2, 1])
    ids = np.array([[4, 3, 5, 3, E, 0],  # 3 and 5 tie at 2: the leftmost, position 1.
                    [4, 6, 2, 6, E, 0],  # 6 (count 1) twice: the leftmost, position 1.
                    [2, 9, 4, E, 0, 0],  # 9 is past the table: count 0, the rarest.
                    [E, 0, 0, 0, 0, 0],  # No real token.
                    [2, 2, E, 0, 0, 0]])  # One id only.
    np.testing.assert_array_equal(hr.rarest_positions(ids, frequencies), [1, 1, 1, -1, 0])
    # EOS and padding are never the rarest, whatever the table says of ids 0 and 1.
    assert hr.rarest_positions(np.array([[3, 4, E, 0]]), frequencies)[0] == 0


def _naive_hits(ids, weights, frequencies):
    """[L, H, R] hits and [R] totals of one sentence (ids [S], weights [L, H, S, S]),
    token by token, as the module docstring defines them."""
    ids = [int(t) for t in ids]
    real = [i for i, t in enumerate(ids) if t not in (PAD_ID, EOS_ID)]
    eos = ids.index(EOS_ID)
    counts = [frequencies[ids[i]] if ids[i] < len(frequencies) else 0 for i in real]
    rare = real[counts.index(min(counts))] if real else None
    hits, totals = np.zeros(weights.shape[:2] + (5,), int), np.zeros(5, int)
    for i in real:
        targets = {PREVIOUS: i - 1 if i - 1 in real else None,
                   NEXT: i + 1 if i + 1 in real else None, SELF: i,
                   RARE: rare if rare != i else None, EOS_ROLE: eos}
        for role, key in targets.items():
            if key is None:
                continue
            totals[role] += 1
            for layer in range(weights.shape[0]):
                for head in range(weights.shape[1]):
                    row = weights[layer, head, i, :len(ids)]
                    if np.sum(row == row.max()) == 1 and int(np.argmax(row)) == key:
                        hits[layer, head, role] += 1
    return hits, totals


def test_vectorized_count_equals_the_definition_token_by_token():
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 10, size=12)  # Real tokens; EOS follows.
    ids = np.zeros((12, 10), np.int32)
    for b, n in enumerate(lengths):
        ids[b, :n] = rng.integers(2, 9, size=n)
        ids[b, n] = E
    weights = rng.dirichlet(np.ones(10), size=(2, 12, 3, 10))  # [L, B, H, S, S]
    weights[0, :, 0] = np.round(weights[0, :, 0], 1)  # Some ties at the maximum.
    frequencies = np.array([0, 0, 5, 3, 3, 8, 1, 9])  # 8 is past the table.
    keys, applies = hr.role_keys(ids, frequencies)
    naive = [_naive_hits(ids[b], weights[:, b], frequencies) for b in range(12)]
    np.testing.assert_array_equal(hr.count_hits(weights, keys, applies),
                                  sum(h for h, _ in naive))
    np.testing.assert_array_equal(applies.sum(axis=(0, 1)), sum(t for _, t in naive))


def test_role_needs_the_threshold_and_ties_go_to_the_first_role():
    hits = np.array([[[5, 5, 0, 0, 0], [4, 0, 0, 0, 0]]])
    roles = hr.HeadRoles(hits=hits, totals=np.full(5, 10), threshold=0.5)
    assert roles.role(0, 0) == "previous" and roles.role(0, 1) is None
    empty = hr.HeadRoles(hits=np.zeros((1, 1, 5), int), totals=np.zeros(5, int))
    np.testing.assert_array_equal(empty.shares, 0.0)  # A role that applied to no query.


class _Problem:
    """What `source_frequencies` reads of a problem."""

    source_vocab_size = 6

    def examples(self, split, data_dir=None):
        assert split == "train"
        rows = [[2, 3, E], [3, E], [5, 5, 5, 9, E]]
        return tf.data.Dataset.from_generator(
            lambda: ({"inputs": np.array(r, np.int32)} for r in rows),
            output_signature={"inputs": tf.TensorSpec([None], tf.int32)})


def test_source_frequencies_count_the_training_sources():
    counts, read = hr.source_frequencies(_Problem(), limit=0)
    assert read == 3
    np.testing.assert_array_equal(counts, [0, 0, 1, 2, 0, 3, 0, 0, 0, 1])  # EOS not counted.
    counts, read = hr.source_frequencies(_Problem(), limit=2)
    assert read == 2 and list(counts[:6]) == [0, 0, 1, 2, 0, 0]


# --- A trained run through the CLI ---
OVERRIDES = ("dropout_rate=0.0,learning_rate_scale=0.5,min_length_bucket=14,num_layers=2,"
             "d_model=32,d_ff=64,num_heads=4,batch_size=1024")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny Transformer trained 200 steps on algorithmic_reverse (about 10 s)."""
    out = str(tmp_path_factory.mktemp("reverse"))
    trainer.train(registry.problem("algorithmic_reverse"),
                  registry.hparams("tiny").override(OVERRIDES), out,
                  options=TrainOptions(train_steps=200, log_every_steps=1000, eval=NO_EVAL),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return out


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_cli_writes_table_json_and_png(run, tmp_path, capsys):
    png = str(tmp_path / "roles.png")
    assert visualize_cli.main(["--output_dir", run, "--head_roles", "--examples", "300",
                               "--frequency_examples", "5000", "--output_file", png]) == 0
    out = capsys.readouterr().out
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / "roles.json", encoding="utf-8") as f:
        record = json.load(f)
    assert (record["problem"], record["split"], record["examples"]) == \
        ("algorithmic_reverse", "dev", 300)
    assert record["frequency_examples"] == 5000 and record["roles"] == list(hr.ROLES)
    heads = record["heads"]
    assert [(h["layer"], h["head"]) for h in heads] == [(l, h) for l in range(2) for h in range(4)]
    for head in heads:
        assert all(0.0 <= share <= 1.0 for share in head["shares"].values())
        # "previous", "next", "self" and "eos" are distinct keys: one per token at most.
        assert sum(head["hits"][r] for r in ("previous", "next", "self", "eos")) <= \
            record["tokens"]
        line = f"{head['layer']:>5} {head['head']:>4}"
        assert any(row.startswith(line) and row.endswith(f"  {head['role'] or '-'}")
                   for row in out.splitlines()), line
    # The query counts follow from the dev data alone.
    problem = registry.problem("algorithmic_reverse")
    dev = [ex["inputs"] for ex in problem.examples("dev").take(300).as_numpy_iterator()]
    real = sum(int(np.sum(ids > EOS_ID)) for ids in dev)
    assert record["tokens"] == record["queries"]["self"] == record["queries"]["eos"] == real
    assert record["queries"]["previous"] == record["queries"]["next"] == real - len(dev)
    assert f"wrote {png}" in out
    # Measured (five runs of 200-1000 steps, several seeds): the encoder of reverse
    # needs no neighbour, and no head is positional (largest previous/next share 0.17).
    assert max(max(h["shares"]["previous"], h["shares"]["next"]) for h in heads) < 0.35


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_batched_count_equals_sentence_by_sentence_maps(run):
    """The library's padded batches count what `attention.attention_maps` shows for
    each sentence alone (the pictures' own path), token by token."""
    opened = Run.open(run)
    model, hparams = opened.model(), opened.hparams
    problem = registry.problem("algorithmic_reverse")
    examples = list(problem.examples("dev").take(24).as_numpy_iterator())
    frequencies, _ = hr.source_frequencies(problem, 5000)
    roles = hr.head_roles(model, examples, frequencies, hparams.max_length, batch_size=8)
    hits = np.zeros_like(roles.hits)
    for ex in examples:
        maps = attention.attention_maps(model, list(ex["inputs"]), list(ex["targets"]))
        hits += _naive_hits(ex["inputs"], maps.weights["encoder"], frequencies)[0]
    # Padding changes the float sums' order: allow one near-tie to flip per head.
    assert np.abs(roles.hits - hits).max() <= 1 and roles.examples == 24


@pytest.mark.parametrize("name", ["rnn_tiny", "bahdanau_tiny"])
def test_rnn_run_is_refused_in_one_line(name, tmp_path, capsys):
    """A run of an RNN model (written directly: the refusal needs no training)."""
    out = str(tmp_path)
    hparams = registry.hparams(name)
    run_dir.prepare_run(out, hparams, "algorithmic_reverse", 12, 12)
    model = weights.build_model(hparams, 12)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=weights.model_weights(model)),
                               out, max_to_keep=1, checkpoint_name="ckpt").save(1)
    assert visualize_cli.main(["--output_dir", out, "--head_roles"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("t2t_lite-visualize: error: ")
    assert f"{hparams.model!r}" in err[0] and "no encoder self-attention heads" in err[0]


@pytest.mark.parametrize("args, message", [
    ([], "give --input (the attention of one sentence) or --head_roles"),
    (["--head_roles", "--input", "1 2"], "leave out --input and --target"),
    (["--split", "test", "--examples", "3", "--input", "1"],
     "--split, --examples go with --head_roles"),
    (["--head_roles", "--output_file", "roles.html"], "roles.html: write the head roles as"),
    (["--head_roles", "--examples", "0"], "count at least one example"),
])
def test_flag_errors_are_one_line(args, message, tmp_path, capsys):
    assert visualize_cli.main(["--output_dir", str(tmp_path)] + args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("t2t_lite-visualize: error: ")
    assert message in err[0]
