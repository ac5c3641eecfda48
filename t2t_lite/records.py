"""The small JSON files t2t_lite writes beside its outputs, read back.

A run's `hparams.json` and `problem.json` (`t2t_lite.runs.run_dir`), `best/best.json`
(`t2t_lite.training.evaluation`), `averaged/averaged.json`, `init_from.json` and
`early_stopping.json`, and datagen's `PROBLEM.datagen.json` (`t2t_lite.data.manifest`) are
each written whole. One that was damaged or edited by hand since (bytes that are not UTF-8,
not JSON, not a JSON object, or a field missing or of another type) reads as one
`RecordError` naming the file and what is wrong, never a traceback further on.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from t2t_lite.errors import UserError

# The type names a field check prints.
_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
          dict: "an object", list: "a list", type(None): "null"}


class RecordError(UserError, ValueError):
    """A JSON record file that cannot be read back; the message names it and says what to do."""


def read_json(path: str, fix: str, fields: Mapping[str, Any] | None = None) -> dict:
    """The JSON object in the file `path`.

    Args:
      fix: what to do about a damaged file, the end of the message.
      fields: name -> the type (or tuple of types) its value must have; every one must be
        present. `int` does not take true or false; `float` takes an integer too.

    Raises:
      FileNotFoundError: no such file.
      RecordError: the file cannot be read, is not UTF-8 or not a JSON object, or a field
        is missing or of another type (one line naming `path`).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise
    except OSError as e:
        raise RecordError(f"cannot read {path}: {e.strerror or e}; {fix}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"{path} is not UTF-8 (byte 0x{data[e.start]:02x} at byte "
                          f"{e.start + 1}); {fix}") from None
    try:
        record = json.loads(text)
    except RecursionError:
        raise RecordError(f"{path} is not a readable record (nested too deeply); "
                          f"{fix}") from None
    except ValueError as e:  # json.JSONDecodeError, or an integer too long to convert.
        reason = " ".join(str(e).split())
        raise RecordError(f"{path} is not valid JSON ({reason}); {fix}") from None
    if not isinstance(record, dict):
        raise RecordError(f"{path} holds {_type_name(record)}, not a JSON object; {fix}")
    check_fields(path, record, fields or {}, fix)
    return record


def check_fields(path: str, record: Mapping, fields: Mapping[str, Any], fix: str) -> None:
    """Raises RecordError unless each of `fields` is in `record` with its type (`read_json`)."""
    for name, types in fields.items():
        types = types if isinstance(types, tuple) else (types,)
        if name not in record:
            raise RecordError(f"{path} has no {name!r}; {fix}")
        if not is_instance(record[name], types):
            wanted = " or ".join(_NAMES.get(t, t.__name__) for t in types)
            raise RecordError(f"{path}: {name!r} is {_type_name(record[name])}, not "
                              f"{wanted}; {fix}")


def is_instance(value: Any, types: tuple) -> bool:
    """isinstance, as JSON means it: a bool is not an int, an int is a float."""
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def _type_name(value: Any) -> str:
    for kind in (bool, int, float, str, dict, list, type(None)):
        if isinstance(value, kind):
            return _NAMES[kind]
    return type(value).__name__
