"""t2t_lite-trainer: train a registered problem with a registered hparams set.

    t2t_lite-trainer --problem=wmt_ende --hparams=big --data_dir=D --output_dir=O
    t2t_lite-trainer --problem=algorithmic_reverse --hparams=tiny --output_dir=O \
        --hparams_overrides=dropout_rate=0.0 --train_steps=1400

Starting it again with the same --output_dir resumes from the newest checkpoint.
Every --eval_every_steps steps and at the end it evaluates on the dev split (dev
loss, and the problem's metric on greedy decodes of a bounded subset), writes
both to TensorBoard (OUTPUT_DIR/dev) and keeps the best weights by that metric
(or --best_metric) in OUTPUT_DIR/best/ (decode them with --checkpoint=best).
--early_stopping_evals=N stops when that metric has not improved for N dev
evaluations in a row. --init_from=RUN_DIR[:ckpt-N|averaged|best] fine-tunes: a
new run starts from that run's weights, with its own step counter and schedule.

On several machines, start the same command on each with its TF_CONFIG (the
cluster and this task); the workers train in lockstep under
MultiWorkerMirroredStrategy and the chief writes OUTPUT_DIR, which every worker
must see (README "Training on several machines").
"""

from __future__ import annotations

import argparse
import functools
import sys

from t2t_lite.bin import common
from t2t_lite.training.options import EvalOptions, TrainOptions

# Each flag's default is its field's; "(default: N)" in --help comes from there too.
_train = functools.partial(common.field_default, TrainOptions)
_eval = functools.partial(common.field_default, EvalOptions)


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser)."""
    parser = common.ArgumentParser(prog="t2t_lite-trainer", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", required=True, help="registered problem name")
    parser.add_argument("--hparams", default="base", help="registered hparams set")
    parser.add_argument("--hparams_overrides", default="",
                        help='e.g. "dropout_rate=0.3,num_layers=4" (typed, checked)')
    parser.add_argument("--output_dir", required=True, help="checkpoints and logs")
    parser.add_argument("--data_dir", default=None, help="t2t_lite-datagen output")
    parser.add_argument("--train_steps", type=int, default=_train("train_steps"),
                        help="optimizer steps (default: the hparams' train_steps)")
    parser.add_argument("--train_minutes", type=float, default=_train("train_minutes"),
                        help="stop at this wall-clock budget (minutes of this run, dev "
                        "evaluations included) with a final checkpoint, or at --train_steps")
    parser.add_argument("--save_checkpoints_steps", type=int,
                        default=_train("save_checkpoints_steps"),
                        help="a checkpoint every N steps (default: %(default)s)")
    parser.add_argument("--save_checkpoints_minutes", type=float,
                        default=_train("save_checkpoints_minutes"),
                        help="and every M minutes (default: %(default)s)")
    parser.add_argument("--keep_checkpoint_max", type=int,
                        default=_train("keep_checkpoint_max"),
                        help="the newest N checkpoints are kept (default: %(default)s)")
    parser.add_argument("--log_every_steps", type=int, default=_train("log_every_steps"),
                        help="a log line every N steps (default: %(default)s)")
    parser.add_argument("--jit", action="store_true", help="compile the step with XLA")
    parser.add_argument("--seed", type=int, default=_train("seed"),
                        help="random seed (default: %(default)s)")
    _add_eval_flags(parser)
    _add_init_from_flags(parser)
    common.add_common_flags(parser)
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.init_from_optimizer and not args.init_from:
        parser.error("--init_from_optimizer needs --init_from=RUN_DIR:ckpt-N")
    return args


def _add_eval_flags(parser) -> None:
    """Dev evaluation, best/ and early stopping (EvalOptions)."""
    parser.add_argument("--eval_every_steps", type=int, default=_eval("eval_every_steps"),
                        help="dev evaluation every N steps and at the end (0: never; "
                        "default: %(default)s)")
    parser.add_argument("--eval_examples", type=int, default=_eval("eval_examples"),
                        help="first N dev examples for the dev loss (default: %(default)s)")
    parser.add_argument("--eval_decode_examples", type=int,
                        default=_eval("eval_decode_examples"),
                        help="of those, how many are greedily decoded and scored "
                        "(default: %(default)s)")
    parser.add_argument("--eval_decode_minutes", type=float,
                        default=_eval("eval_decode_minutes"),
                        help="time bound for decoding them (default: %(default)s)")
    parser.add_argument("--best_metric", default=_eval("best_metric"),
                        help="the dev metric that keeps best/ and that early stopping watches, "
                        "by name (e.g. sacrebleu, chrf, ter; default: the problem's first)")
    parser.add_argument("--early_stopping_evals", type=int,
                        default=_eval("early_stopping_evals"),
                        help="stop when the best metric has not improved for N dev evaluations "
                        "in a row (0: never; default: %(default)s)")
    parser.add_argument("--early_stopping_min_delta", type=float,
                        default=_eval("early_stopping_min_delta"),
                        help="an improvement must exceed this, in the metric's units "
                        "(default: %(default)s)")


def _add_init_from_flags(parser) -> None:
    """Fine-tuning from another run (TrainOptions.init_from)."""
    parser.add_argument("--init_from", default=_train("init_from"),
                        help="fine-tune: start a new run from RUN_DIR[:ckpt-N|averaged|best]'s "
                        "weights (same model-shaping hparams and vocabularies), with a fresh "
                        "step counter, schedule and optimizer")
    parser.add_argument("--init_from_optimizer", action="store_true",
                        help="with --init_from: copy Adam's slots from that checkpoint too")


def main(argv=None) -> int:
    args = parse_args(argv)

    def run():
        from t2t_lite import registry
        from t2t_lite.training import cluster
        from t2t_lite.training import trainer

        # First: a multi-worker TF_CONFIG configures collectives before any op runs.
        strategy = cluster.strategy_from_environment()
        problem = registry.problem(args.problem)
        hparams = registry.hparams(args.hparams).override(args.hparams_overrides)
        options = TrainOptions(
            train_steps=args.train_steps,
            train_minutes=args.train_minutes,
            save_checkpoints_steps=args.save_checkpoints_steps,
            save_checkpoints_minutes=args.save_checkpoints_minutes,
            keep_checkpoint_max=args.keep_checkpoint_max,
            log_every_steps=args.log_every_steps,
            jit_compile=args.jit or _train("jit_compile"),
            seed=args.seed,
            progress_bar=sys.stdout.isatty(),
            init_from=args.init_from,
            init_from_optimizer=args.init_from_optimizer or _train("init_from_optimizer"),
            eval=EvalOptions(
                eval_every_steps=args.eval_every_steps, eval_examples=args.eval_examples,
                eval_decode_examples=args.eval_decode_examples,
                eval_decode_minutes=args.eval_decode_minutes, best_metric=args.best_metric,
                early_stopping_evals=args.early_stopping_evals,
                early_stopping_min_delta=args.early_stopping_min_delta),
        )
        result = trainer.train(problem, hparams, args.output_dir, args.data_dir, options,
                               strategy=strategy, log=lambda line: print(line, flush=True))
        print(f"done: step {result.step}, checkpoint {result.checkpoint}")

    return common.run("t2t_lite-trainer", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
