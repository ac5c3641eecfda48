"""Penn Treebank reading, cleaning and the linearization parsing trains on."""

import io
import os
import zipfile

import pytest
from conftest import DATA, needs_data

from t2t_lite.parsing import ptb
from t2t_lite.metrics import trees as evalb_trees

MRG = """( (S
    (NP-SBJ-1 (NNP Pierre) (NNP Vinken) )
    (VP (VBD said)
      (SBAR (-NONE- 0)
        (S (NP-SBJ (-NONE- *-1) )
          (VP (VBD left) (NP=2 (-LRB- -LRB-) (NN it) (-RRB- -RRB-) )))))
    (. .) ))
( (NP (DT The) (NN end) ))
"""

SAMPLE_TREES = "ptb_sample/wsj_0001-0199.combined.trees"
SAMPLE_ZIP = "ptb_sample/treebank.zip"


def test_reads_and_cleans_mrg_text():
    raw = ptb.read_trees(MRG)
    assert len(raw) == 2 and raw[0].label == ""
    cleaned = [ptb.to_string(ptb.clean(t)) for t in raw]
    # -NONE- elements go with the NP-SBJ they empty; the SBAR keeps its S;
    # function tags and =2 indices go; -LRB- / -RRB- tags stay whole.
    assert cleaned == [
        "(TOP (S (NP (NNP Pierre) (NNP Vinken)) (VP (VBD said) (SBAR (S (VP (VBD left) "
        "(NP (-LRB- -LRB-) (NN it) (-RRB- -RRB-)))))) (. .)))",
        "(TOP (NP (DT The) (NN end)))",
    ]


def test_clean_keeps_a_root_of_several_phrases_as_top_and_drops_an_all_trace_tree():
    two = ptb.clean(ptb.read_trees("( (S (NN a)) (S (NN b)))")[0])
    assert ptb.to_string(two, top=None) == "(TOP (S (NN a)) (S (NN b)))"
    assert ptb.clean(ptb.read_trees("( (S (-NONE- *T*)))")[0]) is None


def test_a_lone_word_stays_a_phrase_and_an_unlabelled_phrase_is_refused():
    lone = ptb.clean(ptb.read_trees("( (NN x))")[0])
    assert ptb.linearize(lone) == "(TOP NN )TOP"
    assert ptb.to_string(ptb.delinearize("(TOP NN )TOP", ["x"]), top=None) == "(TOP (NN x))"
    with pytest.raises(ptb.TreeError):
        ptb.linearize(ptb.clean(ptb.read_trees("((S (NP (NN a)) ( (NN b))))")[0]))


def test_read_errors_quote_the_bad_place():
    text = "( (S (NN a)))\n" * 50 + "( (S (NN b) oops))\n"
    with pytest.raises(ptb.TreeError, match="oops"):
        ptb.read_trees(text)


def test_linearize_and_back():
    tree = ptb.clean(ptb.read_trees(MRG)[0])
    target = ptb.linearize(tree)
    assert target == ("(S (NP NNP NNP )NP (VP VBD (SBAR (S (VP VBD (NP -LRB- NN -RRB- )NP "
                      ")VP )S )SBAR )VP . )S")
    assert ptb.words(tree) == ["Pierre", "Vinken", "said", "left", "-LRB-", "it", "-RRB-", "."]
    back = ptb.delinearize(target, ptb.words(tree))
    assert ptb.to_string(back) == ptb.to_string(tree)
    assert ptb.tags(back) == ["NNP", "NNP", "VBD", "VBD", "-LRB-", "NN", "-RRB-", "."]


@pytest.mark.parametrize("target,n", [
    ("", 0),                           # nothing
    ("(S NN )NP", 1),                  # close of another label
    ("(S NN )S )S", 1),                # close with nothing open
    ("(S (NP )NP NN )S", 1),           # an empty phrase
    ("NN (S NN )S", 2),                # a slot outside every phrase
    ("(S NN )S (S NN )S", 2),          # tokens after the root closed
    ("(S (NP NN )NP", 1),              # left open
    ("(S NN NN )S", 3),                # too few slots
    ("(S NN NN )S", 1),                # too many slots
])
def test_ill_formed_linearizations_are_refused(target, n):
    with pytest.raises(ptb.TreeError):
        ptb.delinearize(target, ["w"] * n)
    assert not ptb.is_well_formed(target, n)


@pytest.mark.parametrize("text", ["(S (NN a)", "(S (NN a)))", "word (S (NN a))",
                                  "(S (NN a b))"])
def test_unreadable_trees(text):
    with pytest.raises(ptb.TreeError):
        ptb.read_trees(text)


def test_token_kinds():
    assert [ptb.token_kind(t) for t in ["(NP", ")NP", "NN", ",", "-LRB-", "(", ")"]] == \
        ["open", "close", "tag", "tag", "tag", "tag", "tag"]
    assert ptb.token_label(")PP") == "PP" and ptb.token_label("NNS") == "NNS"


def _sample_lines():
    with open(os.path.join(DATA, SAMPLE_TREES), encoding="utf-8") as f:
        return f.read().splitlines()


@needs_data(SAMPLE_TREES, SAMPLE_ZIP)
def test_the_zip_and_the_one_per_line_file_hold_the_same_3914_trees():
    with zipfile.ZipFile(os.path.join(DATA, SAMPLE_ZIP)) as z:
        names = sorted(n for n in z.namelist() if n.startswith("treebank/combined/wsj_"))
        assert len(names) == 199
        from_zip = [t for n in names
                    for t in ptb.read_trees(io.TextIOWrapper(z.open(n), "utf-8").read())]
    lines = _sample_lines()
    assert len(from_zip) == len(lines) == 3914
    for tree, line in zip(from_zip, lines):
        assert ptb.to_string(tree, top=None) == ptb.to_string(ptb.read_trees(line)[0], top=None)


@needs_data(SAMPLE_TREES)
def test_linearization_round_trips_on_every_sample_tree():
    count = 0
    for line in _sample_lines():
        tree = ptb.clean(ptb.read_trees(line)[0])
        text = ptb.to_string(tree)
        assert "-NONE-" not in text
        labels = [t[1:] for t in ptb.linearize(tree).split() if ptb.token_kind(t) == "open"]
        assert not any(("-" in x or "=" in x) and not x.startswith("-") for x in labels)
        back = ptb.delinearize(ptb.linearize(tree), ptb.words(tree))
        assert ptb.to_string(back) == text
        read = evalb_trees.read(text)  # EVALB's reader agrees on words and tags.
        assert not read.errors
        assert read.words == list(zip(ptb.words(tree), ptb.tags(tree)))
        count += 1
    assert count == 3914
