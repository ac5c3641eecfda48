"""Disk faults for the atomic-write tests: a full disk, a refused rename, a writer held mid-write.

`full_disk` and `refuse_renames` patch this process (with pytest's
`monkeypatch`); `held_command` runs a t2t_lite command in a child process
whose disk never finishes syncing one file, so that `kill_while_held` kills it
at a known point: that file whole under its temporary name, not yet renamed.
"""

import builtins
import errno
import fnmatch
import os
import signal
import sys
import time

from t2t_lite import atomic


def enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def refuse_renames(monkeypatch, which=lambda src, dst: True) -> list:
    """`os.replace` and `os.rename` raise ENOSPC for the calls `which(src, dst)` picks.

    Returns the list of (src, dst) refused, so a test can check the fault was hit.
    """
    refused = []

    def patch(name):
        real = getattr(os, name)

        def rename(src, dst, *args, **kwargs):
            if which(os.fspath(src), os.fspath(dst)):
                refused.append((os.fspath(src), os.fspath(dst)))
                raise enospc()
            return real(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, name, rename)

    patch("replace")
    patch("rename")
    return refused


class _FullFile:
    """A file opened for writing on a disk with `left[0]` bytes free."""

    def __init__(self, file, left):
        self._file, self._left = file, left

    def write(self, data):
        room = max(0, min(len(data), self._left[0]))
        if room:
            self._file.write(data[:room])
            self._file.flush()  # What fit is on disk, as a real full disk leaves it.
        self._left[0] -= room
        if room < len(data):
            raise enospc()
        return room

    def __getattr__(self, name):
        return getattr(self._file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._file.close()


def full_disk(monkeypatch, free_bytes: int = 0) -> list:
    """Files opened for writing with `open()` share `free_bytes`, then raise ENOSPC.

    What fits is written (and flushed): a writer that writes in place leaves a
    half-written file, as it would on a real full disk. Returns the list of
    paths opened for writing.
    """
    real_open, left, opened = builtins.open, [free_bytes], []

    def open_on_full_disk(file, mode="r", *args, **kwargs):
        f = real_open(file, mode, *args, **kwargs)
        if any(c in mode for c in "wax+"):
            opened.append(os.fspath(file))
            return _FullFile(f, left)
        return f

    monkeypatch.setattr(builtins, "open", open_on_full_disk)
    return opened


def temporaries_of(directory, name_glob) -> list:
    """The `.NAME.tmp-*` files in `directory` of final names NAME matching `name_glob`."""
    if not os.path.isdir(directory):
        return []
    pattern = atomic.temporary_prefix(name_glob, atomic.FILE_MARK) + "*"
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if fnmatch.fnmatch(n, pattern))


# Runs `python -m MODULE ARGS` with os.fsync patched: the sync of a temporary of
# a final name matching HELD (a glob) sleeps for an hour. `atomic.atomic_path`
# syncs the finished temporary just before its rename, so the process stops there.
_HOLD = """\
import fnmatch, os, runpy, sys, time
_, held, module, *args = sys.argv
sys.argv = [module, *args]
paths, real_open, real_fsync = {}, os.open, os.fsync
def opened(path, flags, *a, **k):
    fd = real_open(path, flags, *a, **k)
    paths[fd] = os.fspath(path)
    return fd
def fsync(fd):
    if fnmatch.fnmatch(os.path.basename(paths.get(fd, "")), "." + held + ".tmp-*"):
        time.sleep(3600)
    real_fsync(fd)
os.open, os.fsync = opened, fsync
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def held_command(held: str, module: str, *args) -> list:
    """The command line of `python -m module args` on a disk that never syncs `held`.

    `held`: a final file name (a glob); the process stops once that file is
    written whole under its temporary name, before its rename.
    """
    return [sys.executable, "-c", _HOLD, held, module, *map(str, args)]


def kill_while_held(process, directory, held: str, timeout: float) -> list:
    """SIGKILLs `process` once a new temporary of `held` is in `directory`; returns it (a list).

    Call it right after starting `process`: temporaries already there (a
    killed run's) do not count. Asserts the kill landed while the temporary
    existed: the process was still running when it came, and the temporary is
    there after it.
    """
    stale = set(temporaries_of(directory, held))

    def new():
        return sorted(set(temporaries_of(directory, held)) - stale)

    deadline = time.time() + timeout
    while time.time() < deadline and process.poll() is None and not new():
        time.sleep(0.02)
    assert process.poll() is None, f"the process ended (code {process.returncode}) before " \
        f"writing {held}"
    assert new(), f"no temporary of {held} in {timeout} s"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    left = new()
    assert left, f"the temporary of {held} was gone after the kill: it did not land mid-write"
    return left
