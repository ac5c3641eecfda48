"""Property tests for trees as text: the files tree readers take, the trees the parser writes.

Readers (the treebank reader `t2t_lite.parsing.ptb` behind wsj_parsing's datagen, and
`t2t_lite-evalb`'s gold and test files): any bytes (invalid UTF-8, unbalanced brackets, empty
and 100k-character lines, 5000-deep nesting) read, or end in one `UserError` line that names
the file and the line; the command prints that one line and exits 2, never a traceback.
Writer (`WsjParsing.format_output`, what `decode_lines` writes for each input line): any line
and any decoded token sequence give one well-formed tree over exactly the line's words, raw
brackets written -LRB- / -RRB-, which both readers read back.
"""

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t2t_lite import registry
from t2t_lite.bin import evalb as evalb_cli
from t2t_lite.errors import UserError
from t2t_lite.metrics import evalb
from t2t_lite.metrics import trees as evalb_trees
from t2t_lite.parsing import ptb
from t2t_lite.problems.parsing import TreebankCorpus, TreeFile

SETTINGS = settings(max_examples=60)  # The profile (tests/conftest.py) decides the seed.

# --- Tree files: arbitrary bytes, tree-like text, real trees ------------------------------

PIECES = [b"(", b")", b"( ", b") ", b" ", b"\n", b"\r\n", b"\t", b"\x0b", b"S", b"NP-SBJ-1",
          b"NN", b"a", b"-LRB-", b"-NONE-", b"*T*", b"TOP", b"\xff", b"\xe4rger", b"\x00",
          "Zürich".encode(), "東京".encode(), "\u2028".encode(), "\x85".encode(), b"\x1c"]
LABELS = st.sampled_from(["S", "NP", "VP", "NP-SBJ-1", "-NONE-", "TOP", ".", "''", "-LRB-",
                          "Zürich", "X\u2028Y", "a\x85b"])
WORDS = st.sampled_from(["a", "dog", "Zürich", "東京", "*T*-1", "0", ".", "''", "'", "/",
                         "-LRB-", "w\x1cx"])
TREES = st.recursive(
    st.tuples(LABELS, WORDS).map(lambda lw: f"({lw[0]} {lw[1]})"),
    lambda kids: st.tuples(st.sampled_from(["", "S", "NP", "VP", "TOP"]),
                           st.lists(kids, min_size=1, max_size=4)).map(
        lambda lk: f"({lk[0]} {' '.join(lk[1])})"),
    max_leaves=16)
LINE = st.one_of(
    TREES.map(str.encode),
    st.binary(max_size=60),
    st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join),
    st.sampled_from([b"", b"   ", b"(S (NN a)", b"(S (NN a)))", b"(S a b)", b"word (S (NN a))",
                     b"(S (NN a b))", b"(\xff (NN a))", b"((((", b"))))"]),
)
FILE_BYTES = st.lists(LINE, max_size=14).map(b"\n".join)


def _write(directory, name, data):
    path = os.path.join(directory, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def check_error_line(message, path, data):
    """One line, naming `path` and a line of it that exists (a line ends at "\\n", or
    for the treebank reader also "\\r", so the bound counts both)."""
    assert message and "\n" not in message and len(message.splitlines()) == 1, repr(message)
    match = re.search(re.escape(path) + r", line (\d+)\b", message)
    assert match, message
    assert 1 <= int(match.group(1)) <= len(re.findall(rb"\r\n|\r|\n", data)) + 1, message


@SETTINGS
@given(FILE_BYTES)
def test_a_treebank_file_reads_or_names_the_file_and_line(data):
    """wsj_parsing's datagen path: read, clean, linearize (`TreebankCorpus.pairs`)."""
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, "wsj_0001.mrg", data)
        try:
            pairs = list(TreebankCorpus([TreeFile(path)]).pairs())
        except UserError as e:
            check_error_line(str(e), path, data)
            return
    for words, target in pairs:  # Every target restores its source's words.
        assert ptb.words(ptb.delinearize(target, words.split())) == words.split()


@SETTINGS
@given(st.one_of(FILE_BYTES.map(lambda b: b.decode("utf-8", "replace")), st.text(max_size=80)))
def test_tree_text_reads_back_or_the_error_names_the_line(text):
    try:
        trees = ptb.read_trees(text)
    except ptb.TreeError as e:
        message = str(e)
        assert "\n" not in message and len(message.splitlines()) == 1, repr(message)
        match = re.search(r"\bline (\d+)\b", message)
        assert match and 1 <= int(match.group(1)) <= text.count("\n") + 1, message
        return
    written = [ptb.to_string(t, top=None) for t in trees]
    assert [ptb.to_string(t, top=None) for t in ptb.read_trees(" ".join(written))] == written


DEEP = "( " + "(S " * 5000 + "(NN a)" + ")" * 5001  # Past Python's recursion limit.
LONG = "( (S " + "(NN a) " * 14_300 + "))"  # 100k characters.


@pytest.mark.parametrize("text", [DEEP, LONG], ids=["5000-deep", "100k-characters"])
def test_deep_and_long_trees_read_clean_and_linearize(tmp_path, text):
    path = _write(str(tmp_path), "wsj_0001.mrg", (text + "\n").encode())
    [(words, target)] = list(TreebankCorpus([TreeFile(path)]).pairs())
    tree = ptb.delinearize(target, words.split())
    assert ptb.words(tree) == ["a"] * text.count("(NN a)")
    written = ptb.to_string(tree)
    assert ptb.to_string(ptb.read_trees(written)[0], top=None) == written
    assert not evalb_trees.read(written).errors


@pytest.mark.parametrize("data, line", [
    (b"(S (NN a))\n" * 3 + b"(S (NN \xff))\n", 4),
    (b"\n" * 50 + b")\n", 51),
    (b"( (S (NN a)))\n(S\n(NN b)\n", 2),  # Never closed: where it opened.
    (b"(" * 100_000, 1),
    (b"x" * 100_000, 1),
    (b"(S (NN a))\n" + DEEP.encode() + b" oops\n", 2),
], ids=["invalid-utf8", "close-after-empty-lines", "left-open", "100k-open", "100k-text",
        "text-after-5000-deep"])
def test_treebank_errors_name_the_line(tmp_path, data, line):
    path = _write(str(tmp_path), "wsj_0001.mrg", data)
    with pytest.raises(UserError) as info:
        TreeFile(path).trees()
    check_error_line(str(info.value), path, data)
    assert f"{path}, line {line}:" in str(info.value)


# --- t2t_lite-evalb's gold and test files -------------------------------------------------

def _evalb(gold_path, test_path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = evalb_cli.main(["--gold", gold_path, "--test", test_path])
    return code, out.getvalue(), err.getvalue()


@SETTINGS
@given(FILE_BYTES, FILE_BYTES)
def test_evalb_reads_both_files_or_names_the_file_and_line(gold, test):
    with tempfile.TemporaryDirectory() as directory:
        paths = {"gold": _write(directory, "gold.txt", gold),
                 "test": _write(directory, "test.txt", test)}
        code, out, err = _evalb(paths["gold"], paths["test"])
    if code == 0:
        assert "=== Summary ===" in out
        for line in err.splitlines():  # EVALB's error lines, one per message.
            assert re.match(r"\d+ : \S", line), repr(line)
        return
    assert code == 2 and err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert err.startswith("t2t_lite-evalb: error: ") and "Traceback" not in err
    name = "gold" if paths["gold"] + ", line" in err else "test"
    check_error_line(err[:-1], paths[name], gold if name == "gold" else test)


@pytest.mark.parametrize("tree", [DEEP, LONG], ids=["5000-deep", "100k-characters"])
def test_evalb_scores_deep_and_long_trees(tmp_path, tree):
    path = _write(str(tmp_path), "trees.txt", (tree + "\n").encode())
    result = evalb.evaluate([tree], [tree])
    assert result.messages == [] and result.all.fmeasure == 100.0
    assert result.sentences[0].matched == result.sentences[0].gold > 0
    assert _evalb(path, path)[0] == 0


BRACKET_LABELS = ["S", "NP", "VP", "ADVP", "PRT", "NP-SBJ", "TOP", "S1", "-NONE-"]
POS_TAGS = ["NN", "DT", ",", ".", "''", "``", "-NONE-", "ADVP", "PRT"]
KEPT_TAGS = ["NN", "DT", "ADVP", "PRT"]  # Not deleted by COLLINS.prm or new.prm.


def random_tree(rnd, leaves):
    """A random bracketing of `leaves` (`(TAG word)`): unary chains, deleted labels."""
    def build(lo, hi, depth):
        if hi - lo == 1 and (depth > 4 or rnd.random() < 0.5):
            return leaves[lo]
        cuts = sorted(rnd.sample(range(lo + 1, hi), rnd.randint(0, min(3, hi - lo - 1))))
        if not cuts and depth > 4 and hi - lo > 1:
            cuts = [(lo + hi) // 2]
        bounds = [lo, *cuts, hi]
        kids = " ".join(build(a, b, depth + 1) for a, b in zip(bounds, bounds[1:]))
        return f"({rnd.choice(BRACKET_LABELS)} {kids})"
    return build(0, len(leaves), 0)


def read_brackets(line, delete):
    """The test's own reader of a bracketed tree, apart from t2t_lite's: its words as
    (word, tag) and its brackets as [start, end, label] in the order they open, spans over
    the words left once preterminals tagged with a `delete` label are dropped."""
    tokens = re.findall(r"\(|\)|[^\s()]+", line)
    words, brackets, open_, i = [], [], [], 0
    while i < len(tokens):
        if tokens[i] == "(" and tokens[i + 2] != "(":  # (TAG word)
            if tokens[i + 1] not in delete:
                words.append((tokens[i + 2], tokens[i + 1]))
            i += 4
        elif tokens[i] == "(":
            open_.append(len(brackets))
            brackets.append([len(words), None, tokens[i + 1]])
            i += 2
        else:
            brackets[open_.pop()][1] = len(words)
            i += 1
    return words, brackets


def evalb_by_loops(gold_line, test_line, params):
    """EVALB's figures by its definitions and its quadratic loops: (status, matched, gold
    brackets, test brackets, crossing, words, correct tags)."""
    def same(a, b):  # EQ_LABEL pairs compare equal.
        return a == b or (a, b) in params.eq_labels or (b, a) in params.eq_labels

    def kept(brackets):  # Function tags cut; empty and deleted brackets dropped.
        cut = [(s, e, re.split(r"[-=]", label, maxsplit=1)[0]) for s, e, label in brackets]
        return [(s, e, label) for s, e, label in cut
                if s < e and not any(same(label, d) for d in params.delete_labels)]

    (gold_words, gold), (test_words, test) = (read_brackets(line, params.delete_labels)
                                              for line in (gold_line, test_line))
    if not test_words:
        return 2, 0, 0, 0, 0, 0, 0  # Skipped.
    gold, test = kept(gold), kept(test)
    taken, matched = [False] * len(test), 0
    for gs, ge, gl in gold:  # Each gold bracket takes the first free test bracket alike.
        for k, (ts, te, tl) in enumerate(test):
            if not taken[k] and (gs, ge) == (ts, te) and same(gl, tl):
                taken[k], matched = True, matched + 1
                break
    crossing = sum(any(gs < ts < ge < te or ts < gs < te < ge for gs, ge, _ in gold)
                   for ts, te, _ in test)
    tags = sum(same(g[1], t[1]) for g, t in zip(gold_words, test_words))
    return 0, matched, len(gold), len(test), crossing, len(gold_words), tags


@SETTINGS
@given(st.randoms(use_true_random=False), st.lists(st.integers(1, 12), min_size=1, max_size=2),
       st.sampled_from(["COLLINS", "new"]))
def test_evalb_figures_agree_with_evalbs_definitions_and_loops(rnd, lengths, prm):
    """Linear-time matching and crossing, tag and bracket counts, against the loops above."""
    params = evalb.load_params(prm)
    golds, tests = [], []
    for n in lengths:
        tags = [rnd.choice(POS_TAGS) for _ in range(n)]  # A kept tag may change in the test
        test_tags = [rnd.choice(KEPT_TAGS) if t in KEPT_TAGS else t for t in tags]  # tree.
        golds.append(random_tree(rnd, [f"({t} w{i % 4})" for i, t in enumerate(tags)]))
        tests.append(random_tree(rnd, [f"({t} w{i % 4})" for i, t in enumerate(test_tags)]))
    result = evalb.evaluate(golds, tests, params)
    expected = [evalb_by_loops(g, t, params) for g, t in zip(golds, tests)]
    assert [(s.status, s.matched, s.gold, s.test, s.crossing, s.words, s.correct_tags)
            for s in result.sentences] == expected
    valid = [e for e in expected if e[0] == 0]
    assert (result.all.matched, result.all.gold, result.all.test) == \
        tuple(sum(e[k] for e in valid) for k in (1, 2, 3))


def _run_evalb(*args):
    return subprocess.run([sys.executable, "-m", "t2t_lite.bin.evalb", *args],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


@pytest.mark.parametrize("test, line", [
    (b"(S (x a))\n(S (x \xe4rger))\n", 2),  # Latin-1, not UTF-8.
    (b"(S (x a b c)\n" * 13, 12),  # More than MAX_ERROR=10 errors: EVALB stops.
    (b"(S (x \xe2\x80\xa8 b)\n" * 13, 12),  # ... with a line separator in a word.
], ids=["invalid-utf8", "max-error", "max-error-line-separator"])
def test_evalb_command_fails_in_one_line_naming_the_file_and_line(tmp_path, test, line):
    gold = _write(str(tmp_path), "gold.txt", b"(S (x a))\n" * test.count(b"\n"))
    test_path = _write(str(tmp_path), "test.txt", test)
    result = _run_evalb("--gold", gold, "--test", test_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and len(result.stderr.splitlines()) == 1, \
        repr(result.stderr)
    assert result.stderr.startswith("t2t_lite-evalb: error: ")
    assert f"{test_path}, line {line}" in result.stderr


def test_evalb_command_scores_a_100k_character_line(tmp_path):
    tree = "(A " * 33_000 + "(x a)" + ")" * 33_000
    path = _write(str(tmp_path), "trees.txt", (tree + "\n" + LONG + "\n").encode())
    result = _run_evalb("--gold", path, "--test", path)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr[-2000:]
    assert "Bracketing FMeasure       = 100.00" in result.stdout


# --- The parser's output: decoded tokens + the input line -> a tree -----------------------

ESCAPES = {"(": "-LRB-", ")": "-RRB-"}
SOURCE_WORDS = st.one_of(
    st.sampled_from(["(", ")", "((", "f(x)", ":-)", "-LRB-", "{", "}", "[", "]", '"', "''",
                     "Zürich", "東京", "a", ".", ",", "*T*", "%s", "\\", "<unk>"]),
    st.text(min_size=1, max_size=6))
SOURCES = st.lists(SOURCE_WORDS, max_size=12).map(" ".join)
TOKENS = st.lists(st.sampled_from(
    ["(S", ")S", "(NP", ")NP", "(VP", ")VP", "(TOP", ")TOP", "NN", "DT", ".", "-LRB-",
     "(", ")", "((", "))", "(A(", ")(", "(-NONE-", "<unk:low>", "XX"]), max_size=30).map(" ".join)


def expected_words(source):
    return ["".join(ESCAPES.get(c, c) for c in word) for word in source.split()]


def check_tree(text, source):
    """One line; one (TOP ...) tree over exactly `source`'s words; EVALB reads it alike."""
    assert "\n" not in text and len(text.splitlines()) == 1
    [tree] = ptb.read_trees(text)
    assert tree.label == "TOP" and ptb.words(tree) == expected_words(source)
    read = evalb_trees.read(text)
    assert not read.errors and [w for w, _ in read.words] == expected_words(source)
    return tree


def _valid_linearization(draw_tags, n):
    """A well-formed target with n word slots: (S (NP t )NP ... )S."""
    slots = [draw_tags[i % len(draw_tags)] for i in range(n)]
    middle = " ".join(f"(NP {t} )NP" if i % 2 else t for i, t in enumerate(slots))
    return f"(S {middle} )S"


@SETTINGS
@given(SOURCES, st.one_of(TOKENS, st.just("")), st.booleans())
def test_any_decoded_tokens_give_a_tree_over_exactly_the_input_words(source, tokens, valid):
    problem = registry.problem("wsj_parsing")
    n = len(source.split())
    if valid and n:
        tokens = _valid_linearization(["NN", "DT", "-LRB-", "."], n)
    text = problem.format_output(source, tokens)
    if not n:
        assert text == ""  # An empty input line stays an empty output line.
        return
    tree = check_tree(text, source)
    if ptb.is_well_formed(tokens, n):  # A good decode is kept as decoded.
        assert ptb.tags(tree) == expected_words(
            " ".join(t for t in tokens.split() if ptb.token_kind(t) == "tag"))


@pytest.mark.parametrize("source", [
    "( )", 'He said "(hi)" .', "f(x) = {a} [b]", "Zürich 東京 München", "word",
    "-LRB- ( -RRB- )", " ".join(f"w{i}" for i in range(150)),
], ids=["brackets", "quotes", "braces", "non-ascii", "one-word", "escapes", "150-words"])
def test_lines_give_readable_trees_well_formed_or_not(source):
    problem = registry.problem("wsj_parsing")
    n = len(source.split())
    for tokens in [_valid_linearization(["NN", "-LRB-"], n), "(S NN )S", "(S (NP", "", ")S NN"]:
        tree = check_tree(problem.format_output(source, tokens), source)
    assert "(" not in "".join(ptb.words(tree)) and ")" not in "".join(ptb.words(tree))


def test_escaped_words_read_back_as_written_and_unescape_to_the_input():
    problem = registry.problem("wsj_parsing")
    source = "f(x) ( ) {a} [b] Zürich"
    tree = ptb.read_trees(problem.format_output(source, "(S NN NN NN NN NN NN )S"))[0]
    assert ptb.words(tree) == ["f-LRB-x-RRB-", "-LRB-", "-RRB-", "{a}", "[b]", "Zürich"]
    assert [ptb.unescape_word(w) for w in ptb.words(tree)] == source.split()
    assert ptb.escape_word("(") == "-LRB-" and ptb.unescape_word("-RRB-") == ")"


TOY_TREES = [
    "( (S (NP-SBJ (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .)) )",
    "( (S (NP-SBJ (DT a) (NN man)) (VP (VBD fed) (NP (DT the) (NN bird) (-LRB- -LRB-) "
    "(NN dog) (-RRB- -RRB-))) (. .)) )",
    "( (NP (NN dog)) )",
]


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_decode_lines_writes_readable_trees_with_an_untrained_model(tmp_path):
    """End to end: datagen on three toy trees, an untrained 1-layer model, the
    constrained search, `decode_lines`; then both readers on what it wrote."""
    import tensorflow as tf

    from t2t_lite.data.datagen import generate
    from t2t_lite.data.options import DatagenOptions
    from t2t_lite.decoding.options import DecodeOptions
    from t2t_lite.decoding.splits import decode_lines
    from t2t_lite.runs import weights

    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "dev", "test"):
        (raw / f"{split}.trees").write_text("\n".join(TOY_TREES * 4) + "\n")
    problem = registry.problem("wsj_parsing")
    generate(problem, str(tmp_path / "data"), str(raw), DatagenOptions(source_vocab_size=300),
             log=lambda *a: None)
    problem.set_data_dir(str(tmp_path / "data"))
    # A raw bracket in the input is the treebank's escaped training word, not unknown.
    assert problem.encode("( dog )") == problem.encode("-LRB- dog -RRB-")
    assert problem.encode("( dog )") != problem.encode("qqq dog zzz")
    hparams = registry.hparams("parsing_small").override(
        "num_layers=1,d_model=16,d_ff=32,num_heads=2,dropout_rate=0.0")
    tf.keras.utils.set_random_seed(0)
    model = weights.build_model(hparams, problem.source_vocab_size, problem.target_vocab_size)
    lines = ["( )", 'Zürich 東京 "(hi)" .', "word", "", "   ",
             " ".join(["the", "dog"] * 15), "f(x) {a} [b]"]  # (150 words: 8 s more)
    options = DecodeOptions(beam_size=1, extra_length=5, constraint=problem.decode_constraint())
    results = decode_lines(problem, model, lines, options, hparams.max_length,
                           warn=lambda m: None)
    outputs = [beams[0][0] for beams in results]
    assert outputs[3] == outputs[4] == ""
    for line, text in zip(lines, outputs):
        if line.strip():
            check_tree(text, line)
    kept = [t for t in outputs if t]
    assert evalb.evaluate(kept, kept).all.errors == 0
