"""The attention grid as a matplotlib figure (PNG, SVG or PDF)."""

from __future__ import annotations

from t2t_lite.pictures.attention import START, TITLES, AttentionMaps

# Inches per token on a heat map's axes: 8-point labels (0.11 in) never overlap.
INCHES_PER_TOKEN = 0.17
LABEL_POINTS = 8


def attention_figure(maps: AttentionMaps, title: str = ""):
    """A matplotlib figure: one row per (kind, layer), one column per head (the
    kinds the maps have; a row with fewer heads leaves its last panels blank).

    Each heat map is INCHES_PER_TOKEN per token on both axes, so tick labels
    of LABEL_POINTS points do not overlap however long the sentence; x labels
    are rotated 90 degrees.
    """
    from matplotlib.figure import Figure

    rows = [(kind, layer) for kind in maps.kinds
            for layer in range(maps.weights[kind].shape[0])]
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
            if head >= maps.weights[kind].shape[1]:
                axis.set_axis_off()
                continue
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
