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
import sys

from t2t_lite.bin import common
from t2t_lite.training.options import TrainOptions


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser).

    Those after --data_dir are TrainOptions' and EvalOptions' fields: each flag's type,
    default and help are its field's (`common.add_option_flags`).
    """
    parser = common.ArgumentParser(prog="t2t_lite-trainer", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", required=True, help="registered problem name")
    parser.add_argument("--hparams", default="base", help="registered hparams set")
    parser.add_argument("--hparams_overrides", default="",
                        help='e.g. "dropout_rate=0.3,num_layers=4" (typed, checked)')
    parser.add_argument("--output_dir", required=True, help="checkpoints and logs")
    parser.add_argument("--data_dir", default=None, help="t2t_lite-datagen output")
    common.add_option_flags(parser, TrainOptions)
    common.add_common_flags(parser)
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.init_from_optimizer and not args.init_from:
        parser.error("--init_from_optimizer needs --init_from=RUN_DIR:ckpt-N")
    return args


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
        options = common.options_from_args(TrainOptions, args,
                                           progress_bar=sys.stdout.isatty())
        result = trainer.train(problem, hparams, args.output_dir, args.data_dir, options,
                               strategy=strategy, log=lambda line: print(line, flush=True))
        print(f"done: step {result.step}, checkpoint {result.checkpoint}")

    return common.run("t2t_lite-trainer", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
