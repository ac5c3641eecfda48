"""The data layer: shard names, atomic writing, statistics and parsing (t2t_lite.data.shards)."""

import os

import pytest

from t2t_lite.data import shards
from t2t_lite.atomic import atomic_path, temporaries


def test_names_and_lookup(tmp_path):
    assert shards.shard_name("p", "train", 3, 12) == "p-train-00003-of-00012"
    for k in (0, 2):
        (tmp_path / shards.shard_name("p", "train", k, 3)).write_bytes(b"")
    (tmp_path / shards.shard_name("p_x", "train", 0, 1)).write_bytes(b"")  # Another problem.
    (tmp_path / ".p-train-00001-of-00003.tmp-abc").write_bytes(b"")  # A temporary.
    paths, count = shards.shard_files(str(tmp_path), "p", "train")
    assert [os.path.basename(p) for p in paths] == ["p-train-00000-of-00003",
                                                    "p-train-00002-of-00003"]
    assert count == 3
    assert shards.shard_files(str(tmp_path), "p", "dev") == ([], 0)


def test_write_read_and_stats(tmp_path):
    pairs = [([5, 6, 1], [7, 1]), ([8, 1], [9, 10, 11, 1])]
    records = [shards.example_bytes(i, t) for i, t in pairs]
    assert records == [shards.example_bytes(i, t) for i, t in pairs]  # Deterministic bytes.
    path = str(tmp_path / shards.shard_name("p", "dev", 0, 1))
    shards.write_records(path, records)
    assert shards.read_shard_stats(path) == {"written": 2, "skipped_empty": 0,
                                             "source_tokens": 5, "target_tokens": 6}
    examples = list(shards.read([path], training=False).as_numpy_iterator())
    assert [(e["inputs"].tolist(), e["targets"].tolist()) for e in examples] == pairs
    assert examples[0]["inputs"].dtype == "int32"
    train = list(shards.read([path, path], training=True, cycle_length=2).as_numpy_iterator())
    assert len(train) == 4
    assert not temporaries(str(tmp_path), "p-*")


def test_atomic_path_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "sub" / "file"
    with atomic_path(str(path)) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path / "sub") and not path.exists()
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("first")
    assert path.read_text(encoding="utf-8") == "first"
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(str(path)) as tmp:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("half")
            raise KeyboardInterrupt
    assert path.read_text(encoding="utf-8") == "first"
    assert os.listdir(tmp_path / "sub") == ["file"]  # No temporary left.
