"""Corpus BLEU two ways: sacreBLEU (report this) and tokenized multi-bleu (paper).

* `sacrebleu_score` is corpus BLEU from sacreBLEU on detokenized text (its own
  13a tokenization, exponential smoothing) plus its signature. This is the number
  to report: it is reproducible from the signature alone.
* `tokenized_bleu` is the number Vaswani et al. (2017) reported (27.3 base /
  28.4 big on newstest2014 en-de), computed the way tensor2tensor's
  `get_ende_bleu.sh` did: Moses `tokenizer.perl` on both sides (`moses_tokenize`),
  every intra-word hyphen split as `a ##AT##-##AT## b` (`compound_split`), then
  `multi-bleu.perl` on whitespace tokens (`multi_bleu`: case-sensitive, no
  smoothing). Splitting compounds turns one word into three mostly-matching
  tokens, so on WMT en-de it reads about 0.5-1 BLEU above sacreBLEU. Use it only
  to compare with the paper. (The script also ran
  `replace-unicode-punctuation.perl` on the hypotheses; that step is left out.)

Example: one German sentence with a compound and one wrong word (on a single
short sentence the gap is far larger than on a test set):

>>> hyp = ["Das Hausbau-Projekt wurde am Mittwoch genehmigt."]
>>> ref = ["Das Hausbau-Projekt wurde am Dienstag genehmigt."]
>>> sacrebleu_score(hyp, ref).format()
'BLEU = 48.89 85.7/66.7/40.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)'
>>> compound_split(moses_tokenize(hyp[0], "de"))
'Das Hausbau ##AT##-##AT## Projekt wurde am Mittwoch genehmigt .'
>>> tokenized_bleu(hyp, ref).format()
'BLEU = 66.06, 88.9/75.0/57.1/50.0 (BP=1.000, ratio=1.000, hyp_len=9, ref_len=9)'
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from sacrebleu.metrics import BLEU

from t2t_lite.metrics.base import Metric, MetricError, Score, check_lengths, read_lines

_ROMAN = "I II III IV V VI VII VIII IX X XI XII XIII XIV XV XVI XVII XVIII XIX XX"
_TITLES = set(
    "Adj Adm Adv Asst Bart Bldg Brig Bros Capt Cmdr Col Comdr Con Corp Cpl DR Dr "
    "Drs Ens Gen Gov Hon Hr Hosp Insp Lt MM MR MRS MS Maj Messrs Mlle Mme Mr Mrs "
    "Ms Msgr Op Ord Pfc Ph Prof Pvt Rep Reps Res Rev Rt Sen Sens Sfc Sgt Sr St "
    "Supt Surg".split())
_UPPER = "A B C D E F G H I J K L M N O P Q R S T U V W X Y Z"
# Moses' nonbreaking_prefix.{en,de}: "X." is not a sentence end (1), or only
# before a digit (2, "#NUMERIC_ONLY#"). Other languages use the English list.
_PREFIXES = {
    "en": dict.fromkeys(
        _UPPER.split() + sorted(_TITLES) + "v vs i.e rev e.g Rs Nos Nr Jan Feb "
        "Mar Apr Jun Jul Aug Sep Oct Nov Dec".split(), 1)
    | dict.fromkeys(["No", "Art", "pp"], 2),
    "de": dict.fromkeys(
        _UPPER.split() + _UPPER.lower().split() + _ROMAN.split()
        + _ROMAN.lower().split() + sorted(_TITLES - {"Drs", "Hr"})
        + "Mio Mrd bzw v vs usw d.h z.B u.a etc MwSt ggf d.J D.h m.E vgl I.F z.T "
        "sogen ff u.E g.U g.g.A c.-à-d Buchst u.s.w sog u.ä Std evtl Zt Chr u.U "
        "o.ä Ltd b.A z.Zt spp sen SA k.o jun i.H.v dgl dergl Co zzt usf s.p.a "
        "Dkr Corp bzgl BSE No Nos Art Nr pp ca Ca".split()
        + [str(i) for i in range(1, 100)], 1),
}
# Perl's \p{IsAlpha} / not-IsAlpha as Python classes (\d stands in for \p{IsN}).
_A, _NA = r"[^\W\d_]", r"[\W\d_]"
_APOSTROPHE_RULES = {
    "en": [(rf"({_NA})'({_NA})", r"\1 ' \2"), (rf"([\W_])'({_A})", r"\1 ' \2"),
           (rf"({_A})'({_NA})", r"\1 ' \2"), (rf"({_A})'({_A})", r"\1 '\2"),
           (r"(\d)'(s)", r"\1 '\2")],
    "fr": [(rf"({_NA})'({_NA})", r"\1 ' \2"), (rf"({_NA})'({_A})", r"\1 ' \2"),
           (rf"({_A})'({_NA})", r"\1 ' \2"), (rf"({_A})'({_A})", r"\1' \2")],
}
for _lang in ("it", "ga", "ca"):
    _APOSTROPHE_RULES[_lang] = _APOSTROPHE_RULES["fr"]


@dataclasses.dataclass(frozen=True)
class BleuResult:
    """A corpus BLEU score and how it was computed.

    Attributes:
      score: BLEU in [0, 100]. precisions: n-gram precisions (percent), n = 1..4.
      signature: sacreBLEU's signature, or the tokenized pipeline's description.
      bp, sys_len, ref_len: brevity penalty, hypothesis and reference tokens.
      line: the one-line report as sacreBLEU or multi-bleu.perl prints it.
    """

    score: float
    signature: str
    precisions: tuple[float, ...]
    bp: float
    sys_len: int
    ref_len: int
    line: str

    def format(self) -> str:
        """Returns the line sacreBLEU (or multi-bleu.perl) prints for it."""
        return self.line


def _corpus_bleu(metric: BLEU, hypotheses, references):
    check_lengths(hypotheses, references)
    if not hypotheses:  # sacreBLEU cannot score an empty corpus; this is the same
        hypotheses, references = [""], [""]
    return metric.corpus_score(list(hypotheses), [list(references)])


def sacrebleu_score(hypotheses: Sequence[str], references: Sequence[str],
                    tokenize: str = "13a", lowercase: bool = False) -> BleuResult:
    """Corpus BLEU of detokenized text with sacreBLEU: the score to report.

    Args:
      hypotheses: system outputs, one detokenized segment each.
      references: one reference segment per hypothesis.
      tokenize: sacreBLEU tokenizer name ("13a", "intl", "none", ...).
      lowercase: compare lowercased text.

    Returns:
      A BleuResult with sacreBLEU's signature and one-line format. Raises
      MetricError (a ValueError) if the two lists differ in length.
    """
    metric = BLEU(tokenize=tokenize, lowercase=lowercase)
    s = _corpus_bleu(metric, hypotheses, references)
    return BleuResult(s.score, str(metric.get_signature()), tuple(s.precisions),
                      s.bp, s.sys_len, s.ref_len, s.format())


def multi_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> BleuResult:
    """multi-bleu.perl on pre-tokenized text (whitespace tokens, one reference).

    Case-sensitive, unsmoothed: 0 if any n-gram precision is 0; brevity penalty
    exp(1 - r/c) when c < r. Computed with sacreBLEU's tokenize="none",
    smooth_method="none", which gives the same numbers.
    """
    s = _corpus_bleu(BLEU(tokenize="none", smooth_method="none", force=True),
                     hypotheses, references)
    p = s.precisions
    ratio = s.sys_len / s.ref_len if s.ref_len else 0.0
    line = (f"BLEU = {s.score:.2f}, {p[0]:.1f}/{p[1]:.1f}/{p[2]:.1f}/{p[3]:.1f} "
            f"(BP={s.bp:.3f}, ratio={ratio:.3f}, hyp_len={s.sys_len}, "
            f"ref_len={s.ref_len})")
    return BleuResult(s.score, "tokenized: none (pre-tokenized), multi-bleu|"
                      "case:mixed|smooth:none", tuple(p), s.bp, s.sys_len,
                      s.ref_len, line)


def moses_tokenize(text: str, lang: str = "de") -> str:
    """Tokenizes like Moses `tokenizer.perl -l LANG -no-escape` (no -a).

    Splits off punctuation and symbols except inside numbers ("1,000.5" stays),
    keeps "..." together, splits a final "." unless the word is a non-breaking
    prefix ("Dr.", "z.B.", German ordinals "3.") or a lowercase word follows,
    and splits apostrophes: English "don't" -> "don 't", French/Italian "l'a"
    -> "l' a", German and others "gibt's" -> "gibt ' s". Nothing is escaped.
    """
    text = re.sub(r"\s+", " ", re.sub(r"[\x00-\x08\x0e-\x1f]", "", text)).strip()
    if not text:
        return ""
    text = re.sub(r"([^\w\s.'`,\-]|_)", r" \1 ", text)
    text = re.sub(r"\.(\.+)", r" DOTMULTI\1", text)
    while "DOTMULTI." in text:
        text = re.sub(r"DOTMULTI\.([^.])", r"DOTDOTMULTI \1", text)
        text = text.replace("DOTMULTI.", "DOTDOTMULTI")
    text = re.sub(r"(\D),", r"\1 , ", text)
    text = re.sub(r",(\D)", r" , \1", text)
    text = re.sub(r"(\d),$", r"\1 ,", text)
    if lang in _APOSTROPHE_RULES:
        for pattern, repl in _APOSTROPHE_RULES[lang]:
            text = re.sub(pattern, repl, text)
    else:
        text = text.replace("'", " ' ")
    prefixes = _PREFIXES.get(lang, _PREFIXES["en"])
    words = text.split(" ")
    while words and not words[-1]:  # Perl's split drops trailing empty fields
        words.pop()
    for i, word in enumerate(words):
        match = re.fullmatch(r"(\S+)\.", word)
        if not match:
            continue
        pre = match.group(1)
        nxt = words[i + 1] if i + 1 < len(words) else None
        keep = nxt is not None and (
            ("." in pre and re.search(_A, pre)) or prefixes.get(pre) == 1
            or nxt[:1].islower()
            or (prefixes.get(pre) == 2 and re.match("[0-9]", nxt)))
        if not keep:
            words[i] = pre + " ."
    text = re.sub(r" +", " ", " ".join(words)).strip()
    text = re.sub(r"\.' ?$", " . ' ", text)
    while "DOTDOTMULTI" in text:
        text = text.replace("DOTDOTMULTI", "DOTMULTI.")
    return text.replace("DOTMULTI", ".").strip()


def compound_split(text: str) -> str:
    """get_ende_bleu.sh's `perl -ple 's{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g'`.

    "Hausbau-Projekt" -> "Hausbau ##AT##-##AT## Projekt"; a free-standing "-"
    is kept. Like Perl's s///g it does not rescan: "a-b-c" -> "a ##AT##-##AT## b-c".
    """
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", text, flags=re.ASCII)


def tokenized_bleu(hypotheses: Sequence[str], references: Sequence[str],
                   lang: str = "de") -> BleuResult:
    """Paper-comparable BLEU: Moses tokenization, compound splitting, multi-bleu.

    Args:
      hypotheses: detokenized system outputs.
      references: detokenized references, one per hypothesis.
      lang: language of both sides, for `moses_tokenize`.

    Returns:
      A BleuResult whose `format()` is multi-bleu.perl's output line. Raises
      MetricError (a ValueError) if the two lists differ in length.
    """
    check_lengths(hypotheses, references)

    def prepare(segments):
        return [compound_split(moses_tokenize(s, lang)) for s in segments]

    result = multi_bleu(prepare(hypotheses), prepare(references))
    signature = (f"tokenized: moses+compound-split, multi-bleu|lang:{lang}|"
                 "case:mixed|smooth:none")
    return dataclasses.replace(result, signature=signature)


class SacreBleu(Metric):
    """sacreBLEU of detokenized text, with its signature: the score to report."""

    name = "sacrebleu"

    def __init__(self, tokenize: str = "13a"):
        self.tokenize = tokenize

    def score(self, hypotheses, references, sources=None) -> Score:
        result = sacrebleu_score(hypotheses, references, self.tokenize)
        return Score(self.name, result.score, f"sacreBLEU (detokenized, report this): "
                     f"{result.format()} {result.signature}")


class TokenizedBleu(Metric):
    """The paper's tokenized BLEU (Moses tokenization in `lang`, compound splitting)."""

    name = "bleu_tokenized"

    def __init__(self, lang: str):
        self.lang = lang

    def score(self, hypotheses, references, sources=None) -> Score:
        result = tokenized_bleu(hypotheses, references, self.lang)
        return Score(self.name, result.score, "tokenized BLEU (paper-comparable, moses + "
                     f"compound splitting, {self.lang}): {result.format()}")


def bleu_files(hyp_path: str, ref_path: str,
               lang: str = "de") -> tuple[BleuResult, BleuResult]:
    """Scores a UTF-8 hypothesis file against a reference file, line by line.

    Returns:
      (sacrebleu_score(hyps, refs), tokenized_bleu(hyps, refs, lang)).

    Raises:
      OSError: if a file cannot be read.
      MetricError (a ValueError): if the files differ in line count or are not UTF-8.
    """
    hyps, refs = read_lines(hyp_path), read_lines(ref_path)
    if len(hyps) != len(refs):
        raise MetricError(f"line counts differ: hypotheses {hyp_path} has "
                          f"{len(hyps)} lines, reference {ref_path} has "
                          f"{len(refs)} lines")
    return sacrebleu_score(hyps, refs), tokenized_bleu(hyps, refs, lang)
