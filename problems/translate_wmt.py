"""WMT 2014 English-German and English-French (section 5.1 of Vaswani et al. 2017).

Training corpora as tensor2tensor's translate_ende_wmt32k / translate_enfr_wmt32k
used them; newstest2013 is the dev set, newstest2014 (the full 3003-sentence
sets) the test set.

- `wmt_ende`: Europarl v7, Common Crawl and News Commentary v13, about 4.5M
  pairs: tensorflow-datasets' `wmt_t2t_translate/de-en`, which was made to be
  exactly tensor2tensor's data. Shared BPE vocabulary of 37000 pieces.
- `wmt_enfr`: Europarl v7, Common Crawl, the UN corpus, News Commentary v9 and
  the 10^9 French-English corpus, about 40M pairs (36M in the paper, after
  tensor2tensor's cleaning): tensorflow-datasets' `wmt14_translate/fr-en`
  (its UN part is MultiUN, where tensor2tensor read undoc.2000).
  Vocabulary of 32000 pieces.

Without `--raw_dir` datagen downloads them through tensorflow-datasets (into
`--tfds_dir`, default its own data_dir). With `--raw_dir=R` it reads local
UTF-8 text files, plain or .gz, anywhere under R:
- train: `train.en` + `train.de` (your own concatenation) or, if absent, every
  WMT file present: `europarl-v7.de-en.{en,de}`, `commoncrawl.de-en.*`,
  `news-commentary-v13.de-en.*` (EN-FR: `europarl-v7.fr-en.*`, `commoncrawl.fr-en.*`,
  `undoc.2000.fr-en.*`, `news-commentary-v9.fr-en.*`, `giga-fren.release2.fixed.*`),
  as the WMT archives unpack;
- dev: `dev.*` or `newstest2013.*`; test (optional): `test.*` or `newstest2014.*`,
  plain text, one segment per line (extract SGM files first, as sacrebleu does).
"""

from __future__ import annotations

from t2t_lite.problems.text2text import Text2TextProblem
from t2t_lite.problems.translate_corpus import TfdsCorpus, TfdsSource
from t2t_lite.registry import register_problem

_TFDS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


class WmtProblem(Text2TextProblem):
    """A WMT 2014 task: tensorflow-datasets download, or local files in --raw_dir."""

    tfds_name = ""
    train_prefixes: tuple = ()
    probe_host = "www.statmt.org"

    def _layout(self) -> dict:
        return {"train": ["train", *self.train_prefixes], "dev": ["dev", "newstest2013"],
                "test": ["test", "newstest2014"]}

    def _raw_hint(self) -> str:
        s, t = self.source_lang, self.target_lang
        wmt = ", ".join(f"{p}.{{{s},{t}}}" for p in self.train_prefixes)
        return (f"; or the WMT files {wmt} anywhere under it; with newstest2013.{s}/.{t} "
                f"(dev) and newstest2014.{s}/.{t} (test)")

    def corpora(self, raw_dir, options):
        self._check_languages(options)
        if raw_dir:
            return self._file_corpora(raw_dir, self._layout(), required=("train", "dev"),
                                      recursive=True, hint=self._raw_hint())
        hint = (f"Without a network, put the files in a directory and pass --raw_dir=DIR: "
                f"train.{self.source_lang} and train.{self.target_lang}{self._raw_hint()}")
        source = TfdsSource(self.tfds_name, self.source_lang, self.target_lang,
                            options.tfds_dir, self.probe_host, hint)
        return {split: TfdsCorpus(source, tfds_split) for split, tfds_split in
                _TFDS_SPLITS.items()}


@register_problem("wmt_ende")
class WmtEnde(WmtProblem):
    """WMT 2014 English -> German, as tensor2tensor's translate_ende_wmt32k."""

    source_lang, target_lang = "en", "de"
    default_vocab_size = 37_000  # "a shared source-target vocabulary of about 37000 tokens".
    tfds_name = "wmt_t2t_translate/de-en"
    train_prefixes = ("europarl-v7.de-en", "commoncrawl.de-en", "news-commentary-v13.de-en")


@register_problem("wmt_enfr")
class WmtEnfr(WmtProblem):
    """WMT 2014 English -> French, as tensor2tensor's translate_enfr_wmt32k."""

    source_lang, target_lang = "en", "fr"
    default_vocab_size = 32_000  # "split tokens into a 32000 word-piece vocabulary".
    shard_size = 100_000  # About 40M pairs: 400 shards.
    tfds_name = "wmt14_translate/fr-en"
    train_prefixes = ("europarl-v7.fr-en", "commoncrawl.fr-en", "undoc.2000.fr-en",
                      "news-commentary-v9.fr-en", "giga-fren.release2.fixed")
