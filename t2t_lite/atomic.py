"""Atomic files: written under a temporary name beside the final one, then renamed.

A reader (or a later run) sees either the old file or the whole new one, never
a half-written file; a killed writer leaves only a temporary `.NAME.tmp-XXXX`,
which `temporaries(directory, name_glob)` finds for cleaning up.
"""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
from typing import Iterator

TEMP_INFIX = ".tmp-"


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
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}{TEMP_INFIX}")
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


def temporaries(directory: str, name_glob: str) -> list[str]:
    """Temporaries `atomic_path` left in `directory` for final names matching `name_glob`."""
    pattern = f".{name_glob}{TEMP_INFIX}*"
    return sorted(glob.glob(os.path.join(glob.escape(directory), pattern)))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
