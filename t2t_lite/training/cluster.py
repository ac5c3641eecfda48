"""Training on several machines: `MultiWorkerMirroredStrategy` from `TF_CONFIG`.

Every worker runs the same `t2t_lite-trainer` command with its own `TF_CONFIG`
(TensorFlow's convention: the cluster's addresses and this task's type and
index). Each worker reads the same input pipeline (same shards, same seed),
so every worker holds the same global batch and its replicas take their own
rows of it (`train_step.StepRunner`); gradients are all-reduced every step and
the workers stay in lockstep.

The chief (task "chief", or worker 0 when the cluster has no chief) owns
OUTPUT_DIR: checkpoints, `best/`, TensorBoard and the FLOP ledger. The other
workers take part in every save (saving reads replicated state with collective
ops) but write into a scratch folder `OUTPUT_DIR/.worker-N/`, which they remove
when they finish. All workers restore the chief's newest checkpoint, so
`OUTPUT_DIR` must be on storage every worker sees (a shared or network file
system). When a worker dies the others stop with an error; start every worker
again and they resume together from the last checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import weakref

import tensorflow as tf

from t2t_lite.errors import UserError


class ClusterError(UserError, ValueError):
    """A TF_CONFIG that cannot describe a cluster; the message says what to fix."""


def tf_config() -> dict:
    """The parsed TF_CONFIG, or {} when unset or empty.

    Raises:
      ClusterError: it is not a JSON object whose "cluster" and "task" TensorFlow can use
        (`check_tf_config`).
    """
    text = os.environ.get("TF_CONFIG", "").strip()
    if not text:
        return {}
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ClusterError(f"TF_CONFIG is not valid JSON ({' '.join(str(e).split())}); "
                           "unset it to train on one machine") from None
    if not isinstance(config, dict):
        raise ClusterError("TF_CONFIG must be a JSON object with \"cluster\" and \"task\"")
    check_tf_config(config)
    return config


# TensorFlow's task types (`multi_worker_util`); t2t_lite trains on the chief and workers.
JOBS = ("chief", "worker", "evaluator", "ps")
_EXAMPLE = ('e.g. {"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
            '"task": {"type": "worker", "index": 0}}')


def check_tf_config(config: dict) -> None:
    """Raises ClusterError unless `config`'s "cluster" maps task types to lists of addresses
    (at most one chief) and its "task" names one of them by type and index."""
    cluster = config.get("cluster", {})
    if not isinstance(cluster, dict) or any(
            job not in JOBS or not isinstance(tasks, list)
            or not all(isinstance(a, str) and a for a in tasks) for job, tasks in cluster.items()):
        raise ClusterError(f"TF_CONFIG's \"cluster\" must map each of {', '.join(JOBS)} to a "
                           f"list of \"host:port\" addresses ({_EXAMPLE})")
    if len(cluster.get("chief", [])) > 1:
        raise ClusterError("TF_CONFIG's cluster has more than one chief; make the others "
                           "workers")
    task = config.get("task")
    if task is None:
        if is_multi_worker(config):
            raise ClusterError(f"TF_CONFIG has no \"task\" saying which of the cluster's "
                               f"tasks this process is ({_EXAMPLE})")
        return
    if not isinstance(task, dict) or not isinstance(task.get("type"), str) \
            or type(task.get("index")) is not int:
        raise ClusterError(f"TF_CONFIG's \"task\" must be {{\"type\": TYPE, \"index\": N}} "
                           f"({_EXAMPLE})")
    if cluster and not 0 <= task["index"] < len(cluster.get(task["type"], [])):
        raise ClusterError(f"TF_CONFIG's task {task['type']!r} {task['index']} is not in its "
                           f"cluster (which has {_job_counts(cluster)})")


def _job_counts(cluster: dict) -> str:
    return ", ".join(f"{len(tasks)} {job}" for job, tasks in cluster.items()) or "no tasks"


def is_multi_worker(config: dict | None = None) -> bool:
    """True when TF_CONFIG describes more than one chief or worker task."""
    config = tf_config() if config is None else config
    cluster = config.get("cluster", {})
    return len(cluster.get("chief", [])) + len(cluster.get("worker", [])) > 1


def strategy_from_environment() -> tf.distribute.Strategy:
    """MultiWorkerMirroredStrategy under a multi-worker TF_CONFIG, else MirroredStrategy.

    Create it first thing in the process: collective ops must be configured
    before TensorFlow runs its first op.
    """
    if is_multi_worker():
        return tf.distribute.MultiWorkerMirroredStrategy()
    return local_strategy()


# How far each new local strategy moves TensorFlow's collective key base: more
# collective groups than one strategy ever makes (TensorFlow's own tests use 1000).
_KEY_BASE_STEP = 1000


# Replicas on N logical CPU devices (`cpu_replica_devices`): how the tests run the
# 8 replicas of the paper's 8 GPUs on a machine without them.
CPU_REPLICAS_ENV = "T2T_LITE_CPU_REPLICAS"


def cpu_replica_devices() -> list[str] | None:
    """The devices T2T_LITE_CPU_REPLICAS=N asks for, "/cpu:0" ... "/cpu:N-1"; None when unset.

    The CPU is split into N logical devices, one replica each, in place of the
    GPUs. TensorFlow fixes its devices when it starts, so the variable is read
    when the trainer makes its strategy, before its first op.

    Raises:
      ClusterError: N is not a whole number of 1 or more, or TensorFlow already
        started with another number of CPU devices.
    """
    text = os.environ.get(CPU_REPLICAS_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ClusterError(f"{CPU_REPLICAS_ENV}={text!r}: expected a whole number of "
                           "replicas, 1 or more; unset it to train on the GPUs or the CPU")
    count = int(text)
    cpu = tf.config.list_physical_devices("CPU")[0]
    configured = len(tf.config.get_logical_device_configuration(cpu) or [None])
    if count != configured:
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * count)
        except RuntimeError:
            raise ClusterError(
                f"{CPU_REPLICAS_ENV}={count}: TensorFlow already started with {configured} "
                "CPU device(s); set it before the process runs TensorFlow") from None
    return [f"/cpu:{i}" for i in range(count)]


def local_strategy(devices: list[str] | None = None) -> tf.distribute.MirroredStrategy:
    """A MirroredStrategy over `devices` (default: the CPU devices T2T_LITE_CPU_REPLICAS
    asks for, else all local GPUs, else the CPU).

    Every MirroredStrategy numbers its collective ops (the gradient all-reduce)
    from the same group and instance keys, and TensorFlow's collective executor
    keeps what it saw under a key for the life of the process. So the second
    training in one process (a notebook, a test session) with another model
    shape fails with "Shape mismatch in the collective instance N", and after
    that every collective fails. Each strategy made here starts its keys past
    the previous one's, as TensorFlow's own tests do.
    """
    devices = devices or cpu_replica_devices()
    tf.distribute.MirroredStrategy._collective_key_base += _KEY_BASE_STEP
    return tf.distribute.MirroredStrategy(devices)


def is_multi_worker_strategy(strategy) -> bool:
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and \
        strategy.cluster_resolver is not None and \
        bool(strategy.cluster_resolver.cluster_spec().as_dict())


def is_chief(strategy) -> bool:
    """Whether this process owns OUTPUT_DIR (always, on one machine)."""
    if not is_multi_worker_strategy(strategy):
        return True
    resolver = strategy.cluster_resolver
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and not has_chief


def write_dir(output_dir: str, strategy) -> str:
    """Where this process writes: OUTPUT_DIR for the chief, a scratch folder otherwise."""
    if is_chief(strategy):
        return output_dir
    resolver = strategy.cluster_resolver
    return os.path.join(output_dir, f".{resolver.task_type}-{resolver.task_id}")


def remove_scratch(output_dir: str, strategy) -> None:
    """Removes a non-chief worker's scratch folder (nothing on the chief)."""
    directory = write_dir(output_dir, strategy)
    if directory != output_dir:
        shutil.rmtree(directory, ignore_errors=True)


def agree(strategy, flag: bool) -> bool:
    """True when `flag` is true on any worker: one decision for every worker.

    Time-based decisions (a --train_minutes budget, a checkpoint every N
    minutes) must be the same on every worker, because saving and stepping are
    collective; on one machine this is `flag` itself, with no collective op.
    """
    if not is_multi_worker_strategy(strategy):
        return flag
    if strategy not in _ANY_TRUE:
        def replica(value):
            # tf.identity places the flag on this replica's device: an all-reduce
            # needs to know where its inputs live.
            return tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, tf.identity(value))

        # A real all-reduce in replica context: `strategy.reduce` of a value that
        # is not per-replica would only scale this worker's own flag.
        _ANY_TRUE[strategy] = tf.function(
            lambda value: strategy.run(replica, args=(value,)))
    result = _ANY_TRUE[strategy](tf.constant(1.0 if flag else 0.0))
    return float(strategy.experimental_local_results(result)[0]) > 0.0


# strategy -> its traced all-reduce of a flag, keyed by the object itself (a new
# strategy never finds a dead one's function under a reused id).
_ANY_TRUE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
