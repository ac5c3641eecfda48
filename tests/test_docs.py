"""The documentation: a README of one screenful, a site that builds, pages that are current.

- README.md stays within 250 lines, and neither it nor docs/ holds a diary line.
- The generated pages (one per command, the hparams, the results, README's results table)
  equal what `python -m tools.gen_docs` renders now.
- Every flag of every command has help, every HParams field a meaning, every command
  `--version`.
- `mkdocs build --strict` passes.
- Every `t2t_lite-*` command line in a bash block of README.md or docs/ parses: each flag
  exists, each --problem and --hparams is registered, each value is among the flag's choices.
- Every python block of README.md and docs/ runs (slow tier), in a directory holding a small
  trained run of each kind the pages use (runs/rev, runs/m30k, exports/m30k_ct2/1).
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
from importlib.util import find_spec

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import gen_docs, reference_pages  # noqa: E402

DOC_FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
DIARY = re.compile(r"\bmy own\b|\bI (ran|measured|tried|found|kept)\b|\bhelpers? (was|were|ran)\b|"
                   r"this stop|\bissue [0-9]+|ninth run|\bby mistake\b", re.IGNORECASE)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: set[str]) -> list[tuple[str, str]]:
    """(id "file:line", code) of every fenced block in one of `language`."""
    out = []
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1).lower() in language:
                line = text[:match.start()].count("\n") + 1
                out.append((f"{path.relative_to(ROOT)}:{line}", match.group(2)))
    return out


def test_readme_is_one_screenful():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_no_diary_lines():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in DOC_FILES
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if DIARY.search(line)]
    assert found == []


def test_generated_pages_are_current():
    stale = [path for path, text in gen_docs.pages().items()
             if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != text]
    assert stale == [], "run `python -m tools.gen_docs` and commit the pages"
    assert "<!-- results:start -->\n| result |" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_flag_has_help_and_every_field_a_meaning():
    missing = [f"{command} {action.option_strings[0]}"
               for command in reference_pages.commands()
               for action in reference_pages.parser_of(command)._actions
               if action.option_strings and not (action.help or "").strip()]
    assert missing == []
    from t2t_lite.hparams.hparams import HParams
    notes = reference_pages.field_notes()
    import dataclasses
    assert [f.name for f in dataclasses.fields(HParams) if not notes.get(f.name, ("", ""))[1]] == []


@pytest.mark.parametrize("command", sorted(reference_pages.commands()))
def test_every_command_prints_its_version(command):
    import importlib

    from t2t_lite import __version__

    main = importlib.import_module(reference_pages.commands()[command]).main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert out.getvalue().strip() == f"{command} {__version__}"


def test_console_script_version():
    script = pathlib.Path(sys.executable).parent / "t2t_lite-bleu"
    if not script.exists():
        pytest.skip("the console scripts are not installed beside this Python (pip install -e .)")
    from t2t_lite import __version__

    result = subprocess.run([str(script), "--version"], capture_output=True, text=True,
                            timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, f"t2t_lite-bleu {__version__}")


def test_mkdocs_build_strict(tmp_path):
    if find_spec("mkdocs") is None or find_spec("material") is None:
        pytest.skip('needs the docs extra: pip install -e ".[docs]"')
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "results" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "cli" / "t2t_lite-trainer" / "index.html").exists()


# --- Command lines in the docs -------------------------------------------------------------

def command_lines() -> list[tuple[str, list[str]]]:
    """(where, argv) of every t2t_lite-* command in a bash block."""
    out = []
    for where, code in blocks({"bash", "sh", "shell", "console"}):
        joined = re.sub(r"\\\n\s*", " ", code)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("#"):
                continue
            for segment in re.split(r"\|\||&&|[|;]", line):
                try:
                    words = shlex.split(segment)
                except ValueError:
                    continue
                while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                    words.pop(0)
                if words and words[0].startswith("t2t_lite-"):
                    out.append((where, words))
    return out


def _check_command(argv: list[str]) -> list[str]:
    from t2t_lite import registry

    commands = reference_pages.commands()
    if argv[0] not in commands:
        return [f"no command {argv[0]}"]
    options = {}
    for action in reference_pages.parser_of(argv[0])._actions:
        for name in action.option_strings:
            options[name] = action
    problems = []
    words = iter(argv[1:])
    for word in words:
        if not word.startswith("-"):
            continue
        name, _, value = word.partition("=")
        action = options.get(name)
        if action is None:
            problems.append(f"no flag {name}")
            continue
        if not value and action.nargs != 0:
            value = next(words, "")
        if action.choices and value and value not in [str(c) for c in action.choices]:
            problems.append(f"{name}={value} is not one of {list(action.choices)}")
        if name == "--problem" and value not in registry.list_problems():
            problems.append(f"problem {value} is not registered")
        if name == "--hparams" and value not in registry.list_hparams():
            problems.append(f"hparams set {value} is not registered")
    return problems


def test_command_lines_in_the_docs_parse():
    found = command_lines()
    assert len(found) >= 20  # README's and the guides' examples are all read.
    wrong = [f"{where}: {' '.join(argv)}: {problem}"
             for where, argv in found for problem in _check_command(argv)]
    assert wrong == []


def test_the_command_line_check_fails_on_a_wrong_line():
    assert _check_command(["t2t_lite-trainer", "--problem=wmt_ende", "--hparams=big"]) == []
    assert _check_command(["t2t_lite-trainer", "--no_such_flag=1"]) == ["no flag --no_such_flag"]
    assert _check_command(["t2t_lite-decoder", "--problem=nope"]) == ["no flag --problem"]
    assert _check_command(["t2t_lite-datagen", "--problem=nope"]) == [
        "problem nope is not registered"]
    assert _check_command(["t2t_lite-exporter", "--format", "onnx"])[0].startswith("--format=onnx")


# --- Python blocks in the docs -------------------------------------------------------------

PYTHON_BLOCKS = blocks({"python", "py"})


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """runs/rev, data/m30k + runs/m30k (averaged) and exports/m30k_ct2/1, as the pages use."""
    import tensorflow as tf

    from t2t_lite import registry
    from t2t_lite.data import datagen
    from t2t_lite.data.options import DatagenOptions
    from t2t_lite.runs import averaging
    from t2t_lite.training import trainer
    from t2t_lite.training.options import EvalOptions, TrainOptions

    root = tmp_path_factory.mktemp("docs")
    quiet = lambda *_: None  # noqa: E731
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    options = TrainOptions(eval=EvalOptions(eval_every_steps=0), train_steps=20,
                           save_checkpoints_steps=10, log_every_steps=1000)
    trainer.train(registry.problem("algorithmic_reverse"), registry.hparams("tiny"),
                  str(root / "runs/rev"), None, options, strategy=strategy, log=quiet)
    raw = root / "raw"
    raw.mkdir()
    for side in ("en", "de"):
        shutil.copy(ROOT / "tests/testdata/wmt14" / f"newstest2013.{side}", raw / f"train.{side}")
    problem = registry.problem("translate_files")
    datagen.generate(problem, str(root / "data/m30k"), str(raw), DatagenOptions(vocab_size=500),
                     log=quiet)
    hparams = registry.hparams("tiny").override("num_layers=1,d_model=64,d_ff=128,max_length=64")
    trainer.train(problem, hparams, str(root / "runs/m30k"), str(root / "data/m30k"), options,
                  strategy=strategy, log=quiet)
    for run in ("runs/rev", "runs/m30k"):
        path = str(root / run)
        averaging.average(path, averaging.choose(path, 2, None, quiet))
    if find_spec("ctranslate2") is not None:
        from t2t_lite.bin import exporter

        with contextlib.redirect_stdout(io.StringIO()):
            assert exporter.main(["--format=ctranslate2", f"--output_dir={root / 'runs/m30k'}",
                                  "--checkpoint=averaged",
                                  f"--export_dir={root / 'exports/m30k_ct2'}"]) == 0
    return root


def test_python_blocks_are_found():
    where = {block[0].split(":")[0] for block in PYTHON_BLOCKS}
    assert "README.md" in where and "docs/installation.md" in where


@pytest.mark.slow
@pytest.mark.parametrize("where,code", PYTHON_BLOCKS, ids=[b[0] for b in PYTHON_BLOCKS])
def test_python_block_runs(where, code, workdir):
    if "ctranslate2" in code and find_spec("ctranslate2") is None:
        pytest.skip('the block needs pip install "t2t_lite[ctranslate2]"')
    script = workdir / f"block_{abs(hash(where))}.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "T2T_LITE_DOCS_STEPS": "3", "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("KERAS_BACKEND", None)
    result = subprocess.run([sys.executable, str(script)], cwd=workdir, capture_output=True,
                            text=True, env=env, timeout=600)
    assert result.returncode == 0, f"{where}:\n{result.stderr[-4000:]}"
