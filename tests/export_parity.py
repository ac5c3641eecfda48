"""Checks shared by the export parity tests.

An export decodes as t2t_lite's `Decoder` does when it gives the decoder's ids on
every input, not most, with scores within a measured bound. A check of that kind
proves nothing on a model that says the same thing whatever it reads: an export
that ignored its input would pass. So each parity check also counts the distinct
outputs over the inputs and fails when the decoder's do not differ.
"""

import os

import numpy as np

from t2t_lite import registry
from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.decoder import Decoder
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.runs import run_dir, weights


def differing(got: list, want: list) -> list[int]:
    """Indices of the inputs whose ids differ (`got` and `want` hold ids lists)."""
    assert len(got) == len(want), (len(got), len(want))
    return [i for i, (a, b) in enumerate(zip(got, want)) if list(a) != list(b)]


def distinct(ids: list) -> int:
    """How many different outputs the ids lists hold."""
    return len({tuple(row) for row in ids})


def best_ids(results: list) -> list:
    """The ids of (ids, score) pairs."""
    return [ids for ids, _ in results]


def best_scores(results: list) -> list:
    """The scores of (ids, score) pairs."""
    return [score for _, score in results]


def assert_same_ids(got: list, want: list, least_distinct: int = 2) -> None:
    """`got` == `want` on every input, and `want` holds at least `least_distinct` outputs."""
    wrong = differing(got, want)
    assert not wrong, (f"{len(wrong)} of {len(want)} inputs decode differently; the first, "
                       f"input {wrong[0]}: {list(got[wrong[0]])} != {list(want[wrong[0]])}")
    count = distinct(want)
    assert count >= least_distinct, (f"{count} distinct outputs over {len(want)} inputs: the "
                                      "model does not tell its inputs apart")


def assert_same_beams(got: list, want: list, least_distinct: int, atol: float | None,
                      most_differing: float = 1 / 16) -> None:
    """(ids, score) beams: the same ids with scores within `atol`, except where t2t_lite's
    beam search found a strictly likelier hypothesis than CTranslate2's.

    t2t_lite also keeps EOS candidates outside a step's top K (tensor2tensor's scheme),
    so on near-tied steps its search can end on a likelier hypothesis; a wrong conversion
    instead gives other beams on many inputs, with no rule between the scores. So at most
    `most_differing` of the inputs may part, each with t2t_lite's score above CTranslate2's.
    `atol` None: the scores are not on one scale (CTranslate2's length penalty is not
    t2t_lite's alpha), so only the ids are compared.
    """
    wrong = differing(best_ids(got), best_ids(want))
    assert len(wrong) <= most_differing * len(want), (
        f"{len(wrong)} of {len(want)} inputs decode differently; the first, input {wrong[0]}: "
        f"{list(got[wrong[0]][0])} != {list(want[wrong[0]][0])}")
    count = distinct(best_ids(want))
    assert count >= least_distinct, (f"{count} distinct outputs over {len(want)} inputs: the "
                                      "model does not tell its inputs apart")
    if atol is None:
        return
    unlikelier = [i for i in wrong if not want[i][1] > got[i][1] + atol]
    assert not unlikelier, (f"input {unlikelier[0]}: CTranslate2's beam scores "
                            f"{got[unlikelier[0]][1]}, t2t_lite's {want[unlikelier[0]][1]}")
    same = [i for i in range(len(want)) if i not in wrong]
    np.testing.assert_allclose([got[i][1] for i in same], [want[i][1] for i in same],
                               rtol=0, atol=atol)


def t2t_decode(model, hparams, sources, beam_size, alpha=0.0):
    """t2t_lite's Decoder on token lists (no EOS): (ids, score) of the best beam per source.

    One call per padded source length, so each source's maximum output length is its
    own bucket's, as CTranslate2's `translate_ids` decodes it.
    """
    decoder = Decoder(model, DecodeOptions.from_hparams(hparams, beam_size=beam_size,
                                                        alpha=alpha))
    ids = [decode_policy.source_ids(tokens, hparams.max_length) for tokens in sources]
    groups = {}
    for i, row in enumerate(ids):
        groups.setdefault(decode_policy.padded_length(len(row)), []).append(i)
    results = [None] * len(sources)
    for _, members in sorted(groups.items()):
        for i, beams in zip(members, decoder.decode([ids[i] for i in members])):
            results[i] = beams[0]
    return results


def one_bucket(problem, hparams, lines, count, bucket):
    """Up to `count` source token lists of `lines` whose padded length is `bucket` (one
    trace each)."""
    sources = [problem.encode(line) for line in lines]
    return [tokens for tokens in sources if decode_policy.padded_length(
        len(decode_policy.source_ids(tokens, hparams.max_length))) == bucket][:count]


def randomize(model, seed):
    """Every weight drawn from `seed` alone (not from Keras' initializers, whose draws
    depend on what ran before): LayerNorm gammas near 1, betas and biases near 0, so a
    mapping that swaps or drops one of them changes the outputs; kernels and tables at
    their initializer's scale."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        shape, path = tuple(weight.shape), weight.path
        noise = rng.standard_normal(shape).astype(np.float32)
        if path.endswith("gamma"):
            weight.assign(1 + 0.2 * noise)
        elif path.endswith("beta") or path.endswith("bias"):
            weight.assign(0.2 * noise)
        else:
            weight.assign(float(np.std(weight.numpy())) * noise)


def random_run(out, hparams, problem, data_dir, seed=0):
    """A run directory holding a random model (`randomize`) as its `averaged` checkpoint."""
    vocab = registry.problem(problem)
    vocab.set_data_dir(data_dir)
    model = weights.build_model(hparams, vocab.source_vocab_size, vocab.target_vocab_size)
    randomize(model, seed)
    os.makedirs(out, exist_ok=True)
    run_dir.prepare_run(str(out), hparams, problem, vocab.source_vocab_size,
                        vocab.target_vocab_size, data_dir)
    weights.write_weights_dir(model, os.path.join(out, "averaged"), {}, "averaged.json")
    return model
