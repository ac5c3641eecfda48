"""Decoding a trained run: files, stdin, batching, errors (t2t_lite-decoder)."""

import dataclasses
import io
import sys

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import checkpoints, decoding, registry, trainer
from t2t_lite.bin import decoder as decoder_cli


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256")
    trainer.train(registry.problem("algorithmic_reverse"), hparams, str(out),
                  options=trainer.TrainOptions(train_steps=30, log_every_steps=100),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return str(out)


def test_decode_file_keeps_order_empty_and_long_lines(run_dir, tmp_path, capsys):
    source = tmp_path / "in.txt"
    long_line = " ".join(["7"] * 80)  # Longer than tiny's max_length=64.
    source.write_text("3 1 4\n\n" + long_line + "\n2 2\n")
    target = tmp_path / "out.txt"
    code = decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={target}", "--beam_size=2", "--jit"])
    assert code == 0
    lines = target.read_text().split("\n")
    assert len(lines) == 5 and lines[4] == ""  # 4 lines and the final newline.
    assert lines[1] == ""
    assert all(set(line.split()) <= set("0123456789") for line in lines)
    err = capsys.readouterr().err
    assert "line 3: 81 tokens, truncated to max_length=64" in err


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
                             "--batch_size=500"]) == 0
    assert "exact-sequence accuracy on test:" in capsys.readouterr().out


def test_batched_equals_one_by_one_and_beam1_equals_greedy(run_dir):
    model, *_ = checkpoints.load_model(run_dir)
    rng = np.random.default_rng(0)
    sources = [list(rng.integers(2, 12, n)) + [1] for n in (3, 9, 1, 12, 5)]
    options = decoding.DecodeOptions(beam_size=4, batch_size=5, return_beams=True)
    batched = decoding.Decoder(model, options).decode(sources)
    single = decoding.Decoder(
        model, decoding.DecodeOptions(beam_size=4, batch_size=1, return_beams=True)).decode(
        sources)
    compiled = decoding.Decoder(model, dataclasses.replace(options, jit_compile=True)).decode(
        sources)
    for a, b, c in zip(batched, single, compiled):
        assert [ids for ids, _ in a] == [ids for ids, _ in b] == [ids for ids, _ in c]
        np.testing.assert_allclose([s for _, s in a], [s for _, s in b], atol=1e-4)
        np.testing.assert_allclose([s for _, s in a], [s for _, s in c], atol=1e-4)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_growing_cache_equals_full_length_cache(beam_size, monkeypatch):
    from t2t_lite.model import Transformer

    hparams = registry.hparams("tiny").override("num_layers=2,d_model=32,d_ff=64,num_heads=2")
    model = Transformer.from_hparams(hparams, 50)
    inputs = tf.constant(np.random.default_rng(1).integers(2, 50, (3, 8)), tf.int32)
    assert decoding.cache_lengths(40) == [16, 32, 40]
    grown = decoding.search(model, inputs, beam_size, 0.6, 40, min_decode_length=37)
    monkeypatch.setattr(decoding, "FIRST_CACHE_LENGTH", 64)
    assert decoding.cache_lengths(40) == [40]
    full = decoding.search(model, inputs, beam_size, 0.6, 40, min_decode_length=37)
    assert np.count_nonzero(grown[0].numpy()[:, 0]) >= 3 * 37  # Decoded past 32 steps.
    np.testing.assert_array_equal(grown[0].numpy(), full[0].numpy())
    np.testing.assert_allclose(grown[1].numpy(), full[1].numpy(), rtol=1e-5)


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


def test_reference_prints_both_bleus(run_dir, tmp_path, capsys):
    from t2t_lite.metrics import bleu

    source, reference, out = tmp_path / "in.txt", tmp_path / "ref.txt", tmp_path / "out.txt"
    source.write_text("3 1 4 1 5\n2 7 1 8\n9 9 2\n")
    reference.write_text("5 1 4 1 3\n8 1 7 2\n2 9 9\n")
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}", f"--reference={reference}"]) == 0
    printed = capsys.readouterr().out.splitlines()
    detok, tok = bleu.bleu_files(str(out), str(reference))
    assert printed[-2] == f"sacreBLEU (detokenized, report this): {detok.format()} " \
        f"{detok.signature}"
    assert printed[-1].startswith("tokenized BLEU (paper-comparable")
    assert tok.format() in printed[-1]
    reference.write_text("5 1 4 1 3\n")
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source}",
                             f"--reference={reference}"]) == 2
    assert "has 1 lines, the input has 3" in capsys.readouterr().err
