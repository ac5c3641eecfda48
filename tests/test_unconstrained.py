"""The decoder's --unconstrained: with wsj_parsing the tree constraint is dropped.

An almost untrained model, decoded by default, builds a tree over each line's
words (the constraint); with --unconstrained the same model's own choices
come out, ill-formed, so the problem writes them as flat XX trees.
"""

import pytest
import tensorflow as tf
from test_parsing import write_wsj

from t2t_lite import registry
from t2t_lite.bin import decoder
from t2t_lite.data.datagen import generate
from t2t_lite.data.options import DatagenOptions
from t2t_lite.parsing import ptb
from t2t_lite.training import trainer
from t2t_lite.training.options import EvalOptions, TrainOptions

TINY = ("num_layers=1,d_model=32,d_ff=64,num_heads=2,dropout_rate=0.0,"
        "attention_dropout_rate=0.0,batch_size=1024")
LINES = ["the dog saw a cat .", "a man fed the bird .", "dog", "the cat liked a dog ."]


@pytest.fixture(scope="module")
def parsing_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("unconstrained")
    raw, data, out = (str(root / n) for n in ("raw", "data", "out"))
    write_wsj(raw, files_per_section=1, trees_per_file=6)
    problem = registry.problem("wsj_parsing")
    generate(problem, data, raw, DatagenOptions(source_vocab_size=300), log=lambda *a: None)
    trainer.train(problem, registry.hparams("parsing").override(TINY), out, data,
                  TrainOptions(train_steps=1, peak_flops=1e9,
                               eval=EvalOptions(eval_every_steps=0)),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda line: None)
    source = root / "in.txt"
    source.write_text("\n".join(LINES) + "\n")
    return out, source


def _decode(parsing_run, tmp_path, capsys, *flags):
    out, source = parsing_run
    target = tmp_path / ("out" + "".join(flags).replace("-", "_") + ".txt")
    assert decoder.main([f"--output_dir={out}", f"--decode_from_file={source}",
                         f"--decode_to_file={target}", "--beam_size=1", "--extra_length=20",
                         *flags]) == 0
    err = capsys.readouterr().err
    return target.read_text().splitlines(), err


def test_unconstrained_drops_the_tree_constraint(parsing_run, tmp_path, capsys):
    constrained, err = _decode(parsing_run, tmp_path, capsys)
    assert ", constrained search" in err
    for line, tree in zip(LINES, constrained, strict=True):
        parsed = ptb.read_trees(tree)
        assert ptb.words(parsed[0]) == line.split() and "XX" not in ptb.tags(parsed[0])

    unconstrained, err = _decode(parsing_run, tmp_path, capsys, "--unconstrained")
    assert "decoding with " in err and "constrained search" not in err
    assert len(unconstrained) == len(LINES) and unconstrained != constrained
    assert any("XX" in ptb.tags(ptb.read_trees(tree)[0]) for tree in unconstrained)
