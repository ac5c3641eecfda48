"""t2t_lite's Transformer under Keras's JAX backend: training and beam-search speed, and MFU.

    KERAS_BACKEND=jax python -m benchmarks.jax_speed --out=rows.jsonl [--quick]

What `benchmarks/gpu_check.sh` runs on the accelerator machine (JAX and PyTorch,
no TensorFlow: nothing here imports it). For each of `--sizes` (the paper's
`base` and `big` hparams sets, `--precision`, default mixed_bfloat16):

1. the matmul rate this device reaches in the compute dtype (bf16 under
   mixed_bfloat16): the best of a few timed, jitted square matmuls, the
   denominator of the MFU;
2. the training step: the model's `stateless_call`, the label-smoothed loss,
   `jax.value_and_grad` and Adam's `stateless_apply`, one `jax.jit`-compiled
   function with the state donated; `--batch` sequences of `--length` tokens
   on both sides (no padding, so every token is a real one), random ids (speed
   does not depend on them); compile seconds, then `--steps` timed steps:
   target tokens/s and MFU = `FlopCounter.train_flops` / step time / peak;
3. beam search (`t2t_lite.decoding.search.search`, beam 4, alpha 0.6) under
   `jax.jit` on `--decode_batch` random sources of `--length` tokens, EOS held
   back (`min_decode_length`) so every hypothesis runs to the maximum length
   (source + 50, section 6.1): generated tokens/s after compiling.

One JSON row per size and measurement goes to stdout and to `--out`, with the
device, its kind and count, the JAX and Keras versions. `--quick` shrinks every
shape so the whole script runs in minutes on a CPU (what CI and a machine
without an accelerator check).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def checkout_packages() -> None:
    """Maps `hparams/` and `problems/` to t2t_lite.hparams / t2t_lite.problems, as
    setup.py's package_dir does, when t2t_lite runs out of a checkout that is not
    installed (the accelerator machine has no pip index to install it from)."""
    import importlib.util

    import t2t_lite

    if importlib.util.find_spec("t2t_lite.hparams") is None:
        t2t_lite.__path__.append(ROOT)

VOCAB = 32768  # The paper's shared BPE vocabulary size for EN-DE (~37K), rounded.


def device_fields() -> dict:
    import jax
    import keras

    devices = jax.devices()
    cpu = "unknown"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": devices[0].platform, "device": devices[0].device_kind,
            "devices": len(devices), "jax": jax.__version__, "keras": keras.__version__,
            "python": platform.python_version(), "host": platform.node()}


def matmul_peak(dtype: str, sizes, repeats: int = 5) -> float:
    """The best FLOP/s of jitted [n, n] x [n, n] matmuls in `dtype`."""
    import jax
    import jax.numpy as jnp

    best = 0.0
    dot = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=dtype))
    for n in sizes:
        a = jax.random.normal(jax.random.PRNGKey(0), (n, n), dtype)
        b = jax.random.normal(jax.random.PRNGKey(1), (n, n), dtype)
        dot(a, b).block_until_ready()
        for _ in range(repeats):
            start = time.perf_counter()
            dot(a, b).block_until_ready()
            best = max(best, 2.0 * n ** 3 / (time.perf_counter() - start))
    return best


def build(size: str, precision: str):
    from t2t_lite import registry

    hparams = registry.hparams(size).override(f"precision={precision}")
    model = registry.model(hparams.model).from_hparams(hparams, VOCAB)
    return hparams, model


def train_step_fn(model, hparams):
    """(jitted step(state, inputs, targets) -> (loss, state), initial state)."""
    import jax
    import keras

    from t2t_lite.models.losses import LabelSmoothedCrossEntropy

    optimizer = keras.optimizers.Adam(1e-4, hparams.adam_beta1, hparams.adam_beta2,
                                      hparams.adam_epsilon)
    optimizer.build(model.trainable_variables)
    loss_fn = LabelSmoothedCrossEntropy(hparams.label_smoothing)

    def loss_of(trainable, non_trainable, inputs, targets):
        logits, non_trainable = model.stateless_call(
            trainable, non_trainable, {"inputs": inputs, "targets": targets}, training=True)
        return loss_fn(targets, logits), non_trainable

    grad_fn = jax.value_and_grad(loss_of, has_aux=True)

    def step(state, inputs, targets):
        trainable, non_trainable, slots = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, inputs, targets)
        trainable, slots = optimizer.stateless_apply(slots, grads, trainable)
        return loss, (trainable, non_trainable, slots)

    state = ([v.value for v in model.trainable_variables],
             [v.value for v in model.non_trainable_variables],
             [v.value for v in optimizer.variables])
    return jax.jit(step, donate_argnums=0), state


def random_batch(seed: int, batch: int, length: int):
    """int32 [batch, length] ids in [2, VOCAB) ending with EOS (1): no padding."""
    import numpy as np

    ids = np.random.default_rng(seed).integers(2, VOCAB, size=(batch, length), dtype=np.int32)
    ids[:, -1] = 1
    return ids


def time_training(model, hparams, args, peak: float) -> dict:
    from t2t_lite.training.flops import FlopCounter

    step, state = train_step_fn(model, hparams)
    inputs, targets = (random_batch(s, args.batch, args.length) for s in (1, 2))
    start = time.perf_counter()
    loss, state = step(state, inputs, targets)
    loss.block_until_ready()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(args.steps):
        loss, state = step(state, inputs, targets)
    loss.block_until_ready()
    seconds = (time.perf_counter() - start) / args.steps
    # The state was donated: the model's variables take the trained values back.
    for variables, values in zip((model.trainable_variables, model.non_trainable_variables),
                                 state[:2]):
        for variable, value in zip(variables, values):
            variable.assign(value)
    flops = FlopCounter.for_model(model).train_flops(args.batch, args.length, args.length)
    return {"measure": "train_step", "batch": args.batch, "length": args.length,
            "steps": args.steps, "compile_seconds": round(compile_seconds, 1),
            "step_seconds": round(seconds, 5),
            "tgt_tokens_per_s": round(args.batch * args.length / seconds, 1),
            "step_tflops": round(flops / 1e12, 3),
            "mfu": round(flops / seconds / peak, 4), "loss": round(float(loss), 4)}


def time_beam_search(model, args) -> dict:
    import jax
    import numpy as np

    from t2t_lite.decoding import decode_policy, search

    inputs = random_batch(3, args.decode_batch, args.length)
    max_length = decode_policy.max_decode_length(args.length, 50)
    # EOS is held back to the last position, so every hypothesis is max_length long
    # whatever the (random or barely trained) weights prefer.
    fn = jax.jit(lambda x: search.search(model, x, 4, 0.6, max_length,
                                         min_decode_length=max_length))
    start = time.perf_counter()
    jax.block_until_ready(fn(inputs))
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ids, _ = jax.block_until_ready(fn(inputs))
    seconds = time.perf_counter() - start
    best = np.asarray(ids)[:, 0, :]
    generated = int(np.sum(np.cumsum(best == 1, axis=1) - (best == 1) == 0))
    return {"measure": "beam4_decode", "batch": args.decode_batch, "source_length": args.length,
            "max_decode_length": max_length, "compile_seconds": round(compile_seconds, 1),
            "seconds": round(seconds, 3), "generated_tokens": generated,
            "tokens_per_s": round(generated / seconds, 1)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="base,big")
    parser.add_argument("--precision", default="mixed_bfloat16")
    parser.add_argument("--batch", type=int, default=256, help="sequences per training step")
    parser.add_argument("--length", type=int, default=64, help="tokens per source and target")
    parser.add_argument("--steps", type=int, default=20, help="timed training steps")
    parser.add_argument("--decode_batch", type=int, default=128)
    parser.add_argument("--quick", action="store_true",
                        help="tiny shapes: the whole script in minutes on a CPU")
    parser.add_argument("--out", default=None, help="also append the rows here")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.length, args.steps, args.decode_batch = 4, 16, 2, 2
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    checkout_packages()
    import keras

    compute = "bfloat16" if args.precision == "mixed_bfloat16" else (
        "float16" if args.precision == "mixed_float16" else "float32")
    sizes = (256, 512) if args.quick else (4096, 8192)
    peak = matmul_peak(compute, sizes)
    common = {"bench": "jax_speed", "precision": args.precision, "compute_dtype": compute,
              "peak_tflops": round(peak / 1e12, 2), **device_fields(),
              "date": time.strftime("%Y-%m-%d")}
    for size in args.sizes.split(","):
        keras.utils.set_random_seed(0)
        hparams, model = build(size, args.precision)
        for row in (time_training(model, hparams, args, peak), time_beam_search(model, args)):
            row = {**common, "hparams": size, "params": model.count_params(), **row}
            line = json.dumps(row)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
        keras.backend.clear_session()


if __name__ == "__main__":
    main()
