"""CoreSentencePiece: SentencePiece BPE in core TensorFlow ops, exactly as `sentencepiece`.

Every comparison is against the `sentencepiece` package (`SubwordVocab.encode`,
`SentencePieceProcessor.decode`) on the same model: real text (every line of
newstest2014 and the Multi30k test sets, when ../shared has them; the
newstest2013 slice in tests/testdata otherwise), hand-made edge cases, random
text, random bytes, random id sequences and random small vocabularies (whose
scores tie), and a SavedModel loaded where tensorflow_text was never imported.
"""

import gzip
import io
import json
import subprocess
import sys

import pytest
import sentencepiece as spm
import tensorflow as tf
from conftest import DATA, data_file, needs_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from t2t_lite.data.text_encoder import train_vocab
from t2t_lite.serving.sentencepiece_ops import CoreSentencePiece

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# Every character Python calls whitespace, the space mark, and a few letters.
WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
SPACEY = st.sampled_from(WHITESPACE + ["\u2581", "a", "e", "n", "\u200b", "\ufffd"])
EDGE_CASES = [
    "", "   ", "\t a\u00a0b \u2028c ", "\u2581\u2581x \u2581", "naïve café — 東京 🙂",
    "<unk> </s> <pad> <0x41>", "aaaaaaaa", "ab" * 1000, "e" * 2000, "\u2581", "\u2581 \u2581",
    "a\0b", "\u3000x\u3000", "x\r\ny", "\ufffd", "\u0301", "👩\u200d👩\u200d👧", "שָׁלוֹם",
    "\U0010ffff\U000e0001", "▁▁▁", " ▁ a ▁ ", "<0xE2><0x82>",
]


def _lines(path):
    """Every line of a text file (gzip or not), exactly: only "\\n" ends a line."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _news_sample():
    """1500 lines of newstest2013 per side (the slice in tests/testdata suffices)."""
    return (_lines(data_file("wmt14", "newstest2013.en", lines=1500))[:1500]
            + _lines(data_file("wmt14", "newstest2013.de", lines=1500))[:1500])


class Both:
    """One model as `sentencepiece` and as CoreSentencePiece (traced once, batch None)."""

    def __init__(self, model_proto, vocab=None):
        self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        self.encode = vocab.encode if vocab is not None else self.sp.encode
        self.core = CoreSentencePiece(model_proto)
        self._tokenize = tf.function(self.core.tokenize, input_signature=[
            tf.TensorSpec([None], tf.string)])
        self._detokenize = tf.function(self.core.detokenize, input_signature=[
            tf.RaggedTensorSpec([None, None], tf.int32, row_splits_dtype=tf.int64)])

    def tokenize(self, texts):
        return self._tokenize(tf.constant(texts, tf.string, shape=[len(texts)])).to_list()

    def detokenize(self, ids):
        ragged = tf.ragged.constant(ids, tf.int32, row_splits_dtype=tf.int64)
        if len(ids) == 0 or not any(ids):  # tf.ragged.constant cannot tell [[]] is 2-D.
            ragged = tf.RaggedTensor.from_row_lengths(
                tf.constant([], tf.int32), tf.zeros([len(ids)], tf.int64))
        return [t.decode("utf-8") for t in self._detokenize(ragged).numpy()]

    def assert_exact(self, texts, batch=64):
        """tokenize == sentencepiece's ids and detokenize == its decode, line by line."""
        for start in range(0, len(texts), batch):
            chunk = texts[start:start + batch]
            want = [self.encode(t) for t in chunk]
            got = self.tokenize(chunk)
            bad = [i for i in range(len(chunk)) if got[i] != want[i]]
            assert not bad, (chunk[bad[0]], got[bad[0]], want[bad[0]])
            decoded = [self.sp.decode(ids) for ids in want]
            assert self.detokenize(want) == decoded
        return len(texts)


@pytest.fixture(scope="module")
def news():
    """2,000 pieces learned on newstest2013 (EN+DE): the common case."""
    vocab = train_vocab(_news_sample(), vocab_size=2000, num_threads=1)
    return Both(vocab.model_proto, vocab)


@pytest.fixture(scope="module")
def small():
    """400 pieces, coverage 0.995: many characters left to byte fallback."""
    vocab = train_vocab(_news_sample()[::4], vocab_size=400, character_coverage=0.995,
                        num_threads=1)
    return Both(vocab.model_proto, vocab)


def test_the_model_is_what_the_module_docstring_says(news):
    model = model_pb2.ModelProto()
    model.ParseFromString(news.sp.serialized_model_proto())
    assert model.trainer_spec.model_type == model_pb2.TrainerSpec.BPE
    assert model.trainer_spec.byte_fallback
    spec = model.normalizer_spec
    assert spec.add_dummy_prefix and spec.remove_extra_whitespaces and spec.escape_whitespaces
    pieces = [p.piece for p in model.pieces]
    assert pieces[:3] == ["<pad>", "</s>", "<unk>"]
    assert pieces[3:259] == [f"<0x{b:02X}>" for b in range(256)]
    # The charsmap maps exactly Python's whitespace to spaces: decoded by the module.
    from t2t_lite.serving.sentencepiece_ops import _space_codepoints

    assert _space_codepoints(spec) == sorted(ord(c) for c in WHITESPACE if c != " ")


def test_hermetic_newstest2013_slice(news, small):
    lines = _news_sample()
    assert news.assert_exact(lines) == small.assert_exact(lines) == 3000


@needs_data("wmt14/newstest2014.en", "wmt14/newstest2014.de")
@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_line_of_newstest2014(news, lang):
    assert news.assert_exact(_lines(f"{DATA}/wmt14/newstest2014.{lang}")) == 3003


@needs_data(*(f"multi30k/{name}.{lang}.gz" for lang in ("en", "de") for name in
              ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")))
@pytest.mark.parametrize("name", ["test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"])
def test_every_line_of_the_multi30k_test_sets(news, small, name):
    counts = {"test_2016_flickr": 1000, "test_2017_flickr": 1000, "test_2017_mscoco": 461}
    for lang in ("en", "de"):
        lines = _lines(f"{DATA}/multi30k/{name}.{lang}.gz")
        assert news.assert_exact(lines) == small.assert_exact(lines) == counts[name]


def test_edge_cases(news, small):
    long_line = " ".join(_news_sample())[:2000]
    cases = EDGE_CASES + [long_line, long_line.replace(" ", "")]
    news.assert_exact(cases)
    small.assert_exact(cases)
    assert news.tokenize(["", "   ", "\u2581"]) == [[], [], []]
    # Control and byte pieces typed in the text are characters, never those pieces.
    assert not set(news.tokenize(["<unk> </s> <pad>"])[0]) & {0, 1, 2}
    assert news.tokenize(["<0x41>"])[0] != [3 + 0x41]
    assert news.detokenize([[0, 1, 2, 2]]) == [news.sp.decode([0, 1, 2, 2])] == [" ⁇  ⁇ "]
    # Dense ids (every entry an id) work too.
    dense = news.core.detokenize(tf.constant([[3 + 0x41, 3 + 0xC3, 3 + 0xA9]], tf.int32))
    assert dense.numpy().tolist() == ["Aé".encode()]


def test_invalid_utf8_is_replaced_byte_by_byte(news):
    raw = [b"\xe2\x82", b"\xed\xa0\x80x", b"\xc0\x80", b"\xf4\x90\x80\x80", b"a\xffb \xe2\x80\xa8"]
    assert news.tokenize(raw) == [news.sp.encode(b) for b in raw]


@SETTINGS
@given(st.lists(st.one_of(st.text(max_size=40), st.text(SPACEY, max_size=40)),
                min_size=1, max_size=8))
def test_any_text(news, texts):
    news.assert_exact(texts)


@SETTINGS
@given(st.lists(st.binary(max_size=30), min_size=1, max_size=8))
def test_any_bytes(small, data):
    assert small.tokenize(data) == [small.sp.encode(b) for b in data]


def _ids(size):
    lead = st.sampled_from([3 + b for b in (0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xC0, 0x80, 0xBF)])
    return st.lists(st.one_of(st.integers(0, size - 1), st.integers(3, 258), lead),
                    max_size=12)


@SETTINGS
@given(st.data())
def test_any_ids(news, small, data):
    for both in (news, small):
        ids = data.draw(st.lists(_ids(both.sp.get_piece_size()), min_size=1, max_size=6))
        assert both.detokenize(ids) == [both.sp.decode(row) for row in ids]


def _crafted(base, pieces):
    """`base`'s proto with its learned pieces replaced by `pieces` ((text, score) pairs)."""
    model = model_pb2.ModelProto()
    model.ParseFromString(base)
    del model.pieces[259:]
    for text, score in pieces:
        model.pieces.add(piece=text, score=score, type=model_pb2.ModelProto.SentencePiece.NORMAL)
    return model.SerializeToString()


def test_one_merge_at_a_time(small):
    # score("aaa") > score("aa"): merging every "aa" at once would give aa, aa.
    proto = _crafted(small.sp.serialized_model_proto(),
                     [("\u2581", -3), ("a", -3), ("aa", -2), ("aaa", -1)])
    sp, core = spm.SentencePieceProcessor(model_proto=proto), CoreSentencePiece(proto)
    want = sp.encode("aaaa")
    assert [sp.id_to_piece(i) for i in want] == ["\u2581", "aaa", "a"]
    assert core.tokenize(["aaaa"]).to_list() == [want]


@SETTINGS
@given(st.lists(st.tuples(st.text("ab\u2581c", min_size=1, max_size=4), st.integers(-3, 0)),
                max_size=12, unique_by=lambda p: p[0]),
       st.lists(st.text("ab c\u2581\t", max_size=16), min_size=1, max_size=4))
def test_random_vocabularies_with_ties(small, pieces, texts):
    proto = _crafted(small.sp.serialized_model_proto(), pieces)
    sp, core = spm.SentencePieceProcessor(model_proto=proto), CoreSentencePiece(proto)
    assert core.tokenize(texts).to_list() == [sp.encode(t) for t in texts]


def test_without_dummy_prefix_and_with_another_unk_surface(small):
    model = model_pb2.ModelProto()
    model.ParseFromString(small.sp.serialized_model_proto())
    model.normalizer_spec.add_dummy_prefix = False
    model.trainer_spec.unk_surface = "<?>"
    both = Both(model.SerializeToString())
    both.assert_exact(EDGE_CASES + _news_sample()[:200])
    assert both.detokenize([[2, 3 + 0x41]]) == ["<?>A"]


def _mutation(name):
    def apply(model):
        if name == "unigram":
            model.trainer_spec.model_type = model_pb2.TrainerSpec.UNIGRAM
        elif name == "no byte fallback":
            model.trainer_spec.byte_fallback = False
        elif name == "suffix":
            model.trainer_spec.treat_whitespace_as_suffix = True
        elif name == "keep whitespace":
            model.normalizer_spec.remove_extra_whitespaces = False
        elif name == "user-defined":
            model.pieces[300].type = model_pb2.ModelProto.SentencePiece.USER_DEFINED
        elif name == "denormalizer":
            model.denormalizer_spec.precompiled_charsmap = \
                model.normalizer_spec.precompiled_charsmap
    return apply


@pytest.mark.parametrize("name", ["unigram", "no byte fallback", "suffix", "keep whitespace",
                                  "user-defined", "denormalizer"])
def test_refuses_what_it_cannot_reproduce(small, name):
    model = model_pb2.ModelProto()
    model.ParseFromString(small.sp.serialized_model_proto())
    _mutation(name)(model)
    with pytest.raises(ValueError, match="cannot reproduce") as error:
        CoreSentencePiece(model.SerializeToString())
    assert "\n" not in str(error.value)


def test_refuses_nfkc_words_and_garbage():
    lines = _news_sample()[:300]
    nfkc = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=nfkc,
                                   vocab_size=400, byte_fallback=True, model_type="bpe",
                                   character_coverage=0.995,
                                   num_threads=1, minloglevel=2)
    with pytest.raises(ValueError, match="NFKC"):
        CoreSentencePiece(nfkc.getvalue())
    with pytest.raises(ValueError, match="user-defined"):
        CoreSentencePiece(train_vocab(lines, 300, model_type="word").model_proto)
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        CoreSentencePiece(b"not a model")


class _Served(tf.Module):
    def __init__(self, model_proto):
        super().__init__()
        self.sp = CoreSentencePiece(model_proto)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, texts):
        return self.sp.tokenize(texts)

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int32,
                                                      row_splits_dtype=tf.int64)])
    def detokenize(self, ids):
        return self.sp.detokenize(ids)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, inputs):
        ids = self.sp.tokenize(inputs)
        return {"ids": ids.to_tensor(-1), "text": self.sp.detokenize(ids)}


FRESH = """
import json, sys
import tensorflow as tf
args = json.loads(sys.argv[1])
module = tf.saved_model.load(args["path"])
ids = module.tokenize(tf.constant(args["texts"]))
text = module.detokenize(ids)
# A session-based loader, as TensorFlow Serving's SavedModelBundle: tables initialized there too.
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], args["path"])
    signature = meta.signature_def["serving_default"]
    served = session.run({k: v.name for k, v in signature.outputs.items()},
                         {signature.inputs["inputs"].name: args["texts"]})
assert "tensorflow_text" not in sys.modules and "sentencepiece" not in sys.modules
print(json.dumps({"ids": ids.to_list(), "text": [t.decode() for t in text.numpy()],
                  "served_ids": [[i for i in row if i >= 0] for row in served["ids"].tolist()],
                  "served_text": [t.decode() for t in served["text"]]}))
"""


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_saved_model_runs_without_tensorflow_text(news, tmp_path):
    texts = EDGE_CASES[:8] + _news_sample()[:8]
    module = _Served(news.sp.serialized_model_proto())
    tf.saved_model.save(module, str(tmp_path / "sp"),
                        signatures={"serving_default": module.serve})
    want = [news.encode(t) for t in texts]
    done = subprocess.run([sys.executable, "-c", FRESH,
                           json.dumps({"path": str(tmp_path / "sp"), "texts": texts})],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["ids"] == got["served_ids"] == want
    assert got["text"] == got["served_text"] == [news.sp.decode(ids) for ids in want]
