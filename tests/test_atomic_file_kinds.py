"""Every kind of file the README calls atomic, through its real writer, under a disk fault.

Vocabularies (BPE and word-level SentencePiece `.model` and `.vocab`), the
datagen manifest, a shard, the decoder's `--decode_to_file`, a checkpoint,
`best/` and `averaged/`: each is written once, then again with a fault (a full
disk, ENOSPC, or a refused rename) and must still hold its old content, with
no half-written file under its final name and no temporary left (or, for a
fault between a directory's two renames, only what the next run puts back).
A writer that wrote in place fails these tests: the fault would leave half a
file, or no fault would be hit at all. Exports are covered by the slow tests
in test_export.py and test_ctranslate2_export.py (an export takes a minute).
"""

import hashlib
import json
import os
import shutil
import types

import numpy as np
import pytest
import tensorflow as tf
from conftest import NO_EVAL
from disk_faults import enospc, full_disk, refuse_renames

from t2t_lite.runs.run import Run
from t2t_lite import registry
from t2t_lite.bin import decoder
from t2t_lite.data import datagen_io, shards
from t2t_lite.data.manifest import Manifest, manifest_path, read_manifest
from t2t_lite.data.text_encoder import DataError, SubwordVocab, train_vocab
from t2t_lite.runs import averaging, run_dir, weights
from t2t_lite.training import trainer
from t2t_lite.training.evaluation import BEST_FILE
from t2t_lite.training.flops import FlopLedger
from t2t_lite.training.options import TrainOptions

FAULTS = ["full disk", "refused rename"]


def _hashes(directory):
    """name -> sha256 of every file under `directory` (relative names, recursively)."""
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _inject(fault, monkeypatch, free_bytes=20):
    """The fault: a disk with `free_bytes` left for open()'s files, or every rename refused."""
    if fault == "full disk":
        return full_disk(monkeypatch, free_bytes)
    return refuse_renames(monkeypatch)


SENTENCES = ["the cat sat on the mat", "a dog ran in the park", "two birds flew over it",
             "the mat was red and the park was green"] * 3


@pytest.fixture(scope="module")
def vocabs():
    """model_type -> (old, new): two different vocabularies of each kind."""
    return {kind: (train_vocab(SENTENCES, size, seed=1, model_type=kind),
                   train_vocab(SENTENCES[::-1] + ["zebras quickly jump"], size, seed=1,
                               model_type=kind))
            for kind, size in (("bpe", 300), ("word", 72))}


@pytest.mark.guarantee("atomic-writes", "a vocabulary (BPE or word-level: its .model and "
                       ".vocab) rewritten on a full disk or with a rename refused, the fault "
                       "hitting either file, leaves each file whole (the old .model) and no "
                       "temporary")
@pytest.mark.parametrize("kind", ["bpe", "word"])
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("hit", [".vocab", ".model"])
def test_vocabulary(kind, fault, hit, vocabs, tmp_path, monkeypatch):
    """save_vocab writes the .vocab listing, then the .model: the fault hits the first, or
    lets the listing through and hits the .model."""
    old, new = vocabs[kind]
    assert old.model_proto != new.model_proto and old.pieces_text() != new.pieces_text()
    path = str(tmp_path / "vocab.p.model")
    datagen_io.save_vocab(old, path)
    before = _hashes(tmp_path)
    assert sorted(before) == ["vocab.p.model", "vocab.p.vocab"]
    datagen_io.save_vocab(new, str(tmp_path / "new" / "vocab.p.model"))
    after = _hashes(tmp_path / "new")
    if fault == "full disk":
        listing = len(new.pieces_text().encode())
        _inject(fault, monkeypatch, free_bytes=20 if hit == ".vocab" else listing + 20)
    else:
        refuse_renames(monkeypatch, lambda src, dst: dst.endswith(hit))
    with pytest.raises(OSError, match="No space left"):
        datagen_io.save_vocab(new, path)
    monkeypatch.undo()
    shutil.rmtree(tmp_path / "new")
    got = _hashes(tmp_path)
    assert sorted(got) == sorted(before)  # No temporary left.
    assert got["vocab.p.model"] == before["vocab.p.model"]  # The old .model, whole.
    assert got["vocab.p.vocab"] == (before if hit == ".vocab" else after)["vocab.p.vocab"]
    assert SubwordVocab.load(path).model_proto == old.model_proto
    datagen_io.save_vocab(new, path)  # Without the fault the new one is written.
    assert SubwordVocab.load(path).model_proto == new.model_proto


PLAN = {"problem": "p", "vocab_sha256": "0" * 64, "vocab_size": 300, "seed": 1,
        "splits": {"train": {"pairs": 20, "shard_size": 10, "shards": 2}}}
STATS = {"written": 10, "skipped_empty": 0, "source_tokens": 40, "target_tokens": 50}


@pytest.mark.guarantee("atomic-writes", "the datagen manifest updated on a full disk or with "
                       "its rename refused keeps the old manifest whole and leaves no temporary")
@pytest.mark.parametrize("fault", FAULTS)
def test_datagen_manifest(fault, tmp_path, monkeypatch):
    path = manifest_path(str(tmp_path), "p")
    manifest = Manifest.open(path, PLAN, lambda split: [])
    manifest.record("train", 0, STATS)
    before = _hashes(tmp_path)
    _inject(fault, monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        manifest.record("train", 1, STATS)
    with pytest.raises(OSError, match="No space left"):
        manifest.finish()
    monkeypatch.undo()
    assert _hashes(tmp_path) == before
    assert read_manifest(str(tmp_path), "p") == {"plan": PLAN, "complete": False,
                                                 "shards": {"train": {"0": STATS}}}


def _records(n, token):
    return [shards.example_bytes([token, i + 2, 1], [i + 2, token, 1]) for i in range(n)]


@pytest.mark.guarantee("atomic-writes", "a shard rewritten on a full disk or with its rename "
                       "refused keeps the old shard whole and leaves no temporary")
@pytest.mark.parametrize("fault", FAULTS)
def test_shard(fault, tmp_path, monkeypatch):
    path = str(tmp_path / "p-train-00000-of-00001")
    shards.write_records(path, _records(10, 3))
    before = _hashes(tmp_path)
    if fault == "full disk":
        write, count = tf.io.TFRecordWriter.write, [0]

        def write_until_full(self, record):
            count[0] += 1
            if count[0] > 4:  # Four records fit.
                raise enospc()
            return write(self, record)

        monkeypatch.setattr(tf.io.TFRecordWriter, "write", write_until_full)
    else:
        refuse_renames(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        shards.write_records(path, _records(10, 5))
    monkeypatch.undo()
    assert _hashes(tmp_path) == before
    assert [bytes(r) for r in tf.data.TFRecordDataset(path).as_numpy_iterator()] == _records(10, 3)


@pytest.mark.guarantee("atomic-writes", "--decode_to_file on a full disk or with its rename "
                       "refused keeps the old file whole, leaves no temporary and says so in "
                       "one error")
@pytest.mark.parametrize("fault", FAULTS)
def test_decode_to_file(fault, tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_text("old 1\nold 2\n")
    _inject(fault, monkeypatch)
    with pytest.raises(DataError) as error:
        decoder._write(str(path), "\n".join(f"new {i}" for i in range(100)), 100)
    monkeypatch.undo()
    assert str(error.value) == (f"cannot write {path}: No space left on device; nothing was "
                                "written under that name")
    assert path.read_text() == "old 1\nold 2\n" and os.listdir(tmp_path) == ["out.txt"]


HPARAMS = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run directory of algorithmic_reverse (its files, no checkpoint) and its model."""
    out = str(tmp_path_factory.mktemp("run"))
    problem = registry.problem("algorithmic_reverse")
    run_dir.prepare_run(out, registry.hparams("tiny").override(HPARAMS), problem.name,
                        problem.source_vocab_size, problem.target_vocab_size)
    return types.SimpleNamespace(dir=out, model=Run.open(out).build_model())


def _values(model):
    return [np.array(w) for w in model.weights]


def _shift(model, by):
    for w in model.weights:
        w.assign(w + by)


def _restart(output_dir, model):
    """What a restarted trainer does first: clean up, restore its newest checkpoint."""
    step = types.SimpleNamespace(iterations=tf.Variable(0, dtype=tf.int64))
    checkpoint = tf.train.Checkpoint(model=weights.model_weights(model))
    return trainer._restore(checkpoint, step, output_dir, output_dir,
                            TrainOptions(eval=NO_EVAL), lambda _: None)


@pytest.mark.guarantee("atomic-writes", "a checkpoint save that fails before its files are "
                       "renamed into place (TensorFlow's merge of ckpt-N_temp/) leaves the older "
                       "checkpoints whole and listed; the restarted trainer removes ckpt-N_temp/ "
                       "and resumes from the older one")
def test_checkpoint(run, tmp_path, monkeypatch):
    from tensorflow.python.ops import gen_io_ops

    out = str(tmp_path)
    old = _values(run.model)
    manager, _ = _restart(out, run.model)
    saver = trainer._Saver(manager, FlopLedger(out, 0), None)
    saver.save(1)  # The trainer's own save: its CheckpointManager and FLOP ledger.
    before = _hashes(out)
    _shift(run.model, 1.0)
    merged = []

    def merge_fails(checkpoint_prefixes, destination_prefix, *args, **kwargs):
        merged.append(destination_prefix)  # The parts are written under ckpt-2_temp/.
        raise enospc()

    monkeypatch.setattr(gen_io_ops, "merge_v2_checkpoints", merge_fails)
    with pytest.raises(OSError, match="No space left"):
        saver.save(2)
    monkeypatch.undo()
    assert merged and os.listdir(os.path.join(out, "ckpt-2_temp"))
    assert {k: v for k, v in _hashes(out).items() if not k.startswith("ckpt-2_temp")} == before
    assert tf.train.latest_checkpoint(out) == os.path.join(out, "ckpt-1")

    _, restored = _restart(out, run.model)
    assert restored == os.path.join(out, "ckpt-1") and _hashes(out) == before
    for a, b in zip(_values(run.model), old):
        np.testing.assert_array_equal(a, b)


def _write_best(model, best, value):
    return weights.write_weights_dir(model, best, {"step": value, "metric": "m", "value": value},
                                     BEST_FILE)


@pytest.mark.guarantee("atomic-writes", "best/ rewritten on a full disk, or with the move of "
                       "the old one aside or the new one's rename refused, keeps the old best/ "
                       "whole (aside, in the last case, until the restarted trainer puts it back)")
@pytest.mark.parametrize("fault", ["full disk", "move aside refused", "rename refused"])
def test_best(fault, run, tmp_path, monkeypatch):
    out, best = str(tmp_path), str(tmp_path / "best")
    _write_best(run.model, best, 1.0)
    before = _hashes(out)
    if fault == "full disk":
        full_disk(monkeypatch, free_bytes=10)  # best.json does not fit.
    else:
        src_or_dst = 0 if fault == "move aside refused" else 1
        refused = refuse_renames(monkeypatch, lambda *names: names[src_or_dst] == best)
    with pytest.raises(OSError, match="No space left"):
        _write_best(run.model, best, 2.0)
    monkeypatch.undo()
    assert fault == "full disk" or refused
    if fault == "rename refused":  # The old best/ is aside, whole; the next run puts it back.
        assert not os.path.exists(best)
        assert [n[:10] for n in os.listdir(out)] == [".best-old-"]
        _restart(out, run.model)
    assert _hashes(out) == before
    with open(os.path.join(best, BEST_FILE)) as f:
        assert json.load(f)["value"] == 1.0


@pytest.fixture(scope="module")
def checkpoints(run):
    """Two checkpoints of the run (different weights), and averaged/ made from the first."""
    paths = []
    for shift in (0.0, 1.0):
        _shift(run.model, shift)
        paths.append(tf.train.Checkpoint(model=weights.model_weights(run.model)).write(
            os.path.join(run.dir, f"ckpt-{len(paths) + 1}")))
        _shift(run.model, -shift)
    averaging.average(run.dir, paths[:1])
    return paths


@pytest.mark.guarantee("atomic-writes", "averaged/ rewritten on a full disk or with its "
                       "rename refused keeps the old averaged/ whole and leaves no temporary")
@pytest.mark.parametrize("fault", FAULTS)
def test_averaged(fault, run, checkpoints, monkeypatch):
    before = _hashes(run.dir)
    assert "averaged/ckpt.index" in before
    _inject(fault, monkeypatch, free_bytes=10)  # averaged.json does not fit.
    with pytest.raises(OSError, match="No space left"):
        averaging.average(run.dir, checkpoints)
    monkeypatch.undo()
    assert _hashes(run.dir) == before
    assert not [n for n in os.listdir(run.dir) if n.startswith(".averaged")]
