"""wsj_parsing: treebank layouts and splits, the datagen -> train -> decode chain, EVALB F1."""

import json
import os
import random
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf
from conftest import DATA, needs_data

from t2t_lite.runs.run import Run
from t2t_lite import registry
from t2t_lite.runs import weights
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.splits import decode_split
from t2t_lite.parsing import ptb
from t2t_lite.data.datagen import generate
from t2t_lite.data.options import DatagenOptions
from t2t_lite.metrics.evalb import EvalbF1
from t2t_lite.problems.parsing import find_splits

SAMPLE = "ptb_sample/wsj_0001-0199.combined.trees"
NOUNS, VERBS, DETS = ["dog", "cat", "bird", "man"], ["saw", "liked", "fed"], ["the", "a"]


def _tree(rng):
    """A random tree of a toy grammar, in .mrg form, with a trace and function tags."""
    def np_():
        return f"(NP (DT {rng.choice(DETS)}) (NN {rng.choice(NOUNS)}))"
    vp = f"(VP (VBD {rng.choice(VERBS)}) {np_()})"
    if rng.random() < 0.3:
        vp = f"(VP (VBD {rng.choice(VERBS)}) (SBAR (-NONE- 0) (S (NP-SBJ {np_()}) {vp})))"
    return f"( (S (NP-SBJ-1 {np_()}) {vp} (. .)) )\n"


def write_wsj(root, files_per_section=2, trees_per_file=12, sections=range(2, 25), seed=0):
    """A directory laid out as the LDC WSJ: root/wsj/SS/wsj_SSNN.mrg."""
    rng = random.Random(seed)
    for section in sections:
        folder = os.path.join(root, "wsj", f"{section:02d}")
        os.makedirs(folder, exist_ok=True)
        for number in range(files_per_section):
            with open(os.path.join(folder, f"wsj_{section:02d}{number:02d}.mrg"), "w") as f:
                f.write("".join(_tree(rng) for _ in range(trees_per_file)))


def test_full_wsj_layout_uses_the_standard_split(tmp_path):
    write_wsj(tmp_path)
    splits = find_splits(str(tmp_path))
    sections = {s: sorted({os.path.basename(f.path)[4:6] for f in files})
                for s, files in splits.items()}
    assert sections == {"train": [f"{s:02d}" for s in range(2, 22)], "dev": ["22"],
                        "test": ["23"]}  # Sections 00, 01 and 24 are not used.


def test_datagen_reads_each_treebank_file_once(tmp_path, monkeypatch):
    from t2t_lite.problems import parsing

    write_wsj(tmp_path / "raw", files_per_section=1, trees_per_file=3)
    reads = []
    trees = parsing.TreeFile.trees
    monkeypatch.setattr(parsing.TreeFile, "trees", lambda f: reads.append(f.path) or trees(f))
    summary = generate(registry.problem("wsj_parsing"), str(tmp_path / "data"),
                       str(tmp_path / "raw"), DatagenOptions(source_vocab_size=300),
                       log=lambda *a: None)
    assert [s.written for s in summary.splits] == [60, 3, 3]  # 20, 1 and 1 sections.
    assert len(reads) == len(set(reads)) == 22  # Counting, the vocabulary, the shards.


@needs_data(SAMPLE)
def test_sample_split_by_file():
    splits = find_splits(os.path.join(DATA, "ptb_sample"))
    counts = {s: sum(len(f.trees()) for f in files) for s, files in splits.items()}
    assert counts == {"train": 3396, "dev": 273, "test": 245}


def test_format_output_restores_the_words_and_marks_ill_formed_trees():
    problem = registry.problem("wsj_parsing")
    assert problem.format_output("The dog barked .", "(S (NP DT NN )NP (VP VBD )VP . )S") == \
        "(TOP (S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .)))"
    assert problem.format_output("The dog", "(S DT )S") == "(TOP (XX The) (XX dog))"


def test_reference_trees_are_cleaned_like_the_gold_trees():
    problem = registry.problem("wsj_parsing")
    raw = "( (S (NP-SBJ-1 (DT The) (NN dog)) (VP (VBD barked) (NP (-NONE- *-1))) (. .)) )"
    assert problem.format_reference(raw) == \
        "(TOP (S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .)))"
    assert problem.format_reference("(S (NN a)") == "(S (NN a)"  # EVALB will say why.


def test_evalb_metric_reports_errors_as_unparsed():
    gold = ["(TOP (S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .)))",
            "(TOP (S (NP (DT A) (NN cat)) (VP (VBD sat)) (. .)))"]
    test = [gold[0], "(TOP (XX A) (XX cat) (XX sat) (XX .))"]  # The second is an error.
    score = EvalbF1().score(test, gold)
    assert score.value == 100.0  # EVALB leaves the error sentence out...
    assert "1 errors" in score.line
    # ...the strict figure counts its 3 brackets as missed: R 3/6, P 3/3.
    assert "F1 66.67 counting errors as unparsed" in score.line
    # The problem's metric (dev selection, the decoder's figure) is the strict one.
    problem_score = registry.problem("wsj_parsing").eval_metrics()[0].score(test, gold)
    assert problem_score.name == "evalb_f1_strict"
    assert problem_score.value == pytest.approx(66.6667, abs=1e-3)
    assert problem_score.line == score.line
    assert registry.problem("wsj_parsing").eval_metrics()[0].score(gold, gold).value == 100.0


def _run(*args):
    result = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def wsj_data(tmp_path_factory):
    """datagen on a WSJ-laid-out directory: (raw_dir, data_dir, a fresh run directory)."""
    root = tmp_path_factory.mktemp("parsing")
    raw, data, out = (str(root / n) for n in ("raw", "data", "out"))
    write_wsj(raw)
    _run("t2t_lite.bin.datagen", "--problem=wsj_parsing", f"--data_dir={data}",
         f"--raw_dir={raw}", "--source_vocab_size=300")
    return raw, data, out


@pytest.fixture(scope="module")
def small_parsing_run(wsj_data):
    """The `parsing` set made small (1 x 64), 1 step on the WSJ-laid-out data: what
    decoding with the problem's constraint needs, without the full set's 1 GB."""
    _, data, out = wsj_data
    small = out + "_small"
    _run("t2t_lite.bin.trainer", "--problem=wsj_parsing", "--hparams=parsing",
         f"--data_dir={data}", f"--output_dir={small}", "--train_steps=1",
         "--eval_every_steps=0", "--hparams_overrides=batch_size=256,num_layers=1,"
         "d_model=64,d_ff=128,num_heads=2")
    return small


@pytest.mark.slow  # The full `parsing` set (84M parameters, a 1 GB checkpoint): 35 s.
def test_trainer_starts_with_the_parsing_set_on_the_wsj_layout(wsj_data):
    _, data, out = wsj_data
    result = _run("t2t_lite.bin.trainer", "--problem=wsj_parsing", "--hparams=parsing",
                  f"--data_dir={data}", f"--output_dir={out}", "--train_steps=1",
                  "--eval_every_steps=0", "--hparams_overrides=batch_size=512")
    log = result.stdout + result.stderr
    assert "training wsj_parsing with" in log
    problem = registry.problem("wsj_parsing")
    problem.set_data_dir(data)
    assert problem.source_vocab.model_type == "word"  # The default: one id per word.
    assert len(problem.encode("the Zebras fed 42 birds .")) == 6
    hparams = Run.open(out).hparams
    assert (hparams.num_layers, hparams.d_model, hparams.beam_size, hparams.alpha,
            hparams.extra_length) == (4, 1024, 21, 0.3, 300)
    with open(os.path.join(data, "wsj_parsing.datagen.json")) as f:
        shards = json.load(f)["shards"]
    written = {split: sum(s["written"] for s in shards[split].values()) for split in shards}
    assert written == {"train": 480, "dev": 24, "test": 24}  # 20, 1, 1 sections x 2 x 12.


def test_the_constraint_holds_a_tag_dictionary_from_the_training_shards(wsj_data, tmp_path,
                                                                        capsys):
    _, data, _ = wsj_data
    problem = registry.problem("wsj_parsing")
    problem.set_data_dir(data)
    constraint = problem.decode_constraint()
    source, target = problem.source_vocab, problem.target_vocab
    pieces = [target.id_to_piece(i) for i in range(target.vocab_size)]
    the = source.encode("the")[0]
    allowed = {pieces[i][1:] for i in range(len(pieces)) if constraint.tags[the, i]
               and pieces[i][1:] in ptb_tags(pieces)}
    assert allowed == {"DT"}  # The toy treebank's `the` is always DT.
    assert problem.decode_constraint(tag_dictionary=False).tags is None
    # Vocabularies without the training shards: the plain tree constraint, and a warning.
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in os.listdir(data):
        if name.startswith("vocab."):
            shutil.copy(os.path.join(data, name), bare / name)
    problem.set_data_dir(str(bare))
    assert problem.decode_constraint().tags is None
    assert "no training shards" in capsys.readouterr().err


def test_source_word_counts_are_the_training_trees_word_counts(wsj_data):
    import collections

    from t2t_lite.problems.parsing import TreebankCorpus

    raw, data, _ = wsj_data
    problem = registry.problem("wsj_parsing")
    problem.set_data_dir(data)
    counts = problem.source_word_counts()
    assert len(counts) == problem.source_vocab_size
    pairs = TreebankCorpus(find_splits(raw)["train"]).pairs()
    words = collections.Counter(w for source, _ in pairs for w in source.split())
    assert len(words) == 10  # The toy grammar's words.
    for word, count in words.items():
        assert counts[problem.encode(word)[0]] == count, word
    assert counts[1] == 480  # EOS: once per training tree.


def test_span_label_chains_are_the_training_trees_unary_chains(wsj_data):
    """The span chart's classes (`span_transformer`) count each phrase of the
    training trees once, a phrase over the same words as its parent in the
    parent's chain, top first."""
    import collections

    from t2t_lite.problems.parsing import TreebankCorpus

    raw, data, _ = wsj_data
    problem = registry.problem("wsj_parsing")
    problem.set_data_dir(data)
    kinds, labels = problem.target_token_tables()
    assert len(kinds) == len(labels) == problem.target_vocab_size
    target = problem.target_vocab
    ids = {target.id_to_piece(i): i for i in range(target.vocab_size)}
    expected = collections.Counter()
    for _, target in TreebankCorpus(find_splits(raw)["train"]).pairs():
        spans, stack, words = {}, [], 0
        for token in target.split():
            if ptb.token_kind(token) == "open":
                stack.append((token, words))
            elif ptb.token_kind(token) == "close":
                token, first = stack.pop()
                spans.setdefault((first, words), []).insert(0, token)
            else:
                words += 1
        expected.update(tuple(ids["\u2581" + t] for t in chain) for chain in spans.values())
    chains = problem.span_label_chains()
    assert chains == expected and sum(chains.values()) > 480
    assert any(len(chain) == 2 for chain in chains)  # NP over NP, SBAR over S.


def ptb_tags(pieces):
    from t2t_lite.parsing.tree_constraint import TAG, token_tables

    kinds = token_tables(pieces)[0]
    return {p[1:] for p, k in zip(pieces, kinds) if k == TAG}


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_decoder_writes_trees_over_the_input_words(small_parsing_run, tmp_path):
    """An almost untrained model, decoded with the problem's constraint:
    every output line is a tree over exactly the words of its input line."""
    out = small_parsing_run
    lines = ["the dog saw a cat .", "a man fed the bird .", "dog",
             "the Zebras fed 42 well-fed birds ."]  # Unknown words: classes, one id each.
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n")
    target = tmp_path / "out.txt"
    gold = tmp_path / "gold.txt"  # Raw treebank form: outer ( ), function tags.
    gold.write_text(
        "( (S (NP-SBJ (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .)) )\n"
        "( (S (NP-SBJ (DT a) (NN man)) (VP (VBD fed) (NP (DT the) (NN bird))) (. .)) )\n"
        "( (NP (NN dog)) )\n"
        "( (S (NP-SBJ (DT the) (NNS Zebras)) (VP (VBD fed) (NP (CD 42) (JJ well-fed) "
        "(NNS birds))) (. .)) )\n")
    result = _run("t2t_lite.bin.decoder", f"--output_dir={out}", f"--decode_from_file={source}",
                  f"--decode_to_file={target}", "--beam_size=3", "--extra_length=30",
                  f"--reference={gold}")
    assert "EVALB (COLLINS.prm): F1" in result.stdout
    trees = target.read_text().splitlines()
    assert len(trees) == 4
    for line, tree in zip(lines, trees):
        parsed = ptb.read_trees(tree)
        assert len(parsed) == 1 and parsed[0].label == "TOP"
        assert ptb.words(parsed[0]) == line.split()
        assert "XX" not in ptb.tags(parsed[0])


@needs_data(SAMPLE)
@pytest.mark.parametrize("beam_size", [pytest.param(1, marks=pytest.mark.slow), 4])
def test_constrained_search_never_builds_an_invalid_tree_on_held_out_sentences(
        tmp_path, beam_size):
    """An untrained model on every held-out (test) sentence of the sample."""
    data = str(tmp_path / "data")
    problem = registry.problem("wsj_parsing")
    generate(problem, data, os.path.join(DATA, "ptb_sample"), log=lambda *a: None)
    problem.set_data_dir(data)
    hparams = registry.hparams("parsing_small").override(
        "num_layers=1,d_model=32,d_ff=64,num_heads=2,dropout_rate=0.0")
    tf.keras.utils.set_random_seed(beam_size)
    model = weights.build_model(hparams, problem.source_vocab_size,
                                    problem.target_vocab_size)
    options = DecodeOptions(beam_size=beam_size, alpha=0.3, extra_length=5,
                                     return_beams=True, constraint=problem.decode_constraint())
    report = decode_split(problem, model, "test", options, data)
    assert len(report.hypotheses) == 245
    for source, hypothesis in zip(report.sources, report.hypotheses):
        tree = ptb.read_trees(hypothesis)[0]
        assert "XX" not in ptb.tags(tree) and ptb.words(tree) == source.split()
    # (EVALB still calls most of them errors: random tags on punctuation change
    # which words COLLINS.prm deletes, hence the lengths it compares.)
    plain = decode_split(problem, model, "test", DecodeOptions(
        beam_size=beam_size, alpha=0.3, extra_length=5), data)
    assert sum("(XX " in h for h in plain.hypotheses) > 200  # Unconstrained: ill-formed.
    shutil.rmtree(data)
