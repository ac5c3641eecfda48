"""Tests for t2t_lite.metrics.bleu (sacreBLEU and tokenized multi-bleu BLEU)."""

import collections
import dataclasses
import doctest
import json
import math
import os
import subprocess
import sys

import pytest
import sacrebleu

from t2t_lite.bin import bleu as bleu_cli
from t2t_lite.metrics import bleu

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata",
                    "bleu")
REF = os.path.join(DATA, "newstest2014.ref.de")
HYP = os.path.join(DATA, "newstest2014.hyp.de")


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def _reference_multi_bleu(hyps, refs):
    """Independent multi-bleu.perl, one reference: clipped counts, no smoothing."""
    correct, total = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for hyp, ref in zip(hyps, refs):
        h, r = hyp.split(), ref.split()
        hyp_len += len(h)
        ref_len += len(r)
        for n in range(1, 5):
            h_ngrams = collections.Counter(
                tuple(h[i:i + n]) for i in range(len(h) - n + 1))
            r_ngrams = collections.Counter(
                tuple(r[i:i + n]) for i in range(len(r) - n + 1))
            total[n - 1] += sum(h_ngrams.values())
            correct[n - 1] += sum(
                min(c, r_ngrams[g]) for g, c in h_ngrams.items())
    precisions = [100.0 * c / t if t else 0.0 for c, t in zip(correct, total)]
    if hyp_len == 0:
        return 0.0, precisions, 0.0, hyp_len, ref_len
    bp = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    if min(correct) == 0:
        return 0.0, precisions, bp, hyp_len, ref_len
    log_mean = sum(math.log(c / t) for c, t in zip(correct, total)) / 4
    return 100 * bp * math.exp(log_mean), precisions, bp, hyp_len, ref_len


def _assert_matches_reference(result, hyps, refs):
    score, precisions, bp, hyp_len, ref_len = _reference_multi_bleu(hyps, refs)
    assert result.score == pytest.approx(score, abs=1e-9)
    assert list(result.precisions) == pytest.approx(precisions, abs=1e-9)
    assert result.bp == pytest.approx(bp, abs=1e-12)
    assert (result.sys_len, result.ref_len) == (hyp_len, ref_len)


# --- sacreBLEU ---------------------------------------------------------------


def test_sacrebleu_score_equals_sacrebleu_cli():
    out = subprocess.run(
        [sys.executable, "-m", "sacrebleu", REF, "-i", HYP, "-f", "json",
         "-w", "4"], capture_output=True, text=True, check=True, timeout=120).stdout
    cli = json.loads(out)
    result = bleu.sacrebleu_score(_lines(HYP), _lines(REF))
    assert result.score == pytest.approx(cli["score"], abs=0.01)
    assert result.signature == cli["signature"]
    assert result.signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a|")
    # The one-line format is sacreBLEU's own: "BLEU = 91.49 98.4/92.8/...".
    assert result.format().startswith("BLEU = %.2f " % cli["score"])
    assert cli["verbose_score"].split(" (")[0] in result.format()


def test_sacrebleu_options_reach_signature():
    result = bleu.sacrebleu_score(["Ein Haus am See."], ["ein haus am see."],
                                  tokenize="intl", lowercase=True)
    assert "case:lc" in result.signature and "tok:intl" in result.signature
    assert result.score == pytest.approx(100.0)


def test_result_is_frozen():
    result = bleu.sacrebleu_score(["a b c d"], ["a b c d"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.score = 1.0


# --- tokenized (paper-comparable) BLEU ---------------------------------------


def test_tokenized_bleu_matches_independent_multi_bleu_on_files():
    hyps, refs = _lines(HYP), _lines(REF)
    result = bleu.tokenized_bleu(hyps, refs)

    def prep(s):
        return bleu.compound_split(bleu.moses_tokenize(s, "de"))

    _assert_matches_reference(result, [prep(h) for h in hyps],
                              [prep(r) for r in refs])
    assert "moses+compound-split" in result.signature
    assert "multi-bleu" in result.signature


def test_tokenized_bleu_golden_from_perl_tools():
    # tokenizer.perl -l de | perl -ple 's{(\S)-(\S)}{...}g' | multi-bleu.perl
    result = bleu.tokenized_bleu(_lines(HYP), _lines(REF))
    assert result.score == pytest.approx(91.786141, abs=1e-5)
    assert list(result.precisions) == pytest.approx(
        [98.4421, 92.9807, 89.6699, 87.1508], abs=1e-4)
    assert result.bp == pytest.approx(0.998054, abs=1e-6)
    assert (result.sys_len, result.ref_len) == (1027, 1029)
    assert result.format() == ("BLEU = 91.79, 98.4/93.0/89.7/87.2 (BP=0.998, "
                               "ratio=0.998, hyp_len=1027, ref_len=1029)")


@pytest.mark.parametrize("hyps,refs", [
    (["the cat sat on the mat", "a b"], ["the cat is on the mat", "a b c"]),
    (["the the the the the the the"], ["the cat is on the mat"]),  # clipping
    (["x y z w v u"], ["x y z q v u w"]),  # no 4-gram match -> 0
    (["one two three", "four five six seven eight"],
     ["one two three four", "four five six seven eight"]),  # brevity penalty
    (["a b c d e f g h"], ["a b c d"]),  # longer than the reference: BP = 1
    (["a  b\tc d e"], [" a b c d e "]),  # any whitespace separates tokens
])
def test_multi_bleu_equals_independent_implementation(hyps, refs):
    _assert_matches_reference(bleu.multi_bleu(hyps, refs), hyps, refs)


def test_tokenized_is_case_sensitive():
    result = bleu.tokenized_bleu(["Das Haus ist sehr groß ."],
                                 ["das haus ist sehr groß ."])
    assert result.score < 100.0


def test_moses_tokenize_matches_perl_tokenizer_on_fixtures():
    for name in ("ref", "hyp"):
        raw = _lines(os.path.join(DATA, "newstest2014.%s.de" % name))
        tok = _lines(os.path.join(DATA, "newstest2014.%s.tok.de" % name))
        assert [bleu.moses_tokenize(s, "de") for s in raw] == tok


@pytest.mark.parametrize("text,lang,expected", [
    ("I don't know, it's 1,000.5 dollars (approx.) -- Mr. Smith's 1990's "
     "\"quote\" e.g. this... No. 5 and No. Way.", "en",
     "I don 't know , it 's 1,000.5 dollars ( approx . ) -- Mr. Smith 's "
     "1990 's \" quote \" e.g. this ... No. 5 and No . Way ."),
    ("\"Hello,\" she said; 'it's [really] fine!'", "en",
     "\" Hello , \" she said ; ' it 's [ really ] fine ! '"),
    ("The U.S. economy grew 3.5% in Q2, officials said.", "en",
     "The U.S. economy grew 3.5 % in Q2 , officials said ."),
    ("Rock'n'roll isn't dead: it's \"alive\" & well...", "en",
     "Rock 'n'roll isn 't dead : it 's \" alive \" & well ..."),
    ("den Seinen gibt's der Herr", "en", "den Seinen gibt 's der Herr"),
    ("Am 3. Oktober sagte Dr. Müller, z.B. gibt's 1.000 Euro... "
     "Wann wird's Sommer?", "de",
     "Am 3. Oktober sagte Dr. Müller , z.B. gibt ' s 1.000 Euro ... "
     "Wann wird ' s Sommer ?"),
    ("Das kostet ca. 5 Mio. Euro, d.h. mehr als erwartet.", "de",
     "Das kostet ca. 5 Mio. Euro , d.h. mehr als erwartet ."),
    ("Die Steuer von 18,4 Cent (weniger als 4 Eurocent) ist gleich.", "de",
     "Die Steuer von 18,4 Cent ( weniger als 4 Eurocent ) ist gleich ."),
    ("Jahre 1990,2000 und Tabelle A,1 sowie 3,b und 5,", "de",
     "Jahre 1990,2000 und Tabelle A , 1 sowie 3 , b und 5 ,"),
    ("  „Hallo“  ", "de", "„ Hallo “"),
    ("", "de", ""),
])
def test_moses_tokenize_golden(text, lang, expected):
    assert bleu.moses_tokenize(text, lang) == expected


@pytest.mark.parametrize("text,expected", [
    ("Hausbau-Projekt", "Hausbau ##AT##-##AT## Projekt"),
    ("die neue B 33-Fußgängerampel",
     "die neue B 33 ##AT##-##AT## Fußgängerampel"),
    ("worden - in Sichtweite", "worden - in Sichtweite"),  # standalone hyphen
    ("- ", "- "),
    ("-5 und 5-", "-5 und 5-"),
    # Perl's s///g does not rescan what it consumed: "a-b-c" splits once.
    ("a-b-c", "a ##AT##-##AT## b-c"),
    ("x--y", "x ##AT##-##AT## -y"),
])
def test_compound_split_golden(text, expected):
    assert bleu.compound_split(text) == expected


# --- edge cases ----------------------------------------------------------------


def test_identical_is_100_for_both():
    refs = _lines(REF)
    assert bleu.sacrebleu_score(refs, refs).score == pytest.approx(100.0)
    assert bleu.tokenized_bleu(refs, refs).score == pytest.approx(100.0)


@pytest.mark.parametrize("hyps,refs", [(["", ""], ["ein Haus .", "zwei"]),
                                       ([], [])])
def test_empty_hypotheses_score_zero(hyps, refs):
    for fn in (bleu.sacrebleu_score, bleu.tokenized_bleu):
        result = fn(hyps, refs)
        assert result.score == 0.0
        assert result.sys_len == 0
        assert result.format().startswith("BLEU = 0.00")


def test_list_length_mismatch_raises():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        bleu.sacrebleu_score(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        bleu.tokenized_bleu(["a", "b"], ["a"])


def test_docstring_example():
    failures, tried = doctest.testmod(bleu)
    assert tried >= 3 and failures == 0


# --- files and CLI ----------------------------------------------------------------


def test_bleu_files_reads_both_scores():
    detok, tok = bleu.bleu_files(HYP, REF)
    assert detok == bleu.sacrebleu_score(_lines(HYP), _lines(REF))
    assert tok.score == pytest.approx(91.786141, abs=1e-5)


def test_bleu_files_line_count_mismatch(tmp_path):
    short = tmp_path / "short.de"
    short.write_text("eins\nzwei\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        bleu.bleu_files(str(short), REF)
    message = str(err.value)
    assert str(short) in message and REF in message
    assert "2 lines" in message and "44 lines" in message
    assert "\n" not in message


def test_cli_prints_two_labelled_lines(capsys):
    assert bleu_cli.main(["--hypotheses=" + HYP, "--reference=" + REF]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert out[0].startswith(
        "sacreBLEU (detokenized, report this): BLEU = 91.49 ")
    assert out[0].endswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|"
                           "version:" + sacrebleu.__version__)
    assert out[1].startswith("tokenized BLEU (paper-comparable, moses + "
                             "compound splitting): BLEU = 91.79, ")


@pytest.mark.guarantee("one-line-errors", "t2t_lite-bleu given a missing file or files of "
                       "different lengths prints one line naming the file, exit 2")
@pytest.mark.parametrize("which", ["mismatch", "missing"])
def test_cli_errors_exit_2_with_one_line(tmp_path, capsys, which):
    hyp = tmp_path / "hyp.de"
    if which == "mismatch":
        hyp.write_text("eins\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        bleu_cli.main(["--hypotheses", str(hyp), "--reference", REF])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.splitlines()
    assert len(err) == 1 and err[0].startswith("t2t_lite-bleu: error: ")
    assert str(hyp) in err[0]
    assert "Traceback" not in captured.err


def test_cli_prints_chrf_and_ter_as_sacrebleu_computes_them(capsys):
    assert bleu_cli.main(["--hypotheses=" + HYP, "--reference=" + REF,
                          "--metrics=ter,bleu,chrf"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[1].startswith("sacreBLEU (detokenized")
    hyps, refs = _lines(HYP), _lines(REF)
    ter = sacrebleu.corpus_ter(hyps, [refs])
    chrf = sacrebleu.corpus_chrf(hyps, [refs])
    assert out[0].startswith(f"TER (sacreBLEU, lower is better): {ter.format()} ")
    assert "nrefs:1|case:lc|tok:tercom" in out[0]
    assert out[3].startswith(f"chrF (sacreBLEU): {chrf.format()} nrefs:1|case:mixed")
    assert bleu_cli.main(["--hypotheses=" + HYP, "--reference=" + REF, "--metrics=chrf"]) == 0
    assert capsys.readouterr().out.splitlines() == out[3:]


@pytest.mark.guarantee("one-line-errors", "an unknown --metrics name is one line naming it "
                       "and the known ones, exit 2")
def test_cli_unknown_metric_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        bleu_cli.main(["--hypotheses=" + HYP, "--reference=" + REF, "--metrics=bleu,meteor"])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        "t2t_lite-bleu: error: argument --metrics: unknown metric meteor: use bleu, chrf or "
        "ter (see t2t_lite-bleu --help)"]
