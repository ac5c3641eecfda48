"""`PROBLEM.datagen.json`, the datagen manifest: how a problem's files were made.

t2t_lite-datagen writes it (`Manifest`): the plan (inputs, vocabulary, layout),
whether the run completed, and the statistics of every finished shard, so a
rerun resumes only with the same plan and skips finished shards. Problems read
it back (`read_manifest`), e.g. for the languages a translation was made with.
"""

from __future__ import annotations

import json
import os

from t2t_lite import atomic, records
from t2t_lite.data.shards import SPLITS, STATS
from t2t_lite.data.text_encoder import DataError


def manifest_path(data_dir: str, problem_name: str) -> str:
    """`PROBLEM.datagen.json`: how t2t_lite-datagen made the problem's files."""
    return os.path.join(data_dir, f"{problem_name}.datagen.json")


def read_manifest(data_dir: str, problem_name: str) -> dict | None:
    """The datagen manifest of `problem_name` in `data_dir`, None if there is none.

    Raises:
      RecordError: the file is damaged (one line naming it).
    """
    path = manifest_path(data_dir, problem_name)
    if not os.path.exists(path):
        return None
    return read_manifest_file(path)


def read_manifest_file(path: str) -> dict:
    """A manifest: its plan, whether it is complete, and each finished shard's `STATS`.

    Raises:
      RecordError: not a manifest (one line naming `path`).
    """
    fix = "delete it and the shards beside it to rebuild, or use another --data_dir"
    manifest = records.read_json(path, fix, {"plan": dict, "complete": bool, "shards": dict})
    for split, shards in manifest["shards"].items():
        for index, stats in shards.items() if isinstance(shards, dict) else [("", shards)]:
            if not (index.isascii() and index.isdigit() and isinstance(stats, dict)
                    and sorted(stats) == sorted(STATS)
                    and all(records.is_instance(v, (int,)) for v in stats.values())):
                raise records.RecordError(
                    f"{path}: shards[{split!r}][{index!r}] is not a shard's statistics "
                    f"({', '.join(STATS)}: integers); {fix}")
    return manifest


def _differences(old, new, prefix="") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    return [] if old == new else [prefix.rstrip(".")]


class Manifest:
    """`PROBLEM.datagen.json`: the plan (inputs, vocabulary, layout) and finished shards."""

    def __init__(self, path: str, data: dict):
        self.path = path
        self.data = data

    @classmethod
    def open(cls, path: str, plan: dict, existing_shards) -> Manifest:
        """Starts (or resumes) a run with `plan`.

        Args:
          existing_shards: split -> shard paths already in data_dir.

        Raises:
          DataError: data_dir holds shards made with another plan.
        """
        plan = json.loads(json.dumps(plan))
        present = [p for split in SPLITS for p in existing_shards(split)]
        # Without shards a manifest vouches for nothing: it is rewritten, damaged or not.
        old = read_manifest_file(path) if present and os.path.exists(path) else None
        name, data_dir = plan["problem"], os.path.dirname(path) or "."
        if present and old is None:
            raise DataError(
                f"{data_dir} holds {name} shards but no {os.path.basename(path)} saying how "
                "they were made; use another --data_dir or delete them")
        if present and old.get("plan") != plan:
            diff = ", ".join(d if d.isprintable() else repr(d)
                             for d in _differences(old.get("plan"), plan)) or "plan"
            raise DataError(
                f"{data_dir} holds {name} shards made differently (changed: {diff}); use "
                f"another --data_dir, or delete {os.path.join(data_dir, name)}-* to rebuild")
        done = old.get("shards", {}) if present else {}
        manifest = cls(path, {"plan": plan, "complete": False, "shards": done})
        manifest._save()
        return manifest

    def shard_stats(self, split: str, index: int) -> dict | None:
        return self.data["shards"].get(split, {}).get(str(index))

    def record(self, split: str, index: int, stats: dict) -> None:
        if self.shard_stats(split, index) != stats:
            self.data["shards"].setdefault(split, {})[str(index)] = stats
            self._save()

    def finish(self) -> None:
        self.data["complete"] = True
        self._save()

    def _save(self) -> None:
        atomic.write_bytes(self.path, (json.dumps(self.data, indent=1) + "\n").encode())
