"""English constituency parsing on the Penn Treebank (section 6.3 of the paper).

`wsj_parsing` reads bracketed trees from --raw_dir, in either layout:
- `.mrg` files anywhere below it, named `wsj_SSNN.mrg` (the LDC layout
  `wsj/02/wsj_0201.mrg`, or NLTK's `treebank/combined/wsj_0001.mrg`);
- one-tree-per-line files: `TREES.trees` with a `TREES.ids` beside it giving
  each line's file id (`wsj_0001<TAB>0`, as `../shared/data/ptb_sample/`), or
  files named for their split (`train.trees`, `dev.trees`, `test.trees`).

Splits, by file: with the full WSJ (sections 02-21, 22 and 23 present), the
standard one: 02-21 train (39,832 trees), 22 dev, 23 test. Otherwise NLTK's
free 10% sample (wsj_0001-wsj_0199) is assumed and split by file number:
wsj_0001-0159 train (3,396 trees), wsj_0160-0179 dev (273), wsj_0180-0199 test
(245); other file numbers train.

Each tree is cleaned as parsers conventionally do (`t2t_lite.parsing.ptb.clean`:
traces and empty elements removed with the constituents they empty,
function tags and indices stripped, the outer empty-labelled bracket
removed). Source: its words. Target: its linearization (`t2t_lite.parsing.ptb`):
Vinyals et al. 2015's bracket tokens with labelled closing brackets, and the
POS tag as the word slot, as tensor2tensor keeps it: the words are not
generated but restored from the input, so the output always has the input's
words, and EVALB's punctuation deletion and tagging accuracy see real tags.

Vocabularies are separate: the source is word-level, one id per word (the
paper's 16K, --source_vocab_size to change it; words outside it become classes
of their shape and suffix, `t2t_lite.data.word_classes`), so the i-th word slot of
the output answers the i-th input id; `--source_vocab_type=bpe` gives
SentencePiece BPE pieces instead. The target has one piece per symbol (`word`
model type; about 90 symbols on the sample). Decoding restores the
words into `(TOP ...)` trees, scored with EVALB's COLLINS.prm
(`t2t_lite.metrics.evalb`), which deletes the TOP bracket; the search is
constrained to well-formed trees over exactly the input words
(`t2t_lite.parsing.tree_constraint`; `t2t_lite-decoder --unconstrained` turns it off).
"""

from __future__ import annotations

import glob
import os
import re
import sys
from typing import Iterator

from t2t_lite.parsing import ptb
from t2t_lite.metrics.evalb import EvalbF1
from t2t_lite.problems.base import ProblemError
from t2t_lite.problems.text2text import Text2TextProblem
from t2t_lite.registry import register_problem

STANDARD_SECTIONS = {"train": range(2, 22), "dev": (22,), "test": (23,)}
SAMPLE_FILES = {"train": range(1, 160), "dev": range(160, 180), "test": range(180, 200)}
SPLIT_FILES = {"train": ("train.trees", "02-21.10way.clean"), "dev": ("dev.trees", "22.auto.clean"),
               "test": ("test.trees", "23.auto.clean")}
_FILE_ID = re.compile(r"wsj_(\d{4})")


def file_number(file_id: str) -> int | None:
    """`wsj_0201` -> 201 (section 2, file 1); None for other names."""
    match = _FILE_ID.search(file_id)
    return int(match.group(1)) if match else None


class TreeFile:
    """Trees of one file; `lines`, if set, keeps only those lines (one tree each)."""

    def __init__(self, path: str, lines: set[int] | None = None):
        self.path = path
        self.lines = lines

    def trees(self) -> list[ptb.Node]:
        """Raises ProblemError naming the file and line (`ptb.read_tree_file`)."""
        try:
            return ptb.read_tree_file(self.path, self.lines)
        except ptb.TreeError as e:
            raise ProblemError(str(e)) from None


class TreebankCorpus:
    """One split's trees, as (words, linearized tree) pairs for t2t_lite-datagen."""

    def __init__(self, files: list[TreeFile]):
        self.files = files
        self.dropped = 0  # Trees that clean() left empty or with an unlabelled phrase.
        self._pairs: list[tuple[str, str]] | None = None  # Kept by prepare().

    @property
    def description(self) -> str:
        names = [os.path.basename(f.path) for f in self.files]
        return f"{len(names)} files ({names[0]} .. {names[-1]})" if len(names) > 2 \
            else ", ".join(names)

    def prepare(self, log=print) -> int:
        """Reads and cleans every tree once; `pairs` then serves them from memory
        (the full WSJ's 40K pairs are about 15 MB)."""
        del log
        self._pairs = list(self._read())
        return len(self._pairs)

    def pairs(self) -> Iterator[tuple[str, str]]:
        return iter(self._pairs) if self._pairs is not None else self._read()

    def _read(self) -> Iterator[tuple[str, str]]:
        self.dropped = 0
        for f in self.files:
            for tree in f.trees():
                tree = ptb.clean(tree)
                try:
                    target = ptb.linearize(tree) if tree is not None else None
                except ptb.TreeError:  # An unlabelled inner phrase: nothing to learn.
                    target = None
                if target is None:
                    self.dropped += 1
                    continue
                yield " ".join(ptb.words(tree)), target

    def fingerprint(self):
        return [[os.path.abspath(f.path), os.path.getsize(f.path), os.stat(f.path).st_mtime_ns,
                 sorted(f.lines) if f.lines is not None else None] for f in self.files]


def find_splits(raw_dir: str) -> dict[str, list[TreeFile]]:
    """split -> the TreeFiles of `raw_dir` (layouts and splits: the module docstring)."""
    named = {split: [p for name in names for p in _find(raw_dir, name)]
             for split, names in SPLIT_FILES.items()}
    if any(named.values()):
        return {split: [TreeFile(p) for p in paths] for split, paths in named.items()}
    units: list[tuple[int, TreeFile]] = []  # (file number, trees)
    for path in _find(raw_dir, "*.mrg") + _find(raw_dir, "*.MRG"):
        number = file_number(os.path.basename(path))
        if number is not None:
            units.append((number, TreeFile(path)))
    if not units:
        units = _lines_by_file(raw_dir)
    sections = {number // 100 for number, _ in units}
    standard = {22, 23} <= sections and any(2 <= s <= 21 for s in sections)
    splits: dict[str, list[TreeFile]] = {split: [] for split in SPLIT_FILES}
    for number, unit in sorted(units, key=lambda u: (u[0], u[1].path)):
        if standard:
            split = next((s for s, secs in STANDARD_SECTIONS.items() if number // 100 in secs),
                         None)
        else:
            split = next((s for s, nums in SAMPLE_FILES.items() if number in nums), "train")
        if split:
            splits[split].append(unit)
    return splits


def _lines_by_file(raw_dir: str) -> list[tuple[int, TreeFile]]:
    """(file number, lines of that file) from `X.trees` + `X.ids` one-tree-per-line pairs."""
    units = []
    for path in _find(raw_dir, "*.trees"):
        ids = path[:-len(".trees")] + ".ids"
        if not os.path.isfile(ids):
            continue
        by_file: dict[int, set[int]] = {}
        with open(ids, encoding="utf-8") as f:
            for line_number, line in enumerate(f):
                number = file_number(line.split("\t")[0])
                if number is None:
                    raise ProblemError(f"{ids}, line {line_number + 1}: no wsj_NNNN file id")
                by_file.setdefault(number, set()).add(line_number)
        units += [(number, TreeFile(path, lines)) for number, lines in by_file.items()]
    return units


def _find(raw_dir: str, pattern: str) -> list[str]:
    return sorted(glob.glob(os.path.join(glob.escape(raw_dir), "**", pattern), recursive=True))


@register_problem("wsj_parsing")
class WsjParsing(Text2TextProblem):
    """Penn Treebank WSJ constituency parsing as sequence to sequence (section 6.3)."""

    source_lang = "en"
    target_lang = "tree"
    shared_vocab = False
    default_source_vocab_size = 16_384  # Section 6.3: "a vocabulary of 16K tokens".
    default_target_vocab_size = 1_000  # At most: one piece per bracket or tag symbol.
    shard_size = 20_000
    # Words seen this often keep only their training tags (dev, 30-minute run, greedy:
    # strict F1 37.2, 37.1, 36.3 and 33.4 for 1, 2, 3 and 5; 2 as the vocabulary keeps
    # the words seen twice).
    tag_dictionary_min_count = 2

    def __init__(self):
        super().__init__()
        self._constraints = {}  # data_dir -> TreeConstraint

    def vocab_model_type(self, side: str) -> str:
        """Words on both sides: tree symbols, and a word-level source (measured against
        BPE on the sample: README, "Constituency parsing")."""
        del side
        return "word"

    def corpora(self, raw_dir: str | None, options) -> dict:
        if not raw_dir:
            raise ProblemError("wsj_parsing reads the Penn Treebank from local files: pass "
                               "--raw_dir=DIR holding wsj/SS/wsj_SSNN.mrg files (or NLTK's "
                               "sample, e.g. ../shared/data/ptb_sample)")
        if not os.path.isdir(raw_dir):
            raise ProblemError(f"--raw_dir {raw_dir}: no such directory")
        splits = find_splits(raw_dir)
        for split, files in splits.items():
            if not files:
                raise ProblemError(
                    f"{raw_dir}: no {split} trees found; it needs wsj_SSNN.mrg files (sections "
                    "02-21, 22 and 23, or NLTK's wsj_0001-0199), X.trees with X.ids, or "
                    "train.trees, dev.trees and test.trees")
        return {split: TreebankCorpus(files) for split, files in splits.items()}

    def eval_metrics(self):
        """EVALB's labelled F1 with COLLINS.prm, as parsing papers report, with error
        sentences counted as unparsed (the line gives EVALB's own figure too), so dev
        selection prefers a model whose trees EVALB keeps."""
        return [EvalbF1("COLLINS", count_errors=True)]

    def encode(self, text: str) -> list[int]:
        """Source words -> ids, each word first written as the treebank writes it
        (`ptb.treebank_word`: a raw `(` is the training data's `-LRB-`)."""
        return super().encode(" ".join(ptb.treebank_word(w) for w in text.split()))

    def format_output(self, source: str, output: str) -> str:
        """A linearized tree -> `(TOP ...)` over the input's words, on one line.

        Whatever the line holds, the tree has exactly its words (`source.split()`),
        in order, and both tree readers (`ptb.read_trees`, t2t_lite-evalb) read it
        back: raw brackets in a word are written with the treebank's escapes,
        `(` -> `-LRB-` and `)` -> `-RRB-` (`ptb.escape_word`; braces and square
        brackets stay as they are); reading keeps them escaped, as treebank words
        are, and `ptb.unescape_word` undoes them. An ill-formed sequence, or one
        with too few or too many word slots (only possible with --unconstrained,
        or a source cut at max_length), becomes a flat tree of XX tags over the
        words, which EVALB counts as an error sentence. An empty line gives "".
        """
        words = source.split()
        if not words:
            return ""
        try:
            tree = ptb.delinearize(output, words)
        except ptb.TreeError:
            tree = ptb.Node("TOP", [ptb.Node("XX", word=w) for w in words])
            return ptb.to_string(tree, top=None)
        return ptb.to_string(tree, top="TOP")

    def format_reference(self, reference: str) -> str:
        """A raw treebank tree (`( (S (NP-SBJ ...) ...))`, traces and all) cleaned as
        the problem's gold trees are, as `(TOP ...)`; unreadable lines stay as they are
        (EVALB reports them)."""
        try:
            trees = ptb.read_trees(reference)
            tree = ptb.clean(trees[0]) if len(trees) == 1 else None
        except ptb.TreeError:
            return reference
        return ptb.to_string(tree, top="TOP") if tree is not None else reference

    def serving_module(self, ids_module, translate_tokens):
        """Sentences in, trees out, in the graph (`t2t_lite.parsing.serving`); None for a
        BPE source (its text signature is the SentencePiece one)."""
        from t2t_lite.parsing.serving import ParserTextModule

        source, target = self.source_vocab, self.target_vocab
        if source.model_type != "word":
            return None
        return ParserTextModule(ids_module, translate_tokens,
                                [source.id_to_piece(i) for i in range(source.vocab_size)],
                                [target.id_to_piece(i) for i in range(target.vocab_size)])

    def word_slot_ids(self) -> list[int]:
        """The POS-tag ids of the target vocabulary (`token_tables` kind TAG): the
        i-th one in a tree is the slot of the i-th input word."""
        from t2t_lite.parsing.tree_constraint import TAG, token_tables

        target = self.target_vocab
        kinds = token_tables([target.id_to_piece(i) for i in range(target.vocab_size)])[0]
        return [i for i, kind in enumerate(kinds) if kind == TAG]

    def target_token_tables(self) -> tuple[list[int], list[int]]:
        """(kind, label) of each target id (`tree_constraint.token_tables`)."""
        from t2t_lite.parsing.tree_constraint import token_tables

        target = self.target_vocab
        kinds, labels = token_tables([target.id_to_piece(i) for i in range(target.vocab_size)])
        return kinds.tolist(), labels.tolist()

    def span_label_chains(self):
        """{open ids of a unary chain, top first: count} over the training shards'
        trees (`span_model.target_chains`).

        Raises:
          ProblemError: no training shards in the data_dir.
        """
        from t2t_lite.models.parsing.span_model import target_chains

        kinds = self.target_token_tables()[0]
        targets = (ex["targets"] for ex in self.examples("train").as_numpy_iterator())
        return target_chains(targets, kinds)

    def source_word_classes(self) -> list[int] | None:
        """The class of each word of a word-level source (None for a BPE source)."""
        from t2t_lite.data.word_classes import class_indices

        source = self.source_vocab
        if source.model_type != "word":
            return None
        return class_indices([source.id_to_piece(i) for i in range(source.vocab_size)])

    def source_unknown_ids(self) -> list[int] | None:
        """What word dropout turns each source id into (`word_classes.unknown_ids`);
        None for a BPE source."""
        from t2t_lite.data.word_classes import unknown_ids

        source = self.source_vocab
        if source.model_type != "word":
            return None
        return unknown_ids([source.id_to_piece(i) for i in range(source.vocab_size)])

    def source_word_counts(self) -> list[int] | None:
        """How often each source id occurs in the training shards (for word dropout
        by frequency, `word_dropout_alpha`); None for a BPE source.

        Raises:
          ProblemError: no training shards in the data_dir.
        """
        import numpy as np

        if self.source_vocab.model_type != "word":
            return None
        counts = np.zeros(self.source_vocab_size, np.int64)
        for example in self.examples("train").as_numpy_iterator():
            np.add.at(counts, example["inputs"], 1)
        return counts.tolist()

    def decode_constraint(self, tag_dictionary: bool = True):
        """The tree constraint over this data_dir's vocabularies (built once).

        With a word-level source and `tag_dictionary`, it also holds the tags
        each word had in the training trees (words seen `tag_dictionary_min_count`
        times or more; `t2t_lite.parsing.tree_constraint.tag_dictionary`).
        """
        from t2t_lite.parsing.tree_constraint import TreeConstraint

        target, source = self.target_vocab, self.source_vocab
        with_tags = tag_dictionary and source.model_type == "word"
        key = (self.data_dir, with_tags)
        if key not in self._constraints:
            target_pieces = [target.id_to_piece(i) for i in range(target.vocab_size)]
            self._constraints[key] = TreeConstraint(
                target_pieces, [source.id_to_piece(i) for i in range(source.vocab_size)],
                tags=self._tag_dictionary(target_pieces) if with_tags else None)
        return self._constraints[key]

    def _tag_dictionary(self, target_pieces):
        """The table from the training shards; None (and a warning) without them."""
        from t2t_lite.parsing.tree_constraint import tag_dictionary

        try:
            train = self.examples("train")
        except ProblemError:
            print(f"{self.name}: no training shards in {self.data_dir}, so the search has no "
                  "tag dictionary and F1 will be lower; decode where datagen wrote them",
                  file=sys.stderr)
            return None
        examples = ((ex["inputs"], ex["targets"]) for ex in train.as_numpy_iterator())
        return tag_dictionary(examples, self.source_vocab_size, target_pieces,
                              self.tag_dictionary_min_count)
