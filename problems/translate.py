"""Translation problems over a shared SentencePiece vocabulary and TFRecord shards.

`t2t_lite-datagen --problem=P --data_dir=D [--raw_dir=R]` writes, into D, the
vocabulary `vocab.P.model` (and a readable `vocab.P.vocab`), the shards
`P-{train,dev,test}-0000k-of-0000n` and the manifest `P.datagen.json`. The
problem then needs only D: `set_data_dir(D)` (the trainer and decoder call it)
gives it the vocabulary, hence `vocab_size`, `encode` and `decode`.

Registered here: `translate_files` (any local parallel corpus: R holds
`train.SRC`/`train.TGT`, and optionally `dev.*` and `test.*`, plain or .gz;
languages from `--source_lang`/`--target_lang`, default en -> de) and
`multi30k_ende` (Multi30k Task 1 raw files: train, val as dev,
test_2016_flickr as test; the 2017 test sets are never read). The WMT 2014
problems are in translate_wmt.py.
"""

from __future__ import annotations

import os

import tensorflow as tf

from t2t_lite import datagen
from t2t_lite.metrics.bleu import SacreBleu, TokenizedBleu
from t2t_lite.problems.base import Problem, ProblemError
from t2t_lite.problems.translate_corpus import FileCorpus, find_pair
from t2t_lite.registry import register_problem
from t2t_lite.text_encoder import SubwordVocab, normalize

_FEATURES = {"inputs": tf.io.RaggedFeature(tf.int64), "targets": tf.io.RaggedFeature(tf.int64)}


def _parse_batch(records):
    """Serialized examples [B] -> {"inputs", "targets"}: int64 ragged [B, (L)]."""
    return tf.io.parse_example(records, _FEATURES)


def _to_int32(example):
    """One unbatched example -> dense int32 [L] tensors."""
    return {k: tf.cast(v, tf.int32) for k, v in example.items()}


class Text2TextProblem(Problem):
    """Text in, text out, over one subword vocabulary built by t2t_lite-datagen.

    Subclasses set the languages and `corpora(raw_dir, options)`: split ->
    corpus (`translate_corpus.FileCorpus` or `TfdsCorpus`) or None.
    """

    source_lang = "en"
    target_lang = "de"
    default_vocab_size = 32_000  # Section 5.1: 37000 for EN-DE, 32000 for EN-FR.
    vocab_sample_size = 1_000_000  # Training pairs the vocabulary is learned from.
    shard_size = 50_000  # Pairs per TFRecord shard (4.5M WMT EN-DE pairs: 90 shards).
    interleave_shards = 16  # Training shards read at once.

    def __init__(self):
        self._data_dir: str | None = None
        self._vocab: SubwordVocab | None = None

    def set_data_dir(self, data_dir: str | None) -> None:
        """Where t2t_lite-datagen wrote this problem's vocabulary and shards."""
        if data_dir and data_dir != self._data_dir:
            self._data_dir = data_dir
            self._vocab = None

    @property
    def data_dir(self) -> str:
        if not self._data_dir:
            raise ProblemError(
                f"{self.name} needs its data_dir (its vocabulary is there): pass --data_dir=D, "
                f"the directory t2t_lite-datagen --problem={self.name} wrote")
        return self._data_dir

    def vocab_path(self, data_dir: str | None = None) -> str:
        return os.path.join(data_dir or self.data_dir, f"vocab.{self.name}.model")

    def _missing(self, what: str, data_dir: str) -> ProblemError:
        return ProblemError(f"{what}: run t2t_lite-datagen --problem={self.name} "
                            f"--data_dir={data_dir} first")

    @property
    def vocab(self) -> SubwordVocab:
        if self._vocab is None:
            path = self.vocab_path()
            if not os.path.exists(path):
                raise self._missing(f"no vocabulary {path}", self.data_dir)
            self._vocab = SubwordVocab.load(path)
        return self._vocab

    @property
    def vocab_size(self) -> int:
        return self.vocab.vocab_size

    @property
    def vocab_file(self) -> str:
        """The SentencePiece model, for in-graph tokenization (e.g. a SavedModel)."""
        return self.vocab_path()

    def encode(self, text: str) -> list[int]:
        return self.vocab.encode(normalize(text))

    def decode(self, ids) -> str:
        return self.vocab.decode(ids)

    def eval_metrics(self):
        """sacreBLEU with its signature (report it), then the paper's tokenized BLEU."""
        return [SacreBleu(), TokenizedBleu(self.target_lang)]

    def examples(self, split: str, data_dir: str | None = None) -> tf.data.Dataset:
        """int32 {"inputs": [S], "targets": [T]}, EOS-terminated, from the shards.

        Training shards are read in a seeded random order, `interleave_shards`
        at a time; dev and test in their original order.
        """
        self.check_split(split)
        self.set_data_dir(data_dir)
        data_dir = self.data_dir
        paths, count = datagen.shard_files(data_dir, self.name, split)
        if not paths:
            raise self._missing(f"no {split} data for {self.name} in {data_dir}", data_dir)
        if len(paths) != count:
            raise self._missing(f"{data_dir} holds {len(paths)} of the {count or '?'} "
                                f"{split} shards of {self.name} (an interrupted datagen?)",
                                data_dir)
        files = tf.data.Dataset.from_tensor_slices(paths)
        if split == "train":
            files = files.shuffle(len(paths), seed=len(paths), reshuffle_each_iteration=True)
            records = files.interleave(
                tf.data.TFRecordDataset, cycle_length=min(self.interleave_shards, len(paths)),
                block_length=1, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        else:
            records = files.flat_map(tf.data.TFRecordDataset)
        # Parsing in batches is about 3x faster than one example at a time.
        records = records.batch(256).map(
            _parse_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return records.unbatch().map(_to_int32)

    def corpora(self, raw_dir: str | None, options) -> dict:
        raise NotImplementedError(f"{type(self).__name__} must define corpora()")

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


@register_problem("translate_files")
class TranslateFiles(Text2TextProblem):
    """Any local parallel corpus: `--raw_dir` holds train.SRC/train.TGT, dev.*, test.*."""

    default_vocab_size = 32_000  # tensor2tensor's *_32k; small corpora want less.

    def corpora(self, raw_dir, options):
        self.source_lang = options.source_lang or self.source_lang
        self.target_lang = options.target_lang or self.target_lang
        if self.source_lang == self.target_lang:
            raise ProblemError(f"--source_lang and --target_lang are both {self.source_lang!r}")
        layout = {"train": ["train"], "dev": ["dev"], "test": ["test"]}
        return self._file_corpora(raw_dir, layout, required=("train",))


@register_problem("multi30k_ende")
class Multi30kEnde(Text2TextProblem):
    """Multi30k Task 1 EN-DE image captions (Elliott et al. 2016), raw files.

    `--raw_dir` holds train.{en,de}, val.{en,de} (dev) and test_2016_flickr.{en,de}
    (test), plain or .gz, as in github.com/multi30k/dataset data/task1/raw. The
    2017 test sets are held out: never read.
    """

    default_vocab_size = 8_000  # 29K caption pairs: a small joint BPE vocabulary.

    def corpora(self, raw_dir, options):
        self._check_languages(options)
        layout = {"train": ["train"], "dev": ["val"], "test": ["test_2016_flickr"]}
        return self._file_corpora(raw_dir, layout, required=("train", "dev", "test"))

