"""Text2TextProblem: text in, text out, over SentencePiece vocabularies and TFRecord shards.

`t2t_lite-datagen --problem=P --data_dir=D [--raw_dir=R]` writes, into D, the
shards `P-{train,dev,test}-0000k-of-0000n` (`t2t_lite.data.shards`), the manifest
`P.datagen.json` and the vocabulary (with a readable `.vocab` listing beside
each `.model` file):
- `shared_vocab = True` (the default, the paper's translation setup): one
  vocabulary `vocab.P.model` for both sides, of `default_vocab_size` pieces
  (or --vocab_size);
- `shared_vocab = False` (e.g. parsing, where a tree's bracket labels share
  nothing with the words): `vocab.P.source.model`, learned on the source side,
  and `vocab.P.target.model`, learned on the target side; sized by
  `default_source_vocab_size` / `default_target_vocab_size` when the problem
  sets them, else by --vocab_size (or `default_vocab_size`);
  --source_vocab_size / --target_vocab_size override either.
The problem then needs only D: `set_data_dir(D)` (the trainer and decoder
call it) gives it the vocabularies, hence `source_vocab_size`,
`target_vocab_size`, `encode` (source side), `decode` (target side) and
`decode_inputs` (source side).
"""

from __future__ import annotations

import abc
import os

import tensorflow as tf

from t2t_lite.data import shards
from t2t_lite.metrics.bleu import SacreBleu, TokenizedBleu
from t2t_lite.metrics.chrf_ter import SacreChrf, SacreTer
from t2t_lite.problems.base import Problem, ProblemError
from t2t_lite.problems.translate_corpus import FileCorpus, find_pair
from t2t_lite.data.text_encoder import MODEL_SUFFIX, SubwordVocab, normalize

VOCAB_SIDES = ("source", "target")


class Text2TextProblem(Problem):
    """Text in, text out, over subword vocabularies built by t2t_lite-datagen.

    Subclasses set the languages and `corpora(raw_dir, options)`: split ->
    corpus (`translate_corpus.FileCorpus` or `TfdsCorpus`) or None; and
    `shared_vocab = False` for separate source and target vocabularies.
    """

    source_lang = "en"
    target_lang = "de"
    shared_vocab = True  # One vocabulary for both sides (overrides Problem's property).
    needs_datagen = True
    default_vocab_size = 32_000  # Section 5.1: 37000 for EN-DE, 32000 for EN-FR.
    default_source_vocab_size: int | None = None  # shared_vocab = False only.
    default_target_vocab_size: int | None = None
    vocab_sample_size = 1_000_000  # Training pairs the vocabulary is learned from.
    shard_size = 50_000  # Pairs per TFRecord shard (4.5M WMT EN-DE pairs: 90 shards).
    interleave_shards = 16  # Training shards read at once.

    def __init__(self):
        self._data_dir: str | None = None
        self._vocabs: dict[str, SubwordVocab] = {}  # Path -> loaded vocabulary.

    def set_data_dir(self, data_dir: str | None) -> None:
        """Where t2t_lite-datagen wrote this problem's vocabularies and shards."""
        if data_dir and data_dir != self._data_dir:
            self._data_dir = data_dir
            self._vocabs = {}

    @property
    def data_dir(self) -> str:
        if not self._data_dir:
            raise ProblemError(
                f"{self.name} needs its data_dir (its vocabulary is there): pass --data_dir=D, "
                f"the directory t2t_lite-datagen --problem={self.name} wrote")
        return self._data_dir

    # --- Vocabularies ---
    def vocab_path(self, data_dir: str | None = None, side: str | None = None) -> str:
        """The SentencePiece model file of `side` ("source" or "target") in data_dir.

        With a shared vocabulary it is `vocab.PROBLEM.model` for either side (and
        `side` may be omitted); otherwise `vocab.PROBLEM.SIDE.model`.
        """
        if side is not None and side not in VOCAB_SIDES:
            raise ValueError(f"side must be one of {VOCAB_SIDES}, got {side!r}")
        if self.shared_vocab:
            name = f"vocab.{self.name}{MODEL_SUFFIX}"
        elif side is None:
            raise self._not_shared("vocab_path() without a side")
        else:
            name = f"vocab.{self.name}.{side}{MODEL_SUFFIX}"
        return os.path.join(data_dir or self.data_dir, name)

    def vocab_model_type(self, side: str) -> str:
        """The SentencePiece model type of a vocabulary ("shared", "source" or
        "target"): "bpe" (subwords, the paper's) or "word" (one piece per
        whitespace-separated token, for a closed symbol set)."""
        del side
        return "bpe"

    def _load_vocab(self, side: str) -> SubwordVocab:
        path = self.vocab_path(side=side)
        if path not in self._vocabs:
            if not os.path.exists(path):
                raise self._missing(f"no vocabulary {path}", self.data_dir)
            self._vocabs[path] = SubwordVocab.load(path)
        return self._vocabs[path]

    @property
    def source_vocab(self) -> SubwordVocab:
        """The vocabulary of the inputs (the shared one when `shared_vocab`)."""
        return self._load_vocab("source")

    @property
    def target_vocab(self) -> SubwordVocab:
        """The vocabulary of the targets (the shared one when `shared_vocab`)."""
        return self._load_vocab("target")

    @property
    def source_vocab_size(self) -> int:
        return self.source_vocab.vocab_size

    @property
    def target_vocab_size(self) -> int:
        return self.target_vocab.vocab_size

    @property
    def source_vocab_file(self) -> str:
        """The source SentencePiece model, for in-graph tokenization (e.g. a SavedModel)."""
        return self.vocab_path(side="source")

    @property
    def target_vocab_file(self) -> str:
        """The target SentencePiece model, for in-graph detokenization."""
        return self.vocab_path(side="target")

    @property
    def vocab(self) -> SubwordVocab:
        """The shared vocabulary (only when `shared_vocab`)."""
        if not self.shared_vocab:
            raise self._not_shared("vocab")
        return self.source_vocab

    @property
    def vocab_size(self) -> int:
        """Size of the shared vocabulary (only when `shared_vocab`)."""
        return self.vocab.vocab_size

    @property
    def vocab_file(self) -> str:
        """The shared SentencePiece model file (only when `shared_vocab`)."""
        if not self.shared_vocab:
            raise self._not_shared("vocab_file")
        return self.vocab_path()

    def vocab_files(self) -> tuple[str, str]:
        """(source, target) SentencePiece model files: the shared one twice when shared."""
        if self.shared_vocab:
            return (self.vocab_file,) * 2
        return self.source_vocab_file, self.target_vocab_file

    def token_piece(self, token: int, side: str) -> str:
        """The vocabulary piece of id `token` on `side` (e.g. "▁Haus")."""
        vocab = self.source_vocab if side == "source" else self.target_vocab
        return vocab.id_to_piece(int(token))

    def encode_target(self, text: str) -> list[int]:
        """Target text -> ids with the target vocabulary, without EOS."""
        return self.target_vocab.encode(normalize(text))

    def _not_shared(self, what: str) -> ProblemError:
        return ProblemError(
            f"{self.name} has separate source and target vocabularies (shared_vocab = False), "
            f"so it has no single {what}: use source_vocab/target_vocab (sizes, files)")

    def _missing(self, what: str, data_dir: str) -> ProblemError:
        return ProblemError(f"{what}: run t2t_lite-datagen --problem={self.name} "
                            f"--data_dir={data_dir} first")

    def encode(self, text: str) -> list[int]:
        """Source text -> ids with the source vocabulary, without EOS."""
        return self.source_vocab.encode(normalize(text))

    def decode(self, ids) -> str:
        """Target ids -> text with the target vocabulary; stops at EOS."""
        return self.target_vocab.decode(ids)

    def decode_inputs(self, ids) -> str:
        """Source ids -> text with the source vocabulary; stops at EOS."""
        return self.source_vocab.decode(ids)

    def eval_metrics(self):
        """sacreBLEU with its signature (report it; it keeps best/ unless --best_metric
        says otherwise), the paper's tokenized BLEU, then sacreBLEU's chrF and TER."""
        return [SacreBleu(), TokenizedBleu(self.target_lang), SacreChrf(), SacreTer()]

    # --- Data ---
    def examples(self, split: str, data_dir: str | None = None) -> tf.data.Dataset:
        """int32 {"inputs": [S], "targets": [T]}, EOS-terminated, from the shards.

        Training shards are read in a seeded random order, `interleave_shards`
        at a time; dev and test in their original order.
        """
        self.check_split(split)
        self.set_data_dir(data_dir)
        data_dir = self.data_dir
        paths, count = shards.shard_files(data_dir, self.name, split)
        if not paths:
            raise self._missing(f"no {split} data for {self.name} in {data_dir}", data_dir)
        if len(paths) != count:
            raise self._missing(f"{data_dir} holds {len(paths)} of the {count or '?'} "
                                f"{split} shards of {self.name} (an interrupted datagen?)",
                                data_dir)
        return shards.read(paths, training=split == "train", cycle_length=self.interleave_shards)

    @abc.abstractmethod
    def corpora(self, raw_dir: str | None, options) -> dict:
        """split -> `Corpus` (`t2t_lite.problems.base.Corpus`) or None.

        Args:
          raw_dir: --raw_dir, or None (download).
          options: `t2t_lite.data.options.DatagenOptions`.
        """

    def _check_languages(self, options) -> None:
        asked = (options.source_lang or self.source_lang, options.target_lang or self.target_lang)
        if asked != (self.source_lang, self.target_lang):
            raise ProblemError(
                f"{self.name} translates {self.source_lang} -> {self.target_lang}; "
                "--source_lang/--target_lang choose the languages of translate_files only")

    def _file_corpora(self, raw_dir: str | None, layout: dict, required: tuple,
                      recursive: bool = False, hint: str = "") -> dict:
        """split -> FileCorpus from `layout` (split -> file prefixes), checked.

        The first prefix of a split, when present, is used alone; otherwise
        every present prefix for train (concatenated), the first one otherwise.

        Raises:
          ProblemError: no --raw_dir, or a required split has no files (names them).
        """
        if not raw_dir:
            raise ProblemError(f"{self.name} reads local files: pass --raw_dir=DIR holding "
                               f"{self._expected(layout['train'])}{hint}")
        if not os.path.isdir(raw_dir):
            raise ProblemError(f"--raw_dir {raw_dir}: no such directory")
        corpora = {}
        for split, prefixes in layout.items():
            found = [find_pair(raw_dir, p, self.source_lang, self.target_lang, recursive)
                     for p in prefixes]
            if found[0] is not None or split != "train":
                found = [f for f in found if f is not None][:1]
            found = [f for f in found if f is not None]
            if found:
                corpora[split] = FileCorpus(found)
            elif split in required:
                paths = self._expected(prefixes[:1], raw_dir)
                raise ProblemError(f"{paths}: file not found ({self.name} {split} data"
                                   f"{hint if split == 'train' else ''})")
            else:
                corpora[split] = None
        return corpora

    def _expected(self, prefixes, raw_dir: str | None = None) -> str:
        paths = [f"{p}.{lang}" for p in prefixes for lang in (self.source_lang, self.target_lang)]
        return " and ".join(os.path.join(raw_dir, p) if raw_dir else p for p in paths)
