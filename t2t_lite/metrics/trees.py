"""Bracketed trees read as EVALB reads them: kept words, brackets over word positions.

One line may hold several trees (EVALB reads a forest). A preterminal whose tag
is in `delete` is dropped with its word, so brackets' spans count only the kept
words; `length` counts every word whose tag is not in `delete_for_length`.
Quote words (tags in `quote_labels`, words ' " /) are remembered with where
they stood, for EVALB's 2006 quote fix.
"""

from __future__ import annotations

import dataclasses
from typing import Collection

from t2t_lite.metrics.base import TreeError

SPACE = " \t\n\r\v\f"  # C's isspace
_TERMINATORS = SPACE + "()"


@dataclasses.dataclass
class Bracket:
    start: int
    end: int
    label: str
    result: int = 0  # 0 unmatched, 1 matched, 5 deleted


@dataclasses.dataclass
class QuoteWord:
    word: str
    label: str
    index: int  # position among the kept words
    bracket: int  # brackets opened before it
    ends: list[int]  # brackets open around it


@dataclasses.dataclass
class Tree:
    words: list[tuple[str, str]]  # (word, tag) kept after DELETE_LABEL
    brackets: list[Bracket]
    quotes: list[QuoteWord]
    length: int  # words not in DELETE_LABEL_FOR_LENGTH
    errors: list[str]
    fatal: bool = False  # EVALB cannot read on (it would loop or go undefined)


def read(line: str, delete: Collection[str] = (), delete_for_length: Collection[str] = (),
         quote_labels: Collection[str] = ()) -> Tree:
    """EVALB's read_line: words, brackets over word positions, errors."""
    tree = Tree([], [], [], 0, [])
    stack: list[int] = []
    p, n = 0, len(line)
    while p < n:
        c = line[p]
        if c in SPACE:
            p += 1
        elif c == "(":
            q = p + 1
            while q < n and line[q] not in _TERMINATORS:
                q += 1
            label, p = line[p + 1:q], q
            if p < n and line[p] in SPACE:
                q = p + 1
                while q < n and line[q] in SPACE:
                    q += 1
                w = q
                while q < n and line[q] not in _TERMINATORS:
                    q += 1
                word = line[w:q]
                if q < n and line[q] == ")":
                    if label not in delete_for_length:
                        tree.length += 1
                    if label in quote_labels and word in ("'", '"', "/"):
                        tree.quotes.append(QuoteWord(word, label, len(tree.words),
                                                  len(tree.brackets), list(stack)))
                    if label not in delete:
                        tree.words.append((word, label))
                    p = q + 1
                    continue
                if q >= n or line[q] != "(":
                    tree.errors.append(f"More than two elements in a bracket ({label} {word} ...)")
                    tree.fatal = True
                    return tree
            stack.append(len(tree.brackets))
            tree.brackets.append(Bracket(len(tree.words), -1, label))
        elif c == ")":
            if not stack:
                tree.errors.append("Bracketing unbalance (too many close bracket)")
                tree.fatal = True
                return tree
            tree.brackets[stack.pop()].end = len(tree.words)
            p += 1
        else:
            tree.errors.append(f"Reading sentence (text outside brackets at character {p + 1})")
            tree.fatal = True
            return tree
    if stack:
        tree.errors.append("Bracketing is unbalanced (too many open bracket)")
    return tree


def read_file(path: str, name: str = "tree") -> list[str]:
    """The lines of a UTF-8 file of trees, one tree a line, split at "\n" only (as EVALB).

    `name` says which file it is in messages ("gold", "test").

    Raises:
      TreeError: the file is not UTF-8 or cannot be read; one line naming the
        file and, for invalid UTF-8, the line and the byte.
      FileNotFoundError: no such file.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise
    except OSError as e:
        raise TreeError(f"cannot read the {name} file {path}: {e.strerror or e}") from None
    rows = data.split(b"\n")
    if rows[-1] == b"":
        rows.pop()
    lines = []
    for number, row in enumerate(rows, 1):
        try:
            lines.append(row.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise TreeError(f"the {name} file {path}, line {number}: invalid UTF-8 (byte "
                            f"0x{row[e.start]:02x} at byte {e.start + 1} of the line); "
                            "convert it to UTF-8 and rerun") from None
    return lines


def validate_tree(line: str) -> None:
    """Raises TreeError unless `line` reads as balanced bracketed trees."""
    errors = read(line).errors
    if errors:
        raise TreeError(f"{errors[0]}: {line.strip()[:80]!r}")

