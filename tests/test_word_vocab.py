"""Word-level vocabularies: one id per word, unknown words as classes (--source_vocab_type)."""

import json

import pytest

from t2t_lite.data.options import DatagenOptions
from t2t_lite.data import datagen
from t2t_lite.serving import export
from t2t_lite.bin import datagen as datagen_cli
from t2t_lite.serving.export import ExportError
from t2t_lite.problems.translate import TranslateFiles
from t2t_lite.registry import register_problem
from t2t_lite.data.text_encoder import DataError, SubwordVocab, train_vocab
from t2t_lite.parsing.tree_constraint import TreeConstraint
from t2t_lite.data.word_classes import CLASS_PIECES, word_class

NAME = "test_word_vocab_files"
WORDS = ("the dog saw a cat . a man fed the bird . the birds were watching the dogs . "
         "Paris is big . the cat slept .").split(" . ")


@register_problem(NAME)
class WordSourceFiles(TranslateFiles):
    """translate_files with separate vocabularies (the source side can be word-level)."""

    shared_vocab = False


def test_word_classes():
    assert word_class("1987") == word_class("3.5") == "\u2581<unk:num>"
    assert word_class("--") == word_class("$") == "\u2581<unk:sym>"
    assert word_class("NASA") == "\u2581<unk:CAPS>"
    assert word_class("Vinken") == "\u2581<unk:Cap>"
    assert word_class("Boeing") == "\u2581<unk:Cap-ing>"
    assert word_class("nonexecutive") == "\u2581<unk:low-ive>"
    assert word_class("reorganized") == "\u2581<unk:low-ed>"
    assert word_class("well-heeled") == "\u2581<unk:hyph-ed>"
    assert word_class("is") == "\u2581<unk:low>"  # A suffix needs a stem of 2 or more.
    assert word_class("quickly") in CLASS_PIECES and len(set(CLASS_PIECES)) == len(CLASS_PIECES)


@pytest.fixture(scope="module")
def vocab():
    return train_vocab([s + " ." for s in WORDS] * 20, vocab_size=len(CLASS_PIECES) + 3 + 6,
                       model_type="word")


def test_one_id_per_word_and_classes_for_unknown_words(vocab):
    assert vocab.model_type == "word"
    pieces = [vocab.id_to_piece(i) for i in range(vocab.vocab_size)]
    assert pieces[:3] == ["<pad>", "</s>", "<unk>"]
    assert pieces[3:3 + len(CLASS_PIECES)] == list(CLASS_PIECES)
    words = pieces[3 + len(CLASS_PIECES):]
    assert len(words) == 6 and "\u2581the" in words and "\u2581." in words  # The most frequent.
    assert not any(p.startswith("<0x") for p in pieces)  # No byte pieces.
    text = "the  Zebras saw 42 cats ."
    ids = vocab.encode(text)
    assert len(ids) == 6 and 2 not in ids  # One id each; never the bare <unk>.
    assert [vocab.id_to_piece(i) for i in ids][1:4] == [
        "\u2581<unk:Cap-s>", "\u2581saw" if "\u2581saw" in words else "\u2581<unk:low>",
        "\u2581<unk:num>"]
    assert vocab.decode(ids).split()[1] == "<unk:Cap-s>"
    assert len(vocab.decode(ids).split()) == 6  # A word per id: the input's words counted.
    assert vocab.encode_batch([text, "the cat"]) == [ids, vocab.encode("the cat")]


def test_word_vocabulary_too_small():
    with pytest.raises(DataError, match="no room for words: the 57 reserved pieces and "
                                        "unknown-word classes"):
        train_vocab(["a b c"], vocab_size=3 + len(CLASS_PIECES), model_type="word")


def test_the_tree_constraint_counts_one_word_per_id(vocab):
    target = ["<pad>", "</s>", "<unk>", "\u2581(S", "\u2581)S", "\u2581NN"]
    source = [vocab.id_to_piece(i) for i in range(vocab.vocab_size)]
    constraint = TreeConstraint(target, source)
    ids = vocab.encode("the Zebras saw 42 cats .") + [1]
    state = constraint.initial_state([ids])
    assert int(state["words_left"][0]) == 6


@pytest.fixture
def raw(tmp_path):
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    source = [f"{s} ." for s in WORDS] * 10
    target = [" ".join(reversed(s.split())) for s in source]
    for split, rows in (("train", slice(0, 40)), ("dev", slice(40, 50))):
        (raw_dir / f"{split}.en").write_text("\n".join(source[rows]) + "\n")
        (raw_dir / f"{split}.de").write_text("\n".join(target[rows]) + "\n")
    return raw_dir


def test_datagen_source_vocab_type(raw, tmp_path, capsys):
    data = tmp_path / "data"
    args = [f"--problem={NAME}", f"--data_dir={data}", f"--raw_dir={raw}",
            "--source_vocab_type=word", "--source_vocab_size=70", "--target_vocab_size=300"]
    assert datagen_cli.main(args) == 0
    source = SubwordVocab.load(str(data / f"vocab.{NAME}.source.model"))
    target = SubwordVocab.load(str(data / f"vocab.{NAME}.target.model"))
    assert (source.model_type, target.model_type) == ("word", "bpe")
    with open(data / f"{NAME}.datagen.json") as f:
        tokens = json.load(f)["shards"]["train"]
    words = sum(len(s.split()) + 1 for s in ([f"{s} ." for s in WORDS] * 10)[:40])
    assert sum(s["source_tokens"] for s in tokens.values()) == words  # A token a word, + EOS.
    # A rerun asking for the other type is refused, naming the file.
    capsys.readouterr()
    assert datagen_cli.main(args[:3] + ["--source_vocab_type=bpe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "is a word vocabulary, not the bpe asked" in err[-1]  # The one error line.
    assert not any("Traceback" in line for line in err)
    # A word-level source cannot be put in the graph: export refuses in one line.
    problem = WordSourceFiles()
    problem.set_data_dir(str(data))
    source_file = export.vocab_files(problem)[0]
    with pytest.raises(ExportError, match="word-level vocabulary: .*decode it with "
                                          "t2t_lite-decoder"):
        export.check_in_graph_source(source_file)
    export.check_in_graph_source(export.vocab_files(problem)[1])  # BPE: fine.


def test_source_vocab_type_needs_separate_vocabularies(raw, tmp_path):
    with pytest.raises(DataError, match="shares one vocabulary.*--source_vocab_type"):
        datagen.generate(TranslateFiles(), str(tmp_path / "d"), str(raw),
                         DatagenOptions(source_vocab_type="word"), log=lambda _: None)
    with pytest.raises(DataError, match="--source_vocab_type must be one of bpe, word"):
        datagen.generate(WordSourceFiles(), str(tmp_path / "d"), str(raw),
                         DatagenOptions(source_vocab_type="char"), log=lambda _: None)

