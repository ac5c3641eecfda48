"""Kernel time per TensorFlow op type, read from a `tf.profiler.experimental` trace.

    seconds, executions = op_times(logdir)

Reads the host plane of the trace (the XSpace protobuf TensorBoard's profile
plugin reads) and sums each op type's kernel time; ops that only contain others
(`CONTAINERS`) are left out, their time being their children's.
"""

from __future__ import annotations

import collections
import glob
import os

from tensorflow.tsl.profiler.protobuf import xplane_pb2

# Ops that only contain others (their time is their children's).
# ExecuteAsyncOnStream is the XLA launch inside a single-op XLA kernel (counted there).
CONTAINERS = {"While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall",
              "If", "StatelessIf", "ExecuteAsyncOnStream"}


def op_times(logdir: str) -> tuple[dict, dict]:
    """(seconds, executions) per TF op type, from the host plane of the trace."""
    seconds, counts = collections.Counter(), collections.Counter()
    for path in glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            if not plane.name.startswith("/host:CPU"):
                continue
            for line in plane.lines:
                for event in line.events:
                    name = plane.event_metadata[event.metadata_id].name
                    if ":" not in name or "::" in name:  # Executor events, not ops.
                        continue
                    kind = name.rsplit(":", 1)[1]
                    if not kind or kind in CONTAINERS or not (kind[0].isupper() or
                                                              kind[0] == "_"):
                        continue
                    seconds[kind] += event.duration_ps * 1e-12
                    counts[kind] += 1
    return seconds, counts


def top_ops(seconds: dict, counts: dict, units: int, steps: int, top: int, unit: str):
    """(kernel seconds per unit, the `top` op types: seconds per unit, share, runs per step)."""
    kernel = sum(seconds.values()) / units
    ranked = sorted(seconds.items(), key=lambda item: -item[1])[:top]
    return kernel, [{"op": kind, f"seconds_per_{unit}": round(s / units, 4),
                     "share": round(s / units / kernel, 4),
                     "per_step": round(counts[kind] / steps, 1)} for kind, s in ranked]
