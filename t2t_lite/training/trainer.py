"""Training: MirroredStrategy, the paper's schedule, checkpoints, automatic resume.

`train(problem, hparams, output_dir)` trains under `tf.distribute.MirroredStrategy`
over every visible GPU (one device on a CPU machine) with Adam(0.9, 0.98, 1e-9)
and the learning rate of equation 3 (section 5.3). A checkpoint is written every
`save_checkpoints_steps` steps and every `save_checkpoints_minutes` minutes (the
paper wrote one every 10 minutes), keeping the last `keep_checkpoint_max`. Each
checkpoint holds the weights, the optimizer (its step, hence the learning rate,
and its slots) and the position of the input pipeline, so a run that crashed
or was killed resumes where its last checkpoint left it when started again.
A new run may start from another run's weights (`TrainOptions.init_from`,
`t2t_lite.training.warm_start`) and stop early when the dev metric stops
improving (`EvalOptions.early_stopping_evals`, `t2t_lite.training.early_stopping`).
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable

import keras
import tensorflow as tf

from t2t_lite import atomic
from t2t_lite.progress import TrainProgress
from t2t_lite.training import cluster
from t2t_lite.data import batching
from t2t_lite.runs import run_dir
from t2t_lite.training import flops as flop_count
from t2t_lite.runs import checkpoints as checkpoint_files
from t2t_lite.runs.weights import build_model, model_weights, write_weights_dir
from t2t_lite.training.adam import FusedAdam
from t2t_lite.training import warm_start
from t2t_lite.training.early_stopping import EarlyStopping
from t2t_lite.training.evaluation import (BEST_DIR, BEST_FILE, DevEvaluator, DevResult,
                                          best_metric_name)
from t2t_lite.training.options import TrainOptions
from t2t_lite.training.schedules import TransformerSchedule, paper_learning_rate
from t2t_lite.training.train_step import StepRunner


@dataclasses.dataclass(frozen=True)
class TrainResult:
    step: int
    loss: float  # Mean smoothed loss per token over the last logging window.
    tokens_per_second: float  # Target tokens (non-padding) per second, same window.
    checkpoint: str | None
    dev: DevResult | None = None  # The last dev evaluation (None when off).
    mfu: float = float("nan")  # Model FLOPs utilization, same window as tokens_per_second.
    train_flops: float = 0.0  # Analytic training FLOPs of the run so far (t2t_lite.training.flops).


def make_optimizer(hparams) -> keras.optimizers.Optimizer:
    """Adam with the paper's betas, epsilon and equation-3 learning rate, each
    variable's update one fused kernel (`t2t_lite.training.adam.FusedAdam`).

    Under precision "mixed_float16" it is wrapped in a dynamic
    `keras.optimizers.LossScaleOptimizer`: float16 gradients underflow without
    loss scaling. bfloat16 has float32's exponent range and needs none.
    """
    schedule = TransformerSchedule(
        hparams.d_model, hparams.warmup_steps, hparams.learning_rate_scale
    )
    optimizer = FusedAdam(
        learning_rate=schedule,
        beta_1=hparams.adam_beta1,
        beta_2=hparams.adam_beta2,
        epsilon=hparams.adam_epsilon,
    )
    if hparams.dtype_policy == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def build_state(problem, hparams, strategy, seed=1234):
    """Model and optimizer created (weights, slots) in the strategy's scope."""
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = build_model(hparams, problem.source_vocab_size, problem.target_vocab_size)
        model.adapt(problem)  # What the model takes from the problem (its contract).
        optimizer = make_optimizer(hparams)
        optimizer.build(model.trainable_variables)
    return model, optimizer


def _restore(checkpoint, optimizer, output_dir, out, options, log):
    """The run's CheckpointManager (saving into `out`) and the checkpoint restored, or None.

    The chief (or the only process) restores its newest readable checkpoint
    and cleans what a killed run left; another worker restores the chief's
    newest checkpoint and saves into its scratch folder `out`.
    """
    def manager(directory, keep):
        return tf.train.CheckpointManager(
            checkpoint, directory, max_to_keep=keep, checkpoint_name="ckpt",
            step_counter=optimizer.iterations)

    if out != output_dir:
        newest = tf.train.latest_checkpoint(output_dir)
        if newest:
            checkpoint.restore(newest).assert_existing_objects_matched()
        return manager(out, 1), newest
    # What a killed run left half-written: TensorFlow's save folders, best/'s staging.
    checkpoint_files.remove_save_temporaries(output_dir)
    atomic.remove_temporaries(output_dir, BEST_DIR)
    return checkpoint_files.restore_newest_readable(
        checkpoint, lambda: manager(output_dir, options.keep_checkpoint_max), output_dir, log)


class _Saver:
    """Saves checkpoints, the FLOP ledger with each; knows the step and time of the last."""

    def __init__(self, manager, ledger, saved_at: int | None):
        self.manager, self.ledger = manager, ledger
        self.saved_at = saved_at  # The same on every worker.
        self.last_save = time.time()

    def save(self, step: int) -> None:
        self.manager.save(checkpoint_number=step)
        self.ledger.record(step)
        self.saved_at, self.last_save = step, time.time()

    def minutes_since(self) -> float:
        return (time.time() - self.last_save) / 60.0


@dataclasses.dataclass
class _Session:
    """What the training loop works with (`_start` builds it)."""

    strategy: object
    hparams: object
    options: TrainOptions
    chief: bool
    total_steps: int
    first_step: int
    optimizer: keras.optimizers.Optimizer
    iterator: object
    runner: StepRunner
    progress: TrainProgress
    counter: flop_count.FlopCounter
    ledger: flop_count.FlopLedger
    saver: _Saver
    evaluator: DevEvaluator | None  # None off the chief, or when dev evaluation is off.
    stopper: EarlyStopping | None  # None off the chief, or when early stopping is off.


def _learning_rate(hparams, step: int) -> float:
    return float(paper_learning_rate(step, hparams.d_model, hparams.warmup_steps,
                                     hparams.learning_rate_scale))


def _init_from(model, optimizer, problem, hparams, output_dir, options, restored, chief, log):
    """--init_from: a new run gets the source's weights; a resumed run keeps its own.

    Raises:
      WarmStartError: the run resumes its own checkpoints but --init_from names
        another source than the one it started from (or it started from scratch).
    """
    started = run_dir.read_init_from(output_dir)
    if restored:
        source = options.init_from and os.path.abspath(
            warm_start.InitFrom.parse(options.init_from).run_dir)
        if source and (started is None or started.get("run_dir") != source):
            origin = f"fine-tuned from {started['run_dir']}" if started else "from scratch"
            raise warm_start.WarmStartError(
                f"{output_dir} already holds checkpoints of its own run ({origin}), which it "
                "resumes: leave --init_from out, or fine-tune into a new --output_dir")
        if started:
            log(f"(a run fine-tuned from {started['checkpoint']})")
        return
    if not options.init_from:
        if started and chief:  # What a fine-tuning that never saved left: not this run.
            os.remove(os.path.join(output_dir, run_dir.INIT_FROM_FILE))
        return
    record = warm_start.warm_start(model, optimizer, options.init_from, hparams, problem,
                                   output_dir, options.init_from_optimizer)
    if chief:
        run_dir.write_init_from(output_dir, record)
    log(warm_start.describe(record))


def _start(problem, hparams, output_dir, data_dir, options, strategy, log) -> _Session:
    """Prepares the run, builds the model, resumes it, and everything the loop needs."""
    chief, out = cluster.is_chief(strategy), cluster.write_dir(output_dir, strategy)
    problem.set_data_dir(data_dir)
    best_metric_name(problem, options.eval.best_metric)  # An unknown name fails now.
    if options.init_from and chief and not tf.train.latest_checkpoint(output_dir):
        warm_start.check_source(options.init_from, hparams, problem, output_dir)  # Now too.
    # Before anything is written: a split with nothing within max_length would hang.
    batching.check_training_examples(problem.examples("train", data_dir), hparams.max_length)
    if chief:
        run_dir.prepare_run(output_dir, hparams, problem.name, problem.source_vocab_size,
                            problem.target_vocab_size, data_dir)
    replicas = strategy.num_replicas_in_sync
    total_steps = options.train_steps or hparams.train_steps
    model, optimizer = build_state(problem, hparams, strategy, options.seed)
    batches = batching.training_batches(
        problem.examples("train", data_dir), hparams, num_replicas=replicas,
        seed=options.seed,
    )
    iterator = iter(batches)
    checkpoint = tf.train.Checkpoint(
        model=model_weights(model), optimizer=optimizer, data=iterator)
    manager, restored = _restore(checkpoint, optimizer, output_dir, out, options, log)
    if restored:
        log(f"resumed from {restored} at step {int(optimizer.iterations.numpy())}")
    _init_from(model, optimizer, problem, hparams, output_dir, options, restored, chief, log)
    runner = StepRunner(model, optimizer, strategy, hparams.label_smoothing,
                        hparams.accum_steps, options.jit_compile)
    budget = f" or {options.train_minutes:g} minutes" if options.train_minutes else ""
    log(f"training {problem.name} with {model.count_params():,} parameters on "
        f"{replicas} replica(s), {total_steps} steps{budget}")
    step = int(optimizer.iterations.numpy())
    progress = TrainProgress(out, total_steps, step, log, options.progress_bar)
    counter = flop_count.FlopCounter.for_model(model)
    progress.peak_flops = options.peak_flops or replicas * flop_count.matmul_peak(
        flop_count.compute_dtype(hparams.dtype_policy))
    ledger = flop_count.FlopLedger(out, step)
    evaluator = DevEvaluator.create(
        problem, model, hparams, output_dir, options.eval,
        lambda directory, record: write_weights_dir(model, directory, record, BEST_FILE),
        progress.message) if chief else None
    saver = _Saver(manager, ledger, step if restored else None)
    if options.train_minutes:
        progress.deadline = saver.last_save + 60.0 * options.train_minutes
    stopper = (EarlyStopping.create(output_dir, options.eval, bool(restored))
               if evaluator else None)
    return _Session(strategy, hparams, options, chief, total_steps, step, optimizer, iterator,
                    runner, progress, counter, ledger, saver, evaluator, stopper)


def _update(s: _Session) -> int:
    """One update (accum_steps micro-batches), its FLOPs counted and shown; the new step."""
    micro_batches = [next(s.iterator) for _ in range(s.hparams.accum_steps)]
    sums = s.runner.step(micro_batches)
    spent = sum(s.counter.train_flops(b["inputs"].shape[0], b["inputs"].shape[1],
                                      b["targets"].shape[1]) for b in micro_batches)
    s.ledger.total += spent
    step = int(s.optimizer.iterations.numpy())
    s.progress.step_done(step, *sums, _learning_rate(s.hparams, step) if s.progress.bar
                         else 0.0, spent)
    return step


def _evaluate(s: _Session, step: int) -> DevResult:
    """A dev evaluation at `step` (chief), counted by early stopping when it is on."""
    dev = s.evaluator.evaluate(step)
    s.progress.pause(dev.seconds)
    if s.stopper:
        s.stopper.update(dev.best_score(), step)
    return dev


def _stop_early(s: _Session, step: int) -> bool:
    """Whether every worker stops now: early stopping's count reached on the chief."""
    if s.options.eval.early_stopping_evals <= 0 or s.options.eval.eval_every_steps <= 0:
        return False  # The same on every worker: none calls `agree`.
    if not cluster.agree(s.strategy, bool(s.stopper and s.stopper.should_stop())):
        return False
    if s.stopper:
        s.progress.message(f"{s.stopper.reason()} at step {step}: saving and stopping")
    return True


def _run_steps(s: _Session):
    """The training loop; returns (step, the last dev result or None, loss, rate, MFU).

    Saves every save_checkpoints_steps, and every save_checkpoints_minutes as all
    workers agree; stops at the time budget or by early stopping; saves when
    interrupted (one worker).
    """
    step, dev, deadline = s.first_step, None, s.progress.deadline
    loss = rate = mfu = float("nan")
    every = s.options.eval.eval_every_steps
    if step < s.total_steps and _stop_early(s, step):  # A run that stopped early, restarted.
        return step, dev, loss, rate, mfu
    updated = False  # Each start makes at least one update, however short its budget.
    try:
        while step < s.total_steps:
            if updated and deadline is not None and cluster.agree(
                    s.strategy, time.time() >= deadline):
                s.progress.message(f"time budget of {s.options.train_minutes:g} minutes "
                                   f"reached at step {step}: saving and stopping")
                break
            previous, step, updated = step, _update(s), True
            if step == previous:  # The loss scale overflowed: no update, nothing to save.
                continue
            if step % s.options.log_every_steps == 0 or step == s.total_steps:
                loss, rate, mfu = s.progress.flush(step, _learning_rate(s.hparams, step))
            if step % s.options.save_checkpoints_steps == 0 or cluster.agree(
                    s.strategy, s.saver.minutes_since() >= s.options.save_checkpoints_minutes):
                s.saver.save(step)
            if every > 0 and step % every == 0 and step < s.total_steps:
                if s.evaluator:
                    dev = _evaluate(s, step)
                if _stop_early(s, step):
                    break
    except KeyboardInterrupt:
        if cluster.is_multi_worker_strategy(s.strategy):  # Saving is collective there.
            raise
        s.progress.message(f"interrupted at step {step}: saving a checkpoint")
        s.saver.save(step)
        raise
    return step, dev, loss, rate, mfu


def train(problem, hparams, output_dir: str, data_dir: str | None = None,
          options: TrainOptions = TrainOptions(), strategy=None,
          log: Callable[[str], None] = print) -> TrainResult:
    """Trains `problem` with `hparams`, resuming from `output_dir` if it holds a run.

    Ends with a checkpoint of the last step and, on the chief, a dev evaluation
    of it (`best/` kept by `DevEvaluator`).

    Raises:
      run_dir.RunDirError: `output_dir` holds a run of another problem or model.
    """
    # Under a multi-worker TF_CONFIG this must come before any TensorFlow op.
    strategy = strategy or cluster.strategy_from_environment()
    s = _start(problem, hparams, output_dir, data_dir, options, strategy, log)
    step, dev, loss, rate, mfu = _run_steps(s)
    if s.saver.saved_at != step:
        s.saver.save(step)
    if s.chief:
        s.progress.message(f"training FLOPs: {flop_count.format_flops(s.ledger.total)} in all "
                           f"(the analytic count of t2t_lite.training.flops)")
    if s.evaluator and (dev is None or dev.step != step):
        dev = _evaluate(s, step)
    cluster.remove_scratch(output_dir, strategy)
    return TrainResult(step, loss, rate, s.saver.manager.latest_checkpoint, dev, mfu,
                       s.ledger.total)
