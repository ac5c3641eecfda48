"""Training: MirroredStrategy, the paper's schedule, checkpoints, automatic resume.

`train(problem, hparams, output_dir)` trains under `tf.distribute.MirroredStrategy`
over every visible GPU (one device on a CPU machine) with Adam(0.9, 0.98, 1e-9)
and the learning rate of equation 3 (section 5.3). A checkpoint is written every
`save_checkpoints_steps` steps and every `save_checkpoints_minutes` minutes (the
paper wrote one every 10 minutes), keeping the last `keep_checkpoint_max`. Each
checkpoint holds the weights, the optimizer (its step, hence the learning rate,
and its slots) and the position of the input pipeline, so a run that crashed
or was killed resumes where its last checkpoint left it when started again.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable

import keras
import tensorflow as tf

from t2t_lite.training import cluster
from t2t_lite.data import batching
from t2t_lite.runs import run_dir
from t2t_lite.training import flops as flop_count
from t2t_lite.runs import checkpoints as checkpoint_files
from t2t_lite.runs.checkpoints import build_model, model_weights, write_weights_dir
from t2t_lite.training.evaluation import BEST_DIR, BEST_FILE, DevEvaluator, DevResult, EvalOptions
from t2t_lite.training.schedules import TransformerSchedule, paper_learning_rate
from t2t_lite.training.train_step import StepRunner


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """How to run training (not what to train: that is HParams)."""

    train_steps: int | None = None  # None = hparams.train_steps.
    # Wall-clock budget of this invocation's training loop (dev evaluations
    # included): it stops at the first step past it, saves and evaluates.
    train_minutes: float | None = None
    save_checkpoints_steps: int = 1000
    save_checkpoints_minutes: float = 10.0  # The paper: every 10 minutes.
    keep_checkpoint_max: int = 20  # Enough to average the last 20 (big).
    log_every_steps: int = 100
    jit_compile: bool = False  # XLA for the training step.
    seed: int = 1234
    eval: EvalOptions = EvalOptions()  # Dev evaluation and the best checkpoint.
    progress_bar: bool = False  # A live Keras Progbar (for a terminal) instead of log lines.
    # The matmul peak (FLOP/s, all replicas) that MFU divides by; None = measure
    # it before training (`t2t_lite.training.flops.matmul_peak`, under a second).
    peak_flops: float | None = None


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
    """Adam with the paper's betas, epsilon and equation-3 learning rate.

    Under precision "mixed_float16" it is wrapped in a dynamic
    `keras.optimizers.LossScaleOptimizer`: float16 gradients underflow without
    loss scaling. bfloat16 has float32's exponent range and needs none.
    """
    schedule = TransformerSchedule(
        hparams.d_model, hparams.warmup_steps, hparams.learning_rate_scale
    )
    optimizer = keras.optimizers.Adam(
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
        optimizer = make_optimizer(hparams)
        optimizer.build(model.trainable_variables)
    return model, optimizer


class _Progress:
    """Logs loss, learning rate and tokens/s to stdout and TensorBoard."""

    def __init__(self, output_dir, total_steps, first_step, log: Callable[[str], None],
                 bar: bool = False):
        self.writer = tf.summary.create_file_writer(os.path.join(output_dir, "train"))
        self.total_steps = total_steps
        self.log = log
        self.first_step = self.window_step = first_step
        self.deadline = None  # time.time() at which a --train_minutes budget ends.
        self.peak_flops = 0.0  # FLOP/s that MFU divides by (0: not known).
        # The bar counts this session's steps, so its rate and ETA are right after a resume.
        self.bar = keras.utils.Progbar(
            total_steps - first_step, unit_name="step",
            stateful_metrics=["loss", "lr", "ktok/s", "MFU%"]) if bar else None
        self.reset()

    def step_done(self, step, loss_sum, nll_sum, tokens, learning_rate, flops=0.0):
        """Adds one update's sums and training FLOPs; moves the live bar."""
        self.add(loss_sum, nll_sum, tokens)
        self.flops += flops
        if self.bar is not None:
            elapsed = max(time.time() - self.start, 1e-9)
            values = [("loss", loss_sum / max(tokens, 1.0)), ("lr", learning_rate),
                      ("ktok/s", self.tokens / elapsed / 1000)]
            if self.peak_flops:
                values.append(("MFU%", 100 * self.flops / elapsed / self.peak_flops))
            self.bar.update(step - self.first_step, values=values)

    def message(self, line: str) -> None:
        """A line that is not progress (dev evaluation, ...), on its own line under a bar."""
        self.log(("\n" if self.bar is not None else "") + line)

    def reset(self):
        self.loss = self.nll = self.tokens = self.flops = 0.0
        self.start = time.time()

    def pause(self, seconds: float) -> None:
        """Leaves `seconds` (spent on something else, e.g. dev evaluation) out of the rates."""
        self.start += seconds

    def eta(self, step: int, elapsed: float) -> str:
        """Time left at this window's steps per second, as 1h02m or 3m05s."""
        steps = step - self.window_step
        if steps <= 0:
            return "?"
        seconds = int((self.total_steps - step) * elapsed / steps)
        if self.deadline is not None:  # --train_minutes: whichever ends first.
            seconds = max(0, min(seconds, int(self.deadline - time.time())))
        hours, rest = divmod(seconds, 3600)
        return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"

    def add(self, loss_sum, nll_sum, tokens):
        self.loss += loss_sum
        self.nll += nll_sum
        self.tokens += tokens

    def flush(self, step, learning_rate):
        elapsed = max(time.time() - self.start, 1e-9)
        loss = self.loss / max(self.tokens, 1.0)
        nll = self.nll / max(self.tokens, 1.0)
        rate = self.tokens / elapsed
        mfu = self.flops / elapsed / self.peak_flops if self.peak_flops else float("nan")
        with self.writer.as_default(step=step):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("nll", nll)
            tf.summary.scalar("learning_rate", learning_rate)
            tf.summary.scalar("tokens_per_second", rate)
            tf.summary.scalar("model_flops_per_second", self.flops / elapsed)
            tf.summary.scalar("mfu", mfu)
        if self.bar is None:
            self.log(f"step {step}/{self.total_steps}  loss {loss:.4f}  nll {nll:.4f}  "
                     f"lr {learning_rate:.3e}  {rate:,.0f} tok/s  MFU {100 * mfu:.0f}%  "
                     f"ETA {self.eta(step, elapsed)}")
        self.window_step = step
        self.reset()
        return loss, rate, mfu


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
    checkpoint_files.remove_staging(output_dir, BEST_DIR)
    return checkpoint_files.restore_newest_readable(
        checkpoint, lambda: manager(output_dir, options.keep_checkpoint_max), output_dir, log)


def train(problem, hparams, output_dir: str, data_dir: str | None = None,
          options: TrainOptions = TrainOptions(), strategy=None,
          log: Callable[[str], None] = print) -> TrainResult:
    """Trains `problem` with `hparams`, resuming from `output_dir` if it holds a run.

    Raises:
      run_dir.RunDirError: `output_dir` holds a run of another problem or model.
    """
    # Under a multi-worker TF_CONFIG this must come before any TensorFlow op.
    strategy = strategy or cluster.strategy_from_environment()
    chief, out = cluster.is_chief(strategy), cluster.write_dir(output_dir, strategy)
    problem.set_data_dir(data_dir)
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
    runner = StepRunner(model, optimizer, strategy, hparams.label_smoothing,
                        hparams.accum_steps, options.jit_compile)
    budget = f" or {options.train_minutes:g} minutes" if options.train_minutes else ""
    log(f"training {problem.name} with {model.count_params():,} parameters on "
        f"{replicas} replica(s), {total_steps} steps{budget}")
    step = int(optimizer.iterations.numpy())
    progress = _Progress(out, total_steps, step, log, options.progress_bar)
    counter = flop_count.FlopCounter.for_model(model)
    progress.peak_flops = options.peak_flops or replicas * flop_count.matmul_peak(
        flop_count.compute_dtype(hparams.dtype_policy))
    ledger = flop_count.FlopLedger(out, step)
    evaluator = chief and DevEvaluator.create(
        problem, model, hparams, output_dir, options.eval,
        lambda directory, record: write_weights_dir(model, directory, record, BEST_FILE),
        progress.message)

    def learning_rate(at):
        return float(paper_learning_rate(at, hparams.d_model, hparams.warmup_steps,
                                         hparams.learning_rate_scale))

    dev = None
    saved_at = step if restored else None  # The same on every worker.
    last_save = time.time()
    deadline = last_save + 60.0 * options.train_minutes if options.train_minutes else None
    progress.deadline = deadline
    loss = rate = mfu = float("nan")
    try:
        while step < total_steps:
            if deadline is not None and cluster.agree(strategy, time.time() >= deadline):
                progress.message(f"time budget of {options.train_minutes:g} minutes reached "
                                 f"at step {step}: saving and stopping")
                break
            micro_batches = [next(iterator) for _ in range(hparams.accum_steps)]
            sums = runner.step(micro_batches)
            spent = sum(counter.train_flops(b["inputs"].shape[0], b["inputs"].shape[1],
                                            b["targets"].shape[1]) for b in micro_batches)
            ledger.total += spent
            previous, step = step, int(optimizer.iterations.numpy())
            progress.step_done(step, *sums, learning_rate(step) if progress.bar else 0.0,
                               spent)
            if step == previous:  # The loss scale overflowed: no update, nothing to save.
                continue
            if step % options.log_every_steps == 0 or step == total_steps:
                loss, rate, mfu = progress.flush(step, learning_rate(step))
            minutes = (time.time() - last_save) / 60.0
            if step % options.save_checkpoints_steps == 0 or \
                    cluster.agree(strategy, minutes >= options.save_checkpoints_minutes):
                manager.save(checkpoint_number=step)
                ledger.record(step)
                saved_at, last_save = step, time.time()
            if evaluator and step % options.eval.eval_every_steps == 0 and step < total_steps:
                dev = evaluator.evaluate(step)
                progress.pause(dev.seconds)
    except KeyboardInterrupt:
        if cluster.is_multi_worker_strategy(strategy):  # Saving is collective there.
            raise
        progress.message(f"interrupted at step {step}: saving a checkpoint")
        manager.save(checkpoint_number=step)
        ledger.record(step)
        raise
    if saved_at != step:
        manager.save(checkpoint_number=step)
        ledger.record(step)
    if chief:
        progress.message(f"training FLOPs: {flop_count.format_flops(ledger.total)} in all "
                         f"(the analytic count of t2t_lite.training.flops)")
    if evaluator and (dev is None or dev.step != step):
        dev = evaluator.evaluate(step)
    cluster.remove_scratch(output_dir, strategy)
    return TrainResult(step, loss, rate, manager.latest_checkpoint, dev, mfu, ledger.total)
