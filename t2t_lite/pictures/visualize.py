"""Attention pictures of one input sentence of a trained run, written by extension.

`visualize` loads the run, computes the maps (`t2t_lite.pictures.attention`)
and writes them as a PNG grid (`attention_png`) or an HTML page
(`attention_html`).
"""

from __future__ import annotations

import os

from t2t_lite.pictures import attention_html
from t2t_lite.pictures.attention import AttentionMaps, sentence_maps
from t2t_lite.pictures.attention_png import attention_figure
from t2t_lite.problems.base import ProblemError


def write_attention(maps: AttentionMaps, path: str, title: str = "") -> str:
    """Writes `maps` as PNG (or SVG, PDF) with matplotlib, or HTML by extension."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if path.lower().endswith((".html", ".htm")):
        with open(path, "w", encoding="utf-8") as f:
            f.write(attention_html.page(maps, title))
        return path
    if not path.lower().endswith((".png", ".svg", ".pdf")):
        raise ProblemError(f"{path}: write .html or .png (or .svg, .pdf)")
    attention_figure(maps, title).savefig(path, dpi=100)
    return path


def visualize(output_dir: str, text: str, target: str | None = None,
              checkpoint: str | None = None, output_file: str | None = None,
              warn=print, data_dir: str | None = None) -> tuple[str, AttentionMaps]:
    """Loads the run in `output_dir` and draws the attention of `text`.

    Args:
      data_dir: where the problem's data (vocabulary) lies; None: the run's own.

    Returns:
      (the file written, the maps); the file defaults to OUTPUT_DIR/attention.html.
    """
    from t2t_lite.runs.run import Run

    run = Run.open(output_dir, data_dir)
    path = run.checkpoint(checkpoint)
    maps = sentence_maps(run.problem, run.model(path), run.hparams, text, target, warn)
    output_file = output_file or os.path.join(output_dir, "attention.html")
    title = f"{run.problem_name}, {os.path.relpath(path, output_dir)}"
    return write_attention(maps, output_file, title), maps
