"""Training curves from a run's TensorBoard events, for people without TensorBoard.

The trainer writes OUTPUT_DIR/train (scalars loss, nll, learning_rate,
tokens_per_second) and OUTPUT_DIR/dev (loss, nll and one scalar per metric of
the problem, e.g. exact_match or sacrebleu). `plot_run` draws the training and
dev loss, each dev metric, and the learning rate over steps in one PNG.
"""

from __future__ import annotations

import os

from t2t_lite.runs.run_dir import RunDirError

TRAIN_TAGS = ("loss", "nll", "learning_rate", "tokens_per_second")
DEV_LOSSES = ("loss", "nll")


def read_scalars(directory: str) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value), ...] sorted by step, from every event file in `directory`.

    A step written twice (a resumed run) keeps the newest value. A missing
    directory gives {}.
    """
    import tensorflow as tf

    if not os.path.isdir(directory):
        return {}
    scalars: dict[str, dict[int, float]] = {}
    for name in sorted(os.listdir(directory)):
        if "tfevents" not in name:
            continue
        try:
            for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
                for value in event.summary.value:
                    kind = value.WhichOneof("value")
                    if kind == "simple_value":
                        number = value.simple_value
                    elif kind == "tensor":
                        number = float(tf.make_ndarray(value.tensor))
                    else:
                        continue
                    scalars.setdefault(value.tag, {})[int(event.step)] = number
        except tf.errors.DataLossError:  # A file cut short by a killed run: keep what was read.
            pass
    return {tag: sorted(points.items()) for tag, points in scalars.items()}


def read_curves(output_dir: str) -> tuple[dict, dict]:
    """(train scalars, dev scalars) of the run in `output_dir`.

    Raises:
      RunDirError: no training events (not a run, or not trained yet).
    """
    if not os.path.isdir(output_dir):
        raise RunDirError(f"{output_dir} does not exist; pass the trainer's --output_dir")
    train = read_scalars(os.path.join(output_dir, "train"))
    if not train:
        raise RunDirError(
            f"no training events in {os.path.join(output_dir, 'train')}; train first with "
            f"t2t_lite-trainer --output_dir={output_dir}")
    return train, read_scalars(os.path.join(output_dir, "dev"))


def _line(axis, points, label, **style):
    steps, values = zip(*points)
    axis.plot(steps, values, label=label, **style)


def curves_figure(train: dict, dev: dict, title: str = ""):
    """The matplotlib figure: loss, one panel per dev metric, learning rate."""
    from matplotlib.figure import Figure

    metrics = sorted(tag for tag in dev if tag not in DEV_LOSSES)
    panels = ["loss"] + metrics + (["learning_rate"] if "learning_rate" in train else [])
    figure = Figure(figsize=(6.5 * min(len(panels), 2), 4.0 * ((len(panels) + 1) // 2)))
    axes = figure.subplots((len(panels) + 1) // 2, min(len(panels), 2), squeeze=False).ravel()
    for axis, panel in zip(axes, panels):
        if panel == "loss":
            _line(axis, train["loss"], "train loss", color="tab:blue", alpha=0.8)
            if "loss" in dev:
                _line(axis, dev["loss"], "dev loss", color="tab:orange", marker="o")
            if "nll" in dev:
                _line(axis, dev["nll"], "dev nll (no label smoothing)", color="tab:green",
                      marker=".", linestyle="--")
            axis.set_ylabel("cross-entropy per token")
            axis.legend()
        elif panel == "learning_rate":
            _line(axis, train["learning_rate"], "learning rate", color="tab:purple")
            axis.set_ylabel("learning rate")
            axis.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        else:
            _line(axis, dev[panel], f"dev {panel}", color="tab:red", marker="o")
            axis.set_ylabel(f"dev {panel}")
        axis.set_title(panel.replace("_", " ") if panel != "loss" else "loss", fontsize=11)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    for axis in axes[len(panels):]:
        axis.set_visible(False)
    if title:
        figure.suptitle(title)
    figure.set_layout_engine("constrained")
    return figure


def plot_run(output_dir: str, output_file: str | None = None) -> tuple[str, list[str]]:
    """Writes the curves of the run in `output_dir` (default OUTPUT_DIR/curves.png).

    Returns:
      (the file written, the panels' names).
    """
    train, dev = read_curves(output_dir)
    if "loss" not in train:
        raise RunDirError(f"{output_dir}/train has no loss events; is it a t2t_lite run?")
    output_file = output_file or os.path.join(output_dir, "curves.png")
    os.makedirs(os.path.dirname(os.path.abspath(output_file)), exist_ok=True)
    title = os.path.basename(os.path.normpath(output_dir))
    figure = curves_figure(train, dev, title)
    figure.savefig(output_file, dpi=100)
    panels = ["loss"] + sorted(t for t in dev if t not in DEV_LOSSES)
    return output_file, panels + (["learning_rate"] if "learning_rate" in train else [])
