"""The shared SentencePiece vocabulary: reserved ids, determinism, exact round trips."""


import pytest
import tensorflow as tf
from conftest import data_file

from t2t_lite import registry
from t2t_lite.data.text_encoder import (EOS_ID, NUM_RESERVED, PAD_ID, DataError, SubwordVocab,
                                   normalize, train_vocab)



def _lines(path, limit=None):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines[:limit]


def _sample():
    """Training text: 1500 lines of newstest2013 per side (never newstest2014)."""
    return (_lines(data_file("wmt14", "newstest2013.en", lines=1500), 1500)
            + _lines(data_file("wmt14", "newstest2013.de", lines=1500), 1500))


@pytest.fixture(scope="module")
def vocab():
    return train_vocab(_sample(), vocab_size=1500, seed=7)


def test_reserved_ids_and_size(vocab):
    assert vocab.vocab_size == 1500
    assert vocab.id_to_piece(PAD_ID) == "<pad>" and vocab.id_to_piece(EOS_ID) == "</s>"
    assert vocab.id_to_piece(2) == "<unk>" and vocab.id_to_piece(3) == "<0x00>"
    ids = vocab.encode("Der Hund läuft.")
    assert ids and min(ids) >= 3 and EOS_ID not in ids and PAD_ID not in ids
    assert int(vocab.tf_tokenizer().vocab_size()) == vocab.vocab_size
    pieces = vocab.pieces_text().splitlines()
    assert len(pieces) == 1500 and pieces[1].startswith("</s>\t")


def test_deterministic(vocab):
    again = train_vocab(_sample(), vocab_size=1500, seed=7)
    assert again.model_proto == vocab.model_proto


@pytest.mark.parametrize("name", ["newstest2014.en", "newstest2014.de"])
def test_round_trip_every_line_of_newstest2014(vocab, name):
    """decode(encode(line)) == normalize(line), in Python and in the TF graph alike."""
    lines = _lines(data_file("wmt14", name))
    assert len(lines) == 3003
    python_ids = [vocab.encode(line) for line in lines]
    graph_ids = vocab.encode_batch(lines)
    assert graph_ids == python_ids  # tensorflow_text == sentencepiece, id for id.
    for line, ids in zip(lines, python_ids):
        assert vocab.decode(ids + [EOS_ID]) == normalize(line)
    # shared/data's extraction already collapsed whitespace: the identity, byte for byte.
    assert all(normalize(line) == line for line in lines)
    tokenizer = vocab.tf_tokenizer()
    detokenized = tokenizer.detokenize(tf.ragged.constant(python_ids)).numpy()
    assert [d.decode("utf-8") for d in detokenized] == [normalize(line) for line in lines]
    assert not any("\u2581" in vocab.decode(ids) for ids in python_ids)


def test_normalization_is_whitespace_only(vocab):
    text = "\t Ärger\u00a0über  „Zölle“ –\u2009ﬁne 漢字 😀 e\u0301 <pad> </s>\r\n"
    assert normalize(text) == "Ärger über „Zölle“ – ﬁne 漢字 😀 e\u0301 <pad> </s>"
    ids = vocab.encode(text)
    assert vocab.decode(ids) == normalize(text)  # Unseen characters: UTF-8 bytes.
    assert 2 not in ids  # Byte fallback: never <unk>.
    graph = vocab.tf_tokenizer().detokenize(vocab.tf_tokenizer().tokenize([text]))
    assert graph.numpy()[0].decode("utf-8") == normalize(text)


def test_decode_stops_at_eos_and_skips_padding(vocab):
    ids = vocab.encode("Guten Morgen")
    assert vocab.decode([PAD_ID] + ids + [PAD_ID, EOS_ID] + ids) == "Guten Morgen"
    assert vocab.decode([EOS_ID]) == "" and vocab.decode([]) == ""


def test_load_from_file(vocab, tmp_path):
    path = tmp_path / "v.model"
    path.write_bytes(vocab.model_proto)
    loaded = SubwordVocab.load(str(path))
    assert loaded.encode("Hallo Welt") == vocab.encode("Hallo Welt")
    assert loaded.sha256 == vocab.sha256


def test_bad_vocab_sizes():
    with pytest.raises(DataError, match="leaves no room"):
        train_vocab(["a b c"], vocab_size=NUM_RESERVED)
    with pytest.raises(DataError, match="at most .*smaller --vocab_size"):
        train_vocab(_lines(data_file("wmt14", "newstest2013.en"), 50), vocab_size=50_000)


def test_paper_vocabulary_sizes():
    assert registry.problem("wmt_ende").default_vocab_size == 37_000
    assert registry.problem("wmt_enfr").default_vocab_size == 32_000
