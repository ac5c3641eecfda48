"""EVALB's parameter (.prm) files: the settings `t2t_lite.metrics.evalb` scores with.

COLLINS.prm and new.prm, the files parser papers name, are built in, so no
file is needed; any other .prm file is read as EVALB reads it.
"""

from __future__ import annotations

import dataclasses
import os

from t2t_lite.metrics import trees
from t2t_lite.metrics.base import MetricError


# The parameter files parser papers name, built in so no file is needed.
COLLINS_PRM = """MAX_ERROR 10
CUTOFF_LEN 40
LABELED 1
DELETE_LABEL TOP
DELETE_LABEL -NONE-
DELETE_LABEL ,
DELETE_LABEL :
DELETE_LABEL ``
DELETE_LABEL ''
DELETE_LABEL .
DELETE_LABEL_FOR_LENGTH -NONE-
EQ_LABEL ADVP PRT
"""
NEW_PRM = COLLINS_PRM + """DELETE_LABEL S1
DELETE_LABEL ?
DELETE_LABEL !
""" + "".join(f"QUOTE_LABEL {label}\n" for label in ("``", "''", "POS", "NN", "CD", "VBZ", ":"))
BUILTIN_PRM = {"COLLINS": COLLINS_PRM, "new": NEW_PRM}


class EvalbError(MetricError):
    """Input EVALB gives up on: too many error sentences, a bad parameter file."""


@dataclasses.dataclass
class Params:
    """A parameter (.prm) file's settings; the defaults are EVALB's without -p."""

    max_error: int | None = 10
    cutoff_len: int = 40
    labeled: bool = True
    delete_labels: tuple[str, ...] = ()
    delete_labels_for_length: tuple[str, ...] = ()
    quote_labels: tuple[str, ...] = ()
    eq_labels: tuple[tuple[str, str], ...] = ()
    eq_words: tuple[tuple[str, str], ...] = ()
    name: str = "EVALB defaults"
    warnings: tuple[str, ...] = ()  # lines EVALB warns about and ignores

    def label_eq(self, a: str, b: str) -> bool:
        return a == b or any((a, b) in (p, p[::-1]) for p in self.eq_labels)

    def word_eq(self, a: str, b: str) -> bool:
        return a == b or any((a, b) in (p, p[::-1]) for p in self.eq_words)


def parse_params(text: str, name: str = "parameters") -> Params:
    """Reads .prm text as EVALB does: `KEYWORD value` lines, `#` comments."""
    lists = {"DELETE_LABEL": [], "DELETE_LABEL_FOR_LENGTH": [], "QUOTE_LABEL": [],
             "EQ_LABEL": [], "EQ_WORD": []}
    settings, warnings = {}, []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.rstrip(trees.SPACE)
        if line.startswith("#") or len(line) < 3:
            continue
        key, _, value = line.partition(" ") if " " in line else line.partition("\t")
        key, value = key.strip(), value.strip(trees.SPACE)
        if key in ("EQ_LABEL", "EQ_WORD"):
            pair = value.split()
            if len(pair) != 2:
                raise EvalbError(f"{name} line {number}: {key} needs two values, got {value!r}")
            lists[key].append(tuple(pair))
        elif key in lists:
            lists[key].append(value)
        elif key in ("MAX_ERROR", "CUTOFF_LEN", "LABELED"):
            try:
                settings[key] = int(value)
            except ValueError:
                raise EvalbError(f"{name} line {number}: {key} needs a number, "
                                 f"got {value!r}") from None
        elif key != "DEBUG":
            warnings.append(f"{name} line {number}: unknown keyword {key!r} ignored")
    return Params(max_error=settings.get("MAX_ERROR", 10),
                  cutoff_len=settings.get("CUTOFF_LEN", 40),
                  labeled=bool(settings.get("LABELED", 1)),
                  delete_labels=tuple(lists["DELETE_LABEL"]),
                  delete_labels_for_length=tuple(lists["DELETE_LABEL_FOR_LENGTH"]),
                  quote_labels=tuple(lists["QUOTE_LABEL"]),
                  eq_labels=tuple(lists["EQ_LABEL"]), eq_words=tuple(lists["EQ_WORD"]),
                  name=name, warnings=tuple(warnings))


def load_params(prm: str | Params | None = None) -> Params:
    """A Params from a .prm path, a built-in name (COLLINS, new) or None (COLLINS)."""
    if isinstance(prm, Params):
        return prm
    if prm is None or prm in BUILTIN_PRM:
        name = prm or "COLLINS"
        return parse_params(BUILTIN_PRM[name], f"{name}.prm")
    try:
        with open(prm, encoding="utf-8") as f:
            return parse_params(f.read(), os.path.basename(prm))
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise EvalbError(f"cannot read the parameter file {prm}: {e}") from e
