"""Sampling instead of beam search: filtered distributions, greedy at T = 0, seeds, CLI, export."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import NO_EVAL, session_run

from t2t_lite.runs.run import Run
from t2t_lite import registry
from t2t_lite.bin import decoder as decoder_cli
from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.decoder import Decoder
from t2t_lite.decoding.options import DecodeOptions, DecodeOptionsError
from t2t_lite.decoding.sampling import sample
from t2t_lite.ids import EOS_ID, strip_ids
from t2t_lite.runs import weights
from t2t_lite.bin import exporter as exporter_cli
from t2t_lite.serving.sampling import sample_ids_function
from t2t_lite.training import trainer
from t2t_lite.training.options import TrainOptions

V = 8  # PAD, EOS and six tokens.
# Probabilities of the first token, by the source's first token (2 or 3): a fake
# model with known probabilities; the second token is always EOS.
PROBS = {2: [0, 0, 0.4, 0.25, 0.2, 0.1, 0.05, 0.0],
         3: [0, 0, 0.05, 0.1, 0.17, 0.3, 0.13, 0.25]}


class FirstTokenModel:
    """The model contract (`t2t_lite/models/contract.py`): PROBS[inputs[:, 0]], then EOS."""

    target_vocab_size = V

    def __init__(self):
        table = np.full((V, V), -1e9, np.float32)
        for first, probs in PROBS.items():
            table[first] = np.log(np.maximum(probs, 1e-30))
        self.table = tf.constant(table)

    def init_cache(self, inputs, max_decode_length):
        rows = tf.shape(inputs)[0]
        return {"steps": tf.zeros([rows, max_decode_length])}, {"first": inputs[:, 0]}

    @staticmethod
    def grow_self_cache(cache, length):
        steps = cache["steps"]
        return {"steps": tf.pad(steps, [[0, 0], [0, length - steps.shape[1]]])}

    def decode_step(self, ids, index, self_cache, cross_cache):
        first = tf.gather(self.table, cross_cache["first"])
        eos = tf.one_hot(tf.fill(tf.shape(ids), EOS_ID), V, on_value=0.0, off_value=-1e9)
        return tf.where(index == 0, first, eos), self_cache


class ForbidToken:
    """A search constraint forbidding one token everywhere (`search.cached_decoder`)."""

    def __init__(self, token):
        self.token = token

    def initial_state(self, inputs):
        return tf.zeros([tf.shape(inputs)[0]], tf.int32)

    def update(self, state, ids):
        return state

    def allowed(self, state, index, max_decode_length):
        return tf.broadcast_to(tf.range(V) != self.token, [tf.shape(state)[0], V])


def expected(probs, temperature=1.0, top_k=0, top_p=1.0, forbid=None):
    """The distribution sampling must follow, renormalised after each filter."""
    q = np.asarray(probs, np.float64)
    if forbid is not None:
        q[forbid] = 0
    q = q ** (1.0 / temperature)
    q /= q.sum()
    order = np.argsort(-q, kind="stable")
    if top_k:
        q[order[top_k:]] = 0
        q /= q.sum()
    if top_p < 1:
        before = np.cumsum(q[order]) - q[order]
        q[order[before >= top_p]] = 0
        q /= q.sum()
    return q


def first_tokens(temperature, top_k=0, top_p=1.0, seed=0, constraint=None, samples=250):
    """{source first token: counts [V] of the first sampled token} over 20 x `samples` rows."""
    inputs = tf.constant([[2 + i % 2, EOS_ID] for i in range(40)], tf.int32)
    ids, scores = sample(FirstTokenModel(), inputs, 4, temperature=temperature, top_k=top_k,
                         top_p=top_p, seed=seed, num_samples=samples, constraint=constraint)
    ids = ids.numpy()
    assert (ids[:, :, 1] == EOS_ID).all() and (ids[:, :, 2:] == 0).all()
    table = FirstTokenModel().table.numpy()  # Scores: the model's own log-probabilities.
    want = table[inputs.numpy()[:, :1], ids[:, :, 0]]
    np.testing.assert_allclose(scores.numpy(), want, rtol=1e-5)
    return {first: np.bincount(ids[i::2, :, 0].ravel(), minlength=V)
            for i, first in enumerate((2, 3))}


@pytest.mark.parametrize("temperature, top_k, top_p", [
    (1.0, 0, 1.0), (1.0, 0, 0.7), (1.0, 2, 1.0), (0.5, 0, 1.0), (2.0, 0, 0.9), (1.0, 3, 0.6),
])
def test_samples_follow_the_renormalised_filtered_distribution(temperature, top_k, top_p):
    counts = first_tokens(temperature, top_k, top_p)
    for first, probs in PROBS.items():
        want = expected(probs, temperature, top_k, top_p)
        got = counts[first] / counts[first].sum()
        assert (counts[first][want == 0] == 0).all(), (first, counts[first], want)
        np.testing.assert_allclose(got, want, atol=0.025)


def test_the_nucleus_and_top_k_keep_only_their_tokens():
    # 2: [.4, .25, .2, .1, .05] for tokens 2..6; the nucleus of 0.7 is tokens 2, 3, 4
    # (0.65 < 0.7 before token 4); top-2 is tokens 2 and 3.
    assert np.flatnonzero(first_tokens(1.0, top_p=0.7)[2]).tolist() == [2, 3, 4]
    assert np.flatnonzero(first_tokens(1.0, top_k=2)[2]).tolist() == [2, 3]
    assert np.flatnonzero(first_tokens(1.0, top_p=1e-6)[3]).tolist() == [5]  # The argmax.


def test_a_constraint_forbids_its_token_and_the_rest_renormalise():
    counts = first_tokens(1.0, top_p=0.8, constraint=ForbidToken(2))
    for first, probs in PROBS.items():
        want = expected(probs, top_p=0.8, forbid=2)
        assert counts[first][2] == 0
        np.testing.assert_allclose(counts[first] / counts[first].sum(), want, atol=0.025)


def test_seeds_repeat_exactly_and_differ():
    a, b, c = (first_tokens(1.0, seed=s, samples=20) for s in (7, 7, 8))
    assert all((a[f] == b[f]).all() for f in PROBS)
    assert any((a[f] != c[f]).any() for f in PROBS)


def test_bad_options_are_one_clear_error():
    with pytest.raises(DecodeOptionsError, match="pass --sampling_temperature too"):
        DecodeOptions(top_k=5)
    with pytest.raises(DecodeOptionsError, match="0 < --top_p <= 1"):
        DecodeOptions(sampling_temperature=1.0, top_p=0.0)
    # A beam of 0 is one line too, not a traceback from inside the search.
    for bad in ({"beam_size": 0}, {"batch_size": 0}, {"extra_length": -1}):
        with pytest.raises(DecodeOptionsError, match="--beam_size must be >= 1, --batch_size >= 1"):
            DecodeOptions(**bad)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """algorithmic_reverse, 100 steps: greedy never predicts padding, most outputs end.
    max_length=16: an export has two padded lengths (8, 16) to trace."""
    out = tmp_path_factory.mktemp("run")
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256,"
        "max_length=16")
    trainer.train(registry.problem("algorithmic_reverse"), hparams, str(out),
                  options=TrainOptions(eval=NO_EVAL, train_steps=100, log_every_steps=1000),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return str(out)


SOURCES = [[5, 3, 9, 1], [2, 2, 7, 4, 4, 8, 1], [6, 1], [9, 8, 7, 6, 5, 4, 1], [3, 4, 1]]
SHORT = dict(extra_length=8)  # One padded length (8) and L = 16: one quick trace each.


@pytest.fixture(scope="module")
def model(run_dir):
    return Run.open(run_dir).model()


def _ids(decoded):
    return [[ids for ids, _ in samples] for samples in decoded]


def _scores(decoded):
    return [[score for _, score in samples] for samples in decoded]


def test_temperature_zero_and_top_k_one_are_greedy(model):
    greedy = Decoder(model, DecodeOptions(beam_size=1, **SHORT)).decode(SOURCES)
    for options in (DecodeOptions(sampling_temperature=0.0, seed=3, **SHORT),
                    DecodeOptions(sampling_temperature=1.0, top_k=1, seed=3, **SHORT)):
        got = Decoder(model, options).decode(SOURCES)
        assert _ids(got) == _ids(greedy), options
        np.testing.assert_allclose(_scores(got), _scores(greedy), atol=1e-5)


def test_samples_depend_on_seed_input_and_number_only(model):
    def decoder(**kw):
        kw = dict(dict(sampling_temperature=1.0, seed=11, num_samples=4, batch_size=8,
                       **SHORT), **kw)
        return Decoder(model, DecodeOptions(**kw))

    batched = decoder()
    first = batched.decode(SOURCES)
    assert first == batched.decode(SOURCES)  # The same samples and scores, exactly.
    alone = decoder(batch_size=1).decode(SOURCES)  # Not the batch an input falls in.
    assert _ids(alone) == _ids(first)
    np.testing.assert_allclose(_scores(alone), _scores(first), atol=1e-5)
    two = decoder(num_samples=2).decode(SOURCES)
    assert _ids(two) == [s[:2] for s in _ids(first)]  # Sample n is sample n.
    assert len({tuple(ids) for samples in _ids(first) for ids in samples}) > len(SOURCES)


def test_cli_writes_n_samples_per_input(run_dir, model, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("5 3 9\n\n2 2 7 4\n")
    target = tmp_path / "out.txt"
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={target}", "--extra_length=8",
                             "--sampling_temperature=1", "--top_p=0.9", "--num_samples=3",
                             "--seed=5"]) == 0
    assert "sampling at temperature 1, top_k 0, top_p 0.9, seed 5" in capsys.readouterr().err
    lines = target.read_text().split("\n")
    assert len(lines) == 4 and lines[-1] == ""
    for line in (lines[0], lines[2]):  # text<TAB>score, three times.
        fields = line.split("\t")
        assert len(fields) == 6 and all(float(s) <= 0 for s in fields[1::2])
    assert lines[1] == "\t".join(["", "0.0000"] * 3)  # An empty input line.
    # The library's samples, each line keyed by its number (the empty line counts).
    options = DecodeOptions(sampling_temperature=1.0, top_p=0.9, num_samples=3, seed=5,
                            **SHORT)
    problem = registry.problem("algorithmic_reverse")
    sources = [decode_policy.source_ids(problem.encode(line), 16) for line in ("5 3 9",
                                                                               "2 2 7 4")]
    want = Decoder(model, options).decode(sources, keys=[0, 2])
    assert [lines[0], lines[2]] == ["\t".join(f"{problem.decode(ids)}\t{s:.4f}" for ids, s in w)
                                    for w in want]

    code = decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             "--top_k=4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "pass --sampling_temperature too" in err[0]
    code = decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             "--sampling_temperature=1", "--beam_size=4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "drop one or the other" in err[0]


def _check_sample_ids(sample_ids, model, settings=((0.8, 3, 0.9),)):
    """`sample_ids` (tensor settings, rows keyed by their index) == the Decoder's samples."""
    batch = np.zeros((len(SOURCES), 12), np.int32)  # Extra padding must not matter.
    for row, ids in enumerate(SOURCES):
        batch[row, :len(ids)] = ids
    for temperature, top_k, top_p in settings:
        out = sample_ids(inputs=tf.constant(batch), temperature=tf.constant(temperature),
                         top_k=tf.constant(top_k), top_p=tf.constant(top_p),
                         seed=tf.constant(9, tf.int64), num_samples=tf.constant(3))
        options = DecodeOptions(sampling_temperature=temperature, top_k=top_k, top_p=top_p,
                                seed=9, num_samples=3, extra_length=5)
        want = Decoder(model, options).decode(SOURCES)
        assert [[strip_ids(s) for s in row] for row in out["ids"].numpy()] == _ids(want)
        np.testing.assert_allclose(out["scores"].numpy(), _scores(want), atol=1e-4)


def test_sample_ids_signature_function_matches_the_decoder(model):
    # max_length=8 (every source fits): one padded length to trace; the export test has two.
    _check_sample_ids(sample_ids_function(model, DecodeOptions(extra_length=5), 8), model)


@pytest.mark.slow  # ~25 s: traces and saves translate_ids and sample_ids, loads them.
def test_exported_sample_ids_match_the_decoder(run_dir, model, tmp_path, capsys):
    export_dir = tmp_path / "e"
    assert exporter_cli.main([f"--output_dir={run_dir}", f"--export_dir={export_dir}",
                              "--beam_size=1", "--extra_length=5", "--sampling"]) == 0
    assert "signature sample_ids" in capsys.readouterr().err
    loaded = tf.saved_model.load(str(export_dir / "1"))
    assert sorted(loaded.signatures) == ["sample_ids", "translate_ids"]
    _check_sample_ids(loaded.signatures["sample_ids"], model, ((1.0, 0, 1.0), (0.8, 3, 0.9)))
    # TensorFlow Serving's loader (a TF1 session, saved_model_cli run) gives the same samples.
    batch = np.zeros((len(SOURCES), 12), np.int32)
    for row, ids in enumerate(SOURCES):
        batch[row, :len(ids)] = ids
    out = session_run(export_dir / "1", "sample_ids", {
        "inputs": batch, "temperature": np.float32(0.8), "top_k": np.int32(3),
        "top_p": np.float32(0.9), "seed": np.int64(9), "num_samples": np.int32(3)}, tmp_path)
    want = Decoder(model, DecodeOptions(sampling_temperature=0.8, top_k=3, top_p=0.9, seed=9,
                                        num_samples=3, extra_length=5)).decode(SOURCES)
    assert [[strip_ids(s) for s in row] for row in out["ids"]] == _ids(want)
