"""t2t_lite.atomic: a refused rename, a full disk or a kill leaves the old file or directory whole.

Every public function: `temporary_prefix`, `atomic_path`, `write_bytes`,
`write_text`, `staging_directory` (with its owned PID rule), `replace_directory`,
`temporaries` and `remove_temporaries`. The kills run in a child process
(`python -c`) that tells this one, through a pipe, when it reached the point
to kill it at.
"""

import os
import select
import subprocess
import sys

import pytest
from disk_faults import enospc, full_disk, refuse_renames

from t2t_lite import atomic

def _names(directory):
    return sorted(os.listdir(directory))


def test_temporary_prefix_names_every_kind():
    assert atomic.temporary_prefix("shard", atomic.FILE_MARK) == ".shard.tmp-"
    assert atomic.temporary_prefix("best", atomic.STAGED_MARK) == ".best-tmp-"
    assert atomic.temporary_prefix("best", atomic.ASIDE_MARK) == ".best-old-"


def test_write_bytes_and_text_replace_the_file_whole(tmp_path):
    path = tmp_path / "sub" / "out.txt"
    atomic.write_bytes(str(path), b"old\n")  # Creates the directory.
    atomic.write_text(str(path), "nëw\n")
    assert path.read_bytes() == "nëw\n".encode() and _names(path.parent) == ["out.txt"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # What open() would give.


def _write_with_atomic_path(path, data):
    with atomic.atomic_path(path) as tmp:
        assert os.path.basename(tmp).startswith(".out.txt.tmp-")
        with open(tmp, "wb") as f:
            f.write(data)


WRITERS = {"write_bytes": atomic.write_bytes,
           "write_text": lambda path, data: atomic.write_text(path, data.decode()),
           "atomic_path": _write_with_atomic_path}


@pytest.mark.guarantee("atomic-writes", "a refused rename leaves the old file whole under its "
                       "name and no temporary (atomic_path, write_bytes, write_text)")
@pytest.mark.parametrize("writer", WRITERS)
def test_a_refused_rename_keeps_the_old_file(writer, tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_bytes(b"old\n")
    refused = refuse_renames(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        WRITERS[writer](str(path), b"new\n" * 1000)
    assert refused and refused[0][1] == str(path)
    assert path.read_bytes() == b"old\n" and _names(tmp_path) == ["out.txt"]


@pytest.mark.guarantee("atomic-writes", "a full disk (ENOSPC) while writing, or at the sync "
                       "before the rename, leaves the old file whole and no temporary")
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("where", ["write", "fsync"])
def test_a_full_disk_keeps_the_old_file(writer, where, tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_bytes(b"old\n")
    if where == "write":
        opened = full_disk(monkeypatch, free_bytes=100)  # Half the new file fits.
    else:
        def fsync(fd):
            raise enospc()
        monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="No space left"):
        WRITERS[writer](str(path), b"new\n" * 50)
    if where == "write":
        assert opened and opened[0] != str(path)  # The write went to the temporary.
    assert path.read_bytes() == b"old\n" and _names(tmp_path) == ["out.txt"]


def test_an_interrupted_body_leaves_nothing(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_path(str(path)) as tmp:
            with open(tmp, "w") as f:
                f.write("half")
            raise KeyboardInterrupt
    assert _names(tmp_path) == []


def _held_child(code, *args):
    """Starts `code` in a child process; returns (process, its first stdout line).

    The child prints a line once it reached the point to be killed at, then
    waits there (for stdin to close).
    """
    process = subprocess.Popen([sys.executable, "-c", code, *map(str, args)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline().strip() if ready else ""
    if not line:
        process.kill()
        process.wait(timeout=30)
        pytest.fail(f"the child never reached its kill point (exit code {process.returncode})")
    return process, line


def _kill(process):
    assert process.poll() is None  # Still at its kill point.
    process.kill()  # SIGKILL.
    process.wait(timeout=30)
    process.stdin.close()
    process.stdout.close()


# Writes NEW under argv[1] with write_text; os.fsync (the step before the rename)
# prints the temporary's name and waits.
KILLED_BEFORE_RENAME = """\
import os, sys
from t2t_lite import atomic
def sync_then_wait(fd):
    print("held", flush=True)
    sys.stdin.read()
os.fsync = sync_then_wait
atomic.write_text(sys.argv[1], "new\\n" * 1000)
"""


@pytest.mark.guarantee("atomic-writes", "a writer killed (SIGKILL) between writing a file and "
                       "renaming it leaves the old file and a temporary, which "
                       "remove_temporaries removes")
def test_a_kill_between_write_and_rename_keeps_the_old_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    process, line = _held_child(KILLED_BEFORE_RENAME, path)
    assert line == "held"
    _kill(process)
    assert path.read_text() == "old\n"
    left = atomic.temporaries(str(tmp_path), "out.txt")
    assert len(left) == 1 and os.path.basename(left[0]).startswith(".out.txt.tmp-")
    assert open(left[0]).read() == "new\n" * 1000  # The kill landed with the new file written.
    assert atomic.remove_temporaries(str(tmp_path), "out.txt") == left
    assert _names(tmp_path) == ["out.txt"] and path.read_text() == "old\n"


def _fill(text):
    def fill(staging):
        for name in ("a", "b"):
            with open(os.path.join(staging, name), "w") as f:
                f.write(f"{text} {name}")
    return fill


def _tree(directory):
    return {n: open(os.path.join(directory, n)).read() for n in _names(directory)}


def test_replace_directory_replaces_it_whole(tmp_path):
    target = tmp_path / "best"
    atomic.replace_directory(str(target), _fill("old"))
    atomic.replace_directory(str(target), _fill("new"))
    assert _tree(target) == {"a": "new a", "b": "new b"} and _names(tmp_path) == ["best"]


@pytest.mark.guarantee("atomic-writes", "a directory replaced through replace_directory stays "
                       "whole when filling it fails or the move of the old one aside is refused, "
                       "and no temporary stays")
@pytest.mark.parametrize("fault", ["fill", "move aside"])
def test_replace_directory_keeps_the_old_one(fault, tmp_path, monkeypatch):
    target = tmp_path / "best"
    atomic.replace_directory(str(target), _fill("old"))
    if fault == "fill":
        full_disk(monkeypatch, free_bytes=7)  # "new a" fits, "new b" does not.
    else:
        refused = refuse_renames(monkeypatch, lambda src, dst: src == str(target))
    with pytest.raises(OSError, match="No space left"):
        atomic.replace_directory(str(target), _fill("new"))
    assert fault == "fill" or refused
    assert _tree(target) == {"a": "old a", "b": "old b"} and _names(tmp_path) == ["best"]


@pytest.mark.guarantee("atomic-writes", "a refused rename of the new directory into place leaves "
                       "the old one whole aside, and remove_temporaries puts it back")
def test_replace_directory_refused_between_the_renames(tmp_path, monkeypatch):
    target = tmp_path / "best"
    atomic.replace_directory(str(target), _fill("old"))
    refuse_renames(monkeypatch, lambda src, dst: dst == str(target))
    with pytest.raises(OSError, match="No space left"):
        atomic.replace_directory(str(target), _fill("new"))
    monkeypatch.undo()
    [aside] = atomic.temporaries(str(tmp_path), "best")
    assert not target.exists() and os.path.basename(aside).startswith(".best-old-")
    assert _tree(os.path.join(aside, "best")) == {"a": "old a", "b": "old b"}
    assert atomic.remove_temporaries(str(tmp_path), "best") == [aside]
    assert _tree(target) == {"a": "old a", "b": "old b"} and _names(tmp_path) == ["best"]


# Replaces argv[1] with replace_directory; after the first os.replace (the old
# directory moved aside) prints "aside" and waits: killed between the two renames.
KILLED_BETWEEN_RENAMES = """\
import os, sys
from t2t_lite import atomic
real_replace = os.replace
def replace_then_wait(src, dst):
    real_replace(src, dst)
    print("aside", flush=True)
    sys.stdin.read()
os.replace = replace_then_wait
def fill(staging):
    open(os.path.join(staging, "a"), "w").write("new a")
atomic.replace_directory(sys.argv[1], fill)
"""


@pytest.mark.guarantee("atomic-writes", "a writer killed (SIGKILL) between replace_directory's "
                       "two renames leaves the old directory aside and the new one staged; "
                       "remove_temporaries puts the old one back and removes the rest")
def test_a_kill_between_the_renames_keeps_the_old_directory(tmp_path):
    target = tmp_path / "best"
    atomic.replace_directory(str(target), _fill("old"))
    process, line = _held_child(KILLED_BETWEEN_RENAMES, target)
    assert line == "aside"
    _kill(process)
    left = atomic.temporaries(str(tmp_path), "best")
    assert not target.exists() and [os.path.basename(p)[:10] for p in left] == [
        ".best-old-", ".best-tmp-"]  # The kill landed between the renames.
    assert atomic.remove_temporaries(str(tmp_path), "best") == left
    assert _tree(target) == {"a": "old a", "b": "old b"} and _names(tmp_path) == ["best"]


def test_staging_directory_is_removed_when_its_body_fails(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with atomic.staging_directory(str(tmp_path), "export") as staging:
            assert os.path.basename(staging).startswith(".export-tmp-")
            assert os.listdir(staging) == []
            open(os.path.join(staging, "half"), "w").close()
            raise KeyboardInterrupt
    assert _names(tmp_path) == []


def test_staging_directory_renamed_by_its_body_stays(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic.staging_directory(str(tmp_path), "export") as staging:
            open(os.path.join(staging, "whole"), "w").close()
            os.rename(staging, tmp_path / "1")
            raise RuntimeError("after the rename")
    assert _names(tmp_path) == ["1"] and _names(tmp_path / "1") == ["whole"]


def _ended_pid():
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait(timeout=60)
    return process.pid


def test_an_owned_staging_directory_is_a_temporary_once_its_process_ended(tmp_path):
    """The owned PID rule: `.tmp-NAME-PID-XXXX` is left alone while process PID runs."""
    running = tmp_path / f".tmp-export-{os.getppid()}-abcd"  # Another process's, running.
    running.mkdir()
    ended = tmp_path / f".tmp-export-{_ended_pid()}-efgh"  # A killed export's.
    ended.mkdir()
    with atomic.staging_directory(str(tmp_path), "export", owned=True) as mine:
        assert os.path.basename(mine).startswith(f".tmp-export-{os.getpid()}-")
        assert atomic.temporaries(str(tmp_path), "export") == [str(ended)]
        assert atomic.remove_temporaries(str(tmp_path), "export") == [str(ended)]
        os.rename(mine, tmp_path / "1")
    assert _names(tmp_path) == [running.name, "1"]


def test_temporaries_lists_every_kind_of_the_names_asked_only(tmp_path):
    directory = tmp_path / "run[1]"  # A glob character in the directory's name.
    directory.mkdir()
    (directory / "best").mkdir()
    (directory / "best" / "new").write_text("new")
    aside = directory / ".best-old-x1"
    (aside / "best").mkdir(parents=True)  # Aside, while best/ is there: only removed.
    staged = directory / ".best-tmp-x2"
    staged.mkdir()
    written = directory / ".best.tmp-x3"
    written.write_text("half")
    owned = directory / f".tmp-best-{_ended_pid()}-x4"
    owned.mkdir()
    other = directory / ".ckpt.tmp-x5"  # Another name's: kept.
    other.write_text("half")
    expected = [str(p) for p in (aside, staged, written, owned)]
    assert atomic.temporaries(str(directory), "best") == expected
    assert atomic.temporaries(str(directory), "b*") == expected
    assert atomic.remove_temporaries(str(directory), "best") == expected
    assert _names(directory) == [".ckpt.tmp-x5", "best"] and _names(directory / "best") == ["new"]
    assert atomic.remove_temporaries(str(directory), "best") == []
