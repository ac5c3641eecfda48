"""benchmarks/ as one suite: a package run with `python -m`, no library internals swapped,
one workload module, one interleaved harness, one row writer with a versioned schema, and
the synthetic problem the trainer command is timed on."""

import json
import os
import re
import sys
import types

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, ROOT)  # `benchmarks` runs from the repository root; it is not installed.

from benchmarks import cli, harness, rows, trainer_speed, train_interleaved, workloads  # noqa: E402
from t2t_lite import registry  # noqa: E402

LIBRARY_MODULES = re.compile(r"^\s*(from t2t_lite[\w.]* import ([\w, ]+)|import (t2t_lite[\w.]*))")


def _sources():
    for name in sorted(os.listdir(BENCHMARKS)):
        if name.endswith(".py"):
            with open(os.path.join(BENCHMARKS, name), encoding="utf-8") as f:
                yield name, f.read()


def test_no_script_edits_sys_path_or_assigns_into_the_library():
    for name, text in _sources():
        assert "sys.path.insert" not in text and "sys.path.append" not in text, name
        imported = set()
        for line in text.splitlines():
            match = LIBRARY_MODULES.match(line)
            if match and match.group(2):
                imported |= {n.strip().split(" as ")[-1] for n in match.group(2).split(",")}
        for line in text.splitlines():
            assigned = re.match(r"^\s*([A-Za-z_]\w*)\.\w+ = ", line)
            assert not (assigned and assigned.group(1) in imported), f"{name}: {line.strip()}"
            assert not re.search(r"\bsetattr\(", line), f"{name}: {line.strip()}"


def test_the_package_is_not_installed_with_t2t_lite():
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        setup = f.read()
    calls = re.findall(r"find_packages\(([^)]*)\)", setup)
    assert calls and all(call.strip().startswith("include=") for call in calls)
    assert not any("benchmarks" in call for call in calls)


def test_rows_of_the_current_schema(tmp_path, capsys):
    path = tmp_path / "some_bench.jsonl"
    written = rows.append_row({"tokens_per_s": 12.5, "setting": "bench"}, str(path))
    assert json.loads(path.read_text()) == written == json.loads(capsys.readouterr().out)
    assert set(rows.COMMON_FIELDS) <= set(written)
    assert (written["schema"], written["benchmark"], written["system"], written["setting"]) == (
        rows.SCHEMA, "some_bench", "t2t_lite", "bench")
    assert written["cores"] == os.cpu_count() and written["peak_gflops"] is None
    named = rows.append_row({"system": "x", "peak_gflops": 400.0}, "-", benchmark="b")
    assert (named["benchmark"], named["system"], named["peak_gflops"]) == ("b", "x", 400.0)


def test_rows_of_every_schema_read_with_the_common_fields(tmp_path):
    old = tmp_path / "train_profile.jsonl"
    old.write_text(json.dumps({"bench": "train_profile", "cpu": "c", "size": "base"}) + "\n"
                   + json.dumps({"machine": {"cpu": "n", "cores": 2}, "bleu": 1.0}) + "\n")
    first, second = rows.read_rows(str(old))
    assert (first["schema"], first["benchmark"], first["cpu"], first["size"]) == (
        1, "train_profile", "c", "base")
    assert (second["benchmark"], second["cpu"], second["cores"]) == ("train_profile", "n", 2)
    for name in sorted(os.listdir(rows.RESULTS)):  # Every recorded row reads.
        if name.endswith(".jsonl"):
            for row in rows.read_rows(os.path.join(rows.RESULTS, name)):
                assert set(rows.COMMON_FIELDS) <= set(row) and row["benchmark"], name


def test_interleave_alternates_the_order_and_counts_every_call():
    calls = []
    seconds = harness.interleave({"a": lambda i: calls.append(("a", i)),
                                  "b": lambda i: calls.append(("b", i))}, rounds=2, repeats=2)
    assert calls == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2), ("b", 3), ("a", 2),
                     ("a", 3)]
    assert [len(s) for s in seconds.values()] == [4, 4]
    assert harness.rates([0.5, 0.25, 1.0], 100.0) == {"median": 200.0, "best": 400.0,
                                                     "worst": 100.0}
    assert harness.ratio({"before": [2.0, 2.0], "after": [1.0, 1.0]}) == 2.0


def test_workload_batches_are_seeded_and_unpadded():
    first, again = workloads.train_batches("bench"), workloads.train_batches("bench")
    assert len(first) == 8 and first[0]["inputs"].shape == (32, 32)
    assert all(np.array_equal(a["targets"], b["targets"]) for a, b in zip(first, again))
    assert first[0]["targets"].min() >= 3 and first[0]["targets"].max() < 8192
    assert workloads.hparams("bench").d_model == 256 and workloads.hparams("base").d_model == 512


def test_a_usage_error_ends_in_one_line_with_status_2(capsys):
    main = cli.entry_point("benchmarks.train", "doc", {"interleaved": train_interleaved.__name__})
    with pytest.raises(SystemExit) as exit_:
        main(["interleaved", "--before=num_heads=8", "--after=num_heads=8"])
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--before and --after name the same setting" in line


def test_the_trainer_benchmark_runs_the_trainer_command_and_reads_its_windows():
    args = types.SimpleNamespace(size="base", problem=None, hparams="base", overrides="",
                                 data_dir=None, steps=50, log_every_steps=10, jit=True)
    command = trainer_speed.trainer_command(args, "/tmp/run")
    assert command[1:3] == ["-m", "t2t_lite.bin.trainer"] and "--jit" in command
    assert "--problem=synthetic_translate_base" in command
    assert "--hparams_overrides=batch_size=2048" in command  # base: no size overrides.
    lines = ["step 10/50 loss 9.1 lr 1e-05 1,234 tok/s", "dev step 1: loss 1",
             "step 20/50 loss 8.9 lr 2e-05 2,000.5 tok/s", "step 30/50 loss 8.8 3,000 tok/s"]
    windows = trainer_speed.parse_windows(lines)
    assert windows == [(10, 1234.0), (20, 2000.5), (30, 3000.0)]
    row = trainer_speed.trainer_row(args, command, 25.0, windows, {"cpu": "c"}, "AVX2")
    assert (row["steps_per_s"], row["steady_tokens_per_s"], row["problem"]) == (
        2.0, 3000.0, "synthetic_translate_base")
    assert "--output_dir=RUN" in row["command"] and "/tmp/run" not in row["command"]


def test_the_synthetic_problem_registers_and_generates_deterministically():
    assert {"synthetic_translate", "synthetic_translate_base"} <= set(registry.list_problems())
    problem = registry.problem("synthetic_translate")
    assert not problem.needs_datagen and problem.vocab_size == 8192
    assert registry.problem("synthetic_translate_base").vocab_size == 32768
    first, again = problem.arrays("train"), registry.problem("synthetic_translate").arrays("train")
    assert np.array_equal(first["inputs"], again["inputs"])
    assert not np.array_equal(first["inputs"], problem.arrays("dev")["inputs"][:1])
    example = next(problem.examples("dev").as_numpy_iterator())
    assert len(example["inputs"]) == len(example["targets"]) == 32
    assert example["inputs"][-1] == 1 and (example["inputs"][:-1] >= 2).all()
    assert problem.encode(problem.decode(example["inputs"])) == list(example["inputs"][:-1])

    class Short(type(problem)):
        min_length, max_length = 3, 6
    lengths = {len(e["targets"]) for e in Short().examples("test").as_numpy_iterator()}
    assert lengths <= set(range(4, 8)) and len(lengths) > 1


def test_the_trainer_command_trains_on_the_synthetic_problem(tmp_path):
    from t2t_lite.bin import trainer

    output_dir = tmp_path / "run"
    assert trainer.main(["--problem=synthetic_translate", "--hparams=tiny",
                         "--hparams_overrides=batch_size=256", f"--output_dir={output_dir}",
                         "--train_steps=2", "--eval_every_steps=0"]) in (0, None)
    assert any(name.startswith("ckpt-2") for name in os.listdir(output_dir))


ENTRY_POINTS = ("train", "decode", "quality", "parse", "export")


def test_one_entry_point_per_question_reaches_every_benchmark():
    import importlib

    reached = []
    for name in ENTRY_POINTS:
        entry = importlib.import_module(f"benchmarks.{name}")
        parser = cli.build_parser(f"benchmarks.{name}", entry.__doc__, entry.COMMANDS)
        for command, module in entry.COMMANDS.items():
            assert parser.parse_args([command] + _required(command)).module.__name__ == module
        reached += entry.COMMANDS.values()
    with_arguments = {f"benchmarks.{name[:-3]}" for name, text in _sources()
                      if "def add_arguments(" in text}
    assert with_arguments == set(reached)
    runnable = {name[:-3] for name, text in _sources()
                if re.search(r'^if __name__ == "__main__":', text, re.M)}
    assert runnable == set(ENTRY_POINTS) | {"isa", "jax_speed"}  # jax_speed: no TensorFlow.


def _required(command: str) -> list[str]:
    """The required flags of the subcommands that have some (fake values)."""
    return {"decoder": ["--output_dir=r", "--input=f"], "multi30k": ["--raw_dir=r", "--work_dir=w"],
            "fine_tuning": ["--work_dir=w"], "demo": ["w"], "scores": ["--output_dir=r"],
            "evalb": ["--gold=g", "--test=t", "--system=s"],
            "export": ["--output_dir=r", "--words=w"], "serving": ["w"],
            "ctranslate2": ["--run_dir=r", "--raw_dir=d"]}.get(command, [])
