"""Property tests (hypothesis) for the readers of files and settings users hand to t2t_lite.

The decoder's `--reference` reader, the `--score_file` TSV reader (and, slow, the scores it
writes), `t2t_lite-bleu`'s inputs, a run directory's JSON records (`hparams.json`,
`problem.json`, `best/best.json`, `averaged/averaged.json`, `init_from.json`,
`early_stopping.json`) and datagen's manifest, and `TF_CONFIG`. As in test_properties.py,
valid input is built so every example reaches the success assertion (what was written reads
back), and damaged input so every example checks its one-line `UserError` naming the file
(or the variable); the oracles are the test's own (`bytes.split(b"\\n")`, what was drawn).
"""

import contextlib
import json
import os
import tempfile

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_properties import (TEXT_FILES, TEXT_LINE, bad_files, rows,
                             tiny_run, valid_overrides)

from t2t_lite import records
from t2t_lite.data.manifest import Manifest, manifest_path, read_manifest
from t2t_lite.data.text_encoder import DataError
from t2t_lite.decoding.scoring import read_pairs
from t2t_lite.decoding.text_io import read_references
from t2t_lite.errors import UserError
from t2t_lite.hparams.hparams import HParams
from t2t_lite.metrics import bleu
from t2t_lite.metrics.base import MetricError
from t2t_lite.runs import run_dir
from t2t_lite.training import cluster, early_stopping, evaluation

SETTINGS = settings(max_examples=40)  # The profile (tests/conftest.py) decides the seed.
FEW = settings(max_examples=20)
ONCE_A_WHILE = settings(max_examples=6)  # Each example writes two checkpoints.

ONE_LINE = "one-line-errors"  # The promises of docs/guarantees.md these tests prove.
NO_DROP = "no-data-dropped"


def _write(directory, name, data: bytes) -> str:
    path = os.path.join(directory, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def check_one_line(error, *names):
    message = str(error)
    assert message and "\n" not in message and "\r" not in message, repr(message)
    assert any(name in message for name in names), message


# --- The decoder's --reference and t2t_lite-bleu's files -------------------------------------

@pytest.mark.guarantee(NO_DROP, "the --reference reader gives line i of the file as reference "
                       "i (split at \\n only), and refuses another line count in one line")
@SETTINGS
@given(TEXT_FILES, st.one_of(st.just(0), st.just(0), st.just(0), st.integers(-2, 2)))
def test_reference_reader_gives_every_line(data, off):
    expected = [r.decode("utf-8") for r in rows(data)]
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "ref.txt", data)
        if off and len(expected) + off >= 0:
            with pytest.raises(MetricError) as info:
                read_references(path, len(expected) + off)
            assert f"{path} has {len(expected)} lines, the input has {len(expected) + off}" \
                in str(info.value)
            return
        event("read back")
        assert read_references(path, len(expected)) == expected


@pytest.mark.guarantee(ONE_LINE, "a reference or t2t_lite-bleu file with one invalid UTF-8 "
                       "sequence is one MetricError line naming the file and the byte's offset")
@SETTINGS
@given(bad_files())
def test_reference_reader_names_the_file_and_byte(case):
    data, line, column, _ = case
    offset = sum(len(r) + 1 for r in data.split(b"\n")[:line - 1]) + column - 1
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "ref.txt", data)
        with pytest.raises(MetricError) as info:
            read_references(path, data.count(b"\n"))
    check_one_line(info.value, path)
    assert str(info.value).startswith(f"{path} is not UTF-8 (") and \
        str(info.value).endswith(f" at byte {offset})")


@pytest.mark.guarantee(ONE_LINE, "t2t_lite-bleu on any two UTF-8 files scores their lines, or "
                       "gives one MetricError line naming both files and counts")
@FEW
@given(st.lists(TEXT_LINE, max_size=5).flatmap(lambda hyps: st.tuples(st.just(hyps), st.one_of(
    st.none(), st.lists(TEXT_LINE, min_size=len(hyps), max_size=len(hyps)),
    st.lists(TEXT_LINE, max_size=5)))))
def test_bleu_files_score_every_line_or_name_the_files(case):
    hypotheses, references = case  # None: the hypotheses' file again.
    hyp_data = "\n".join(hypotheses).encode("utf-8")
    ref_data = hyp_data if references is None else "\n".join(references).encode("utf-8")
    hyps, refs = ([r.decode("utf-8") for r in rows(d)] for d in (hyp_data, ref_data))
    with tempfile.TemporaryDirectory() as directory:
        hyp_path, ref_path = (_write(directory, n, d) for n, d in
                              (("hyp.txt", hyp_data), ("ref.txt", ref_data)))
        if len(hyps) != len(refs):
            with pytest.raises(MetricError) as info:
                bleu.bleu_files(hyp_path, ref_path, "de")
            check_one_line(info.value, hyp_path)
            assert f"{hyp_path} has {len(hyps)} lines, reference {ref_path} has " \
                   f"{len(refs)} lines" in str(info.value)
            return
        event("scored")
        sacre, tokenized = bleu.bleu_files(hyp_path, ref_path, "de")
    assert sacre == bleu.sacrebleu_score(hyps, refs)  # The lines the oracle split.
    assert tokenized == bleu.tokenized_bleu(hyps, refs, "de")
    if references is None and sacre.sys_len:
        assert sacre.bp == 1.0 and all(p in (0.0, 100.0) for p in sacre.precisions)


# --- --score_file: source<TAB>target lines -------------------------------------------------

FIELD = TEXT_LINE.map(lambda t: t.replace("\t", " ").replace("\n", " "))


@pytest.mark.guarantee(NO_DROP, "a --score_file of source<TAB>target lines reads back every "
                       "pair, in order, each side stripped")
@SETTINGS
@given(st.lists(st.tuples(FIELD, FIELD), min_size=1, max_size=8), st.sampled_from(["\n", "\r\n"]),
       st.booleans())
def test_score_file_reads_back_every_pair(pairs, newline, newline_at_end):
    text = newline.join(f"{s}\t{t}" for s, t in pairs) + (newline if newline_at_end else "")
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "pairs.tsv", text.encode("utf-8"))
        assert read_pairs(path) == [(s.strip(), t.strip()) for s, t in pairs]


@pytest.mark.guarantee(ONE_LINE, "a --score_file line with no tab or two, an empty file, or "
                       "bad UTF-8 is one DataError line naming the file (and the line)")
@SETTINGS
@given(st.lists(st.tuples(FIELD, FIELD), max_size=5), st.data())
def test_score_file_names_the_bad_line(pairs, data):
    lines = [f"{s}\t{t}" for s, t in pairs]
    number = data.draw(st.integers(1, len(lines) + 1))
    bad = data.draw(st.sampled_from(["no tab", "2 tabs", "3 tabs", "utf-8", "empty"]))
    if bad == "empty":
        encoded, expected = b"", "is empty; pass source<TAB>target lines"
    else:
        line = {"no tab": "a b", "2 tabs": "a\tb\tc", "3 tabs": "\t\t\t"}.get(bad, "a\tb")
        lines.insert(number - 1, line)
        encoded = b"\n".join(x.encode("utf-8") + (b"\xff" if i == number - 1 and bad == "utf-8"
                                                  else b"") for i, x in enumerate(lines))
        expected = f", line {number}: " + ("invalid UTF-8" if bad == "utf-8" else f"{bad};")
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "pairs.tsv", encoded)
        with pytest.raises(DataError) as info:
            read_pairs(path)
    check_one_line(info.value, path)
    assert str(info.value).startswith(path) and expected in str(info.value), str(info.value)


# --- A run directory's JSON records and datagen's manifest ---------------------------------

FLOAT = st.floats(-1e9, 1e9)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**18, 10**18) | FLOAT | st.text(max_size=10),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids,
                                                               max_size=3), max_leaves=8)
BEST = st.fixed_dictionaries({
    "step": st.integers(0, 10**9), "metric": st.text(min_size=1, max_size=12), "value": FLOAT,
    "higher_is_better": st.booleans(), "dev_loss": FLOAT, "dev_nll": FLOAT,
    "decoded": st.integers(0, 10**6), "scores": st.dictionaries(st.text(max_size=8), FLOAT),
    "lines": st.lists(st.text(max_size=30), max_size=3)})
STATS = st.fixed_dictionaries({k: st.integers(0, 10**12) for k in
                               ("written", "skipped_empty", "source_tokens", "target_tokens")})
SHARDS = st.lists(st.tuples(st.sampled_from(["train", "dev", "test"]), st.integers(0, 99), STATS),
                  max_size=4)
PROBLEM = st.tuples(st.text(min_size=1, max_size=12), st.integers(1, 10**6),
                    st.integers(1, 10**6), st.one_of(st.none(), st.text(min_size=1, max_size=12)))


@pytest.fixture(scope="module")
def small_model():
    """A one-layer Keras model: what `write_weights_dir` saves beside best.json and
    averaged.json (the records do not depend on the model)."""
    import keras

    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])


@pytest.mark.guarantee(NO_DROP, "every JSON record a run or datagen writes (hparams.json, "
                       "problem.json, best.json, averaged.json, init_from.json, "
                       "early_stopping.json, the datagen manifest) reads back as written")
@ONCE_A_WHILE
@given(valid_overrides(), PROBLEM, BEST, st.lists(st.text(max_size=12), max_size=4),
       st.dictionaries(st.text(max_size=8), JSON, max_size=3), SHARDS, st.booleans(),
       st.fixed_dictionaries({"run_dir": st.text(max_size=20), "checkpoint": st.text(max_size=20),
                              "step": st.integers(0, 10**9), "optimizer": st.booleans()}))
def test_every_record_reads_back_as_written(small_model, overrides, problem, best, averaged,
                                            plan, shards, complete, init_from):
    from t2t_lite.metrics.base import Score
    from t2t_lite.runs.weights import write_weights_dir

    hparams = HParams().override(overrides[0])
    name, source_size, target_size, data_dir = problem
    with tempfile.TemporaryDirectory() as out:
        run_dir.prepare_run(out, hparams, name, source_size, target_size, data_dir)
        info = {"problem": name, "source_vocab_size": source_size,
                "target_vocab_size": target_size,
                "data_dir": data_dir and os.path.abspath(data_dir)}
        assert run_dir.read_run(out) == (hparams, info)
        write_weights_dir(small_model, os.path.join(out, "best"), best, "best.json")
        assert evaluation.read_best(out) == best
        write_weights_dir(small_model, os.path.join(out, "averaged"), {"averaged": averaged},
                          "averaged.json")
        assert records.read_json(os.path.join(out, "averaged", "averaged.json"), "") == \
            {"averaged": averaged}
        run_dir.write_init_from(out, init_from)
        assert run_dir.read_init_from(out) == init_from
        stopping = early_stopping.EarlyStopping(out, 3)
        stopping.update(Score(best["metric"], best["value"], ""), best["step"])
        assert early_stopping.read_state(out) == stopping.state
        manifest = Manifest.open(manifest_path(out, "p"), {"problem": "p", **plan},
                                 lambda split: [])
        for split, index, stats in shards:
            manifest.record(split, index, stats)
        if complete:
            manifest.finish()
        assert read_manifest(out, "p") == json.loads(json.dumps(manifest.data))


def _valid_records(out, small_model):
    """Each record file of a run (and a manifest) as t2t_lite writes it -> its reader."""
    from t2t_lite.metrics.base import Score
    from t2t_lite.runs.weights import write_weights_dir

    run_dir.prepare_run(out, HParams(), "p", 10, 12, None)
    write_weights_dir(small_model, os.path.join(out, "best"), {
        "step": 3, "metric": "bleu", "value": 1.5, "scores": {"bleu": 1.5}}, "best.json")
    write_weights_dir(small_model, os.path.join(out, "averaged"), {"averaged": ["ckpt-1"]},
                      "averaged.json")
    run_dir.write_init_from(out, {"run_dir": "/r", "checkpoint": "/r/ckpt-4", "step": 4})
    early_stopping.EarlyStopping(out, 2).update(Score("bleu", 2.0, ""), 5)
    manifest = Manifest.open(manifest_path(out, "p"), {"problem": "p"}, lambda split: [])
    manifest.record("train", 0, {"written": 3, "skipped_empty": 0, "source_tokens": 9,
                                 "target_tokens": 8})

    def resume_datagen():  # What a rerun of datagen does with the manifest, shards there.
        Manifest.open(manifest_path(out, "p"), {"problem": "p"}, lambda s: ["shard"]) \
            .record("train", 0, {"written": 1, "skipped_empty": 0, "source_tokens": 1,
                                 "target_tokens": 1})

    def stop_early():  # What a resumed run does with the state: count one more evaluation.
        early_stopping.EarlyStopping(out, 2).update(Score("bleu", 1.0, ""), 9)

    return {"hparams.json": (lambda: run_dir.read_run(out), None),
            "problem.json": (lambda: run_dir.read_run(out), None),
            "best/best.json": (lambda: evaluation.read_best(out), None),
            "averaged/averaged.json": (lambda: records.read_json(
                os.path.join(out, "averaged", "averaged.json"), "rerun the averager"), None),
            "init_from.json": (lambda: run_dir.read_init_from(out), None),
            "early_stopping.json": (lambda: early_stopping.read_state(out), stop_early),
            "p.datagen.json": (lambda: read_manifest(out, "p"), resume_datagen)}


@st.composite
def damaged(draw, data: bytes):
    """`data` (a valid record) damaged one way: cut, a byte changed, bytes put in, a field
    replaced or dropped, another JSON value, or any bytes."""
    how = draw(st.sampled_from(["cut", "byte", "insert", "field", "drop", "json", "any"]))
    at = draw(st.integers(0, len(data)))
    if how == "cut":
        return data[:at]
    if how == "byte":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    if how == "insert":
        piece = draw(st.sampled_from([b"\xff", b"\xe4", b"[" * 5000, b"9" * 5000, b"NaN", b"\n",
                                      b"\x00", b",", b"}", b'"\\ud800"', b"1e400"]))
        return data[:at] + piece + data[at:]
    record = json.loads(data)
    if how in ("field", "drop") and record:
        key = draw(st.sampled_from(sorted(record)))
        if how == "drop":
            record.pop(key)
        else:
            record[key] = draw(JSON)
        return json.dumps(record).encode()
    return json.dumps(draw(JSON)).encode() if how == "json" else draw(st.binary(max_size=60))


RECORDS = ["hparams.json", "problem.json", "best/best.json", "averaged/averaged.json",
           "init_from.json", "early_stopping.json", "p.datagen.json"]


@pytest.fixture(scope="module")
def valid_run(small_model, tmp_path_factory):
    """A run directory holding every record, valid: (directory, name -> (reader, consumer))."""
    out = str(tmp_path_factory.mktemp("records"))
    return out, _valid_records(out, small_model)


@pytest.mark.guarantee(ONE_LINE, "any damage to a run's JSON records or the datagen manifest "
                       "(cut, bad bytes, wrong or missing fields, any bytes) reads back or is "
                       "one RecordError line naming the file")
@settings(max_examples=70)
@given(st.sampled_from(RECORDS), st.data())
def test_a_damaged_record_reads_or_is_one_error_naming_it(valid_run, name, data):
    out, readers = valid_run
    reader, consumer = readers[name]
    path = os.path.join(out, name)
    with open(path, "rb") as f:
        valid = f.read()
    try:
        _write(out, name, data.draw(damaged(valid)))
        try:
            reader()
        except records.RecordError as e:
            event("refused")
            check_one_line(e, path)
            return
        event("read")
        try:  # What the record is read for works, or is one line (another plan...).
            consumer and consumer()
        except UserError as e:
            check_one_line(e, out)
    finally:
        _write(out, name, valid)
        assert reader() is not None  # The valid file reads.


# --- TF_CONFIG ---------------------------------------------------------------------------

ADDRESS = st.tuples(st.sampled_from(["localhost", "10.0.0.7", "worker-3.example"]),
                    st.integers(1, 65535)).map(lambda hp: f"{hp[0]}:{hp[1]}")


@st.composite
def tf_configs(draw):
    """A TF_CONFIG TensorFlow reads: chief (0 or 1), workers, maybe ps and evaluator; this
    process one of the tasks; written with any JSON spacing."""
    cluster = {}
    for job, most in (("chief", 1), ("worker", 4), ("ps", 2), ("evaluator", 1)):
        count = draw(st.integers(0, most) if job != "worker" else st.integers(1, most))
        if count:
            cluster[job] = draw(st.lists(ADDRESS, min_size=count, max_size=count))
    job = draw(st.sampled_from(sorted(cluster)))
    config = {"cluster": cluster, "task": {"type": job, "index": draw(
        st.integers(0, len(cluster[job]) - 1))}}
    if draw(st.booleans()):
        config["rpc_layer"] = "grpc"
    return config, draw(st.sampled_from([None, 0, 2])), draw(st.sampled_from(["", " ", "\n"]))


# What an environment variable can hold: any text but NUL and lone surrogates.
ENV_TEXT = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))


@contextlib.contextmanager
def tf_config_set(text):
    old = os.environ.get("TF_CONFIG")
    os.environ["TF_CONFIG"] = text
    try:
        yield
    finally:
        os.environ.pop("TF_CONFIG") if old is None else os.environ.update(TF_CONFIG=old)


@SETTINGS
@given(tf_configs())
def test_a_tf_config_tensorflow_reads_parses_alike(case):
    from tensorflow.python.distribute import multi_worker_util
    from tensorflow.python.distribute.cluster_resolver import TFConfigClusterResolver

    config, indent, space = case
    with tf_config_set(space + json.dumps(config, indent=indent) + space):
        assert cluster.tf_config() == config
        multi = cluster.is_multi_worker()
        resolver = TFConfigClusterResolver()  # TensorFlow's own reading, the oracle.
        spec, task = resolver.cluster_spec(), (resolver.task_type, resolver.task_id)
    multi_worker_util._validate_cluster_spec(spec, *task)
    assert spec.as_dict() == config["cluster"]
    assert task == (config["task"]["type"], config["task"]["index"])
    assert multi == (len(config["cluster"].get("chief", []))
                     + len(config["cluster"]["worker"]) > 1)


def _fault(draw, config):
    """`config` with one fault TensorFlow's multi-worker training cannot start with."""
    cluster, task = config["cluster"], config["task"]
    fault = draw(st.sampled_from(["cluster", "job", "address", "name", "chiefs", "no task",
                                  "task", "type", "index", "range", "not in cluster"]))
    if fault == "cluster":
        config["cluster"] = draw(st.sampled_from([3, "w:1", [], None]))
    elif fault == "job":
        cluster["worker"] = draw(st.sampled_from([3, "w:1", {"0": "w:1"}, None]))
    elif fault == "address":
        cluster["worker"][0] = draw(st.sampled_from(["", 2222, None, ["w:1"]]))
    elif fault == "name":
        cluster[draw(st.sampled_from(["master", "Worker", "", "gpu"]))] = ["m:1"]
    elif fault == "chiefs":
        cluster["chief"] = ["c:1", "c:2"]
    elif fault == "no task":
        cluster["worker"].append("w:9")  # Two tasks at least: a cluster, so a task is needed.
        del config["task"]
    elif fault == "task":
        config["task"] = draw(st.sampled_from([0, "worker", ["worker", 0]]))
    elif fault == "type":
        task["type"] = draw(st.sampled_from([0, None, ["worker"]]))
    elif fault == "index":
        task["index"] = draw(st.sampled_from(["0", 0.0, True, None]))
    elif fault == "range":
        task["index"] = draw(st.sampled_from([-1, len(cluster.get(task["type"], [])), 10**6]))
    else:
        task["type"] = "evaluator" if "evaluator" not in cluster else "master"
    return config


@pytest.mark.guarantee(ONE_LINE, "a TF_CONFIG with one fault (not JSON, not an object, a "
                       "cluster or task of the wrong shape, a task not in its cluster) is one "
                       "ClusterError line naming TF_CONFIG")
@SETTINGS
@given(tf_configs(), st.data())
def test_a_faulty_tf_config_is_one_error_line(case, data):
    config, indent, _ = case
    how = data.draw(st.sampled_from(["fault", "fault", "fault", "cut", "not an object", "text"]))
    if how == "fault":
        text = json.dumps(_fault(data.draw, config), indent=indent)
    elif how == "cut":
        whole = json.dumps(config, indent=indent)
        text = whole[:data.draw(st.integers(1, len(whole) - 1))]
    elif how == "not an object":
        text = json.dumps(data.draw(st.sampled_from([[config], "worker", 3, None])))
    else:
        text = data.draw(st.text(ENV_TEXT, min_size=1).filter(str.strip))
        if text.strip().startswith("{"):
            text = "x" + text  # Not a JSON object; any other text must be refused.
    with tf_config_set(text), pytest.raises(cluster.ClusterError) as info:
        cluster.tf_config()
    check_one_line(info.value, "TF_CONFIG")
    assert str(info.value).startswith("TF_CONFIG")


@pytest.mark.guarantee(ONE_LINE, "TF_CONFIG holding any JSON object or text parses into a "
                       "cluster TensorFlow accepts, or is one ClusterError line")
@FEW
@given(st.dictionaries(st.sampled_from(["cluster", "task", "rpc_layer", "x"]), JSON, max_size=3)
       .map(json.dumps) | st.text(ENV_TEXT))
def test_any_tf_config_parses_or_is_one_error_line(text):
    from tensorflow.python.distribute import multi_worker_util

    with tf_config_set(text):
        try:
            config = cluster.tf_config()
        except cluster.ClusterError as e:
            event("refused")
            check_one_line(e, "TF_CONFIG")
            return
    event("parsed")
    if cluster.is_multi_worker(config):
        task = config["task"]
        multi_worker_util._validate_cluster_spec(config["cluster"], task["type"], task["index"])


# --- The decoder's scores for --score_file (slow: a trained run, the command in-process) ----

SYMBOLS = st.lists(st.integers(0, 9), max_size=6).map(lambda ids: " ".join(map(str, ids)))


@pytest.mark.guarantee(NO_DROP, "--score_file writes one score line per pair (log-probability, "
                       "per token, tokens), or exits 2 with one line and no output file")
@pytest.mark.slow  # A training and a decoder start per example; CI runs it.
@settings(max_examples=8)
@given(st.lists(st.tuples(SYMBOLS, SYMBOLS), min_size=1, max_size=4),
       st.sampled_from(["pairs", "pairs", "no tab", "not a symbol"]))
def test_score_file_command_writes_one_line_per_pair(tiny_run, pairs, fault):
    import io

    from t2t_lite.bin import decoder as decoder_cli

    lines = [f"{s}\t{t}" for s, t in pairs]
    if fault != "pairs":
        lines.append("3 1" if fault == "no tab" else "3 x\t1")
    with tempfile.TemporaryDirectory() as directory:
        source = _write(directory, "pairs.tsv", "\n".join(lines).encode())
        target = os.path.join(directory, "scores.txt")
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = decoder_cli.main([f"--output_dir={tiny_run}", f"--score_file={source}",
                                     f"--score_to_file={target}"])
        if fault != "pairs":
            errors = [x for x in err.getvalue().splitlines() if "error:" in x]
            assert code == 2 and len(errors) == 1 and "Traceback" not in err.getvalue()
            assert not os.path.exists(target)
            return
        assert code == 0, err.getvalue()
        with open(target, "rb") as f:
            written = f.read()
    scores = [line.split(b"\t") for line in rows(written)]
    assert len(scores) == len(pairs) and written.endswith(b"\n")
    for (_, target_text), (log_prob, per_token, tokens) in zip(pairs, scores):
        assert int(tokens) == len(target_text.split()) + 1  # EOS included.
        assert float(log_prob) <= 0.0
        assert abs(float(per_token) - float(log_prob) / int(tokens)) <= 2e-6
