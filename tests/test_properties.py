"""Property-based tests (hypothesis) for the parsers of user input.

Each parser is driven by two strategies: one that builds valid input, so every example reaches
the success assertion (the result equals what was written), and one that builds input with one
known fault, so every example checks the one-line error that fault must give (exit 2 in the
commands, never a traceback). A third, arbitrary strategy keeps the anything-goes check where
it is cheap. Oracles are the test's own: lines are `bytes.split(b"\\n")`, values are what the
strategy drew. Covered here: hparams overrides, the decoder's input reader and encoder,
datagen's file readers (plain and gzipped); the newer readers are in test_reader_properties.py.
"""

import dataclasses
import gzip
import os
import tempfile
import zlib

import pytest
from conftest import NO_EVAL
from hypothesis import event, given, settings
from hypothesis import strategies as st

from t2t_lite import registry
from t2t_lite.data.text_encoder import DataError
from t2t_lite.decoding.splits import encode_lines
from t2t_lite.decoding.text_io import read_source_lines, split_source_text
from t2t_lite.hparams import config as configs
from t2t_lite.hparams.hparams import (PRECISIONS, HParams, HParamsError, field_types,
                                      parse_overrides)
from t2t_lite.problems.base import ProblemError
from t2t_lite.problems.translate_corpus import ParallelFiles, count_lines
from t2t_lite.models.rnn.config import ATTENTION_SCORES, RNN_CELLS
from t2t_lite.training.options import TrainOptions

ONE_LINE = "one-line-errors"
NO_DROP = "no-data-dropped"
SETTINGS = settings(max_examples=60)  # The profile (tests/conftest.py) decides the seed.
FEW = settings(max_examples=40)


def rows(data: bytes) -> list[bytes]:
    """The oracle for lines: split at b"\\n" only; a last line without one counts."""
    lines = data.split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


# --- hparams overrides ----------------------------------------------------------------------

TYPES = field_types()  # Every plain name: the shared fields and every model config's.
SHARED_DEFAULTS = HParams().by_name()
MODELS = ("transformer", "aligned_transformer", "span_transformer", "rnn_seq2seq", "bahdanau",
          "luong")
CONFIG_FIELDS = {model: {f.name: f.default for f in dataclasses.fields(configs.config_class(model))}
                 for model in MODELS}
# The built-in models' names only: a model a test file registers in this process (its config
# fields are in TYPES then) is not one these strategies know the rules of.
FIELDS = [name for name in TYPES
          if name in SHARED_DEFAULTS or any(name in CONFIG_FIELDS[m] for m in MODELS)]
UNIT, NON_NEGATIVE = st.floats(0, 1, exclude_max=True), st.floats(0, 1e6)
BY_TYPE = {int: st.integers(1, 10**6), float: st.floats(-1e6, 1e6), bool: st.booleans(),
           int | None: st.none() | st.integers(1, 1000)}
# Valid values where the field's type does not say enough (HParams.__post_init__'s rules).
DOMAINS = {
    "model": st.sampled_from(MODELS),
    "positional_encoding": st.sampled_from(["sinusoid", "learned"]),
    "rnn_cell": st.sampled_from(RNN_CELLS), "attention_score": st.sampled_from(ATTENTION_SCORES),
    "precision": st.sampled_from(PRECISIONS),
    **dict.fromkeys(["dropout_rate", "attention_dropout_rate", "relu_dropout_rate",
                     "label_smoothing", "word_dropout"], UNIT),
    **dict.fromkeys(["tagging_loss", "word_dropout_alpha", "span_loss", "token_loss"],
                    NON_NEGATIVE),
    "relative_position_buckets": st.integers(0, 300).map(lambda k: 2 * k if k >= 2 else 0),
    "span_classes": st.integers(2, 10**6), "extra_length": st.integers(0, 10**6),
    "length_bucket_step": st.floats(1, 100, exclude_min=True),
    "num_heads": st.sampled_from([1, 2, 3, 4, 6, 8, 12, 24]),
    "d_model": st.integers(1, 2000).map(lambda k: 24 * k),  # Divisible by every num_heads.
}
PAD = st.sampled_from(["", " ", "\t"])


def literal(value) -> st.SearchStrategy:
    """The ways a user may type `value` (all parse back to it exactly)."""
    if value is None:
        return st.sampled_from(["none", "None", "NONE"])
    if isinstance(value, bool):
        return st.sampled_from(["true", "True", "1", "yes"] if value else
                               ["false", "FALSE", "0", "no"])
    if isinstance(value, int):
        return st.sampled_from([str(value), f"{value:_d}", f"+{value}"])
    if isinstance(value, float):
        return st.sampled_from([repr(value), repr(value).upper()])
    return st.just(value)


def _satisfy_rules(draw, values: dict) -> None:
    """Makes the drawn values valid together, as HParams' cross-field checks require: the
    model is one whose config has every config field drawn (the first drawn one's
    model keeps its fields, the others' are dropped)."""
    if "num_heads" in values or "d_model" in values:
        for name in ("num_heads", "d_model"):
            values.setdefault(name, draw(DOMAINS[name]))
    model = values.get("model", "transformer")
    drawn = [name for name in values if name not in SHARED_DEFAULTS]
    if not set(drawn) <= set(CONFIG_FIELDS[model]):
        model = next((m for m in MODELS if set(drawn) <= set(CONFIG_FIELDS[m])),
                     next(m for m in MODELS if drawn[0] in CONFIG_FIELDS[m]))
        for name in drawn:
            if name not in CONFIG_FIELDS[model]:
                del values[name]
    if model == "span_transformer" and not values.get("tagging_loss"):
        values["tagging_loss"] = draw(st.floats(0.01, 10))
    if model != "transformer" or "model" in values:
        values["model"] = model
    if values.get("mixed_precision") and values.get("precision") == "mixed_bfloat16":
        values["precision"] = "mixed_float16"


def join_items(draw, items: list[str]) -> str:
    items = draw(st.permutations(items))
    return draw(st.sampled_from([",", ", ", ",,"])).join(items) + draw(st.sampled_from(["", ","]))


@st.composite
def valid_overrides(draw):
    """(text, values): `name=value,...` over real fields, values valid alone and together."""
    names = draw(st.lists(st.sampled_from(FIELDS), unique=True, max_size=6))
    values = {name: draw(DOMAINS[name] if name in DOMAINS else BY_TYPE[TYPES[name]])
              for name in names}
    _satisfy_rules(draw, values)
    items = [f"{draw(PAD)}{name}{draw(PAD)}={draw(PAD)}{draw(literal(value))}{draw(PAD)}"
             for name, value in values.items()]
    return join_items(draw, items), values


@SETTINGS
@given(valid_overrides())
def test_valid_overrides_set_exactly_those_values(case):
    text, values = case
    assert parse_overrides(text) == values
    hparams = HParams().override(text)
    assert hparams.by_name() == {**SHARED_DEFAULTS, **CONFIG_FIELDS[hparams.model], **values}
    assert HParams.from_json(hparams.to_json()) == hparams  # What the trainer saves reads back.


# Fields no other field's check involves: valid company for a bad item.
FREE = {"warmup_steps": st.integers(1, 10**6), "alpha": st.floats(-10, 10),
        "beam_size": st.integers(1, 64), "shared_embedding": st.booleans(),
        "adam_epsilon": st.floats(1e-12, 1e-3)}
NOT_OF_TYPE = {int: ["", "x", "1.5", "1e3", "0x10", "--1"], float: ["", "x", "1.2.3", "0x1p3"],
               bool: ["", "maybe", "2", "on"], int | None: ["", "x", "nil", "1.0"]}
OUT_OF_RANGE = {
    **dict.fromkeys(["num_layers", "num_heads", "d_ff", "warmup_steps", "batch_size",
                     "max_length", "min_length_bucket", "accum_steps", "train_steps",
                     "beam_size"], st.integers(-10**6, 0)),
    **dict.fromkeys(["dropout_rate", "label_smoothing", "word_dropout"],
                    st.floats(1, 1e6) | st.floats(-1e6, -1e-9)),
    "extra_length": st.integers(-10**6, -1), "length_bucket_step": st.floats(-1e6, 1),
    "relative_position_buckets": st.sampled_from([1, 2, 3, 5, -2]),
    "span_classes": st.integers(-10, 1), "positional_encoding": st.sampled_from(["rope", "ALiBi"]),
    "rnn_cell": st.sampled_from(["rnn", "LSTM"]), "precision": st.sampled_from(["fp8", "float16"]),
}


@st.composite
def invalid_overrides(draw):
    """(text, expected): valid items around one bad item; `expected` is in its error."""
    kind = draw(st.sampled_from(["malformed", "unknown", "type", "range", "nonfinite"]))
    if kind == "malformed":
        item = draw(st.text(min_size=1, max_size=15).filter(
            lambda t: t.strip() and "," not in t and "=" not in t))
        bad, expected = item, f"malformed override {item.strip()!r}"
    elif kind == "unknown":
        name = draw(st.from_regex(r"[a-z][a-z_0-9]{0,15}", fullmatch=True).filter(
            lambda n: n not in TYPES))
        bad = f"{name}={draw(st.sampled_from(['1', 'x', '']))}"
        expected = f"unknown hparam {name!r}"
    elif kind == "type":
        name = draw(st.sampled_from([n for n in FIELDS if TYPES[n] in NOT_OF_TYPE]))
        bad, expected = f"{name}={draw(st.sampled_from(NOT_OF_TYPE[TYPES[name]]))}", \
            f"bad value for {name}: "
    elif kind == "range":
        name = draw(st.sampled_from(sorted(OUT_OF_RANGE)))
        bad, expected = f"{name}={draw(literal(draw(OUT_OF_RANGE[name])))}", name
    else:
        name = draw(st.sampled_from([n for n in FIELDS if TYPES[n] is float]))
        bad = f"{name}={draw(st.sampled_from(['nan', 'inf', '-Infinity', '1e400']))}"
        expected = f"bad value for {name}: "
    company = draw(st.lists(st.sampled_from(sorted(FREE)), unique=True, max_size=3))
    items = [f"{n}={draw(literal(draw(FREE[n])))}" for n in company if not bad.startswith(n)]
    return join_items(draw, items + [bad]), expected


@pytest.mark.guarantee(ONE_LINE, "an override string with one malformed item, unknown name, "
                       "value of the wrong type, non-finite float or out-of-range value among "
                       "valid ones is refused with one HParamsError line naming that item")
@SETTINGS
@given(invalid_overrides())
def test_an_invalid_override_is_one_error_naming_it(case):
    text, expected = case
    with pytest.raises(HParamsError) as info:
        HParams().override(text)
    message = str(info.value)
    assert expected in message and "\n" not in message, message


ANY_VALUE = st.one_of(
    st.text(max_size=12), st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["none", "True", "1e400", "-0", "nan", "1_000", "9" * 5000, "²", "١٢",
                     "0x10", " 4 ", "", "=", "sinusoid"]))
ANY_OVERRIDES = st.one_of(
    st.lists(st.one_of(st.tuples(st.sampled_from(FIELDS), ANY_VALUE).map("=".join),
                       st.text(max_size=20)), max_size=5).map(",".join),
    st.text(max_size=60))


@pytest.mark.guarantee(ONE_LINE, "any override string gives hparams that save and read back, "
                       "or one HParamsError line")
@FEW
@given(ANY_OVERRIDES)
def test_any_override_string_gives_hparams_or_one_error_line(text):
    try:
        hparams = HParams().override(text)
    except HParamsError as e:
        event("refused")
        assert str(e) and "\n" not in str(e)
        return
    event("accepted")
    assert HParams.from_json(hparams.to_json()) == hparams


# --- Text files: valid UTF-8, and UTF-8 with one bad sequence at a known place -------------

TEXT_LINE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "   ", "\t \t", "\r", "\x00", "ärger", "a\u2028b\x0bc\x1cd\x85e",
                     "🙂" * 30, "7 " * 5000]))  # 10 kB: past a text reader's 8 kB chunk.
TEXT_FILES = st.tuples(st.lists(TEXT_LINE, max_size=8), st.sampled_from(["\n", "\r\n"]),
                       st.booleans()).map(
    lambda t: (t[1].join(t[0]) + (t[1] if t[2] and t[0] else "")).encode("utf-8"))
BAD_SEQUENCES = [b"\xff", b"\x80", b"\xc0\x80", b"\xed\xa0\x80", b"\xe4", b"\xf0\x9f"]


@st.composite
def bad_files(draw):
    """(data, line, column, byte): valid text with one invalid UTF-8 sequence put between
    two characters; line and column (bytes, from 1) of its first byte, from the bytes."""
    text = draw(TEXT_FILES).decode("utf-8")
    cut = draw(st.integers(0, len(text)))
    head = text[:cut].encode("utf-8")
    bad = draw(st.sampled_from(BAD_SEQUENCES))
    data = head + bad + text[cut:].encode("utf-8")
    line = head.count(b"\n") + 1
    return data, line, len(head) - (head.rfind(b"\n") + 1) + 1, bad[0]


def bad_line_message(name, line, column, byte):
    return f"{name}, line {line}: invalid UTF-8 (byte 0x{byte:02x} at byte {column} of the line)"


@pytest.mark.guarantee(NO_DROP, "on any UTF-8 text (\\r, U+2028 and other separators "
                       "included), line i of the decoder's input reader is line i of the bytes "
                       "split at \\n")
@SETTINGS
@given(TEXT_FILES)
def test_source_reader_keeps_one_line_per_newline(data):
    assert split_source_text(data, "in.txt") == [r.decode("utf-8") for r in rows(data)]


@pytest.mark.guarantee(ONE_LINE, "input with one invalid UTF-8 sequence is one DataError line "
                       "naming the file, the line, the byte and its column")
@SETTINGS
@given(bad_files())
def test_source_reader_names_the_bad_line_and_byte(case):
    data, line, column, byte = case
    with pytest.raises(DataError) as info:
        split_source_text(data, "in.txt")
    assert str(info.value).startswith(bad_line_message("in.txt", line, column, byte) + ";")
    assert "\n" not in str(info.value)


def test_source_file_reader_errors_name_the_file(tmp_path):
    with pytest.raises(DataError, match="is a directory"):
        read_source_lines(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        read_source_lines(str(tmp_path / "missing.txt"))


SYMBOL_LINES = st.lists(st.lists(st.integers(0, 9), max_size=80).flatmap(
    lambda ids: st.tuples(st.just(ids), st.lists(st.sampled_from(
        [" ", "  ", "\t", "\r", "\x0b", "\u3000", "\x85", "\u2028"]), min_size=len(ids) + 1,
        max_size=len(ids) + 1))), max_size=6)


@SETTINGS
@given(SYMBOL_LINES)
def test_encode_lines_algorithmic_keeps_every_symbol_up_to_max_length(lines):
    problem = registry.problem("algorithmic_reverse")
    texts = ["".join(space + str(i) for space, i in zip(spaces, ids)) + spaces[-1]
             for ids, spaces in lines]
    warnings = []
    sources = encode_lines(problem, texts, 64, warnings.append)
    assert len(sources) == len(texts)
    for number, ((ids, _), encoded) in enumerate(zip(lines, sources), 1):
        expected = [i + 2 for i in ids][:63] + [1] if ids else []  # Symbols from 2, EOS 1.
        assert encoded == expected
        truncated = [w for w in warnings if w.startswith(f"line {number}: ")]
        assert len(truncated) == (len(ids) > 63)


@pytest.mark.guarantee(ONE_LINE, "an input line with a word that is not a symbol is one "
                       "ProblemError line naming it")
@FEW
@given(SYMBOL_LINES, st.sampled_from(["10", "²", "-1", "a", "3.0", "١٢"]))
def test_encode_lines_algorithmic_refuses_a_non_symbol(lines, word):
    problem = registry.problem("algorithmic_reverse")
    texts = [" ".join(map(str, ids)) for ids, _ in lines] + [f"1 {word} 2"]
    with pytest.raises(ProblemError) as info:
        encode_lines(problem, texts, 64, lambda _: None)
    assert f"{word!r} is not a symbol" in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def text_problem():
    """What `Text2TextProblem.encode` does, with a vocabulary trained here in a second."""
    from t2t_lite.data.text_encoder import normalize, train_vocab

    sentences = [f"the {w} number {i} läuft über {w}s." for i in range(300)
                 for w in ("cat", "dog", "Haus")][:600]
    vocab = train_vocab(sentences, vocab_size=300, seed=3)

    class Problem:
        def encode(self, text):
            return vocab.encode(normalize(text))

    return Problem()


@FEW
@given(st.lists(st.one_of(st.text(max_size=60), st.sampled_from(
    ["", "   ", "\x00", "\u2028", "\ud7ff\ue000", "x" * 20000, "🙂" * 50])), max_size=5))
def test_encode_lines_subword(text_problem, lines):
    sources = encode_lines(text_problem, lines, 64, lambda _: None)
    assert len(sources) == len(lines)
    for line, ids in zip(lines, sources):
        assert len(ids) <= 64 and (ids == []) == (not line.strip())
        if ids:
            assert ids[-1] == 1 and all(i >= 2 for i in ids[:-1])


# --- Datagen's file readers (plain and gzipped) ----------------------------------------------

def _write(directory, name, data):
    path = os.path.join(directory, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def gzip_members(data: bytes, members: int, level: int) -> list[bytes]:
    """`data` as up to `members` gzip members, to concatenate (what `cat a.gz b.gz` makes)."""
    step = max(1, -(-len(data) // members))
    return [gzip.compress(data[i:i + step], level) for i in range(0, len(data), step)] \
        or [gzip.compress(b"", level)]


@pytest.mark.guarantee(NO_DROP, "datagen counts and reads back every line of any UTF-8 file, "
                       "plain or gzipped (several members included), and refuses a truncated "
                       ".gz with one line naming it")
@SETTINGS
@given(TEXT_FILES, st.sampled_from(["plain", "gzip", "gzip"]), st.integers(1, 3),
       st.integers(0, 9), st.one_of(st.just(0), st.just(0), st.just(0), st.integers(1, 60)))
def test_datagen_reads_every_line_of_a_whole_file(data, kind, members, level, cut):
    parts = [data] if kind == "plain" else gzip_members(data, members, level)
    if kind == "gzip" and cut:  # Inside the last member: a cut at a boundary is undetectable.
        parts[-1] = parts[-1][:-min(cut, len(parts[-1]) - 1)]
    packed = b"".join(parts)
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "train.en" + (".gz" if kind == "gzip" else ""), packed)
        if kind == "gzip" and cut:
            event("truncated gzip file refused")
            with pytest.raises(ProblemError) as info:
                count_lines(path)
            assert str(info.value).startswith(f"{path}: cannot read it (")
            assert "\n" not in str(info.value)
            return
        event(f"whole {kind} file read back")
        assert count_lines(path) == len(rows(data))
        lines = [source for source, _ in ParallelFiles(path, path).pairs()]
    assert [line.removesuffix("\n") for line in lines] == [r.decode("utf-8") for r in rows(data)]
    assert "".join(lines) == data.decode("utf-8")


@pytest.mark.guarantee(ONE_LINE, "a datagen input file, plain or gzipped, with one invalid "
                       "UTF-8 sequence is one ProblemError line naming the file, line and byte")
@FEW
@given(bad_files(), st.booleans())
def test_datagen_names_the_bad_line_and_byte(case, gzipped):
    data, line, column, byte = case
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "train.en" + (".gz" if gzipped else ""),
                      gzip.compress(data) if gzipped else data)
        with pytest.raises(ProblemError) as info:
            count_lines(path)
    assert str(info.value).startswith(bad_line_message(path, line, column, byte) + ";")
    assert "\n" not in str(info.value)


def _damaged_gzip(args):
    data, flips = args
    packed = bytearray(gzip.compress(data))
    for position in flips:
        packed[position % len(packed)] ^= 0x5A
    return bytes(packed)


@pytest.mark.guarantee(ONE_LINE, "a .gz with flipped bytes is counted as a whole read of it "
                       "gives, or refused with one line naming it, never counted short")
@FEW
@given(st.tuples(TEXT_FILES, st.lists(st.integers(0, 10**4), min_size=1, max_size=3))
       .map(_damaged_gzip))
def test_damaged_gzip_is_refused_or_read_whole(data):
    try:  # The oracle: what a whole read of the stream gives, or None if unreadable.
        expected = len(rows(gzip.decompress(data)))
        gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        expected = None
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "train.en.gz", data)
        try:
            count = count_lines(path)
        except ProblemError as e:
            event("refused")
            assert path in str(e) and "\n" not in str(e)
            assert expected is None, f"refused a readable file ({expected} lines): {e}"
            return
    event("read whole")
    assert count == expected  # A damaged file is refused, never counted short.


@pytest.mark.guarantee(NO_DROP, "parallel files with as many lines each are counted and "
                       "paired line by line; with different counts, one error names both "
                       "files and counts")
@SETTINGS
@given(st.lists(st.tuples(TEXT_LINE, TEXT_LINE), max_size=8),
       st.one_of(st.just(0), st.just(0), st.integers(-3, 3)), st.booleans())
def test_parallel_files_pair_every_line_or_refuse(pairs, extra, newline_at_end):
    def encode(lines):  # A last empty line needs its newline to be a line.
        end = lines and (newline_at_end or lines[-1] == "")
        return ("\n".join(lines) + ("\n" if end else "")).encode("utf-8")

    pairs = [(s.replace("\n", " "), t.replace("\n", " ")) for s, t in pairs]
    sources = [s for s, _ in pairs] + ["extra"] * max(extra, 0)
    targets = [t for _, t in pairs] + ["extra"] * max(-extra, 0)
    with tempfile.TemporaryDirectory() as directory:
        files = ParallelFiles(_write(directory, "a.en", encode(sources)),
                              _write(directory, "a.de", encode(targets)))
        if len(sources) != len(targets):
            with pytest.raises(ProblemError) as info:
                files.count()
            assert f"{files.source_path} has {len(sources)} lines, {files.target_path} " \
                   f"has {len(targets)}" in str(info.value)
            return
        event("paired")
        assert files.count() == len(pairs)
        read = [(s.removesuffix("\n"), t.removesuffix("\n")) for s, t in files.pairs()]
    assert read == pairs  # No pair dropped, none shifted.


# --- The decoder CLI end to end: any input file -> exit 0, or exit 2 and one line ------

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    import tensorflow as tf

    from t2t_lite.training import trainer

    output_dir = str(tmp_path_factory.mktemp("run"))
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=16,d_ff=32,num_heads=2,batch_size=128")
    trainer.train(registry.problem("algorithmic_reverse"), hparams, output_dir,
                  options=TrainOptions(eval=NO_EVAL, train_steps=1, log_every_steps=1000),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return output_dir


CLI_FILES = st.lists(st.one_of(
    st.sampled_from([b"", b"   ", b"3 1 4", b"\xff", b"2 \xe4", b"12 x", b"9 " * 300, b"\r"]),
    st.text(alphabet="0123456789 ", max_size=12).map(str.encode)), max_size=4).map(b"\n".join)


@pytest.mark.guarantee(NO_DROP, "the decoder command writes one output line per input line "
                       "(input split at \\n only)")
@pytest.mark.guarantee(ONE_LINE, "the decoder command on any input file exits 0, or exits 2 "
                       "with one error line and no output file")
@pytest.mark.slow  # Kept out of `make test` for its time; CI runs it.
@settings(max_examples=12)
@given(CLI_FILES)
def test_decoder_cli_any_file(tiny_run, data):
    import contextlib
    import io

    from t2t_lite.bin import decoder as decoder_cli

    with tempfile.TemporaryDirectory() as directory:
        source, target = (os.path.join(directory, n) for n in ("in.txt", "out.txt"))
        with open(source, "wb") as f:
            f.write(data)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = decoder_cli.main([f"--output_dir={tiny_run}", f"--decode_from_file={source}",
                                     f"--decode_to_file={target}", "--beam_size=1"])
        lines = [x for x in err.getvalue().splitlines() if x.startswith("t2t_lite-decoder")]
        try:  # The oracle: refused for bad UTF-8 or a word that is not a symbol 0..9.
            refused = any(not (w.isascii() and w.isdigit() and int(w) < 10)
                          for w in data.decode("utf-8").split())
        except UnicodeDecodeError:
            refused = True
        if code == 2:
            assert len(lines) == 1 and "Traceback" not in err.getvalue()
            assert not os.path.exists(target) and refused
            return
        assert code == 0 and not refused, err.getvalue()
        with open(target, "rb") as f:
            assert f.read().count(b"\n") == len(rows(data))
