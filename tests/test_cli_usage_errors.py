"""Every command's flag errors are one line: `PROG: error: MESSAGE (see PROG --help)`, exit 2.

The cases are read from each command's `build_parser()`: every flag with an int, float or
other converting type gets a value it refuses, every flag with choices a value outside
them, every required flag is left out in turn, and each command gets an unknown flag and
a flag without its value. A flag added later is covered without editing this file. The
commands are the console scripts in setup.py. Each case runs in-process through the
command's `main(argv)`; one subprocess runs an installed console script, so the whole
process is seen to print one line (no usage block, no TensorFlow start-up lines).
A missing input path, which the commands check when they run rather than when they parse,
is one line too (`PROG: error: MESSAGE`, no `--help` pointer: the flag itself was right).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys

import pytest

from t2t_lite.bin import common
from tools.reference_pages import commands

PLACEHOLDER = "/nonexistent/t2t_lite-usage-test"  # A required flag's value; never read.


def _module(command: str):
    return importlib.import_module(commands()[command])


def _name(action: argparse.Action) -> str:
    """The flag as a user types it (the long form)."""
    return max(action.option_strings, key=len)


def _bad_value(action: argparse.Action) -> str | None:
    """A value the parser must refuse for `action`, or None if it takes any string."""
    if action.choices:
        return "no_such_choice"
    if action.type in (int, float):
        return "not_a_number"
    if callable(action.type) and action.type is not str:
        return "no_such_value"
    return None


def _flags(command: str) -> list[argparse.Action]:
    """The command's flags (its parser's optional actions)."""
    return [a for a in _module(command).build_parser()._actions if a.option_strings]


def _required(command: str) -> list[str]:
    """A value for each required flag, so that the flag under test is the only fault."""
    return [f"{_name(a)}={PLACEHOLDER}" for a in _flags(command) if a.required]


def _cases():
    """(command, argv, what the message names) for every flag error the parsers can raise."""
    for command in sorted(commands()):
        actions = _flags(command)
        required = [a for a in actions if a.required]
        given = _required(command)
        for action in actions:
            value = _bad_value(action)
            if value is not None:
                kind = "choice" if action.choices else action.type.__name__
                yield pytest.param(command, given + [f"{_name(action)}={value}"], _name(action),
                                   id=f"{command}-{kind}-{_name(action)}")
        for action in required:
            rest = [flag for flag in given if not flag.startswith(_name(action) + "=")]
            yield pytest.param(command, rest, _name(action),
                               id=f"{command}-required-{_name(action)}")
        takes_value = [a for a in actions if a.nargs is None]
        yield pytest.param(command, given + [_name(takes_value[-1])], _name(takes_value[-1]),
                           id=f"{command}-no-value-{_name(takes_value[-1])}")
        yield pytest.param(command, given + ["--no_such_flag=1"], "--no_such_flag",
                           id=f"{command}-unknown-flag")


def _one_line(command: str, stderr: str, names: str) -> str:
    """The message of `stderr`'s one line, asserted to be `command`'s usage-error line."""
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{stderr}"
    match = re.fullmatch(rf"{re.escape(command)}: error: (.+) \(see {re.escape(command)} "
                         r"--help\)", lines[0])
    assert match, lines[0]
    assert names in match.group(1), lines[0]
    return match.group(1)


def _exit_code(main, argv) -> int:
    """`main(argv)`'s exit code, whether it returns it or raises SystemExit."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.guarantee(
    "one-line-errors",
    "every command given a bad int, float or choice value, a flag without its value, no "
    "required flag or an unknown flag prints one line `PROG: error: MESSAGE (see PROG "
    "--help)` and exits 2")
@pytest.mark.parametrize("command, argv, names", list(_cases()))
def test_flag_error_is_one_line(command, argv, names, capfd):
    assert _exit_code(_module(command).main, argv) == 2
    out, err = capfd.readouterr()
    assert out == ""
    _one_line(command, err, names)


def test_every_command_has_cases_of_each_kind_it_takes():
    """The case list is not empty by accident: the kinds the parsers have are all there."""
    ids = [case.id for case in _cases()]
    assert len(commands()) >= 9
    for command in commands():
        assert f"{command}-unknown-flag" in ids and any(
            i.startswith(f"{command}-required-") for i in ids)
    for kind in ("int", "float", "choice", "no-value"):
        assert any(f"-{kind}-" in i for i in ids), kind


# The run-time check of one input path per command: the flag and the other flags it needs.
MISSING_PATHS = {
    "t2t_lite-trainer": ("--init_from", ["--problem=algorithmic_reverse", "--hparams=tiny",
                                         "--output_dir={tmp}/run"]),
    "t2t_lite-decoder": ("--output_dir", []),
    "t2t_lite-datagen": ("--raw_dir", ["--problem=wmt_ende", "--data_dir={tmp}/data"]),
    "t2t_lite-bleu": ("--hypotheses", ["--reference={missing}"]),
    "t2t_lite-avg-checkpoints": ("--output_dir", []),
    "t2t_lite-exporter": ("--output_dir", ["--export_dir={tmp}/export"]),
    "t2t_lite-visualize": ("--output_dir", ["--input=1 2"]),
    "t2t_lite-plot": ("--output_dir", []),
    "t2t_lite-evalb": ("--gold", ["--test={missing}"]),
}


@pytest.mark.guarantee("one-line-errors", "every command given an input path that does not "
                       "exist prints one line `PROG: error: ...` naming it and exits 2, "
                       "writing nothing")
@pytest.mark.parametrize("command", sorted(MISSING_PATHS))
def test_missing_path_is_one_line(command, tmp_path, capfd):
    missing = str(tmp_path / "missing")
    flag, rest = MISSING_PATHS[command]
    argv = [a.format(tmp=tmp_path, missing=missing) for a in rest] + [f"{flag}={missing}"]
    assert _exit_code(_module(command).main, argv) == 2
    out, err = capfd.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"{command}: error: ") and missing in lines[0]
    assert os.listdir(tmp_path) == []


def test_every_command_has_a_missing_path_case():
    assert sorted(MISSING_PATHS) == sorted(commands())


@pytest.mark.guarantee("one-line-errors", "an installed console script given a bad flag prints "
                       "one line and exits 2")
def test_console_script_prints_one_line():
    """An installed script, a real process: one stderr line, nothing else, exit 2 (one
    command: a process costs a fraction of a second, and the parsers are the same class)."""
    command = "t2t_lite-decoder"
    script = os.path.join(os.path.dirname(sys.executable), command)
    assert os.path.exists(script), f"{script}: run `make install`"
    result = subprocess.run([script, *_required(command), "--beam_size=x"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    _one_line(command, result.stderr, "--beam_size")


@pytest.mark.parametrize("command", sorted(commands()))
def test_help_and_version_are_argparse_own(command, capsys):
    """--help and --version print to standard output and exit 0, as argparse's do."""
    main = _module(command).main
    assert _exit_code(main, ["--help"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"usage: {command} ") and "--version" in out and err == ""
    assert _exit_code(main, ["--version"]) == 0
    out, err = capsys.readouterr()
    assert re.fullmatch(rf"{re.escape(command)} \S+\n", out) and err == ""


def test_subparsers_and_odd_messages_are_one_line(capsys):
    """A subcommand's parser is of the same class; a message's newlines become spaces."""
    parser = common.ArgumentParser(prog="t2t_lite-x")
    sub = parser.add_subparsers(dest="what").add_parser("sub")
    sub.add_argument("--n", type=int)
    assert isinstance(sub, common.ArgumentParser)
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["sub", "--n=x"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == ("t2t_lite-x sub: error: argument --n: invalid int "
                                       "value: 'x' (see t2t_lite-x sub --help)\n")
    with pytest.raises(SystemExit):
        parser.error("two\nlines")
    assert capsys.readouterr().err == "t2t_lite-x: error: two lines (see t2t_lite-x --help)\n"
