"""Kills and full disks while writing: nothing partial under a final name, reruns clean up.

Covers the averaged checkpoint (SIGKILL and ENOSPC), shards (ENOSPC, and SIGKILL
during datagen), and the decoder's --decode_to_file (ENOSPC, SIGKILL).
"""

import errno
import glob
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import data_file
from disk_faults import held_command, kill_while_held
from fault_helpers import processes, trainer_command, wait_for  # noqa: F401 (fixture)

from t2t_lite.runs.run import Run
from t2t_lite import atomic
from t2t_lite.runs import averaging
from t2t_lite.runs import weights
from t2t_lite.data import shards
from t2t_lite.bin import decoder

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    done = subprocess.run(trainer_command(out, 12, "--save_checkpoints_steps=3"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return str(out)


def _staging(out):
    return glob.glob(os.path.join(out, ".averaged-*"))


def _avg_command(out):
    return [sys.executable, "-m", "t2t_lite.bin.avg_checkpoints", f"--output_dir={out}",
            "--last=4"]


def _kill_averaging(out, processes, delays):
    """SIGKILLs an averaging run once its staging folder exists, `delays` seconds later each.

    Returns how many kills left the staging folder behind (landed mid-write).
    """
    landed = 0
    for delay in delays:
        process = processes.start(_avg_command(out))
        wait_for(lambda: _staging(out) or process.poll() is not None, timeout=120,
                 interval=0.001)
        wait_for(lambda: process.poll() is not None, timeout=delay)
        processes.kill(process)
        landed += bool(_staging(out))
        if os.path.exists(os.path.join(out, "averaged")):  # Whole, or not there at all.
            Run.open(out).model("averaged")
    return landed


@pytest.mark.slow
@pytest.mark.guarantee("atomic-writes", "averaged/ under SIGKILL (some kills landing while its "
                       "staging folder exists): what is left under the name averaged/ loads, "
                       "and the next run removes the staging")
def test_sigkill_during_averaging_then_rerun_cleans(run, processes):
    rng = random.Random(15)
    landed = _kill_averaging(run, processes, [0.0] + [rng.uniform(0, 0.05) for _ in range(2)])
    print(f"{landed}/3 kills left .averaged-* staging behind")
    assert landed >= 1, "no kill landed while averaged/ was being written"
    averaging.average(run, [os.path.join(run, f"ckpt-{s}") for s in (3, 6, 9, 12)])
    assert not _staging(run)  # The next run removed what the killed ones left.
    Run.open(run).model("averaged")


@pytest.mark.slow
@pytest.mark.guarantee("atomic-writes", "averaged/ under ENOSPC, while its staging folder is "
                       "written and between its two renames: the old averaged/ stays whole")
def test_full_disk_while_averaging_keeps_the_old_averaged(run, monkeypatch):
    averaging.average(run, [os.path.join(run, "ckpt-12")])
    before = _tree_hash(os.path.join(run, "averaged"))

    def full(*args, **kwargs):
        raise ENOSPC

    monkeypatch.setattr(tf.train.Checkpoint, "write", full)
    with pytest.raises(OSError, match="No space left"):
        averaging.average(run, [os.path.join(run, "ckpt-9"), os.path.join(run, "ckpt-12")])
    monkeypatch.undo()
    original = os.replace
    calls = []

    def replace_fails_second(src, dst):  # Old averaged/ moved aside, then the disk fails.
        calls.append(dst)
        if len(calls) == 2:
            raise ENOSPC
        return original(src, dst)

    monkeypatch.setattr(os, "replace", replace_fails_second)
    with pytest.raises(OSError):
        averaging.average(run, [os.path.join(run, "ckpt-9"), os.path.join(run, "ckpt-12")])
    monkeypatch.undo()
    atomic.remove_temporaries(run, "averaged")  # What the next run does first.
    assert _tree_hash(os.path.join(run, "averaged")) == before and not _staging(run)


def _tree_hash(directory):
    return {name: hashlib.sha256(open(os.path.join(directory, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(directory))}


@pytest.mark.slow
@pytest.mark.guarantee("atomic-writes", "a shard under ENOSPC: no shard, no temporary")
def test_full_disk_while_writing_a_shard(tmp_path, monkeypatch):
    original = tf.io.TFRecordWriter.write
    count = [0]

    def write(self, record):
        count[0] += 1
        if count[0] > 3:
            raise ENOSPC
        return original(self, record)

    monkeypatch.setattr(tf.io.TFRecordWriter, "write", write)
    path = str(tmp_path / "p-train-00000-of-00001")
    with pytest.raises(OSError):
        shards.write_records(path, [shards.example_bytes([3, 1], [4, 1])] * 10)
    assert os.listdir(tmp_path) == []  # No shard, no temporary.


@pytest.fixture(scope="module")
def big_input(tmp_path_factory):
    path = tmp_path_factory.mktemp("input") / "in.txt"
    rng = random.Random(3)
    path.write_text("\n".join(" ".join(str(rng.randrange(10)) for _ in range(rng.randrange(1, 20)))
                              for _ in range(3000)) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.guarantee("atomic-writes", "--decode_to_file under ENOSPC in the decoder command: "
                       "the old file stays and no temporary is left")
@pytest.mark.guarantee("one-line-errors", "a full disk under --decode_to_file: t2t_lite-decoder: "
                       "error: cannot write PATH: No space left on device; nothing was written "
                       "under that name")
def test_full_disk_while_writing_the_decode(run, big_input, tmp_path, monkeypatch, capsys):
    target = tmp_path / "out.txt"
    target.write_text("old\n")

    def fsync(fd):
        raise ENOSPC

    monkeypatch.setattr(os, "fsync", fsync)
    code = decoder.main([f"--output_dir={run}", "--decode_from_file=" + str(big_input),
                         f"--decode_to_file={target}", "--beam_size=1", "--batch_size=500"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"t2t_lite-decoder: error: cannot write {target}: No space left on device;" \
        " nothing was written under that name"
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["out.txt"]


# The decoder on a slow disk: every fsync takes 60 s, so a kill lands while the
# finished decode sits under its temporary name, not yet renamed.
SLOW_DISK = ("import os, sys, time; fsync = os.fsync; "
             "os.fsync = lambda fd: (time.sleep(60), fsync(fd))[1]; "
             "from t2t_lite.bin import decoder; sys.exit(decoder.main(sys.argv[1:]))")


@pytest.mark.slow
@pytest.mark.guarantee("atomic-writes", "--decode_to_file under SIGKILL while the finished "
                       "decode sits under its temporary name: no file or the old one under the "
                       "name; the next decode removes the temporary")
def test_sigkill_while_decoding_to_a_file(run, big_input, tmp_path, processes):
    target = tmp_path / "out.txt"
    args = [f"--output_dir={run}", f"--decode_from_file={big_input}",
            f"--decode_to_file={target}", "--beam_size=1", "--batch_size=500"]

    def temporaries():
        return sorted(tmp_path.glob("." + target.name + atomic.FILE_MARK + "*"))

    left = []
    for old in (None, "old\n"):  # No file yet; then an older whole one.
        if old is not None:
            target.write_text(old)
        process = processes.start([sys.executable, "-c", SLOW_DISK, *args])
        # This run's own temporary: the one a kill before left is still there until
        # the decoder, its decode done, removes it and starts writing.
        assert wait_for(lambda: set(temporaries()) - set(left) or process.poll() is not None,
                        timeout=300)
        assert process.poll() is None, "the decoder ended before its kill"
        processes.kill(process)
        # The kill landed mid-write: the temporary is there, the target absent or the old one.
        assert len(temporaries()) == 1 and temporaries()[0] not in left
        assert (not target.exists()) if old is None else target.read_text() == old
        left += temporaries()
    assert not left[0].exists()  # The second run removed what the first kill left.
    done = subprocess.run([sys.executable, "-m", "t2t_lite.bin.decoder", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert target.read_bytes().count(b"\n") == 3000 and os.listdir(tmp_path) == ["out.txt"]


# Where the datagen kills land: the disk never syncs that file, so each kill finds it whole
# under its temporary name. One of each kind datagen writes: the vocabulary, a shard, the
# manifest (rewritten by the third run, over the second's).
DATAGEN_KILLS = ("vocab.translate_files.model", "translate_files-train-00007-of-00020",
                 "translate_files.datagen.json")


@pytest.mark.slow
@pytest.mark.guarantee("atomic-writes", "datagen killed (SIGKILL) while its vocabulary, a shard "
                       "or its manifest sits whole under its temporary name leaves only whole "
                       "files under final names (the old manifest), and the rerun gives the "
                       "files of a clean run")
def test_sigkill_during_datagen_then_rerun_matches_a_clean_run(tmp_path, processes):
    raw = tmp_path / "raw"
    raw.mkdir()
    for lang in ("en", "de"):
        with open(data_file("wmt14", f"newstest2013.{lang}", lines=2400), encoding="utf-8") as f:
            lines = f.read().split("\n")[:2400]
        for split, (a, b) in {"train": (0, 2000), "dev": (2000, 2200),
                              "test": (2200, 2400)}.items():
            (raw / f"{split}.{lang}").write_text("\n".join(lines[a:b]) + "\n", encoding="utf-8")

    def args(data_dir):
        return ["--problem=translate_files", f"--data_dir={data_dir}", f"--raw_dir={raw}",
                "--vocab_size=800", "--shard_size=100"]

    datagen = [sys.executable, "-m", "t2t_lite.bin.datagen"]
    clean = subprocess.run([*datagen, *args(tmp_path / "clean")], capture_output=True, text=True,
                           timeout=600)
    assert clean.returncode == 0, clean.stderr
    data_dir = tmp_path / "data"
    for held in DATAGEN_KILLS:
        old = _tree_hash(str(data_dir)) if data_dir.exists() else {}
        process = processes.start(held_command(held, "t2t_lite.bin.datagen", *args(data_dir)))
        kill_while_held(process, str(data_dir), held, timeout=300)
        finals = _tree_hash(str(data_dir))
        assert held not in finals or finals[held] == old[held]  # Absent, or the old one whole.
        for path in shards.shard_files(str(data_dir), "translate_files", "train")[0]:
            assert sum(1 for _ in tf.data.TFRecordDataset(path)) == 100  # Whole shards only.
    done = subprocess.run([*datagen, *args(data_dir)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert not [n for n in os.listdir(data_dir) if n.startswith(".")]
    assert _tree_hash(str(data_dir)) == _tree_hash(str(tmp_path / "clean"))


def _copy_run(run, to):
    """The run's checkpoints and files, without any averaged/ (or its staging)."""
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("averaged", ".averaged-*"))
    return str(to)


@pytest.mark.slow
@pytest.mark.guarantee("atomic-writes", "averaged/ after SIGKILLs, one at least landing while it "
                       "is written: the rerun cleans up and equals a fresh average")
def test_averaged_after_kills_equals_a_fresh_average(run, tmp_path, processes):
    killed = _copy_run(run, tmp_path / "killed")
    rng = random.Random(16)
    landed = _kill_averaging(killed, processes, [0.0] + [rng.uniform(0, 0.01) for _ in range(2)])
    print(f"{landed}/3 kills left .averaged-* staging behind")
    assert landed >= 1, "no kill landed while averaged/ was being written"
    path = averaging.average(killed, averaging.choose(killed, last=4))  # The rerun.
    assert not _staging(killed)

    fresh = _copy_run(run, tmp_path / "fresh")  # Same checkpoints, never killed.
    fresh_path = averaging.average(fresh, averaging.choose(fresh, last=4))
    reader, other = tf.train.load_checkpoint(path), tf.train.load_checkpoint(fresh_path)
    keys = sorted(k for k in reader.get_variable_to_shape_map() if k.startswith("model/"))
    assert keys and keys == sorted(k for k in other.get_variable_to_shape_map()
                                   if k.startswith("model/"))
    last = tf.train.load_checkpoint(os.path.join(fresh, "ckpt-12"))
    assert any(not np.array_equal(other.get_tensor(k), last.get_tensor(k)) for k in keys)
    for key in keys:
        np.testing.assert_array_equal(reader.get_tensor(key), other.get_tensor(key))
    with open(os.path.join(killed, "averaged", "averaged.json")) as a, \
            open(os.path.join(fresh, "averaged", "averaged.json")) as b:
        assert json.load(a) == json.load(b) == {"averaged": ["ckpt-3", "ckpt-6", "ckpt-9",
                                                             "ckpt-12"]}
