"""Subword vocabularies: SentencePiece BPE, applied in the TensorFlow graph.

Section 5.1 of Vaswani et al. 2017: sentences were "encoded using byte-pair
encoding, which has a shared source-target vocabulary of about 37000 tokens"
(EN-DE) and split "into a 32000 word-piece vocabulary" (EN-FR). Here one
SentencePiece BPE model is trained with the `sentencepiece` package on a sample
of both sides of the training data and saved as one `.model` file; the same file
is applied by `tensorflow_text.SentencepieceTokenizer` in tf.data, the decoder
and an exported SavedModel, and by the `sentencepiece` package in Python (the
tests check both give the same ids). A problem with separate source and target
vocabularies (`shared_vocab = False`) gets two such models, each trained on
its own side (`t2t_lite.data.datagen`).

Ids: 0 `<pad>`, 1 `</s>` (EOS), 2 `<unk>`, 3..258 the 256 byte pieces
`<0x00>`..`<0xFF>`, then the learned pieces; no BOS. Characters the model did
not learn are spelled as UTF-8 bytes (byte fallback), so `<unk>` is never
produced and every text survives encoding.

Normalization, the only change a text undergoes (SentencePiece applies it from
rules stored in the model, so every user of the file agrees): every Unicode
whitespace character (Python's `str.isspace`: tab, no-break space, thin space,
line separators, ...) becomes a space, runs of spaces become one, leading and
trailing spaces are dropped. Nothing else: no NFKC, no case folding, no
escaping. Hence `decode(encode(text)) == normalize(text)` for every text, with
one exception: U+2581 "▁", SentencePiece's own space mark, comes back as a space.

A word-level vocabulary (`model_type="word"`: one piece per whitespace-separated
token, for closed symbol sets and word-level sources) has no byte pieces: each
token gets exactly one id, and a token it does not know gets the piece of its
class (`t2t_lite.data.word_classes`), which `decode` spells as `<unk:CLASS>`. Its
classes are applied in Python (`encode`, `encode_batch`), not by the in-graph
tokenizer, so such a vocabulary is not exported.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
from typing import Iterable

from t2t_lite.data import word_classes
from t2t_lite.errors import UserError
from t2t_lite.ids import EOS_ID, PAD_ID, strip_ids  # noqa: F401  (re-exported)

UNK_ID = 2
NUM_RESERVED = 3 + 256  # pad, EOS, unk and the 256 byte pieces.
MODEL_SUFFIX = ".model"


class DataError(UserError, ValueError):
    """Input data, or a data_dir, that cannot be used as asked; says what to do."""


def normalize(text: str) -> str:
    """The normalization the vocabulary applies: whitespace runs -> one space, trimmed."""
    return " ".join(text.split())


def _whitespace_rules() -> str:
    """SentencePiece normalization rules (TSV): each non-space whitespace -> U+0020."""
    codes = [c for c in range(sys.maxunicode + 1) if chr(c).isspace() and c != 0x20]
    return "".join(f"{c:X}\t20\n" for c in codes)


class SubwordVocab:
    """A SentencePiece model: Python encode/decode and the in-graph tokenizer.

    Args:
      model_proto: the serialized SentencePiece model (the `.model` file's bytes).
      path: where it was read from, for messages.
    """

    def __init__(self, model_proto: bytes, path: str | None = None):
        import sentencepiece as spm

        self.model_proto = model_proto
        self.path = path
        try:
            self._sp = spm.SentencePieceProcessor(model_proto=model_proto)
        except (RuntimeError, OSError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DataError(f"{path or 'vocabulary'}: not a SentencePiece model ({first}); "
                            "delete it and rerun t2t_lite-datagen") from None
        self._tf_tokenizers = {}
        self.model_type = _model_type(model_proto)
        class_ids = [self._sp.piece_to_id(p) for p in word_classes.CLASS_PIECES]
        # Word-level files written before the classes existed keep SentencePiece's encoding.
        self._word_level = self.model_type == "word" and UNK_ID not in class_ids
        if self._sp.pad_id() != PAD_ID or self._sp.eos_id() != EOS_ID:
            raise DataError(
                f"{path or 'vocabulary'}: pad id {self._sp.pad_id()} and EOS id "
                f"{self._sp.eos_id()}, t2t_lite needs 0 and 1; regenerate it with "
                "t2t_lite-datagen")

    @classmethod
    def load(cls, path: str) -> SubwordVocab:
        with open(path, "rb") as f:
            return cls(f.read(), path)

    @property
    def vocab_size(self) -> int:
        """Number of pieces, reserved ids included."""
        return self._sp.get_piece_size()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.model_proto).hexdigest()

    def encode(self, text: str) -> list[int]:
        """Text -> ids (no EOS)."""
        if self._word_level:
            return [self._word_id(word) for word in text.split()]
        return self._sp.encode(text)

    def _word_id(self, word: str) -> int:
        token = self._sp.piece_to_id(word_classes.SPACE_MARK + word)
        if token == UNK_ID:
            token = self._sp.piece_to_id(word_classes.word_class(word))
        return token

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Texts -> ids (no EOS), in the TensorFlow graph (as tf.data and SavedModels do;
        a word-level vocabulary's in Python, as `encode`)."""
        if self._word_level:
            return [self.encode(normalize(text)) for text in texts]
        import tensorflow as tf

        ragged = self.tf_tokenizer().tokenize(tf.constant(texts, tf.string))
        values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
        return [values[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]

    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> plain text; stops at the first EOS, ignores padding."""
        return self._sp.decode(strip_ids(ids))

    def id_to_piece(self, token: int) -> str:
        return self._sp.id_to_piece(int(token))

    def tf_tokenizer(self, add_eos: bool = False):
        """A `tensorflow_text.SentencepieceTokenizer` over this model.

        `tokenize(string [B]) -> int32 ragged [B, (S)]`; `detokenize(ids) -> string [B]`.
        """
        if add_eos not in self._tf_tokenizers:
            import tensorflow_text as tf_text

            self._tf_tokenizers[add_eos] = tf_text.SentencepieceTokenizer(
                model=self.model_proto, out_type="int32", add_eos=add_eos)
        return self._tf_tokenizers[add_eos]

    def pieces_text(self) -> str:
        """The human-readable piece list: `piece<TAB>score` per line, id order."""
        return "".join(f"{self._sp.id_to_piece(i)}\t{self._sp.get_score(i):g}\n"
                       for i in range(self.vocab_size))


def train_vocab(sentences: Iterable[str], vocab_size: int, seed: int = 1234,
                character_coverage: float = 0.9999, num_threads: int | None = None,
                model_type: str = "bpe") -> SubwordVocab:
    """Trains a BPE SentencePiece model on `sentences` (already sampled).

    The result is a function of the sentences, their order, `vocab_size` and
    `seed` (SentencePiece's trainer is deterministic; the seed is set anyway).
    `model_type="word"` makes one piece of each whitespace-separated token
    instead (a closed symbol set, e.g. linearized trees' brackets and tags, or
    a word-level source), keeping the most frequent, at most `vocab_size`
    pieces (fewer when the text has fewer tokens) after the reserved ones and
    the unknown-word classes (`t2t_lite.data.word_classes`), without byte pieces.

    Raises:
      DataError: `vocab_size` is too small or too large for the text.
    """
    import sentencepiece as spm

    word = model_type == "word"
    reserved = 3 + len(word_classes.CLASS_PIECES) if word else NUM_RESERVED
    if vocab_size <= reserved:
        units, what = ("words", "unknown-word classes") if word else ("subwords", "byte pieces")
        raise DataError(f"vocab_size={vocab_size} leaves no room for {units}: "
                        f"the {reserved} reserved pieces and {what} come first")
    spm.set_random_generator_seed(seed)
    word_options = {} if not word else dict(
        hard_vocab_limit=False, split_by_number=False, split_by_unicode_script=False,
        user_defined_symbols=list(word_classes.CLASS_PIECES))
    model = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "whitespace.tsv")
        with open(rules, "w", encoding="utf-8") as f:
            f.write(_whitespace_rules())
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(sentences), model_writer=model,
                model_type=model_type, vocab_size=vocab_size, **word_options,
                pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1,
                pad_piece="<pad>", eos_piece="</s>", unk_piece="<unk>",
                byte_fallback=not word, character_coverage=character_coverage,
                normalization_rule_tsv=rules, remove_extra_whitespaces=True,
                input_sentence_size=0, shuffle_input_sentence=False,
                num_threads=num_threads or min(os.cpu_count() or 1, 16),
                minloglevel=2)
        except RuntimeError as e:
            raise DataError(_training_error(e, vocab_size)) from None
    return SubwordVocab(_canonical(model.getvalue()))


def _model_type(model_proto: bytes) -> str:
    """"bpe", "word", "unigram" or "char": the SentencePiece model type of a file."""
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(model_proto)
    return sentencepiece_model_pb2.TrainerSpec.ModelType.Name(
        model.trainer_spec.model_type).lower()


def _canonical(model_proto: bytes) -> bytes:
    """Drops what depends on the machine (a temporary path, the thread count).

    The rules themselves stay, compiled into the normalizer spec; the pieces do
    not depend on the thread count.
    """
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(model_proto)
    model.normalizer_spec.ClearField("normalization_rule_tsv")
    model.trainer_spec.ClearField("num_threads")
    return model.SerializeToString(deterministic=True)


def _training_error(error: RuntimeError, vocab_size: int) -> str:
    message = str(error).strip().splitlines()[-1] if str(error).strip() else repr(error)
    if "Vocabulary size too high" in message:
        most = message.rsplit("<=", 1)[-1].strip(" .")
        return (f"vocab_size={vocab_size} is more than the training text supports "
                f"(at most {most}); pass a smaller --vocab_size")
    if "Vocabulary size is smaller than required_chars" in message:
        return (f"vocab_size={vocab_size} is smaller than the number of distinct "
                f"characters to cover; pass a larger --vocab_size ({message})")
    return f"training the SentencePiece vocabulary failed: {message}"
