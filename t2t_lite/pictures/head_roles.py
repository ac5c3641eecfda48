"""Head roles of the Transformer's encoder self-attention (Voita et al. 2019, section 4).

For every encoder layer and head, the share of source tokens whose maximum
attention weight goes to a given place, over the first N examples of a split
(the forward pass teacher-forced on each example's own target,
`model.attention_weights`, inference mode; the encoder's weights do not depend
on the targets). Exactly what is counted:

- Queries: the source positions holding a real token: neither padding nor EOS
  (EOS marks the end; it is never a query). Keys: every non-padding position,
  EOS included. Sources longer than the model's max_length are cut to its
  first max_length - 1 tokens and EOS, as the decoder cuts them (targets too).
- A query's key is the position of the largest of its weights, only if that
  maximum is unique: a query whose maximum is shared by several keys (a
  uniform head) counts as attending to none of them, for every role.
- Roles, each a share hits / queries over the queries the role applies to:
  "previous" (offset -1) and "next" (offset +1), over the real tokens whose
  neighbour on that side is a real token (the first token has no previous,
  the last real token no next: EOS is not its next); "self" (offset 0), over
  every real token; "rare", the sentence's rarest real token, over the real
  tokens other than that token's own position (sentences of one real token
  give no such query); "eos", the sentence's EOS, over every real token.
- The rarest token: the real token with the fewest occurrences on the source
  side of the training split (the first `frequency_examples` training
  examples, in the order the problem yields them; an id never seen counts 0);
  ties, repeats of one id included, go to the leftmost position.
- The keys of "previous", "next", "self" and "eos" are distinct positions;
  the rarest token may also be a neighbour, so a query can count for "rare"
  and "previous" at once, and a head's shares need not sum to 1.
- A head's role (the table's last column, the JSON's "role"): the role with
  the largest share if that share is at least `threshold` (0.5 by default;
  Voita et al. call a head positional at 0.9), else none ("-"); ties go to
  the role listed first in ROLES.

Only the Transformer (and its subclasses) has encoder self-attention heads; a
model without them (the RNN models of `t2t_lite.models.rnn`) raises `HeadRolesError`.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from t2t_lite.errors import UserError
from t2t_lite.ids import EOS_ID, PAD_ID, strip_ids

ROLES = ("previous", "next", "self", "rare", "eos")
THRESHOLD = 0.5
EXAMPLES = 500
FREQUENCY_EXAMPLES = 100_000
BATCH_SIZE = 64


class HeadRolesError(UserError, ValueError):
    """Head roles cannot be computed as asked (a model without encoder heads, no data)."""


@dataclasses.dataclass(frozen=True, eq=False)  # eq=False: numpy fields.
class HeadRoles:
    """What each encoder head attends to most, counted over some sentences.

    Attributes:
      hits: int64 [L, H, R]: queries of each layer and head whose (unique)
        maximum weight is on the role's key.
      totals: int64 [R]: the queries each role applies to (the same for every head).
      roles: the R role names, `ROLES`.
      examples: the sentences counted.
      tokens: the queries counted (real source tokens).
      threshold: the least share that names a head's role.
    """

    hits: np.ndarray
    totals: np.ndarray
    roles: tuple[str, ...] = ROLES
    examples: int = 0
    tokens: int = 0
    threshold: float = THRESHOLD

    @property
    def shares(self) -> np.ndarray:
        """float64 [L, H, R]: hits / totals, 0 where a role applied to no query."""
        return self.hits / np.maximum(self.totals, 1)

    @property
    def num_layers(self) -> int:
        return self.hits.shape[0]

    @property
    def num_heads(self) -> int:
        return self.hits.shape[1]

    def role(self, layer: int, head: int) -> str | None:
        """The head's role: its largest share's if at least `threshold`, else None."""
        shares = self.shares[layer, head]
        best = int(np.argmax(shares))
        return self.roles[best] if shares[best] >= self.threshold else None

    def rows(self) -> list[dict]:
        """One dict per layer and head: layer, head, shares, hits and role."""
        return [{"layer": layer, "head": head,
                 "shares": {r: round(float(s), 6)
                            for r, s in zip(self.roles, self.shares[layer, head])},
                 "hits": {r: int(n) for r, n in zip(self.roles, self.hits[layer, head])},
                 "role": self.role(layer, head)}
                for layer in range(self.num_layers) for head in range(self.num_heads)]


def rarest_positions(ids: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """The position of each row's rarest real token (-1 for a row with none).

    Args:
      ids: int [B, S] source ids, 0-padded, EOS included.
      frequencies: int [V]: each id's count in the training sources; ids past
        its end count 0.

    Ties (equal counts, repeats of one id) go to the leftmost position.
    """
    ids = np.asarray(ids)
    counts = np.zeros(ids.shape, np.float64)
    known = ids < len(frequencies)
    counts[known] = np.asarray(frequencies)[ids[known]]
    counts[(ids == PAD_ID) | (ids == EOS_ID)] = np.inf
    rarest = np.argmin(counts, axis=-1)  # The first of equal minima.
    return np.where(np.isfinite(counts.min(axis=-1)), rarest, -1)


def role_keys(ids: np.ndarray, frequencies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each query's key position for each role, and whether the role applies to it.

    Args:
      ids: int [B, S] source ids, 0-padded, each row ending in EOS.
      frequencies: as for `rarest_positions`.

    Returns:
      (keys int [B, S, R], applies bool [B, S, R]), roles in `ROLES` order.
    """
    ids = np.asarray(ids)
    batch, length = ids.shape
    real = (ids != PAD_ID) & (ids != EOS_ID)
    position = np.broadcast_to(np.arange(length), (batch, length))
    before = np.pad(real[:, :-1], ((0, 0), (1, 0)))  # real[i - 1]
    after = np.pad(real[:, 1:], ((0, 0), (0, 1)))  # real[i + 1]
    rare = rarest_positions(ids, frequencies)[:, None]
    has_eos = ids == EOS_ID
    eos = np.where(has_eos.any(-1), np.argmax(has_eos, -1), -1)[:, None]
    keys = np.stack([position - 1, position + 1, position,
                     np.broadcast_to(rare, (batch, length)),
                     np.broadcast_to(eos, (batch, length))], -1)
    applies = np.stack([real & before, real & after, real,
                        real & (rare >= 0) & (position != rare), real & (eos >= 0)], -1)
    return keys, applies


def count_hits(weights: np.ndarray, keys: np.ndarray, applies: np.ndarray) -> np.ndarray:
    """int64 [L, H, R]: queries whose unique maximum weight is on the role's key.

    Args:
      weights: float [L, B, H, S, S] encoder self-attention (query, key).
      keys, applies: `role_keys`' [B, S, R].
    """
    hits = []
    for layer in np.asarray(weights):  # [B, H, S, S], one at a time: less memory.
        top = np.argmax(layer, -1)  # [B, H, S]
        unique = (layer == layer.max(-1, keepdims=True)).sum(-1) == 1
        hit = (top[..., None] == keys[:, None]) & unique[..., None] & applies[:, None]
        hits.append(hit.sum(axis=(0, 2)))  # Over batch and queries: [H, R].
    return np.stack(hits).astype(np.int64)


def _padded(rows: list[list[int]]) -> np.ndarray:
    out = np.zeros((len(rows), max(len(r) for r in rows)), np.int32)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def encoder_weights(model, inputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """float32 [L, B, H, S, S]: the encoder self-attention of the forward pass.

    Raises:
      HeadRolesError: the model has no encoder self-attention.
    """
    weights = (model.attention_weights({"inputs": inputs, "targets": targets}).get("encoder")
               if model.capabilities.attention_maps else None)
    if not weights:
        raise HeadRolesError(
            f"the {type(model).__name__} model has no encoder self-attention heads; "
            "head roles need a Transformer (hparams.model=transformer)")
    return np.stack([np.asarray(w, np.float32) for w in weights])


def check_encoder_heads(model) -> None:
    """Raises HeadRolesError unless `model` has encoder self-attention (one tiny pass)."""
    one = np.array([[EOS_ID, PAD_ID]], np.int32)
    encoder_weights(model, one, one)


def head_roles(model, examples, frequencies: np.ndarray, max_length: int = 256,
               batch_size: int = BATCH_SIZE, threshold: float = THRESHOLD) -> HeadRoles:
    """Counts the roles of every encoder head over `examples`.

    Args:
      model: a model whose capabilities include attention maps (`t2t_lite.models.contract`).
      examples: {"inputs", "targets"} id sequences (EOS-terminated, maybe padded).
      frequencies: int [V]: each source id's count in the training split.
      max_length: the model's max_length; longer sequences are cut to it.
      batch_size: sentences per forward pass.
      threshold: the least share that names a head's role.

    Raises:
      HeadRolesError: no examples, or a model without encoder self-attention.
    """
    from t2t_lite.decoding import decode_policy  # Imports TensorFlow: not at the CLI's start.

    pairs = [(decode_policy.source_ids(strip_ids(ex["inputs"]), max_length),
              decode_policy.source_ids(strip_ids(ex["targets"]), max_length))
             for ex in examples]
    if not pairs:
        raise HeadRolesError("no examples to count head roles over")
    hits, totals, tokens = None, np.zeros(len(ROLES), np.int64), 0
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        inputs = _padded([source for source, _ in chunk])
        weights = encoder_weights(model, inputs, _padded([target for _, target in chunk]))
        keys, applies = role_keys(inputs, frequencies)
        counted = count_hits(weights, keys, applies)
        hits = counted if hits is None else hits + counted
        totals += applies.sum(axis=(0, 1))
        tokens += int(applies[..., ROLES.index("self")].sum())
    return HeadRoles(hits=hits, totals=totals, examples=len(pairs), tokens=tokens,
                     threshold=threshold)


def source_frequencies(problem, limit: int = FREQUENCY_EXAMPLES,
                       data_dir: str | None = None) -> tuple[np.ndarray, int]:
    """(int64 [V] count of each source id, examples read) over the training split.

    Args:
      problem: the registered Problem.
      limit: read at most this many training examples (0: all).
    """
    dataset = problem.examples("train", data_dir).map(lambda ex: ex["inputs"])
    if limit:
        dataset = dataset.take(limit)
    counts, read = np.zeros(problem.source_vocab_size, np.int64), 0
    for batch in dataset.padded_batch(4096).as_numpy_iterator():
        found = np.bincount(batch.ravel(), minlength=len(counts))
        if len(found) > len(counts):
            counts = np.pad(counts, (0, len(found) - len(counts)))
        counts += found
        read += len(batch)
    counts[[PAD_ID, EOS_ID]] = 0
    return counts, read


def table(roles: HeadRoles) -> list[str]:
    """The stdout table: a header, then one line per layer and head."""
    names = "".join(f"{name:>10}" for name in roles.roles)
    lines = [f"{'layer':>5} {'head':>4}{names}  role"]
    for row in roles.rows():
        shares = "".join(f"{row['shares'][name]:>10.3f}" for name in roles.roles)
        lines.append(f"{row['layer']:>5} {row['head']:>4}{shares}  {row['role'] or '-'}")
    return lines


def draw_head_roles(roles: HeadRoles, title: str = ""):
    """A matplotlib figure: a heat map, one row per layer and head, one column per
    role, each cell the share (written in it)."""
    from matplotlib.figure import Figure

    shares = roles.shares.reshape(-1, len(roles.roles))
    labels = [f"layer {row['layer']}, head {row['head']}" for row in roles.rows()]
    figure = Figure(figsize=(1.1 * len(roles.roles) + 2.8, 0.38 * len(labels) + 1.6),
                    layout="constrained")
    axis = figure.subplots()
    image = axis.imshow(shares, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto",
                        interpolation="nearest")
    axis.set_xticks(range(len(roles.roles)), roles.roles, fontsize=9)
    axis.set_yticks(range(len(labels)), labels, fontsize=8)
    axis.tick_params(length=0)
    for (row, column), share in np.ndenumerate(shares):
        axis.text(column, row, f"{share:.2f}", ha="center", va="center", fontsize=7,
                  color="black" if share > 0.6 else "white")
    figure.colorbar(image, ax=axis, label="share of source tokens")
    axis.set_title(title or "encoder head roles", fontsize=10)
    return figure


def _check_picture_path(path: str) -> None:
    if not path.lower().endswith((".png", ".svg", ".pdf")):
        raise HeadRolesError(f"{path}: write the head roles as .png (or .svg, .pdf)")


def write_head_roles(roles: HeadRoles, path: str, title: str = "",
                     about: dict | None = None) -> tuple[str, str]:
    """Writes the picture at `path` (.png, .svg or .pdf) and the figures beside it
    as JSON (same name, .json): `about` (problem, checkpoint, ...), the
    definition's numbers and one row per layer and head. Returns (picture, json).
    """
    _check_picture_path(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    draw_head_roles(roles, title).savefig(path, dpi=100)
    record = {**(about or {}), "examples": roles.examples, "tokens": roles.tokens,
              "threshold": roles.threshold, "roles": list(roles.roles),
              "queries": {r: int(n) for r, n in zip(roles.roles, roles.totals)},
              "num_layers": roles.num_layers, "num_heads": roles.num_heads,
              "heads": roles.rows()}
    json_path = os.path.splitext(path)[0] + ".json"
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    return path, json_path


def run_head_roles(output_dir: str, split: str = "dev", examples: int = EXAMPLES,
                   checkpoint: str | None = None, output_file: str | None = None,
                   data_dir: str | None = None, frequency_examples: int = FREQUENCY_EXAMPLES,
                   threshold: float = THRESHOLD) -> tuple[str, str, HeadRoles, dict]:
    """Loads the run in `output_dir`, counts its head roles and writes them.

    Args:
      split: the problem's split whose first `examples` sentences are counted.
      output_file: the picture (default OUTPUT_DIR/head_roles.png); the JSON beside it.
      frequency_examples: training examples the token counts read (0: all).

    Returns:
      (picture, json, the roles, `about`: problem, checkpoint, split, frequency_examples).

    Raises:
      HeadRolesError: the run's model has no encoder heads, or the split no examples.
    """
    from t2t_lite.runs.run import Run

    output_file = output_file or os.path.join(output_dir, "head_roles.png")
    _check_picture_path(output_file)
    if examples < 1:
        raise HeadRolesError(f"--examples={examples}: count at least one example")
    run = Run.open(output_dir, data_dir)
    path = run.checkpoint(checkpoint)
    model = run.model(path)
    try:
        check_encoder_heads(model)
    except HeadRolesError:
        raise HeadRolesError(
            f"the run's model is {run.hparams.model!r}, which has no encoder "
            "self-attention heads; --head_roles needs a Transformer") from None
    run.problem.check_split(split)
    sentences = list(run.problem.examples(split).take(examples).as_numpy_iterator())
    if not sentences:
        raise HeadRolesError(f"{run.info['problem']} has no {split} examples")
    frequencies, read = source_frequencies(run.problem, frequency_examples)
    roles = head_roles(model, sentences, frequencies, run.hparams.max_length,
                       threshold=threshold)
    about = {"problem": run.info["problem"], "model": run.hparams.model,
             "checkpoint": os.path.relpath(path, output_dir), "split": split,
             "frequency_examples": read}
    title = f"{about['problem']}, {about['checkpoint']}: encoder head roles ({split})"
    picture, json_path = write_head_roles(roles, output_file, title, about)
    return picture, json_path, roles, about
