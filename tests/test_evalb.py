"""t2t_lite.metrics.evalb reproduces EVALB (2006) on EVALB's own sample and bug files."""

import math
import re

import pytest
from conftest import data_file

from t2t_lite.bin import evalb as evalb_cli
from t2t_lite.metrics import evalb
from t2t_lite.metrics.base import MetricError

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d)\s+([\d.]+)\s+([\d.]+)" + r"\s+(\d+)" * 6
                 + r"\s+([\d.]+)\s*$")
FIELDS = ("id", "length", "status", "recall", "precision", "matched", "gold", "test",
          "crossing", "words", "correct_tags", "tag_accuracy")


def read_rsl(path):
    """EVALB's output: its rows (dicts) and its two summary blocks (dicts)."""
    rows, blocks = [], []
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m and not blocks:
                rows.append({k: float(v) for k, v in zip(FIELDS, m.groups())})
            elif line.startswith("-- "):
                blocks.append({})
            elif "=" in line and blocks:
                key, value = line.split("=")
                blocks[-1][key.strip()] = float(value)
    return rows, blocks


def score_files(directory, gold, test, prm):
    with open(data_file("evalb", directory, gold)) as g, \
            open(data_file("evalb", directory, test)) as t:
        return evalb.evaluate(g.read().splitlines(), t.read().splitlines(), prm)


def ours(sentence):
    return {"id": sentence.id, "length": sentence.length, "status": sentence.status,
            "recall": round(sentence.recall, 2), "precision": round(sentence.precision, 2),
            "matched": sentence.matched, "gold": sentence.gold, "test": sentence.test,
            "crossing": sentence.crossing, "words": sentence.words,
            "correct_tags": sentence.correct_tags,
            "tag_accuracy": round(sentence.tag_accuracy, 2)}


def check_block(block, expected):
    summary = block.summary()
    for key, value in expected.items():
        assert summary[key] == pytest.approx(value, abs=0.005), key


def test_sample_reproduces_evalb():
    result = score_files("sample", "sample.gld", "sample.tst",
                         data_file("evalb", "sample", "sample.prm"))
    rows, (everything, short) = read_rsl(data_file("evalb", "sample", "sample.rsl"))
    assert len(rows) == len(result.sentences) == 24
    for expected, sentence in zip(rows, result.sentences):
        if expected["status"] != 0:
            # sample.rsl's older EVALB printed the word count for error and
            # skipped sentences; the 2006 version prints 0.
            expected = dict(expected, words=0)
        assert ours(sentence) == expected
    check_block(result.all, everything)
    check_block(result.cut, short)
    # The figures the issue names (2006 EVALB on the sample).
    summary = result.all.summary()
    assert (round(summary["Bracketing Recall"], 2), round(summary["Bracketing Precision"], 2),
            round(summary["Bracketing FMeasure"], 2), round(summary["Tagging accuracy"], 2)) \
        == (87.76, 90.53, 89.12, 98.15)
    assert (result.all.errors, result.all.skipped) == (5, 2)
    # sample.rsl's total row says 16 crossings; 2006 EVALB sums valid sentences: 1
    # (its own Average crossing, 0.06 = 1/17, agrees).
    assert result.all.crossing == 1
    assert [m.split(" : ")[0] for m in result.messages] == ["12", "13", "16", "17", "20"]
    assert "  87.76  90.53     86    98    95      1    108   106    98.15" in result.report()


@pytest.mark.parametrize("prm", ["new", "new.prm", "nk.prm"])
def test_bug_files_with_the_quote_fix_reproduce_rsl_new(prm):
    if prm.endswith(".prm"):
        prm = data_file("evalb", prm)
    result = score_files("bug", "bug.gld", "bug.tst", prm)
    rows, (everything, short) = read_rsl(data_file("evalb", "bug", "bug.rsl-new"))
    assert [ours(s) for s in result.sentences] == rows
    check_block(result.all, everything)
    check_block(result.cut, short)
    assert result.messages == []
    # bug.rsl-new's total row prints 0 crossings against its own Average crossing
    # of 7.20 over 5 sentences; we print the sum, 36.
    assert result.all.crossing == 36


def test_bug_files_without_the_quote_fix_reproduce_rsl_old():
    # bug.rsl-old came from sample.prm's deletions (no QUOTE_LABEL, no ".").
    result = score_files("bug", "bug.gld", "bug.tst", data_file("evalb", "sample", "sample.prm"))
    rows, (everything, short) = read_rsl(data_file("evalb", "bug", "bug.rsl-old"))
    assert [ours(s) for s in result.sentences] == rows
    summary = result.all.summary()
    assert math.isnan(summary.pop("Bracketing FMeasure"))
    check_block(result.all, {k: v for k, v in everything.items() if not math.isnan(v)})
    assert [m for m in result.messages] == [
        "1 : Length unmatch (33|35)", "2 : Length unmatch (19|21)", "3 : Length unmatch (44|45)",
        "4 : Length unmatch (24|26)", "5 : Length unmatch (38|39)"]
    with open(data_file("evalb", "bug", "bug.rsl-old")) as f:
        assert "Bracketing FMeasure       =    nan" in f.read()
    assert "Bracketing FMeasure       =    nan" in result.report()


GOLD = "(TOP (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PRT (RP down))) (. .)))"


def one(gold, test, prm=None):
    return evalb.evaluate([gold], [test], prm).sentences[0]


def test_identical_trees_score_100():
    score = evalb.EvalbF1().score([GOLD], [GOLD])
    assert score.name == "evalb_f1" and score.value == 100.0
    assert "F1 100.00" in score.line and "1 valid" in score.line
    s = one(GOLD, GOLD)
    # TOP deleted, "." deleted with its word: S NP VP PRT over 4 words.
    assert (s.gold, s.test, s.matched, s.words, s.length) == (4, 4, 4, 4, 5)


def test_a_missing_bracket_lowers_recall_only():
    test = "(TOP (S (NP (DT The) (NN cat)) (VBD sat) (PRT (RP down)) (. .)))"
    s = one(GOLD, test)
    assert (s.matched, s.gold, s.test) == (3, 4, 3)
    assert (s.recall, s.precision) == (75.0, 100.0)
    assert evalb.EvalbF1().score([test], [GOLD]).value == pytest.approx(200 * 0.75 / 1.75)


def test_label_equivalence_and_function_tags():
    # ADVP = PRT under COLLINS.prm; NP-SBJ -> NP; tags compare as written.
    test = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (ADVP (RB down))) (. .))"
    s = one(GOLD, test)
    assert (s.matched, s.gold, s.test, s.correct_tags) == (4, 4, 4, 3)
    no_eq = evalb.parse_params(evalb.COLLINS_PRM.replace("EQ_LABEL ADVP PRT\n", ""))
    assert one(GOLD, test, no_eq).matched == 3


def test_punctuation_is_deleted_before_spans():
    gold = "(S (NP (NNP John)) (, ,) (VP (VBD left)) (. .))"
    test = "(S (NP (NNP John) (, ,)) (VP (VBD left) (. .)))"  # spans differ only by punctuation
    s = one(gold, test)
    assert (s.matched, s.gold, s.test, s.crossing, s.words, s.length) == (3, 3, 3, 0, 2, 4)
    # A punctuation mark tagged as a word in one tree: a length mismatch error.
    s = one(gold, "(S (NP (NNP John)) (NN ,) (VP (VBD left)) (. .))")
    assert s.status == 1 and "Length unmatch (2|3)" in s.messages


def test_crossing_and_cutoff():
    gold = "(S (A (x a) (x b)) (x c))"
    s = one(gold, "(S (x a) (B (x b) (x c)))")
    assert (s.crossing, s.matched) == (1, 1)
    long_gold = "(S " + " ".join(f"(x w{i})" for i in range(41)) + ")"
    result = evalb.evaluate([gold, long_gold], [gold, long_gold])
    assert (result.all.sentences, result.cut.sentences) == (2, 1)


def test_unbalanced_brackets():
    with pytest.raises(evalb.TreeError) as info:
        evalb.validate_tree("(S (NP (DT a) (NN b))")
    assert isinstance(info.value, ValueError) and isinstance(info.value, MetricError)
    assert "unbalanced" in str(info.value)
    evalb.validate_tree(GOLD)
    for bad in ("(S (NP (DT a) (NN b))", "(S (DT a))) (NN b)", "(S a b)", "S (NN a)"):
        s = one(GOLD, bad)
        assert s.status == 1 and s.messages, bad
    # The metric leaves such hypotheses out as errors and says so.
    score = evalb.EvalbF1().score([GOLD, "(S (NP (DT The) (NN cat)"], [GOLD, GOLD])
    assert score.value == 100.0 and "1 errors" in score.line


def test_max_error_stops_as_evalb():
    params = evalb.parse_params("MAX_ERROR 1\n")
    with pytest.raises(evalb.EvalbError, match="MAX_ERROR=1"):
        evalb.evaluate(["(S (x a))"] * 3, ["(S (x b))"] * 3, params)
    assert evalb.evaluate(["(S (x a))"] * 2, ["(S (x b))"] * 2, params).all.errors == 2


def test_cli(tmp_path, capsys):
    gold, test = tmp_path / "g", tmp_path / "t"
    gold.write_text(GOLD + "\n" + GOLD + "\n")
    test.write_text(GOLD + "\n(S (NP (DT The) (NN cat)\n")
    assert evalb_cli.main(["--gold", str(gold), "--test", str(test)]) == 0
    out, err = capsys.readouterr()
    assert "Bracketing FMeasure       = 100.00" in out
    assert "Number of Error sentence  =      1" in out
    assert "2 : test: Bracketing is unbalanced" in err and "Traceback" not in err
    test.write_text("(S (x a b c)\n" * 13)
    gold.write_text((GOLD + "\n") * 13)
    assert evalb_cli.main(["--gold", str(gold), "--test", str(test)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("t2t_lite-evalb: error: more than MAX_ERROR=10")
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert evalb_cli.main(["--gold", str(tmp_path / "absent"), "--test", str(test)]) == 2
    assert "file not found" in capsys.readouterr().err
