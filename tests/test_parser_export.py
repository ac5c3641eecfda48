"""The exported parser (issue 23, item 4): the graph's words, word classes and trees
equal the Python ones, and a SavedModel parses as t2t_lite-decoder does, in a
process without t2t_lite or tensorflow_text."""

import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import DATA, session_run
from test_parsing import _run, write_wsj

from t2t_lite import registry
from t2t_lite.bin import decoder as decoder_cli
from t2t_lite.bin import exporter as exporter_cli
from t2t_lite.data.word_classes import word_class
from t2t_lite.parsing import ptb
from t2t_lite.parsing.serving import TreeWriter, tf_treebank_words, tf_word_class, tf_words

TRICKY = ["the", "The", "THE", "A", "I", "x", "X-ray", "x-ray", "-", "--", "42", "1,234", "3/4",
          "²", "٣", "COVID-19", "U.S.", "I.B.M", "naïve", "Éclair", "ÉCOLE", "İstanbul",
          "straße", "Straße", "ΑΒΓ", "αβγ", "東京", "don't", "''", "``", "(", ")", "f(x)", "{",
          "[", "-LRB-", "%", "$", "&", "running", "Running", "RUNNING", "ing", "xing", "sing",
          "movement", "Happiness", "unbelievable", "nation", "fastest", "city", "famous",
          "native", "walked", "ed", "quickly", "bigger", "local", "ironic", "cats", "is", "happy",
          "ǅemal", "ⓐⓑ", "Ⅻ", "a\u0301", "mid-1990s", "Well-known", "e-mail", "A-"]


def _strings(tensor):
    return [s.decode("utf-8") for s in tensor.numpy().tolist()]


def _sample_words():
    path = os.path.join(DATA, "ptb_sample", "wsj_0001-0199.combined.trees")
    if not os.path.exists(path):
        return []
    return sorted({w for tree in ptb.read_tree_file(path) for w in ptb.words(tree)})


def test_word_classes_in_the_graph_equal_pythons():
    words = TRICKY + _sample_words()  # Every word of the treebank sample where present.
    got = _strings(tf_word_class(tf.constant(words)))
    wrong = [(w, g, word_class(w)) for w, g in zip(words, got) if g != word_class(w)]
    assert not wrong, wrong[:10]
    assert len(set(got)) > 20  # The classes differ: the check has something to compare.


def test_words_are_split_and_escaped_as_the_decoder_does():
    lines = ["the dog  barked .", "\tone\u00a0two\u3000three\x1cfour\u2029", "", "   ",
             "( f(x) ) { [ ]", "naïve “quotes” -LRB-"]
    words = tf_words(tf.constant(lines))
    assert [_strings(row) for row in words] == [line.split() for line in lines]
    treebank = tf_treebank_words(words)
    assert [_strings(row) for row in treebank] == [
        [ptb.treebank_word(w) for w in line.split()] for line in lines]


def _random_linearization(rng, n_words):
    """A well-formed linearization with n_words slots (random labels and tags)."""
    def phrase(words):
        label = rng.choice(["NP", "VP", "S", "PP", "-LRB-"])
        if words == 1 or rng.random() < 0.3:
            return [f"({label}"] + [rng.choice(["NN", "DT", "-LRB-", ","]) for _ in
                                     range(words)] + [f"){label}"]
        cut = rng.randint(1, words - 1)
        return [f"({label}"] + phrase(cut) + phrase(words - cut) + [f"){label}"]
    return phrase(n_words)


def test_tree_writer_equals_format_output():
    problem = registry.problem("wsj_parsing")
    symbols = ["(NP", ")NP", "(VP", ")VP", "(S", ")S", "(PP", ")PP", "(-LRB-", ")-LRB-", "NN",
               "DT", "-LRB-", ","]
    pieces = ["<pad>", "</s>", "<unk>"] + ["\u2581" + s for s in symbols]
    ids_of = {s: i + 3 for i, s in enumerate(symbols)}
    rng = random.Random(0)
    sources, outputs = [], []
    for n in [1, 2, 3, 5, 8, 13, 4, 4, 0]:
        words = [rng.choice(["the", "(", "f(x)", "dog", "“q”", "é"]) for _ in range(n)]
        tokens = _random_linearization(rng, n) if n else []
        if len(sources) == 6:  # One slot short: the flat XX tree.
            tokens = [t for t in tokens if t not in ("NN", "DT", "-LRB-", ",")][:-1] or tokens
            tokens = tokens[:1] + ["NN"] + tokens[1:]
        sources.append(" ".join(words))
        outputs.append(tokens)
    width = max(len(t) for t in outputs) + 3
    ids = np.zeros((len(outputs), width), np.int32)
    for row, tokens in enumerate(outputs):
        ids[row, :len(tokens) + 1] = [ids_of[t] for t in tokens] + [1]
    ids[1, len(outputs[1]) + 1:] = ids_of["NN"]  # After EOS: ignored.
    got = _strings(TreeWriter(pieces)(tf_words(tf.constant(sources)), tf.constant(ids)))
    want = [problem.format_output(s, " ".join(t)) for s, t in zip(sources, outputs)]
    assert got == want
    assert "(XX" in want[6] and want[-1] == "" and "-LRB-" in "".join(want)


LOAD_CODE = r"""
import json, sys
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
lines = [l.rstrip("\n") for l in open(sys.argv[2], encoding="utf-8")]
out = model.signatures["serving_default"](inputs=tf.constant(lines))
assert "t2t_lite" not in sys.modules and "tensorflow_text" not in sys.modules
print(json.dumps({"trees": [t.decode("utf-8") for t in out["outputs"].numpy().tolist()],
                  "scores": out["scores"].numpy().tolist()}))
"""


def _shape(tree):
    """A tree with its words left out: `(TOP (NP (DT) (NN)))`."""
    return re.sub(r"\(([^\s()]+) [^\s()]+\)", r"(\1)", tree)


def _shapes_differ(lines, trees):
    """Whether two lines with the same number of words get trees of different shapes (a
    tree's words come from its line, so only lines of one length can tell a parser that
    ignores its input from one that reads it)."""
    by_length = {}
    for line, tree in zip(lines, trees):
        by_length.setdefault(len(line.split()), set()).add(_shape(tree))
    return any(len(shapes) > 1 for shapes in by_length.values())


@pytest.mark.slow  # ~60 s each: a short parsing run, an export and a fresh process.
@pytest.mark.parametrize("hparams, steps", [("parsing_small_aligned", 50),
                                            ("parsing_small_chart", 200)])
@pytest.mark.guarantee("export-parity", "the exported parser (aligned and chart), in a fresh "
                       "process without t2t_lite and in TF Serving's session loader, writes "
                       "t2t_lite-decoder's trees for ten lines, trees whose shapes differ "
                       "between lines of one length, from runs trained until they do")
def test_exported_parser_writes_the_decoders_trees(tmp_path, hparams, steps):
    """Trained until the trees depend on the words (at 3 steps the chart parser gave the
    flat XX tree for every line): 50 steps for the aligned parser, 200 for the chart
    parser (measured: 1.2 s and 3.6 s more than 3 steps)."""
    raw, data, out = (str(tmp_path / n) for n in ("raw", "data", "out"))
    write_wsj(raw, files_per_section=1, trees_per_file=8)
    _run("t2t_lite.bin.datagen", "--problem=wsj_parsing", f"--data_dir={data}",
         f"--raw_dir={raw}", "--source_vocab_size=300")
    _run("t2t_lite.bin.trainer", "--problem=wsj_parsing", f"--hparams={hparams}",
         f"--data_dir={data}", f"--output_dir={out}", f"--train_steps={steps}",
         "--eval_every_steps=0",
         "--hparams_overrides=num_layers=1,d_model=32,d_ff=64,num_heads=2,max_length=32,"
         "batch_size=512")
    long_line = " ".join(random.Random(1).choice(["the", "dog", "saw", "Zebras", "."])
                         for _ in range(150))  # Cut at max_length: the flat XX tree.
    lines = ["the dog saw a cat .", "The ( Zebra ) fed 42 birds -- naïve “quotes” x-ray", "dog",
             "", "  spaced\tout   words ", "{ [ f(x) ] } -LRB-", "CATS running quickly",
             "the cat saw a dog .", "Zebras fed the birds quickly .", long_line]
    source = tmp_path / "lines.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    decoded = tmp_path / "decoded.txt"
    assert decoder_cli.main([f"--output_dir={out}", f"--decode_from_file={source}",
                             f"--decode_to_file={decoded}", "--beam_size=3"]) == 0
    assert exporter_cli.main([f"--output_dir={out}", f"--export_dir={tmp_path / 'export'}",
                              "--beam_size=3"]) == 0
    result = subprocess.run([sys.executable, "-c", LOAD_CODE, str(tmp_path / "export" / "1"),
                             str(source)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])
    want = decoded.read_text(encoding="utf-8").split("\n")[:len(lines)]
    assert served["trees"] == want
    assert _shapes_differ(lines, want), want  # The trees depend on the words.
    # A session-based loader (TensorFlow Serving's) runs it too: core ops, variables found.
    session = session_run(tmp_path / "export" / "1", "serving_default",
                          np.array([line.encode("utf-8") for line in lines], dtype=object),
                          tmp_path)
    assert [tree.decode("utf-8") for tree in session["outputs"]] == want
    assert want[3] == "" and served["scores"][3] == 0.0
    assert want[-1].startswith("(TOP (XX") and want[0].startswith("(TOP (")
    for line, tree in zip(lines, want):  # One tree over exactly the line's words.
        if line.strip():
            assert [ptb.unescape_word(w) for w in ptb.words(ptb.read_trees(tree)[0])] == [
                ptb.unescape_word(w) for w in line.split()]
