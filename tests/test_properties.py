"""Property-based tests (hypothesis) for every parser of user input.

Each input ends in a result or in the one error class the tool turns into a
one-line message (exit 2), never in another exception (a traceback): hparams
overrides, the decoder's input reader and encoder, datagen's file readers.
`EXAMPLES` caps each property so the whole file stays fast.
"""

import gzip
import os
import tempfile
import zlib

import pytest
from conftest import NO_EVAL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.decoding.splits import encode_lines
from t2t_lite.decoding.text_io import read_source_lines, split_source_text
from t2t_lite.hparams.hparams import HParams, HParamsError, parse_overrides
from t2t_lite.problems.base import ProblemError
from t2t_lite.problems.translate_corpus import ParallelFiles, count_lines
from t2t_lite.data.text_encoder import DataError


EXAMPLES = 200
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FIELDS = [name for name in HParams.__dataclass_fields__]
# Values that look like what users type, and some that do not.
VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["none", "None", "true", "FALSE", "1e400", "-0", "nan", "inf", "1_000",
                     "9" * 5000, "²", "١٢", "0x10", " 4 ", "", "=", ",", "sinusoid"]),
)
ITEMS = st.one_of(
    st.tuples(st.sampled_from(FIELDS), VALUES).map(lambda kv: f"{kv[0]}={kv[1]}"),
    st.text(max_size=20),
)
OVERRIDES = st.one_of(st.lists(ITEMS, max_size=5).map(",".join), st.text(max_size=60))


@SETTINGS
@given(OVERRIDES)
def test_overrides_give_hparams_or_hparams_error(text):
    try:
        parsed = parse_overrides(text)
    except HParamsError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert set(parsed) <= set(FIELDS)
    try:
        hparams = HParams().override(text)
    except HParamsError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert HParams.from_json(hparams.to_json()) == hparams  # What the trainer saves reads back.


# --- The decoder's input --------------------------------------------------------------

LINE_BYTES = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: t.encode("utf-8")),
    st.sampled_from([b"", b"   ", b"\t \t", b"\r", b"\x00", b"\xff\xfe", b"\xe4rger",
                     "a\u2028b\x0bc\x1cd\x85e".encode("utf-8"), b"7 " * 5000]),
)
FILE_BYTES = st.lists(LINE_BYTES, max_size=8).flatmap(
    lambda lines: st.sampled_from([b"\n".join(lines), b"\n".join(lines) + b"\n",
                                   b"\r\n".join(lines)]))


@SETTINGS
@given(FILE_BYTES)
def test_source_reader_keeps_one_line_per_newline(data):
    try:
        lines = split_source_text(data, "in.txt")
    except DataError as e:
        message = str(e)
        assert message.startswith("in.txt, line ") and "invalid UTF-8" in message
        assert "\n" not in message
        with pytest.raises(UnicodeDecodeError):
            data.decode("utf-8")
        return
    newlines = data.count(b"\n")
    expected = newlines + (1 if data and not data.endswith(b"\n") else 0)
    assert len(lines) == expected  # Line i of the output answers line i of the input.
    assert "\n".join(lines) + ("\n" if data.endswith(b"\n") else "") == data.decode("utf-8")


@SETTINGS
@given(FILE_BYTES)
def test_source_file_reader_matches_the_reference_reader(data):
    from t2t_lite.metrics.base import MetricError, read_lines

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "in.txt")
        with open(path, "wb") as f:
            f.write(data)
        try:
            lines = read_source_lines(path)
        except DataError:
            with pytest.raises(MetricError):
                read_lines(path)
            return
        # As many lines as the --reference reader finds, so scoring lines up.
        assert len(lines) == len(read_lines(path))


def test_source_file_reader_errors_name_the_file(tmp_path):
    with pytest.raises(DataError, match="is a directory"):
        read_source_lines(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        read_source_lines(str(tmp_path / "missing.txt"))


TEXT_LINES = st.lists(st.one_of(
    st.text(max_size=30),
    st.text(alphabet="0123456789 ", max_size=30),
    st.sampled_from(["", "   ", "\t", "3 1 4", "²", "١٢", "12", "-1", "7 " * 400]),
), max_size=6)


@SETTINGS
@given(TEXT_LINES)
def test_encode_lines_algorithmic(lines):
    problem = registry.problem("algorithmic_reverse")
    warnings = []
    try:
        sources = encode_lines(problem, lines, 64, warnings.append)
    except ProblemError as e:
        assert "is not a symbol" in str(e) and "\n" not in str(e)
        return
    assert len(sources) == len(lines)
    for line, ids in zip(lines, sources):
        assert (ids == []) == (not line.strip())
        assert len(ids) <= 64 and (not ids or ids[-1] == 1)  # EOS last.


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


@SETTINGS
@given(st.lists(st.one_of(st.text(max_size=60), st.sampled_from(
    ["", "   ", "\x00", "\u2028", "\ud7ff\ue000", "x" * 20000, "🙂" * 50])), max_size=5))
def test_encode_lines_subword(text_problem, lines):
    warnings = []
    sources = encode_lines(text_problem, lines, 64, warnings.append)
    assert len(sources) == len(lines)
    for line, ids in zip(lines, sources):
        assert len(ids) <= 64
        if ids:
            assert ids[-1] == 1 and all(i >= 2 for i in ids[:-1])


# --- Datagen's file readers -----------------------------------------------------------

@SETTINGS
@given(FILE_BYTES, st.booleans())
def test_count_lines_gives_a_count_or_problem_error(data, gzipped):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "train.en" + (".gz" if gzipped else ""))
        with (gzip.open(path, "wb") if gzipped else open(path, "wb")) as f:
            f.write(data)
        try:
            count = count_lines(path)
        except ProblemError as e:
            assert str(e).startswith(path) and "\n" not in str(e)
            with pytest.raises(UnicodeDecodeError):
                data.decode("utf-8")
            return
        assert count == data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _damaged_gzip(args):
    data, cut, flip = args
    packed = bytearray(gzip.compress(data))
    if flip is not None:
        packed[flip % len(packed)] ^= 0x5A
    return bytes(packed[:max(1, len(packed) - cut)])


@SETTINGS
@given(st.one_of(st.binary(max_size=200),
                 st.tuples(st.binary(max_size=300), st.integers(0, 40),
                           st.one_of(st.none(), st.integers(0, 400))).map(_damaged_gzip)))
def test_corrupt_gzip_gives_problem_error(data):
    try:  # What a whole read of the stream gives: its line count, or None if unreadable.
        text = gzip.decompress(data).decode("utf-8")
        expected = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        expected = None
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "train.en.gz")
        with open(path, "wb") as f:
            f.write(data)
        try:
            count = count_lines(path)
        except ProblemError as e:
            assert path in str(e) and "\n" not in str(e)
            assert expected is None, f"refused a readable file ({expected} lines): {e}"
            return
        assert count == expected  # A damaged file is refused, never counted.


@SETTINGS
@given(FILE_BYTES, FILE_BYTES)
def test_parallel_files_count_every_pair_or_refuse(source, target):
    with tempfile.TemporaryDirectory() as directory:
        paths = [os.path.join(directory, name) for name in ("a.en", "a.de")]
        for path, data in zip(paths, (source, target)):
            with open(path, "wb") as f:
                f.write(data)
        files = ParallelFiles(*paths)
        try:
            count = files.count()
        except ProblemError as e:
            assert "\n" not in str(e) and any(p in str(e) for p in paths)
            return
        pairs = list(files.pairs())
        assert len(pairs) == count  # No pair is silently dropped.


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


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
@settings(max_examples=12, deadline=None, derandomize=True)
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
        if code == 2:
            assert len(lines) == 1 and "Traceback" not in err.getvalue()
            assert not os.path.exists(target)
        else:
            assert code == 0, err.getvalue()
            with open(target, "rb") as f:
                assert f.read().count(b"\n") == len(split_source_text(data, source))
