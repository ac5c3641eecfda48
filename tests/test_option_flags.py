"""A command's flag for an options dataclass field is that field: its default, type,
choices and help, and the parsed flags build the dataclass back.

The fields are walked here, apart from `t2t_lite.bin.common`'s own walk, so a flag
written by hand beside a field, or a field whose flag a command stops building from
it, fails. No TensorFlow, no training.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import typing

import pytest

from t2t_lite.bin import common
from t2t_lite.data.options import DatagenOptions, option
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.training.options import EvalOptions, TrainOptions

# Command module -> the options dataclass its flags fill, and which of its fields are
# flags there (None: every field that is a flag anywhere).
COMMANDS = {
    "trainer": (TrainOptions, None),
    "datagen": (DatagenOptions, None),
    "decoder": (DecodeOptions, None),
    "exporter": (DecodeOptions, ("beam_size", "alpha", "extra_length")),
}
OPTIONS = (TrainOptions, EvalOptions, DatagenOptions, DecodeOptions)


def _flag_fields(cls):
    """(flag, field, annotation) of each field of `cls` that is a flag, nested ones expanded."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        flag = field.metadata.get("flag", False)
        if flag is False:
            continue
        if dataclasses.is_dataclass(hints[field.name]):
            yield from _flag_fields(hints[field.name])
        else:
            yield (field.name if flag is True else flag), field, hints[field.name]


def _parser(command):
    return importlib.import_module(f"t2t_lite.bin.{command}").build_parser()


def _no_flags(parser):
    """The parsed args with only the required flags given."""
    required = [f"{max(a.option_strings, key=len)}=x" for a in parser._actions if a.required]
    return parser.parse_args(required)


@pytest.mark.parametrize("cls", OPTIONS, ids=lambda cls: cls.__name__)
def test_every_options_field_says_what_it_means(cls):
    missing = [f.name for f in dataclasses.fields(cls) if not f.metadata.get("help")]
    assert missing == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_options_flag_is_its_field(command):
    cls, names = COMMANDS[command]
    actions = {a.option_strings[0]: a for a in _parser(command)._actions if a.option_strings}
    fields = [f for f in _flag_fields(cls) if names is None or f[1].name in names]
    assert fields and (names is None or len(fields) == len(names))
    for flag, field, kind in fields:
        action = actions.get(f"--{flag}")
        assert action is not None, f"{command} has no --{flag} for {cls.__name__}.{field.name}"
        assert action.help == field.metadata["help"], flag
        assert list(action.choices or ()) == list(field.metadata["choices"] or ()), flag
        if kind is bool:
            assert isinstance(action, argparse._StoreTrueAction), flag
            assert action.default is False and field.default is False, flag
            continue
        unset = field.metadata["unset"]
        assert action.default == (None if unset else field.default), flag
        base = next(k for k in (int, float, str) if k is kind or k in typing.get_args(kind))
        assert action.type is (None if base is str else base), flag


@pytest.mark.parametrize("command", ["trainer", "datagen", "decoder"])
def test_no_flags_build_the_default_options(command):
    cls, _ = COMMANDS[command]
    assert common.options_from_args(cls, _no_flags(_parser(command))) == cls()


def test_the_trainer_flags_build_nested_options():
    args = _parser("trainer").parse_args(
        ["--problem=p", "--output_dir=o", "--jit", "--train_minutes=1.5",
         "--eval_every_steps=7", "--best_metric=chrf", "--init_from=run:best"])
    options = common.options_from_args(TrainOptions, args, progress_bar=True)
    assert options == TrainOptions(
        jit_compile=True, train_minutes=1.5, progress_bar=True, init_from="run:best",
        eval=EvalOptions(eval_every_steps=7, best_metric="chrf"))


def test_decoder_flags_left_unset_keep_the_fields_defaults():
    args = _parser("decoder").parse_args(["--output_dir=o", "--alpha=0.8", "--return_beams"])
    values = common.option_values(DecodeOptions, args)
    assert values["alpha"] == 0.8 and values["return_beams"] is True
    assert "beam_size" not in values and "shards" not in values  # The run's, the cores.
    assert common.options_from_args(DecodeOptions, args).beam_size == DecodeOptions().beam_size


@dataclasses.dataclass(frozen=True)
class _Toy:
    count: int | None = option(None, "how many")
    kind: str = option("a", "which", choices=("a", "b"))
    fast: bool = option(False, "go fast", flag="quick")
    hidden: float = option(1.0, "not a flag", flag=False)


def test_a_toy_dataclass_gets_its_flags():
    parser = common.ArgumentParser(prog="toy")
    common.add_option_flags(parser, _Toy)
    assert [a.dest for a in parser._actions if a.dest != "help"] == ["count", "kind", "quick"]
    args = parser.parse_args(["--count=3", "--kind=b", "--quick"])
    assert common.options_from_args(_Toy, args) == _Toy(count=3, kind="b", fast=True)
    with pytest.raises(SystemExit):
        parser.parse_args(["--kind=c"])


def test_fields_a_flag_cannot_express_are_refused():
    @dataclasses.dataclass(frozen=True)
    class Bad:
        on: bool = option(True, "on by default")
        items: tuple = option((), "a tuple")

    parser = argparse.ArgumentParser()
    for name in ("on", "items"):
        with pytest.raises(TypeError):
            common.add_option_flags(parser, Bad, (name,))
    with pytest.raises(TypeError, match="no flag field hidden"):
        common.option_flags(_Toy, ("hidden",))
