"""EVALB's labelled bracketing scores, in pure Python, with EVALB's exact semantics.

Follows EVALB 20060307 (Sekine & Collins 1997, with David Ellis's 2006
length-mismatch fix), the version parser papers report with: for a parameter
file (COLLINS.prm, new.prm, ...) it gives the same per-sentence rows and the
same summary, including its quirks:

- DELETE_LABEL on a preterminal (a POS tag such as `,` `:` `` '' . -NONE-)
  deletes the word, so spans are counted over the remaining words; on a
  non-terminal (TOP, S1) it deletes only that bracket. A bracket left spanning
  nothing is dropped. Words' tags are compared as written, brackets' labels
  after cutting the function tag at the first `-` or `=` (NP-SBJ-1 -> NP).
- The outermost bracket counts like any other unless its label is deleted.
- A sentence's length (for the CUTOFF_LEN summary) counts every word whose tag
  is not in DELETE_LABEL_FOR_LENGTH, punctuation included.
- EQ_LABEL / EQ_WORD pairs compare equal (not transitively).
- QUOTE_LABEL (new.prm): a quote word deleted in one tree and tagged otherwise
  in the other is put back (the 2006 fix) before the lengths are compared.
- An empty test line is skipped (Stat. 2); a length or word mismatch, or a
  malformed line, is an error (Stat. 1); neither counts in the figures. EVALB
  stops after more than MAX_ERROR errors; so does `evaluate` (EvalbError).

Where EVALB's C has undefined behaviour or loops forever (a close bracket with
nothing open, text outside brackets, a bracket with more than two elements),
this scorer marks the sentence as an error with zero figures and goes on.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import math
from typing import Iterable, Sequence

from t2t_lite.metrics import trees
from t2t_lite.metrics.base import Metric, Score, check_lengths
from t2t_lite.metrics.evalb_params import (  # noqa: F401  (re-exported)
    BUILTIN_PRM, COLLINS_PRM, NEW_PRM, EvalbError, Params, load_params, parse_params,
)
from t2t_lite.metrics.trees import TreeError, validate_tree

__all__ = ["EvalbError", "EvalbF1", "Params", "Result", "Sentence", "Totals", "TreeError",
           "evaluate", "load_params", "parse_params", "score_sentence", "validate_tree"]


def _read(line: str, params: Params) -> trees.Tree:
    return trees.read(line, params.delete_labels, params.delete_labels_for_length,
                      params.quote_labels)


def _fix_quotes(gold: trees.Tree, test: trees.Tree, params: Params) -> None:
    """The 2006 fix: reinserts quote words one tree deleted and the other tagged."""
    deleted = params.delete_labels
    for i, tq in enumerate(test.quotes):
        index = tq.index
        for j, gq in enumerate(gold.quotes):
            if gq.index != index or gq.label == tq.label:
                continue
            if gq.label in deleted and tq.label not in deleted:
                _reinsert(gq, gold)
                for other in gold.quotes[j:]:
                    other.index += 1
            elif tq.label in deleted and gq.label not in deleted:
                _reinsert(tq, test)
                for other in test.quotes[i:]:
                    other.index += 1


def _reinsert(quote: trees.QuoteWord, tree: trees.Tree) -> None:
    tree.words.insert(quote.index, (quote.word, quote.label))
    for bracket in tree.brackets[quote.bracket:]:
        bracket.start += 1
        bracket.end += 1
    for k in quote.ends:
        tree.brackets[k].end += 1


def _massage(tree: trees.Tree, params: Params) -> int:
    """Marks empty and deleted brackets, cuts function tags; returns the rest's count."""
    for b in tree.brackets:
        b.result = 0
        if b.start == b.end:
            b.result = 5
            continue
        for k, c in enumerate(b.label):
            if c in "-=":
                b.label = b.label[:k]
                break
        if any(params.label_eq(b.label, d) for d in params.delete_labels):
            b.result = 5
    return sum(b.result != 5 for b in tree.brackets)


class _Rates:
    """Recall, precision and tagging accuracy of bracket and tag counts (percent)."""

    @property
    def recall(self) -> float:
        return 100.0 * self.matched / self.gold if self.gold else 0.0

    @property
    def precision(self) -> float:
        return 100.0 * self.matched / self.test if self.test else 0.0

    @property
    def tag_accuracy(self) -> float:
        return 100.0 * self.correct_tags / self.words if self.words else 0.0


@dataclasses.dataclass
class Sentence(_Rates):
    """One row of EVALB's table."""

    id: int
    length: int
    status: int  # 0 valid, 1 error, 2 skip
    matched: int = 0
    gold: int = 0
    test: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    messages: tuple[str, ...] = ()

    def row(self) -> str:
        return (f"{self.id:4d}  {self.length:3d}    {self.status:d}  "
                f"{self.recall:6.2f} {self.precision:6.2f}   {self.matched:3d}    "
                f"{self.gold:3d}  {self.test:3d}    {self.crossing:3d}   "
                f"{self.words:4d}  {self.correct_tags:4d}   {self.tag_accuracy:6.2f}")


def score_sentence(index: int, gold_line: str, test_line: str, params: Params) -> Sentence:
    """EVALB's figures for one gold/test pair (EVALB's calc_result)."""
    gold, test = _read(gold_line, params), _read(test_line, params)
    messages = [f"gold: {m}" for m in gold.errors] + [f"test: {m}" for m in test.errors]
    status = 1 if messages else 0
    if gold.fatal or test.fatal:
        return Sentence(index, gold.length, 1, messages=tuple(messages))
    if not test.words:
        return Sentence(index, gold.length, 2, messages=tuple(messages))
    if len(gold.words) != len(test.words):
        _fix_quotes(gold, test, params)
        if len(gold.words) != len(test.words):
            messages.append(f"Length unmatch ({len(gold.words)}|{len(test.words)})")
            return Sentence(index, gold.length, 1, messages=tuple(messages))
    for (gw, _), (tw, _) in zip(gold.words, test.words):
        if not params.word_eq(gw, tw):
            messages.append(f"Words unmatch ({gw}|{tw})")
            return Sentence(index, gold.length, 1, messages=tuple(messages))
    n_gold, n_test = _massage(gold, params), _massage(test, params)
    matched = _match(gold.brackets, test.brackets, params)
    crossing = _crossing([(b.start, b.end) for b in gold.brackets if b.result != 5],
                         [(b.start, b.end) for b in test.brackets if b.result != 5])
    tags = sum(params.label_eq(g[1], t[1]) for g, t in zip(gold.words, test.words))
    return Sentence(index, gold.length, status, matched, n_gold, n_test, crossing,
                    len(gold.words), tags, tuple(messages))


def _match(gold: list[trees.Bracket], test: list[trees.Bracket], params: Params) -> int:
    """EVALB's matching: each gold bracket, in order, takes the first unmatched test
    bracket of its span and an equal label (EQ_LABEL); marks both 1, returns the count.

    Test brackets are pooled by (span, label), so deep or long trees cost linear time.
    """
    pool: dict[tuple[int, int, str], collections.deque] = {}
    for index, t in enumerate(test):
        if t.result == 0:
            key = (t.start, t.end, t.label if params.labeled else "")
            pool.setdefault(key, collections.deque()).append((index, t))
    partners: dict[str, set[str]] = {}
    for a, b in params.eq_labels:
        partners.setdefault(a, set()).add(b)
        partners.setdefault(b, set()).add(a)
    matched = 0
    for g in gold:
        if g.result == 5:
            continue
        labels = {g.label} | partners.get(g.label, set()) if params.labeled else {""}
        queues = [q for q in (pool.get((g.start, g.end, label)) for label in labels) if q]
        if queues:
            t = min(queues, key=lambda q: q[0][0]).popleft()[1]
            g.result = t.result = 1
            matched += 1
    return matched


def _crossing(gold: list[tuple[int, int]], test: list[tuple[int, int]]) -> int:
    """How many test spans cross some gold span (g.start < t.start < g.end < t.end,
    or the mirror image t.start < g.start < t.end < g.end), in O(n log n)."""
    mirror = lambda spans: [(-e, -s) for s, e in spans]  # noqa: E731
    left, right = _crossed_from_left(gold, test), _crossed_from_left(mirror(gold), mirror(test))
    return sum(left[s, e] or right[-e, -s] for s, e in test)


def _crossed_from_left(gold: list[tuple[int, int]],
                       test: list[tuple[int, int]]) -> dict[tuple[int, int], bool]:
    """test span -> whether a gold span starts before it and ends inside it."""
    gold, ends, k, crossed = sorted(set(gold)), [], 0, {}
    for s, e in sorted(set(test)):
        while k < len(gold) and gold[k][0] < s:
            bisect.insort(ends, gold[k][1])
            k += 1
        j = bisect.bisect_right(ends, s)  # The first gold end after s.
        crossed[s, e] = j < len(ends) and ends[j] < e
    return crossed


@dataclasses.dataclass
class Totals(_Rates):
    """A summary block: all sentences, or those of length <= CUTOFF_LEN."""

    sentences: int = 0
    errors: int = 0
    skipped: int = 0
    matched: int = 0
    gold: int = 0
    test: int = 0
    complete: int = 0
    crossing: int = 0
    no_crossing: int = 0
    two_crossing: int = 0
    words: int = 0
    correct_tags: int = 0

    def add(self, s: Sentence) -> None:
        self.sentences += 1
        if s.status == 1:
            self.errors += 1
        elif s.status == 2:
            self.skipped += 1
        else:
            self.matched += s.matched
            self.gold += s.gold
            self.test += s.test
            self.complete += s.gold == s.test == s.matched
            self.crossing += s.crossing
            self.no_crossing += s.crossing == 0
            self.two_crossing += s.crossing <= 2
            self.words += s.words
            self.correct_tags += s.correct_tags

    @property
    def valid(self) -> int:
        return self.sentences - self.errors - self.skipped

    def _per_valid(self, count: int, scale: float = 100.0) -> float:
        return scale * count / self.valid if self.valid > 0 else 0.0

    @property
    def fmeasure(self) -> float:
        """EVALB's 2PR/(P+R); NaN when both are 0, as EVALB prints."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else math.nan

    def summary(self) -> dict[str, float]:
        """The block's lines, keyed as EVALB prints them."""
        return {"Number of sentence": self.sentences, "Number of Error sentence": self.errors,
                "Number of Skip  sentence": self.skipped, "Number of Valid sentence": self.valid,
                "Bracketing Recall": self.recall, "Bracketing Precision": self.precision,
                "Bracketing FMeasure": self.fmeasure,
                "Complete match": self._per_valid(self.complete),
                "Average crossing": self._per_valid(self.crossing, 1.0),
                "No crossing": self._per_valid(self.no_crossing),
                "2 or less crossing": self._per_valid(self.two_crossing),
                "Tagging accuracy": self.tag_accuracy}


@dataclasses.dataclass
class Result:
    params: Params
    sentences: list[Sentence]
    all: Totals
    cut: Totals
    messages: list[str]  # EVALB's stderr lines, "ID : message"

    def report(self) -> str:
        """EVALB's standard output, byte for byte."""
        lines = ["  Sent.                        Matched  Bracket   Cross        Correct Tag",
                 " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy",
                 "=" * 76]
        lines += [s.row() for s in self.sentences]
        lines.append("=" * 76)
        t = self.all
        total = (f"                {t.recall:6.2f} {t.precision:6.2f} {t.matched:6d} "
                 f"{t.gold:5d} {t.test:5d}  {t.crossing:5d}") if t.gold and t.test else ""
        lines.append(f"{total}  {t.words:5d} {t.correct_tags:5d}   {t.tag_accuracy:6.2f}")
        lines.append("=== Summary ===")
        for title, block in (("All", self.all), (f"len<={self.params.cutoff_len}", self.cut)):
            lines += ["", f"-- {title} --"]
            for key, value in block.summary().items():
                figure = f"{value:6d}" if isinstance(value, int) else f"{value:6.2f}"
                lines.append(f"{key:<26}= {figure}")
        return "\n".join(lines) + "\n"


def evaluate(gold_lines: Iterable[str], test_lines: Iterable[str],
             prm: str | Params | None = None,
             files: tuple[str, str] = ("the gold file", "the test file")) -> Result:
    """Scores test trees against gold trees, one per line, as `evalb -p prm gold test`.

    `files` name the gold and test lines in the MAX_ERROR message. Each message
    is one line (characters that would break it are written as escapes, `\\u2028`).

    Raises:
      EvalbError: more than the parameters' MAX_ERROR errors (as EVALB exits); one
        line naming the file and the line of the last.
    """
    params = load_params(prm)
    gold_lines, test_lines = list(gold_lines), list(test_lines)
    result = Result(params, [], Totals(), Totals(), [])

    def error(index: int, message: str, side: int | None = None) -> None:  # 0 gold, 1 test
        message = _one_line(message)
        result.messages.append(f"{index} : {message}")
        if params.max_error is not None and len(result.messages) - 1 > params.max_error:
            for i, prefix in enumerate(("gold: ", "test: ")):
                if message.startswith(prefix):
                    side, message = i, message[len(prefix):]
            where = " and ".join(files) if side is None else files[side]
            raise EvalbError(f"more than MAX_ERROR={params.max_error} errors, so EVALB "
                             f"stops; the last: {where}, line {index}: {message} (raise "
                             "MAX_ERROR in the parameter file to score anyway)")

    for index, gold_line in enumerate(gold_lines, 1):
        if index > len(test_lines):
            error(index, "Number of lines unmatch (too many lines in gold file)", 0)
            break
        sentence = score_sentence(index, gold_line, test_lines[index - 1], params)
        for message in sentence.messages:
            error(index, message)
        result.sentences.append(sentence)
        result.all.add(sentence)
        if sentence.length <= params.cutoff_len:
            result.cut.add(sentence)
    if len(test_lines) > len(gold_lines):
        error(len(gold_lines) + 1, "Number of lines unmatch (too many lines in test file)", 1)
    return result


def _one_line(message: str) -> str:
    """`message` with the characters that end or break a line (and other unprintable
    ones: \\x85, \\u2028, control characters) written as Python escapes."""
    if message.isprintable():
        return message
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in message)


class EvalbF1(Metric):
    """EVALB's labelled bracketing F1 (all sentences) over bracketed trees, one per line.

    `prm`: a .prm path, "COLLINS" (the default) or "new". Error sentences (a
    test tree whose words differ from the gold tree's, or that is ill-formed)
    are left out, as EVALB does; the line says how many. No MAX_ERROR limit.
    `count_errors=True` makes the value (`evalb_f1_strict`) F1 with error
    sentences counted as unparsed (`strict_f1`), so a model whose trees EVALB
    mostly rejects cannot score high on the few it keeps: what dev selection
    needs. The line is the same.
    """

    def __init__(self, prm: str | Params | None = None, count_errors: bool = False):
        self.params = dataclasses.replace(load_params(prm), max_error=None)
        self.count_errors = count_errors
        self.name = "evalb_f1_strict" if count_errors else "evalb_f1"

    def score(self, hypotheses: Sequence[str], references: Sequence[str],
              sources: Sequence[str] | None = None) -> Score:
        check_lengths(hypotheses, references)
        clean = lambda lines: [line.replace("\n", " ") for line in lines]  # noqa: E731
        gold, test = clean(references), clean(hypotheses)
        result = evaluate(gold, test, self.params)
        t = result.all
        f1 = 0.0 if math.isnan(t.fmeasure) else t.fmeasure
        line = (f"EVALB ({self.params.name}): F1 {f1:.2f}, recall {t.recall:.2f}, "
                f"precision {t.precision:.2f}, complete match "
                f"{t.summary()['Complete match']:.2f}, tagging {t.tag_accuracy:.2f} "
                f"({t.valid} valid, {t.errors} errors, {t.skipped} skipped of {t.sentences})")
        strict = strict_f1(result, gold, self.params) if t.errors else f1
        if t.errors:
            line += f"; F1 {strict:.2f} counting errors as unparsed"
        return Score(self.name, strict if self.count_errors else f1, line)


def strict_f1(result: Result, gold_lines: Sequence[str], params: Params) -> float:
    """F1 with every error sentence counted as a parse with no brackets.

    EVALB leaves error sentences (e.g. an ill-formed tree) out of its figures,
    which flatters a parser that fails on hard sentences; here their gold
    brackets count in recall's denominator instead.
    """
    missed = sum(score_sentence(s.id, gold_lines[s.id - 1], gold_lines[s.id - 1], params).gold
                 for s in result.sentences if s.status == 1)
    t = result.all
    recall = t.matched / (t.gold + missed) if t.gold + missed else 0.0
    precision = t.matched / t.test if t.test else 0.0
    return 200.0 * precision * recall / (precision + recall) if precision + recall else 0.0
