"""Run by tests/test_eight_replicas.py in a fresh process: the same training on 8 replicas
and on one replica with the same global batch, step by step.

    T2T_LITE_CPU_REPLICAS=8 python tests/eight_replicas_worker.py STEPS OUT

TensorFlow fixes its devices when it starts, and the test process has two logical CPU devices
(tests/conftest.py); here `cluster.local_strategy()` splits the CPU into the 8 devices
T2T_LITE_CPU_REPLICAS asks for, as the trainer command does. Each run is built by the trainer's
own `trainer._start` (model, optimizer, input pipeline, step runner) in its own run directory,
and each update is `runner.step` on the next global batch, as `trainer._update` does. The
8-replica run reads batches of `batch_size` x 8 tokens; the one-replica run has a `batch_size`
8 times as large, so both read the same global batches.

Writes OUT/replicas-R.npz for R in 8 and 1: the weights after STEPS steps (`w0`, `w1`, ...
in model.weights order), the initial weights (`i0`, ...), Adam's moments after STEPS steps
(`s0`, ...: every momentum, then every velocity), and per step the learning rate the optimizer
applies (its schedule at its `iterations`), the iterations after the step, and the step's
summed smoothed loss, summed NLL and target tokens (`rates`, `iterations`, `sums`).
"""

import os
import sys

import numpy as np

REPLICAS = 8
PER_REPLICA_TOKENS = 32  # 256 tokens a global batch: every batch has >= 19 rows, >= 2 a replica.
TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2"


def hparams_for(replicas):
    """The tiny Transformer's hparams whose global batch is the 8-replica run's."""
    from t2t_lite import registry

    per_replica = PER_REPLICA_TOKENS * REPLICAS // replicas
    return registry.hparams("tiny").override(f"{TINY},batch_size={per_replica}")


def train(strategy, steps, output_dir):
    """`steps` trainer updates under `strategy`; what the module docstring lists."""
    from t2t_lite import registry
    from t2t_lite.training import trainer
    from t2t_lite.training.options import EvalOptions, TrainOptions

    replicas = strategy.num_replicas_in_sync
    options = TrainOptions(train_steps=steps, save_checkpoints_steps=steps,
                           log_every_steps=steps, peak_flops=1e12,
                           eval=EvalOptions(eval_every_steps=0))
    session = trainer._start(registry.problem("algorithmic_reverse"), hparams_for(replicas),
                             output_dir, None, options, strategy, log=lambda line: None)
    model = session.runner.model
    record = {f"i{k}": w.numpy() for k, w in enumerate(model.weights)}
    rates, iterations, sums = [], [], []
    for _ in range(steps):
        rates.append(float(session.optimizer.learning_rate))  # The rate this update applies.
        sums.append(session.runner.step([next(session.iterator)]))
        iterations.append(int(session.optimizer.iterations.numpy()))
    record.update({f"w{k}": w.numpy() for k, w in enumerate(model.weights)})
    slots = session.optimizer._momentums + session.optimizer._velocities
    record.update({f"s{k}": s.numpy() for k, s in enumerate(slots)})
    return dict(record, rates=np.array(rates), iterations=np.array(iterations),
                sums=np.array(sums), replicas=replicas)


def main(steps, out):
    from t2t_lite.training import cluster

    eight = cluster.local_strategy()  # First: it sets up the 8 CPU devices.
    assert eight.num_replicas_in_sync == REPLICAS, eight.num_replicas_in_sync
    for strategy in (eight, cluster.local_strategy(["/cpu:0"])):
        record = train(strategy, steps, os.path.join(out, f"run-{strategy.num_replicas_in_sync}"))
        np.savez(os.path.join(out, f"replicas-{record['replicas']}.npz"), **record)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
