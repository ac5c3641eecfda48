"""The optimizer update alone: Keras' Adam against the trainer's FusedAdam.

    python -m benchmarks.train adam --size base [--rounds 15] [--out=benchmarks/results/...]

A whole training step is too noisy on a shared 2-core machine (steal time) to
show a change of a few percent, so this times only the update: `apply_gradients`
of the model's weights (`benchmarks.workloads`' sizes, built by
`trainer.build_state`, each optimizer with its own copy) with fixed random
gradients, in one traced function per optimizer, the two interleaved
(`benchmarks.harness`) for `--rounds` rounds after a warm-up. "fused" is the
optimizer the trainer builds (`trainer.make_optimizer`: FusedAdam, one
`ResourceApplyAdam` per variable); "keras" is `keras.optimizers.Adam` with the
same schedule, betas and epsilon, built beside it. One row per optimizer:
median / min / max milliseconds per update, the parameter count, the machine
and `onednn_isa`.
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from benchmarks import harness, isa, workloads
from benchmarks.machine import machine_fields
from benchmarks.rows import append_row

OPTIMIZERS = ("keras", "fused")


def keras_adam(hparams):
    """Keras' own Adam with the trainer's schedule, betas and epsilon."""
    from t2t_lite.training.schedules import TransformerSchedule

    schedule = TransformerSchedule(hparams.d_model, hparams.warmup_steps,
                                   hparams.learning_rate_scale)
    return keras.optimizers.Adam(learning_rate=schedule, beta_1=hparams.adam_beta1,
                                 beta_2=hparams.adam_beta2, epsilon=hparams.adam_epsilon)


def build(size: str, name: str):
    """A traced update of `size`'s weights with optimizer `name` (fixed gradients)."""
    model, optimizer, hparams = workloads.train_state(size)
    if name == "keras":
        optimizer = keras_adam(hparams)
        optimizer.build(model.trainable_variables)
    rng = np.random.default_rng(0)
    grads = [tf.constant(rng.normal(size=v.shape).astype(np.float32) * 1e-3)
             for v in model.trainable_variables]
    update = tf.function(lambda: optimizer.apply_gradients(
        zip(grads, model.trainable_variables)))
    return update, model.count_params()


def update_row(size: str, name: str, seconds: list[float], params: int, machine: dict,
               onednn_isa: str | None) -> dict:
    """One optimizer's row: milliseconds per update."""
    return {"bench": "adam_update", "setting": name, "size": size, "adam": name,
            "params": params, "updates": len(seconds), "threads": workloads.THREADS,
            "ms_per_update": {"median": round(1e3 * statistics.median(seconds), 2),
                              "min": round(1e3 * min(seconds), 2),
                              "max": round(1e3 * max(seconds), 2)},
            "onednn_isa": onednn_isa, **machine}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", choices=sorted(workloads.SIZES), default="base")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default="-", help="rows are appended here (- : print only)")


def main(args) -> int:
    workloads.use_threads()
    machine = machine_fields()
    updates, params = {}, 0
    for name in OPTIMIZERS:
        updates[name], params = build(args.size, name)
        for _ in range(3):
            updates[name]()
    seconds = harness.interleave({name: (lambda i, u=u: u()) for name, u in updates.items()},
                                 args.rounds)
    onednn_isa = isa.probe()
    for name in OPTIMIZERS:
        append_row(update_row(args.size, name, seconds[name], params, machine, onednn_isa),
                   args.out, benchmark="adam_update")
    return 0
