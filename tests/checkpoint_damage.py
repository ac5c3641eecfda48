"""Ways to damage a checkpoint on disk (tests/test_damaged_checkpoint.py, tests/faults/)."""

import os


def truncate(path):
    """Keeps the first third of the file, as a save killed mid-write would."""
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 3])


def scribble(path):
    """Flips bits all over the file, as a bad disk would."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        for i in range(8, len(data), 7):
            data[i] ^= 0xA5
        f.seek(0)
        f.write(data)


# Name -> fn(checkpoint prefix) that damages it.
DAMAGE = {
    "truncated data": lambda prefix: truncate(prefix + ".data-00000-of-00001"),
    "corrupted index": lambda prefix: scribble(prefix + ".index"),
    "missing data": lambda prefix: os.remove(prefix + ".data-00000-of-00001"),
}
