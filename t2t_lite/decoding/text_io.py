"""Reading the decoder's text files: UTF-8 lines, split at "\\n" only."""

from __future__ import annotations

from t2t_lite.data.text_encoder import DataError
from t2t_lite.metrics.base import MetricError, read_lines


def read_references(path: str, count: int) -> list[str]:
    """The lines of a UTF-8 reference file, which must have `count` lines.

    Raises:
      MetricError: the file is not UTF-8 or has another number of lines.
      FileNotFoundError: no such file.
    """
    try:
        references = read_lines(path)
    except IsADirectoryError:
        raise MetricError(f"{path} is a directory; pass a reference file") from None
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise MetricError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(references) != count:
        raise MetricError(f"{path} has {len(references)} lines, the input has {count}; "
                          "pass a reference with one line per input line")
    return references


def split_source_text(data: bytes, name: str) -> list[str]:
    """UTF-8 bytes -> their lines, split at "\n" only (as datagen and the reference reader).

    A last line without a newline counts; "\r" and other characters that
    `str.splitlines` would break at stay inside their line, so line i of the
    output always answers line i of the input.

    Raises:
      DataError: the bytes are not UTF-8 (names `name`, the line and the byte).
    """
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    text = []
    for number, line in enumerate(lines, 1):
        try:
            text.append(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise DataError(
                f"{name}, line {number}: invalid UTF-8 (byte 0x{line[e.start]:02x} at byte "
                f"{e.start + 1} of the line); t2t_lite reads UTF-8 only: convert it "
                "(e.g. iconv -f latin1 -t utf-8) and rerun") from None
    return text


def read_source_lines(path: str) -> list[str]:
    """The lines of a UTF-8 input file (`split_source_text`).

    Raises:
      FileNotFoundError: no such file.
      DataError: not UTF-8, a directory, or unreadable (the message names the file).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise DataError(f"{path} is a directory; pass a text file, one input per line") \
            from None
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror or e})") from None
    return split_source_text(data, path)
