"""Atomic files and directories: written under a temporary name beside the final one.

A reader (or a later run) sees the old file or directory or the whole new one,
never a mix. A killed writer leaves only temporaries, which
`remove_temporaries(directory, name_glob)` removes. Their names, one scheme, a
dot, the final NAME, a marker and a random tail:

  .NAME.tmp-XXXX   a file being written as NAME (`atomic_path`, `write_bytes`, `write_text`)
  .NAME-tmp-XXXX   a directory being staged as NAME/ (`replace_directory`)
  .NAME-old-XXXX   holds the old NAME/ while the staged one takes its place

A directory whose final name is only chosen once it is written, by writers
that may run at once (an export's next version), is `.tmp-NAME-PID-XXXX`
(`staging_directory(..., owned=True)`), removed only once process PID has ended.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import tempfile
from typing import Callable, Iterator

FILE_MARK = ".tmp-"  # .NAME.tmp-XXXX
STAGED_MARK = "-tmp-"  # .NAME-tmp-XXXX
ASIDE_MARK = "-old-"  # .NAME-old-XXXX
OWNED_PREFIX = ".tmp-"  # .tmp-NAME-PID-XXXX


def temporary_prefix(name: str, mark: str) -> str:
    """`.NAME` + `mark`: how the temporaries of final name NAME begin."""
    return f".{name}{mark}"


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yields a temporary path to write; on success it is synced and renamed to `path`.

    The temporary lies in `path`'s directory (created if needed), so the rename
    is atomic; it gets the permissions `open()` would give. If the body raises
    (KeyboardInterrupt included), the temporary is removed and `path` is untouched.

    Example:
      with atomic_path("a/shard") as tmp:
          write_everything_to(tmp)
    """
    directory, base = os.path.split(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=temporary_prefix(base, FILE_MARK))
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 -> what open() would give.
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def write_bytes(path: str, data: bytes) -> None:
    """Writes `data` as the file `path`, atomically (`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


def write_text(path: str, text: str) -> None:
    """`write_bytes` of UTF-8 text."""
    write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def staging_directory(parent: str, name: str, owned: bool = False) -> Iterator[str]:
    """Yields a new empty directory in `parent` to fill; removed if the body raises.

    Named `.NAME-tmp-XXXX`, or with `owned` `.tmp-NAME-PID-XXXX` (this process's
    id), which `remove_temporaries` leaves alone while the process runs. The
    body renames it to its final name; nothing is removed once it did.
    """
    prefix = (f"{OWNED_PREFIX}{name}-{os.getpid()}-" if owned
              else temporary_prefix(name, STAGED_MARK))
    staging = tempfile.mkdtemp(prefix=prefix, dir=parent)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def replace_directory(directory: str, fill: Callable[[str], None]) -> None:
    """Replaces `directory` with one that `fill(staging)` writes, so a kill leaves old or new.

    `fill` writes a staging directory beside `directory`; the old `directory`
    (if any) is moved aside, the staging one renamed into its place, the old
    one removed. A kill between the two renames leaves the old one aside;
    `remove_temporaries` puts it back.
    """
    parent, base = os.path.split(os.path.abspath(directory))
    old = None
    with staging_directory(parent, base) as staging:
        fill(staging)
        if os.path.exists(directory):
            old = tempfile.mkdtemp(prefix=temporary_prefix(base, ASIDE_MARK), dir=parent)
            try:
                os.replace(directory, os.path.join(old, base))
            except BaseException:  # The old one never moved: nothing is aside.
                os.rmdir(old)
                raise
        os.replace(staging, directory)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def temporaries(directory: str, name_glob: str) -> list[str]:
    """Temporaries in `directory` of final names matching `name_glob`, every kind.

    Those moved aside come first; an owned one only once its process has ended.
    """
    def matching(pattern):
        return sorted(glob.glob(os.path.join(glob.escape(directory), pattern)))

    found = matching(temporary_prefix(name_glob, ASIDE_MARK) + "*")
    for mark in (STAGED_MARK, FILE_MARK):
        found += [p for p in matching(temporary_prefix(name_glob, mark) + "*") if p not in found]
    for path in matching(f"{OWNED_PREFIX}{name_glob}-*-*"):
        pid = os.path.basename(path).rsplit("-", 2)[-2]
        if pid.isdigit() and not _process_running(int(pid)) and path not in found:
            found.append(path)
    return found


def remove_temporaries(directory: str, name_glob: str) -> list[str]:
    """Removes what killed writers of names matching `name_glob` left in `directory`.

    An old directory moved aside (`.NAME-old-XXXX/NAME`) is moved back when
    NAME is missing. Returns the paths removed.
    """
    removed = temporaries(directory, name_glob)
    for stale in removed:
        base = os.path.basename(stale)
        if ASIDE_MARK in base:
            name = base[1:].rsplit(ASIDE_MARK, 1)[0]
            inner, final = os.path.join(stale, name), os.path.join(directory, name)
            if os.path.isdir(inner) and not os.path.exists(final):
                os.replace(inner, final)
        if os.path.isdir(stale) and not os.path.islink(stale):
            shutil.rmtree(stale, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(stale)
    return removed


def _process_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # Someone else's process.
        return True
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
