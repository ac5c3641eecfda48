"""t2t_lite-trainer: train a registered problem with a registered hparams set.

    t2t_lite-trainer --problem=wmt_ende --hparams=big --data_dir=D --output_dir=O
    t2t_lite-trainer --problem=algorithmic_reverse --hparams=tiny --output_dir=O \
        --hparams_overrides=dropout_rate=0.0 --train_steps=1400

Starting it again with the same --output_dir resumes from the newest checkpoint.
Every --eval_every_steps steps and at the end it evaluates on the dev split (dev
loss, and the problem's metric on greedy decodes of a bounded subset), writes
both to TensorBoard (OUTPUT_DIR/dev) and keeps the best weights by that metric
in OUTPUT_DIR/best/ (decode them with --checkpoint=best).

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


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="t2t_lite-trainer", description=__doc__,
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
    common.add_verbose_flag(parser)
    return parser.parse_args(argv)


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
            eval=EvalOptions(
                eval_every_steps=args.eval_every_steps, eval_examples=args.eval_examples,
                eval_decode_examples=args.eval_decode_examples,
                eval_decode_minutes=args.eval_decode_minutes),
        )
        result = trainer.train(problem, hparams, args.output_dir, args.data_dir, options,
                               strategy=strategy, log=lambda line: print(line, flush=True))
        print(f"done: step {result.step}, checkpoint {result.checkpoint}")

    return common.run("t2t_lite-trainer", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
