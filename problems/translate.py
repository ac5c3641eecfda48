"""Translation problems over local parallel files (see text2text.py for the data layout).

Registered here: `translate_files` (any local parallel corpus: R holds
`train.SRC`/`train.TGT`, and optionally `dev.*` and `test.*`, plain or .gz;
languages from `--source_lang`/`--target_lang`, default en -> de) and
`multi30k_ende` (Multi30k Task 1 raw files: train, val as dev,
test_2016_flickr as test; the 2017 test sets are never read). Both use one
shared vocabulary. The WMT 2014 problems are in translate_wmt.py.
"""

from __future__ import annotations

from t2t_lite.data.manifest import read_manifest
from t2t_lite.problems.base import ProblemError
from t2t_lite.problems.text2text import Text2TextProblem
from t2t_lite.registry import register_problem

__all__ = ["Multi30kEnde", "Text2TextProblem", "TranslateFiles"]


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

    def set_data_dir(self, data_dir: str | None) -> None:
        """Also takes the languages datagen was run with (they choose the BLEU tokenizer)."""
        super().set_data_dir(data_dir)
        manifest = read_manifest(data_dir, self.name) if data_dir else None
        languages = (manifest or {}).get("plan", {}).get("languages")
        if languages:
            self.source_lang, self.target_lang = languages


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

