"""Training FLOPs and model FLOPs utilization (MFU).

The count is analytic, as the paper's Table 2 counts training cost and as
`../shared/bench/_common.py` counts it for every peer: a forward pass costs 2
FLOPs per weight per token a weight sees, a training step 3 times the forward
(6 x weights x tokens), plus the attention products QK^T and AV (2 x Lq x Lk x
d_model each, forward, per layer and attention kind; causal self-attention is
counted in full, as it is computed). Encoder weights see the source tokens;
decoder weights and the pre-softmax projection (V x d_model, tied or not) see
the target tokens. Tokens are the padded batch's, because padding is computed
too: utilization measures the machine, tokens/s the useful work.

MFU = model FLOPs per second / the matrix-multiply peak of the machine,
measured by `matmul_peak` (the best of a few large float matmuls).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time

from t2t_lite.atomic import atomic_path
from t2t_lite.models.contract import FlopProfile


@dataclasses.dataclass(frozen=True)
class FlopCounter(FlopProfile):
    """Training FLOPs of one batch as a function of its padded shape, from a model's
    `FlopProfile` (the weights its source and target tokens go through)."""

    @classmethod
    def for_model(cls, model) -> FlopCounter:
        """The counter of `model.flop_profile()` (by default 6 x all weights x target tokens)."""
        return cls(**dataclasses.asdict(model.flop_profile()))

    def train_flops(self, batch: int, source_length: int, target_length: int) -> float:
        """FLOPs of one training step on a [batch, source_length] -> [batch, target_length] batch."""
        s, t = source_length, target_length
        dense = 6.0 * batch * (self.encoder_weights * s + self.decoder_weights * t)
        # Encoder self, decoder self and encoder-decoder attention: QK^T and AV,
        # 2 x Lq x Lk x d each forward, x 3 for training.
        products = s * s + (t * t + t * s if self.decoder else 0)
        attention = 12.0 * batch * self.d_model * self.num_layers * products
        return dense + attention


@functools.lru_cache(maxsize=None)
def matmul_peak(dtype: str = "float32", sizes=(1024, 2048), repeats: int = 2) -> float:
    """The machine's matrix-multiply rate in FLOP/s: the best of a few timed matmuls.

    Under half a second on a 2-core CPU; measured once per process and dtype.
    """
    import tensorflow as tf

    @tf.function
    def matmul(a, b):
        return tf.reduce_sum(tf.matmul(a, b))

    best = 0.0
    for n in sizes:
        a = tf.random.normal((n, n), dtype=dtype)
        b = tf.random.normal((n, n), dtype=dtype)
        matmul(a, b).numpy()  # Traces, warms caches and the kernel choice.
        for _ in range(repeats):
            start = time.perf_counter()
            matmul(a, b).numpy()
            best = max(best, 2.0 * n ** 3 / (time.perf_counter() - start))
    return best


def format_flops(flops: float) -> str:
    """1.23e15 -> '1.23 PFLOP'."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9)):
        if flops >= scale:
            return f"{flops / scale:.3g} {unit}"
    return f"{flops:.3g} FLOP"


def compute_dtype(dtype_policy: str) -> str:
    """The matmul dtype of a Keras dtype policy name ("mixed_bfloat16" -> "bfloat16")."""
    return dtype_policy.removeprefix("mixed_")


class FlopLedger:
    """The run's cumulative training FLOPs at each saved step, in OUTPUT_DIR/train_flops.json.

    A resumed run starts from the total recorded at the step it resumed from
    (the newest recorded step at or below it), so the total survives restarts.
    """

    FILE = "train_flops.json"

    def __init__(self, output_dir: str, step: int):
        self.path = os.path.join(output_dir, self.FILE)
        self.at_step: dict[int, float] = {}
        if os.path.exists(self.path):
            try:
                with open(self.path, encoding="utf-8") as f:
                    self.at_step = {int(k): float(v) for k, v in json.load(f).items()}
            except (OSError, ValueError, AttributeError):
                self.at_step = {}  # Only a statistic: a bad file restarts the count.
        earlier = [k for k in self.at_step if k <= step]
        self.total = self.at_step[max(earlier)] if earlier else 0.0

    def record(self, step: int) -> None:
        """Writes the total at `step` (atomically); forgets steps past it (an older resume)."""
        self.at_step = {k: v for k, v in self.at_step.items() if k < step}
        self.at_step[step] = self.total
        with atomic_path(self.path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            json.dump({str(k): v for k, v in sorted(self.at_step.items())}, f)
