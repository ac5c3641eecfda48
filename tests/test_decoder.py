"""t2t_lite-decoder: files, stdin, batching, order, the problem's own metrics, errors."""

import dataclasses
import io
import pathlib
import re
import sys

import numpy as np
import pytest
from conftest import NO_EVAL
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.data.options import DatagenOptions
from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.runs import weights
from t2t_lite.data import datagen
from t2t_lite.decoding import decode_policy
from t2t_lite.ids import strip_ids
from t2t_lite.decoding.decoder import Decoder
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.search import cache_lengths, search
from t2t_lite.decoding.splits import decode_split
from t2t_lite.training import trainer
from t2t_lite.bin import decoder as decoder_cli
from t2t_lite.metrics import ExactMatch, Metric, Score
from t2t_lite.problems.algorithmic import AlgorithmicReverse
from t2t_lite.problems.translate import TranslateFiles
from t2t_lite.registry import register_problem


TESTDATA = pathlib.Path(__file__).parent / "testdata" / "bleu"


def _train(problem_name, output_dir, steps):
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256")
    trainer.train(registry.problem(problem_name), hparams, str(output_dir),
                  options=TrainOptions(eval=NO_EVAL, train_steps=steps, log_every_steps=1000),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return str(output_dir)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """algorithmic_reverse, trained enough (300 steps) that distinct inputs decode apart."""
    return _train("algorithmic_reverse", tmp_path_factory.mktemp("run"), 300)


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
@pytest.mark.guarantee("no-data-dropped", "one line per input line in order, an empty line gives "
                       "an empty line, and an over-long line is truncated to `max_length` with a "
                       "warning naming the line")
def test_decode_file_keeps_order_empty_and_long_lines(run_dir, tmp_path, capsys):
    long_line = " ".join(["7"] * 80)  # Longer than tiny's max_length=64.
    lines = ["3 1 4", "", long_line, "2 2", "9 8 7 6 5 4", "0", "5 6 1 2"]
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines) + "\n")
    code = decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={target}", "--beam_size=2", "--jit"])
    assert code == 0
    assert "line 3: 81 tokens, truncated to max_length=64" in capsys.readouterr().err
    got = target.read_text().split("\n")
    assert len(got) == len(lines) + 1 and got[-1] == ""  # One line each, final newline.
    got = got[:-1]
    assert got[1] == ""  # An empty line gives an empty line.

    # Each line is what decoding its input alone gives (the long one as truncated:
    # 63 tokens + EOS), so a shuffled output fails; the outputs differ, so it would.
    problem = registry.problem("algorithmic_reverse")
    model = Run.open(run_dir).model()
    alone = Decoder(model, DecodeOptions(beam_size=2, batch_size=1))
    for line, output in zip(lines, got):
        if line:
            ids = decode_policy.source_ids(problem.encode(line), 64)
            assert output == problem.decode(alone.decode([ids])[0][0][0]), line
    nonempty = [output for output in got if output]
    assert len(set(nonempty)) == len(nonempty) == len(lines) - 1, got


def test_interactive_return_beams(run_dir, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("5 6 7\n"))
    assert decoder_cli.main([f"--output_dir={run_dir}", "--decode_interactive",
                             "--beam_size=3", "--return_beams"]) == 0
    fields = capsys.readouterr().out.rstrip("\n").split("\t")
    assert len(fields) == 6  # Three (text, score) pairs.
    scores = [float(s) for s in fields[1::2]]
    assert scores == sorted(scores, reverse=True)


def test_decode_split_prints_accuracy(run_dir, capsys):
    assert decoder_cli.main([f"--output_dir={run_dir}", "--beam_size=1",
                             "--batch_size=500", "--show=1000"]) == 0
    out = capsys.readouterr().out.splitlines()
    # The exact count, worked out here from the 1000 printed examples
    # ("  source  ->  hypothesis   (reference: reference)"), not by the problem's metric.
    rows = [re.fullmatch(r"  (.*)  ->  (.*)   \(reference: (.*)\)", line) for line in out[:-2]]
    assert len(rows) == 1000 and all(rows)
    assert all(m[3].split() == m[1].split()[::-1] for m in rows)  # Reversed sources.
    correct = sum(m[2] == m[3] for m in rows)
    assert 0 < correct < 1000  # A figure that a wrong count would get wrong.
    assert out[-1] == f"exact-sequence accuracy: {correct / 10:.2f}% ({correct}/1000)"
    assert out[-2].startswith("test: 1000 examples, greedy, ")


class _SymbolsPerLine(Metric):
    """A metric no library file knows: mean symbols per hypothesis."""

    name = "symbols_per_line"

    def score(self, hypotheses, references, sources=None):
        value = sum(len(h.split()) for h in hypotheses) / max(len(hypotheses), 1)
        return Score(self.name, value, f"symbols per line (test metric): {value:.4f} "
                     f"over {len(hypotheses)} lines, {len(sources or [])} sources")


@register_problem("test_reverse_with_own_metric")
class _ReverseWithOwnMetric(AlgorithmicReverse):
    """algorithmic_reverse, small held-out splits, evaluated with the test's own metric."""

    split_sizes = {"train": 200_000, "dev": 40, "test": 40}

    def eval_metrics(self):
        return [_SymbolsPerLine(), ExactMatch()]


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_problems_own_metric_reaches_the_decoder(tmp_path, capsys):
    run = _train("test_reverse_with_own_metric", tmp_path / "run", 2)
    problem = registry.problem("test_reverse_with_own_metric")
    model = Run.open(run).model()
    report = decode_split(problem, model, "test",
                                   DecodeOptions(beam_size=1, batch_size=40))
    assert len(report.sources) == len(report.hypotheses) == len(report.references) == 40
    assert [s.name for s in report.scores] == ["symbols_per_line", "exact_match"]
    assert report.scores == problem.evaluate(report.hypotheses, report.references,
                                             report.sources)
    assert report.score("exact_match") is report.scores[1]
    with pytest.raises(KeyError, match="symbols_per_line, exact_match"):
        report.score("bleu")
    reversed_sources = [" ".join(s.split()[::-1]) for s in report.sources]
    assert reversed_sources == report.references  # Sources decoded with decode_inputs.

    assert decoder_cli.main([f"--output_dir={run}", "--beam_size=1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [score.line for score in report.scores]
    assert out[-2].startswith("symbols per line (test metric): ") \
        and out[-2].endswith(" over 40 lines, 40 sources")

    # --reference scores a file with the same metrics, the input lines as sources.
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    source.write_text("3 1 4\n2 7\n")
    reference.write_text("4 1 3\n7 2\n")
    assert decoder_cli.main([f"--output_dir={run}", f"--decode_from_file={source}",
                             f"--reference={reference}", "--beam_size=1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("symbols per line (test metric): ") \
        and out[-2].endswith(" over 2 lines, 2 sources")
    assert out[-1].startswith("exact-sequence accuracy: ")


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_batched_equals_one_by_one_and_beam1_equals_greedy(run_dir):
    model = Run.open(run_dir).model()
    rng = np.random.default_rng(0)
    sources = [list(rng.integers(2, 12, n)) + [1] for n in (3, 9, 1, 12, 5)]
    options = DecodeOptions(beam_size=4, batch_size=5, return_beams=True)
    batched = Decoder(model, options).decode(sources)
    single = Decoder(
        model, DecodeOptions(beam_size=4, batch_size=1, return_beams=True)).decode(
        sources)
    compiled = Decoder(model, dataclasses.replace(options, jit_compile=True)).decode(
        sources)
    for a, b, c in zip(batched, single, compiled):
        assert [ids for ids, _ in a] == [ids for ids, _ in b] == [ids for ids, _ in c]
        np.testing.assert_allclose([s for _, s in a], [s for _, s in b], atol=1e-4)
        np.testing.assert_allclose([s for _, s in a], [s for _, s in c], atol=1e-4)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_growing_cache_equals_full_length_cache(beam_size, monkeypatch):
    from t2t_lite.models.transformer import Transformer

    hparams = registry.hparams("tiny").override("num_layers=2,d_model=32,d_ff=64,num_heads=2")
    model = Transformer.from_hparams(hparams, 50)
    inputs = tf.constant(np.random.default_rng(1).integers(2, 50, (3, 8)), tf.int32)
    assert cache_lengths(40) == [16, 32, 40]
    monkeypatch.setattr("t2t_lite.decoding.search.FIRST_CACHE_LENGTH", 4)  # Fewer steps.
    assert cache_lengths(12) == [4, 8, 12]
    grown = search(model, inputs, beam_size, 0.6, 12, min_decode_length=11)
    monkeypatch.setattr("t2t_lite.decoding.search.FIRST_CACHE_LENGTH", 64)
    assert cache_lengths(12) == [12]
    full = search(model, inputs, beam_size, 0.6, 12, min_decode_length=11)
    assert np.count_nonzero(grown[0].numpy()[:, 0]) >= 3 * 11  # Decoded past 8 steps.
    np.testing.assert_array_equal(grown[0].numpy(), full[0].numpy())
    np.testing.assert_allclose(grown[1].numpy(), full[1].numpy(), rtol=1e-5)


def test_one_traced_function_decodes_every_source_length():
    """Batches of padded lengths 8, 16 and 32 share one traced search, which gives each
    sentence the ids and score of a search traced for its own padded length."""
    from t2t_lite.decoding.decoder import decoder_for
    from t2t_lite.decoding.search import decode_padded
    from t2t_lite.models.transformer import Transformer

    hparams = registry.hparams("tiny").override("num_layers=1,d_model=32,d_ff=64,num_heads=2")
    model = Transformer.from_hparams(hparams, 40)
    rng = np.random.default_rng(3)
    sources = [list(rng.integers(2, 40, n)) + [1] for n in (3, 12, 20, 5)]
    options = DecodeOptions(beam_size=2, batch_size=1, extra_length=4, return_beams=True)
    decoder = decoder_for(model, options)
    assert decoder_for(model, options) is decoder  # Reused by every split and file.
    results = decoder.decode(sources)
    (function,) = decoder._functions.values()  # Keyed by the longest padded length, 32.
    assert function.experimental_get_tracing_count() == 1
    for source, beams in zip(sources, results):
        batch = decode_policy.pad_batch([source])
        static = tf.function(lambda x: decode_padded(model, x, options))
        ids, scores = static(tf.constant(batch))
        assert [b[0] for b in beams] == [strip_ids(ids[0, k].numpy()) for k in range(2)]
        np.testing.assert_allclose([b[1] for b in beams], scores[0].numpy(), atol=1e-5)


@pytest.mark.parametrize("args, message", [
    (["--checkpoint=ckpt-999"], "checkpoint 'ckpt-999' not found"),
    (["--decode_from_file=/nonexistent/in.txt"], "/nonexistent/in.txt: file not found"),
])
def test_errors_are_one_line(run_dir, args, message, capsys):
    assert decoder_cli.main([f"--output_dir={run_dir}"] + args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("t2t_lite-decoder: error: ") and message in err[-1]
    assert not any("Traceback" in line for line in err)


def test_no_run_in_dir(tmp_path, capsys):
    assert decoder_cli.main([f"--output_dir={tmp_path}"]) == 2
    assert "holds no t2t_lite run" in capsys.readouterr().err


def test_reference_scores_with_the_problems_metric(run_dir, tmp_path, capsys):
    source, reference, out = tmp_path / "in.txt", tmp_path / "ref.txt", tmp_path / "out.txt"
    source.write_text("3 1 4 1 5\n2 7 1 8\n9 9 2\n")
    reference.write_text("5 1 4 1 3\n8 1 7 2\n2 9 9\n")
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}", f"--reference={reference}"]) == 0
    printed = capsys.readouterr().out.splitlines()
    hyps, refs = out.read_text().splitlines(), reference.read_text().splitlines()
    correct = sum(h == r for h, r in zip(hyps, refs))
    assert printed[-1] == f"exact-sequence accuracy: {100 * correct / 3:.2f}% ({correct}/3)"
    assert not any("BLEU" in line for line in printed)  # Not a translation problem.


@pytest.mark.parametrize("content, message", [
    (b"5 1 4 1 3\n", "ref.txt has 1 lines, the input has 3"),
    (b"5 1\n\xff\xfe 8\n2\n", "ref.txt is not UTF-8"),
])
def test_bad_reference_is_one_line_before_decoding(run_dir, tmp_path, capsys, content,
                                                   message, monkeypatch):
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    source.write_text("3 1 4 1 5\n2 7 1 8\n9 9 2\n")
    reference.write_bytes(content)
    monkeypatch.setattr("t2t_lite.decoding.splits.decode_lines", None)  # Decoding would fail loudly.
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             f"--reference={reference}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("t2t_lite-decoder: error: ") and message in err[-1], err
    assert not any("Traceback" in line for line in err)


@register_problem("test_translate_en_fr")
class _TranslateEnFr(TranslateFiles):
    """translate_files into French: its tokenized BLEU must tokenize French."""

    source_lang, target_lang = "en", "fr"


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_translation_reference_prints_sacrebleu_and_target_language_bleu(tmp_path, capsys):
    from t2t_lite.metrics import bleu

    raw, data_dir, run = tmp_path / "raw", tmp_path / "data", tmp_path / "run"
    raw.mkdir()
    text = {lang: (TESTDATA / f"newstest2014.{side}.de").read_text(encoding="utf-8")
            for lang, side in (("en", "ref"), ("fr", "hyp"))}  # Any parallel text will do.
    for lang, content in text.items():
        (raw / f"train.{lang}").write_text(content, encoding="utf-8")
    problem = registry.problem("test_translate_en_fr")
    datagen.generate(problem, str(data_dir), str(raw), DatagenOptions(vocab_size=500),
                     log=lambda _: None)
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256")
    trainer.train(problem, hparams, str(run), str(data_dir),
                  TrainOptions(eval=NO_EVAL, train_steps=2, log_every_steps=1000),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    source, reference, out = tmp_path / "in.en", tmp_path / "ref.fr", tmp_path / "out.fr"
    source.write_text("".join(text["en"].splitlines(True)[:4]), encoding="utf-8")
    reference.write_text("".join(text["fr"].splitlines(True)[:4]), encoding="utf-8")
    assert decoder_cli.main([f"--output_dir={run}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}", f"--reference={reference}",
                             "--beam_size=1", "--extra_length=5"]) == 0
    printed = capsys.readouterr().out.splitlines()
    hyps = out.read_text(encoding="utf-8").split("\n")[:-1]
    refs = reference.read_text(encoding="utf-8").split("\n")[:-1]
    detok, tok = bleu.sacrebleu_score(hyps, refs), bleu.tokenized_bleu(hyps, refs, "fr")
    assert printed[-4] == (f"sacreBLEU (detokenized, report this): {detok.format()} "
                           f"{detok.signature}")
    assert printed[-3] == ("tokenized BLEU (paper-comparable, moses + compound splitting, "
                           f"fr): {tok.format()}")
    assert printed[-2].startswith("chrF (sacreBLEU): chrF2 = ")
    assert printed[-1].startswith("TER (sacreBLEU, lower is better): TER = ")
