"""Attention pictures: what a trained model attends to, for one input sentence.

The weights come from the model's own forward pass (`model.attention_weights`,
the softmax weights of `MultiHeadAttention` in inference mode), teacher-forced
on the model's greedy output or on a given target. Three kinds, each with one
[H, query, key] array per layer:

- "encoder": encoder self-attention, source x source (S x S);
- "decoder": decoder self-attention, target x decoder input (T x T); row i is
  the position that predicts target token i, and attends to the decoder inputs
  <s>, t_0, ..., t_{i-1} (the targets shifted right, section 3.1);
- "cross": encoder-decoder attention, target x source (T x S).

Written as a PNG grid (`attention_figure`, matplotlib) or a self-contained HTML
page (`t2t_lite.pictures.attention_html`). Shapes: H heads, S source length (EOS
included), T target length (EOS included).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from t2t_lite.decoding import decode_policy
from t2t_lite.ids import EOS_ID, PAD_ID
from t2t_lite.problems.base import ProblemError
from t2t_lite.problems.text2text import Text2TextProblem
from t2t_lite.data.text_encoder import normalize

KINDS = ("encoder", "decoder", "cross")
TITLES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention",
          "cross": "encoder-decoder attention"}
START, END = "<s>", "</s>"
# Inches per token on a heat map's axes: 8-point labels (0.11 in) never overlap.
INCHES_PER_TOKEN = 0.17
LABEL_POINTS = 8


@dataclasses.dataclass
class AttentionMaps:
    """Tokens and weights of one sentence pair.

    Attributes:
      source: source tokens (S, EOS last).
      target: target tokens (T, EOS last).
      weights: kind -> float32 [num_layers, H, query, key], cropped to the tokens.
    """

    source: list[str]
    target: list[str]
    weights: dict[str, np.ndarray]

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of `kind`."""
        if kind == "encoder":
            return self.source, self.source
        if kind == "decoder":
            return self.target, [START] + self.target[:-1]
        return self.target, self.source

    @property
    def num_layers(self) -> int:
        return self.weights["encoder"].shape[0]

    @property
    def num_heads(self) -> int:
        return self.weights["encoder"].shape[1]


def token_label(problem, token: int, side: str) -> str:
    """The subword piece of id `token` (side "source" or "target"), for an axis."""
    if token == EOS_ID:
        return END
    if token == PAD_ID:
        return "<pad>"
    if isinstance(problem, Text2TextProblem):
        return getattr(problem, f"{side}_vocab").id_to_piece(int(token))
    if side == "source":
        return problem.decode_inputs([int(token)]) or str(token)
    return problem.decode([int(token)]) or str(token)


def encode_target(problem, text: str) -> list[int]:
    """Target text -> ids without EOS, with the target vocabulary when it has one."""
    if isinstance(problem, Text2TextProblem):
        return problem.target_vocab.encode(normalize(text))
    return problem.encode(text)


def attention_maps(model, source_ids: list[int], target_ids: list[int],
                   labels=lambda token, side: str(token)) -> AttentionMaps:
    """Runs the teacher-forced forward pass on one pair and keeps its weights.

    Args:
      model: a model with `attention_weights` (t2t_lite/model.py).
      source_ids, target_ids: id sequences, EOS included.
      labels: (id, "source" | "target") -> the token's label.
    """
    features = {"inputs": np.array([source_ids], np.int32),
                "targets": np.array([target_ids], np.int32)}
    weights = model.attention_weights(features)
    stacked = {kind: np.stack([np.asarray(w, np.float32)[0] for w in weights[kind]])
               for kind in KINDS}
    return AttentionMaps(
        source=[labels(t, "source") for t in source_ids],
        target=[labels(t, "target") for t in target_ids],
        weights=stacked)


def sentence_maps(problem, model, hparams, text: str, target: str | None = None,
                  warn=print) -> AttentionMaps:
    """Attention maps of `text` and its greedy translation (or `target`).

    Raises:
      ProblemError: empty input or target.
    """
    from t2t_lite.decoding.decoder import Decoder
    from t2t_lite.decoding.options import DecodeOptions
    from t2t_lite.decoding.splits import encode_lines

    if not text.strip():
        raise ProblemError("the input is empty; pass --input with the sentence to draw")
    source = encode_lines(problem, [text], hparams.max_length, warn)[0]
    if target is None:
        options = DecodeOptions.from_hparams(hparams, beam_size=1, batch_size=1)
        ids = Decoder(model, options).decode([source])[0][0][0]
    else:
        if not target.strip():
            raise ProblemError("the target is empty; leave --target out to draw the "
                               "model's own output")
        ids = decode_policy.source_ids(encode_target(problem, target.strip()),
                                       hparams.max_length)[:-1]
    return attention_maps(model, source, list(ids) + [EOS_ID],
                          lambda token, side: token_label(problem, token, side))


def attention_figure(maps: AttentionMaps, title: str = ""):
    """A matplotlib figure: one row per (kind, layer), one column per head.

    Each heat map is INCHES_PER_TOKEN per token on both axes, so tick labels
    of LABEL_POINTS points do not overlap however long the sentence; x labels
    are rotated 90 degrees.
    """
    from matplotlib.figure import Figure

    rows = [(kind, layer) for kind in KINDS for layer in range(maps.num_layers)]
    longest = max(len(maps.source), len(maps.target))
    panel = max(2.2, INCHES_PER_TOKEN * longest)
    margin = 0.08 * max(len(t) for t in maps.source + maps.target + [START]) + 0.5
    figure = Figure(figsize=(maps.num_heads * (panel + margin) + 0.5,
                             len(rows) * (panel + margin + 0.4) + 0.6))
    grid = figure.subplots(len(rows), maps.num_heads, squeeze=False)
    for r, (kind, layer) in enumerate(rows):
        queries, keys = maps.axes(kind)
        for head in range(maps.num_heads):
            axis = grid[r][head]
            axis.imshow(maps.weights[kind][layer, head], cmap="viridis", vmin=0.0,
                        vmax=1.0, aspect="equal", interpolation="nearest")
            axis.set_xticks(range(len(keys)), keys, rotation=90, fontsize=LABEL_POINTS)
            axis.set_yticks(range(len(queries)), queries, fontsize=LABEL_POINTS)
            axis.tick_params(length=0)
            axis.set_title(f"{TITLES[kind]}, layer {layer}, head {head}", fontsize=9)
    if title:
        figure.suptitle(title, fontsize=11)
    figure.set_layout_engine("constrained")
    return figure


def write_attention(maps: AttentionMaps, path: str, title: str = "") -> str:
    """Writes `maps` as PNG (or SVG, PDF) with matplotlib, or HTML by extension."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if path.lower().endswith((".html", ".htm")):
        from t2t_lite.pictures import attention_html

        with open(path, "w", encoding="utf-8") as f:
            f.write(attention_html.page(maps, title))
        return path
    if not path.lower().endswith((".png", ".svg", ".pdf")):
        raise ProblemError(f"{path}: write .html or .png (or .svg, .pdf)")
    attention_figure(maps, title).savefig(path, dpi=100)
    return path


def visualize(output_dir: str, text: str, target: str | None = None,
              checkpoint: str | None = None, output_file: str | None = None,
              warn=print) -> tuple[str, AttentionMaps]:
    """Loads the run in `output_dir` and draws the attention of `text`.

    Returns:
      (the file written, the maps); the file defaults to OUTPUT_DIR/attention.html.
    """
    from t2t_lite import registry
    from t2t_lite.runs import checkpoints

    model, hparams, info, path = checkpoints.load_model(output_dir, checkpoint)
    problem = registry.problem(info["problem"])
    problem.set_data_dir(info.get("data_dir"))
    maps = sentence_maps(problem, model, hparams, text, target, warn)
    output_file = output_file or os.path.join(output_dir, "attention.html")
    title = f"{info['problem']}, {os.path.relpath(path, output_dir)}"
    return write_attention(maps, output_file, title), maps
