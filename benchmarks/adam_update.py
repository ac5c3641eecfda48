"""The optimizer update alone: Keras' Adam against the trainer's FusedAdam (issue 28).

    python -m benchmarks.adam_update --size base [--rounds 15] [--out=benchmarks/results/...]

A whole training step is too noisy on a shared 2-core machine (steal time) to
show a change of a few percent, so this times only what the change touched:
`apply_gradients` of the model's weights (`train_speed.py`'s sizes, built by
`trainer.build_state`, each optimizer with its own copy) with fixed random
gradients, in one traced function per optimizer, the two interleaved for
`--rounds` rounds after a warm-up, 2 intra-op threads. One JSON line per
optimizer: median / min / max milliseconds per update, the parameter count,
and the machine (`machine.py`) and `onednn_isa` (`isa.py`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import isa  # noqa: E402
from benchmarks import train_speed  # noqa: E402
from benchmarks.machine import append_row, machine_fields  # noqa: E402


def build(size: str, name: str):
    """A traced update of `size`'s weights with optimizer `name` (fixed gradients)."""
    model, optimizer, _ = train_speed.build_state(size, name)
    rng = np.random.default_rng(0)
    grads = [tf.constant(rng.normal(size=v.shape).astype(np.float32) * 1e-3)
             for v in model.trainable_variables]
    update = tf.function(lambda: optimizer.apply_gradients(
        zip(grads, model.trainable_variables)))
    return update, model.count_params()


def update_row(size: str, name: str, seconds: list[float], params: int, machine: dict,
               onednn_isa: str | None) -> dict:
    """One optimizer's row: milliseconds per update."""
    return {"bench": "adam_update", "size": size, "adam": name, "params": params,
            "updates": len(seconds), "threads": train_speed.THREADS,
            "ms_per_update": {"median": round(1e3 * statistics.median(seconds), 2),
                              "min": round(1e3 * min(seconds), 2),
                              "max": round(1e3 * max(seconds), 2)},
            "onednn_isa": onednn_isa, **machine}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(train_speed.SIZES), default="base")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default="-", help="rows are appended here (- : print only)")
    args = parser.parse_args()
    machine = machine_fields()
    updates, params = {}, 0
    for name in train_speed.OPTIMIZERS:
        updates[name], params = build(args.size, name)
        for _ in range(3):
            updates[name]()
    seconds = {name: [] for name in train_speed.OPTIMIZERS}
    for _ in range(args.rounds):
        for name, update in updates.items():
            start = time.perf_counter()
            update()
            seconds[name].append(time.perf_counter() - start)
    onednn_isa = isa.probe()
    for name in train_speed.OPTIMIZERS:
        append_row(update_row(args.size, name, seconds[name], params, machine, onednn_isa),
                   args.out)


if __name__ == "__main__":
    main()
