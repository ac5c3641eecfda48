"""Pictures: attention weights from the model's forward pass, attention maps, curves."""

import json
import os
import re
import shutil
import subprocess

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from t2t_lite.runs.run import Run
from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry  # noqa: E402
from t2t_lite.pictures import attention, attention_html, attention_png
from t2t_lite.pictures import plot
from t2t_lite.training import trainer
from t2t_lite.pictures import visualize
from t2t_lite.bin import plot as plot_cli  # noqa: E402
from t2t_lite.bin import visualize as visualize_cli  # noqa: E402
from t2t_lite.models.transformer import Transformer  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny algorithmic_reverse run with checkpoints, train and dev events."""
    output_dir = str(tmp_path_factory.mktemp("run"))
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=2,d_model=32,d_ff=64,num_heads=2,batch_size=256")
    trainer.train(
        registry.problem("algorithmic_reverse"), hparams, output_dir,
        options=TrainOptions(
            train_steps=6, save_checkpoints_steps=3, log_every_steps=2,
            eval=EvalOptions(eval_every_steps=3, eval_examples=16,
                                        eval_decode_examples=8, eval_batch_size=8)),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda line: None)
    return output_dir


def _tiny_model():
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=2,d_model=32,d_ff=64,num_heads=2")
    return Transformer.from_hparams(hparams, 20)


def test_attention_weights_are_the_models_own():
    model = _tiny_model()
    inputs = np.array([[5, 6, 7, 8, 1], [4, 9, 1, 0, 0]], np.int32)
    targets = np.array([[3, 4, 1, 0], [5, 6, 7, 1]], np.int32)
    features = {"inputs": inputs, "targets": targets}
    plain = model(features, training=False)
    logits, weights = model(features, training=False, return_attention_scores=True)
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(logits))
    assert set(weights) == {"encoder", "decoder", "cross"}
    shapes = {"encoder": (2, 2, 5, 5), "decoder": (2, 2, 4, 4), "cross": (2, 2, 4, 5)}
    source_valid = inputs != 0  # [B, S]
    future = np.triu(np.ones((4, 4), bool), k=1)
    for kind, per_layer in weights.items():
        assert len(per_layer) == 2
        for w in per_layer:
            w = np.asarray(w)
            assert w.shape == shapes[kind] and w.dtype == np.float32
            np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
            if kind == "decoder":
                assert np.all(w[:, :, future] == 0.0)
            else:  # Padding keys get exactly 0 from every real query.
                for b in range(2):
                    rows = w[b][:, source_valid[b]] if kind == "encoder" else w[b]
                    assert np.all(rows[..., ~source_valid[b]] == 0.0)
    probe = model.attention_weights(features)
    np.testing.assert_array_equal(np.asarray(probe["cross"][1]), np.asarray(weights["cross"][1]))


def test_cached_attention_returns_output_cache_and_weights():
    # With a cache the layer returns (output, cache) as before, and the weights last.
    model = _tiny_model()
    inputs = np.array([[5, 6, 7, 1]], np.int32)
    _, cross_cache = model.init_cache(inputs, 3)
    attention = model.decoder_layers[0].cross_attention
    query = tf.random.normal((1, 1, 32))
    kwargs = dict(attention_mask=cross_cache["input_mask"], cache=cross_cache["layers"][0])
    out, kv, w = attention(query, return_attention_scores=True, **kwargs)
    plain, plain_kv = attention(query, **kwargs)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(plain))
    np.testing.assert_array_equal(np.asarray(kv["key"]), np.asarray(plain_kv["key"]))
    assert tuple(w.shape) == (1, 2, 1, 4)
    np.testing.assert_allclose(np.asarray(w).sum(-1), 1.0, atol=1e-5)


def _overlaps(boxes):
    """Rotated x labels side by side: does one reach into the next?"""
    boxes = sorted(boxes, key=lambda b: b.x0)
    return any(a.x1 > b.x0 + 0.5 for a, b in zip(boxes, boxes[1:]))


def test_png_labels_do_not_overlap_for_30_tokens():
    rng = np.random.default_rng(0)
    source = [f"\u2581word{i}" for i in range(29)] + ["</s>"]
    target = [f"\u2581Wort{i}" for i in range(29)] + ["</s>"]
    weights = {kind: rng.dirichlet(np.ones(30), size=(1, 2, 30)).astype(np.float32)
               for kind in attention.KINDS}
    maps = attention.AttentionMaps(source, target, weights)
    figure = attention_png.attention_figure(maps, "30 tokens")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    for axis in figure.axes:
        x = [t.get_window_extent(renderer) for t in axis.get_xticklabels()]
        y = [t.get_window_extent(renderer) for t in axis.get_yticklabels()]
        assert len(x) == 30 and len(y) == 30
        assert not _overlaps(x), axis.get_title()
        assert not _overlaps_vertically(y), axis.get_title()
    assert len(figure.axes) == 3 * 1 * 2


def _overlaps_vertically(boxes):
    boxes = sorted(boxes, key=lambda b: b.y0)
    return any(a.y1 > b.y0 + 0.5 for a, b in zip(boxes, boxes[1:]))


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_visualize_writes_png_and_html(run_dir, tmp_path, capsys):
    png, html = str(tmp_path / "attention.png"), str(tmp_path / "attention.html")
    assert visualize_cli.main(["--output_dir", run_dir, "--input", "3 1 4 1 5",
                               "--output_file", png]) == 0
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert visualize_cli.main(["--output_dir", run_dir, "--input", "3 1 4 1 5",
                               "--target", "5 1 4 1 3", "--output_file", html]) == 0
    out = capsys.readouterr().out
    assert "source: 3 1 4 1 5 </s>" in out and "target: 5 1 4 1 3 </s>" in out
    text = open(html, encoding="utf-8").read()
    assert "http://" not in text and "https://" not in text and "<script src" not in text
    data = json.loads(re.search(r'id="attention-data">(.*?)</script>', text, re.S).group(1))
    assert data["source"] == ["3", "1", "4", "1", "5", "</s>"]
    assert data["kinds"]["decoder"]["keys"] == ["<s>", "5", "1", "4", "1", "3"]
    cross = np.array(data["kinds"]["cross"]["weights"])
    assert cross.shape == (2, 2, 6, 6)
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-3)


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_html_page_matches_the_maps(run_dir):
    from t2t_lite.runs import weights

    opened = Run.open(run_dir)
    model, hparams = opened.model(), opened.hparams
    problem = registry.problem("algorithmic_reverse")
    maps = attention.sentence_maps(problem, model, hparams, "2 7 1")
    assert maps.source == ["2", "7", "1", "</s>"] and maps.target[-1] == "</s>"
    data = attention_html.page_data(maps)
    np.testing.assert_allclose(np.array(data["kinds"]["encoder"]["weights"]),
                               maps.weights["encoder"], atol=1e-4)


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_plot_writes_curves_with_and_without_dev(run_dir, tmp_path, capsys):
    out = str(tmp_path / "curves.png")
    assert plot_cli.main(["--output_dir", run_dir, "--output_file", out]) == 0
    assert "loss, exact_match, learning_rate" in capsys.readouterr().out
    assert os.path.getsize(out) > 10_000
    train, dev = plot.read_curves(run_dir)
    assert {"loss", "learning_rate"} <= set(train) and {"loss", "exact_match"} <= set(dev)
    no_dev = tmp_path / "no_dev"
    shutil.copytree(os.path.join(run_dir, "train"), no_dev / "train")
    path, panels = plot.plot_run(str(no_dev))
    assert path == str(no_dev / "curves.png") and os.path.exists(path)
    assert panels == ["loss", "learning_rate"]


@pytest.mark.parametrize("cli", [plot_cli, visualize_cli])
def test_missing_run_is_one_line(cli, tmp_path, capsys):
    missing = str(tmp_path / "nowhere")
    args = ["--output_dir", missing] + (["--input", "1 2"] if cli is visualize_cli else [])
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0] and "Traceback" not in err[0]


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_bad_input_is_one_line(run_dir, capsys):
    assert visualize_cli.main(["--output_dir", run_dir, "--input", "x y"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a symbol" in err[0]


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_data_dir_override_reaches_the_problem(run_dir, tmp_path, monkeypatch, capsys):
    from t2t_lite.problems.base import Problem

    seen = []
    original = Problem.set_data_dir

    def recording(self, data_dir):
        seen.append((self.name, data_dir))
        return original(self, data_dir)

    monkeypatch.setattr(Problem, "set_data_dir", recording)
    elsewhere = str(tmp_path / "elsewhere")
    html = str(tmp_path / "attention.html")
    assert visualize_cli.main(["--output_dir", run_dir, "--input", "3 1 4",
                               "--data_dir", elsewhere, "--output_file", html]) == 0
    assert seen == [("algorithmic_reverse", elsewhere)]
    seen.clear()
    visualize.visualize(run_dir, "3 1 4", output_file=html)  # The run's own: none here.
    assert seen == [("algorithmic_reverse", None)]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"needs {CHROMIUM} (Debian: apt-get install chromium)")
def test_html_renders_in_headless_chromium(run_dir, tmp_path):
    html = str(tmp_path / "attention.html")
    visualize.visualize(run_dir, "3 1 4 1 5 9 2 6", output_file=html)
    shot = str(tmp_path / "shot.png")
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--screenshot={shot}", "--window-size=900,600",
                    f"file://{html}?kind=cross&layer=1&head=0&hover=2"],
                   check=True, timeout=120, capture_output=True)
    pixels = tf.io.decode_png(tf.io.read_file(shot)).numpy()[:, :, :3]
    assert pixels.shape[:2] == (600, 900)
    heat = pixels[60:400, 0:450].reshape(-1, 3)  # The heat map, top left.
    colours = {tuple(p) for p in heat}
    assert len(colours) >= 20, f"only {len(colours)} colours: the heat map did not draw"
    assert (heat < 150).all(axis=1).sum() > 500  # Dark (high-weight) cells.
