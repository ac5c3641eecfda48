"""The Problem base class: what a dataset must provide to train, decode and evaluate.

Every problem yields examples `{"inputs": int32 [S], "targets": int32 [T]}`
with EOS appended to both sides; 0 is padding and 1 is EOS (`t2t_lite.ids`,
tensor2tensor's reserved ids). Splits are "train", "dev" and "test".

Vocabularies: by default one vocabulary serves both sides (`shared_vocab`
True, the paper's translation setup: source, target and pre-softmax share one
matrix). A problem whose sides share nothing (a parse tree's bracket labels
and the words, as in tensor2tensor's WSJ parsing problem) sets `shared_vocab`
to False and gives `source_vocab_size` and `target_vocab_size`; `encode`
then reads the source side and `decode` writes the target side.

Evaluation: `eval_metrics()` lists the problem's metrics (`t2t_lite.metrics`);
the decoder prints them and the trainer's dev evaluation logs them and keeps
the best checkpoint by the first one.
"""

from __future__ import annotations

import abc
from typing import Iterator, Protocol

import tensorflow as tf

from t2t_lite.ids import EOS_ID, PAD_ID, strip_ids
from t2t_lite.metrics.base import ExactMatch, Metric, Score, evaluate
from t2t_lite.data.shards import SPLITS
from t2t_lite.errors import UserError


class ProblemError(UserError, ValueError):
    """A problem cannot run as asked; the message says what to do."""


class Corpus(Protocol):
    """One split's raw text pairs, as `Problem.corpora` gives them to t2t_lite-datagen.

    Implemented by `translate_corpus.FileCorpus` and `TfdsCorpus` and by
    parsing's `TreebankCorpus`.
    """

    @property
    def description(self) -> str:
        """Where the pairs come from, for the datagen log."""

    def prepare(self, log=print) -> int:
        """Makes the pairs readable (a download, a count) and returns their number."""

    def pairs(self) -> Iterator[tuple[str, str]]:
        """(source, target) text pairs, in the corpus' order."""

    def fingerprint(self):
        """A JSON value that changes when the raw data does (the datagen manifest)."""


class Problem(abc.ABC):
    """A registered dataset. Subclasses get `name` from `@register_problem`."""

    name = "problem"
    pad_id = PAD_ID
    eos_id = EOS_ID
    # False: generated in code (algorithmic tasks); True: t2t_lite-datagen
    # writes its data from `corpora` first.
    needs_datagen = False

    # --- Vocabulary ---
    @property
    def shared_vocab(self) -> bool:
        """True when one vocabulary serves the source and the target."""
        return True

    @property
    def vocab_size(self) -> int:
        """Size of the shared vocabulary, reserved ids included."""
        raise NotImplementedError(
            f"{type(self).__name__} must define vocab_size, or source_vocab_size and "
            "target_vocab_size with shared_vocab = False")

    @property
    def source_vocab_size(self) -> int:
        return self.vocab_size

    @property
    def target_vocab_size(self) -> int:
        return self.vocab_size

    def set_data_dir(self, data_dir: str | None) -> None:
        """Tells the problem where t2t_lite-datagen wrote its data (no-op by default)."""

    def vocab_files(self) -> tuple[str, str] | None:
        """(source, target) SentencePiece model files, for in-graph text (the exporter's
        text signature); None for a problem without vocabulary files (ids only)."""
        return None

    def token_piece(self, token: int, side: str) -> str:
        """The text of one id of `side` ("source" or "target"), e.g. for a picture's axis."""
        text = self.decode_inputs([token]) if side == "source" else self.decode([token])
        return text or str(token)

    def encode_target(self, text: str) -> list[int]:
        """Target text -> ids without EOS (a given target to draw attention for)."""
        return self.encode(text)

    def word_slot_ids(self) -> list[int] | None:
        """The target ids that are word slots (each stands for the next source word,
        in order), for a model aligned to them (`adapt`, e.g.
        `t2t_lite.models.parsing.aligned_model`); None (the default): no alignment."""
        return None

    def target_token_tables(self) -> tuple[list[int], list[int]] | None:
        """(kind, label) of each target id for a model that reads bracketed trees
        (`t2t_lite.parsing.tree_constraint.token_tables`: open, close, word slot;
        an open and its close share a label); None (the default): no trees."""
        return None

    def span_label_chains(self):
        """{open ids of a unary chain, top first: count} over the training trees
        (`t2t_lite.models.parsing.span_model`); None (the default): no trees."""
        return None

    def source_word_classes(self) -> list[int] | None:
        """The word class of each source id (`t2t_lite.data.word_classes.class_indices`)
        for a model that adds it to the word (`word_class_features`); None (the
        default): the source is not word-level."""
        return None

    def source_unknown_ids(self) -> list[int] | None:
        """What a model's word dropout (`word_dropout`) turns each source id into;
        None (the default): the source is not word-level."""
        return None

    # --- Raw data (t2t_lite-datagen) ---
    def corpora(self, raw_dir: str | None, options) -> dict[str, Corpus | None]:
        """split -> `Corpus`, or None for a split the raw data lacks (`needs_datagen`
        problems only).

        Args:
          raw_dir: --raw_dir, or None (download).
          options: `t2t_lite.data.options.DatagenOptions`.
        """
        del raw_dir, options
        raise ProblemError(f"{self.name} is generated in code: it has no raw corpora")

    # --- Data ---
    @abc.abstractmethod
    def examples(self, split: str, data_dir: str | None = None) -> tf.data.Dataset:
        """Unbatched `{"inputs", "targets"}` int32 examples of `split`."""

    @abc.abstractmethod
    def encode(self, text: str) -> list[int]:
        """Source text -> ids, without EOS."""

    @abc.abstractmethod
    def decode(self, ids) -> str:
        """Target ids -> text; stops at the first EOS and ignores padding."""

    def dataset(self, split: str, hparams, *, num_replicas: int = 1, repeat: bool = False,
                seed: int = 1234, data_dir: str | None = None) -> tf.data.Dataset:
        """`(features, targets)` batches for `keras.Model.fit` / `evaluate`.

        Token-based, length-bucketed batches as the trainer reads them
        (`t2t_lite.data.batching`): features {"inputs": int32 [B, L], "targets": [B, L]}
        and the targets again as Keras' y. The training split is shuffled
        (seeded) in the trainer's order: every new iterator starts the same
        sequence (Keras iterates a dataset once to inspect it before training,
        which would otherwise start training on a reshuffled order). `repeat`
        makes it endless (then pass `steps_per_epoch`).
        With `num_replicas` > 1 each batch gets all-padding rows up to a
        multiple of it, so every replica gets as many rows (Keras under
        MirroredStrategy fails on uneven splits); they hold no target token.
        """
        from t2t_lite.data import batching

        examples = self.examples(split, data_dir)
        if split == "train":  # Else an endless stream with nothing kept: fit would hang.
            batching.check_training_examples(examples, hparams.max_length)

        def pipeline(_):  # Built anew (fresh shuffle state) for every iterator.
            ordered = examples
            if split == "train":
                ordered = ordered.shuffle(10_000, seed=seed, reshuffle_each_iteration=True)
            if repeat:
                ordered = ordered.repeat()
            return batching.batch_by_tokens(
                ordered, hparams.batch_size, hparams.max_length, num_replicas,
                drop_long=split == "train", min_length_bucket=hparams.min_length_bucket,
                length_bucket_step=hparams.length_bucket_step)

        batches = tf.data.Dataset.range(1).flat_map(pipeline)

        def to_keras(batch):
            extra = -tf.shape(batch["targets"])[0] % num_replicas
            batch = {name: tf.pad(ids, [[0, extra], [0, 0]]) for name, ids in batch.items()}
            return batch, batch["targets"]

        return batches.map(to_keras).prefetch(2)

    def decode_inputs(self, ids) -> str:
        """Source ids -> text (for showing inputs); the target decoder when shared."""
        return self.decode(ids)

    # --- Decoding ---
    def format_output(self, source: str, output: str) -> str:
        """What the user gets for decoded target text `output` of input `source`.

        The identity by default; parsing restores the input's words into the
        decoded tree. The decoder, the dev evaluation and the metrics see this
        form, for hypotheses and references alike."""
        del source
        return output

    def format_reference(self, reference: str) -> str:
        """A user's reference line (decoder --reference) in the form `format_output`
        writes, so the two compare like with like. The identity by default;
        parsing cleans a raw treebank tree the way its gold trees are."""
        return reference

    def decode_constraint(self):
        """A search constraint (`t2t_lite.decoding.search.search`) the decoder applies by
        default, or None: the plain search (translation). Parsing returns
        `t2t_lite.parsing.tree_constraint.TreeConstraint`."""
        return None

    def serving_module(self, ids_module, translate_tokens):
        """A tf.Module whose `serve` (tf.string [B] -> outputs, scores) is the export's
        text signature around `ids_module.translate_ids`, or None: the exporter's
        SentencePiece text signature (`vocab_files`), or ids only.

        `translate_tokens`: ragged int32 [B, (n)] source ids without EOS -> {"ids",
        "scores"}, as the exporter searches them. Parsing returns
        `t2t_lite.parsing.serving.ParserTextModule` (words in, trees out)."""
        del ids_module, translate_tokens
        return None

    def source_text(self, split: str, data_dir: str | None = None) -> list[tuple[str, str]]:
        """(source, reference) text pairs of `split`, for decoding and scoring."""
        pairs = []
        for example in self.examples(split, data_dir).as_numpy_iterator():
            source = self.decode_inputs(example["inputs"])
            pairs.append((source, self.format_output(source, self.decode(example["targets"]))))
        return pairs

    # --- Evaluation ---
    def eval_metrics(self) -> list[Metric]:
        """The metrics decoded output is scored with; the first one selects checkpoints
        (best/) unless `--best_metric` names another."""
        return [ExactMatch()]

    def evaluate(self, hypotheses, references, sources=None) -> list[Score]:
        """Every metric of `eval_metrics()` on decoded text (one reference per hypothesis)."""
        return evaluate(self.eval_metrics(), hypotheses, references, sources)

    def check_split(self, split: str) -> None:
        if split not in SPLITS:
            raise ProblemError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")

    @staticmethod
    def strip_ids(ids) -> list[int]:
        """Ids up to (not including) the first EOS, padding removed."""
        return strip_ids(ids)
