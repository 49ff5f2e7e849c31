"""Rule 13, TPU slices: a usable pod of the right generation, free distinct chips, a contiguous box.

Why: OJS ML §3.3 — "the backend MUST allocate a contiguous pod slice of the specified shape". Cloud TPU
slices are boxes of the mesh in any axis order (a ``2x4`` may lie as ``4x2``); a box may cross the mesh
edge only on an axis where the pod wraps (``TpuPod.wrap``: v5e/v6e only along a full 16-chip axis, so a
4x4 v5e pod does not wrap); a slice needing more than one host is made of whole hosts
(``TpuPod.host_shape`` blocks); on a v4/v5p pod built of 4x4x4 cubes, a slice of 64 chips or more is
whole cubes and a smaller one lies inside one cube; a ``fixed_slice`` pod (a GKE multi-host node pool) is
taken whole.
When a group gives only a chip count, the chips must still form a box (Cloud TPU offers no other
allocation), of any shape.

The box test is independent of the topology package: per axis, the set of coordinates used must be an
interval (cyclic on a wrapping axis), the chips must be exactly the product of those sets, and the sorted
extents must equal the sorted requested shape. O(chips of the replica).

>>> is_interval([14, 15, 0, 1], 16, wraps=True), is_interval([2, 3, 0, 1], 4, wraps=False)
(True, True)
>>> is_interval([3, 0], 4, wraps=False)
False
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from itertools import pairwise
from math import prod

from placer.solver.checks.context import Context, group_of
from placer.solver.checks.violation import Violation
from placer.solver.decision import ReplicaPlacement
from placer.solver.jobs.model import Job, TaskGroup
from placer.topology import TpuPod, canonical_tpu_type, tpu_info

__all__ = ["check_tpu", "is_interval"]


def is_interval(values: Iterable[int], length: int, *, wraps: bool) -> bool:
    """Whether coordinates on one axis (of ``length``) are contiguous; cyclically when the axis wraps."""
    s = sorted(set(values))
    if not s:
        return False
    if s[-1] - s[0] + 1 == len(s):
        return True
    if not wraps:
        return False
    gaps = sum(1 for a, b in pairwise(s) if b != a + 1)
    return gaps == 1 and s[0] == 0 and s[-1] == length - 1


def check_tpu(
    ctx: Context, job: Job, rep: ReplicaPlacement, taken: dict[tuple[str, tuple[int, ...]], str]
) -> Iterator[Violation]:
    """Rule 13 for one replica. ``taken`` maps ``(pod, chip)`` to the job of an earlier placement."""
    g = group_of(job, rep)
    if rep.tpu_pod is None or g is None:
        return  # a TPU group on a node: rule 4
    pod = ctx.pod(rep)
    where = rep.tpu_pod
    if pod is None:
        yield Violation("tpu-pod", job.id, f"TPU pod {rep.tpu_pod!r} is not in the cluster", where)
        return
    if not pod.usable:
        state = "cordoned (not schedulable)" if not pod.schedulable else "NotReady"
        yield Violation("tpu-pod", job.id, f"the TPU pod is {state}", where)
    if rep.gpus:
        yield Violation("tpu-pod", job.id, "a TPU replica holds chips, not GPUs", where)
    if g.tpu is not None and g.tpu.type is not None:
        want = canonical_tpu_type(g.tpu.type) or g.tpu.type
        if want != pod.generation:
            yield Violation(
                "tpu-pod", job.id, f"the pod is TPU {pod.generation}; task group {g.name} needs {want}", where
            )
    chips = yield from _chips(job, rep, pod)
    yield from _double_booked(ctx, job, pod, chips, taken)
    yield from _shape(job, g, pod, chips)


def _chips(job: Job, rep: ReplicaPlacement, pod: TpuPod) -> Generator[Violation, None, list[tuple[int, ...]]]:
    out: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    for raw in rep.tpu_chips:
        chip = tuple(raw)
        if not pod.contains(chip):
            yield Violation(
                "tpu-chip", job.id, f"chip {list(chip)} is outside the pod's {_fmt(pod.shape)} mesh", pod.name
            )
        elif chip in seen:
            yield Violation("tpu-chip", job.id, f"chip {list(chip)} is listed twice", pod.name)
        else:
            seen.add(chip)
            out.append(chip)
    return out


def _double_booked(
    ctx: Context,
    job: Job,
    pod: TpuPod,
    chips: list[tuple[int, ...]],
    taken: dict[tuple[str, tuple[int, ...]], str],
) -> Iterator[Violation]:
    running = ctx.cluster.used_tpu_chips(pod.name)
    for chip in chips:
        holder = running.get(chip)
        if holder is not None:
            yield Violation(
                "tpu-double-booked", job.id, f"chip {list(chip)} is held by running job {holder}", pod.name
            )
        earlier = taken.get((pod.name, chip))
        if earlier is not None:
            other = "another replica of this job" if earlier == job.id else earlier
            yield Violation(
                "tpu-double-booked",
                job.id,
                f"chip {list(chip)} is also placed for {other}",
                pod.name,
            )
        taken[(pod.name, chip)] = job.id


def _shape(job: Job, g: TaskGroup, pod: TpuPod, chips: list[tuple[int, ...]]) -> Iterator[Violation]:
    need = g.tpu_chips_per_replica if g.tpu is not None else None
    if need and len(chips) != need:
        yield Violation(
            "tpu-chip-count",
            job.id,
            f"the replica holds {len(chips)} chips; task group {g.name} needs {need}",
            pod.name,
        )
    if not chips:
        return
    if pod.fixed_slice and len(chips) != pod.chips:
        yield Violation(
            "tpu-contiguity",
            job.id,
            f"the pod is a fixed slice, taken whole ({pod.chips} chips) or not at all; "
            f"the replica holds {len(chips)}",
            pod.name,
        )
    axes = [sorted({c[a] for c in chips}) for a in range(len(pod.shape))]
    box = prod(len(v) for v in axes) == len(chips) and all(
        is_interval(v, n, wraps=w) for v, n, w in zip(axes, pod.shape, pod.wrap, strict=True)
    )
    want = None if g.tpu is None or g.tpu.topology is None else g.tpu.topology
    if want is not None:
        padded = tuple(want) + (1,) * (len(pod.shape) - len(want))
        ok_shape = len(want) <= len(pod.shape) and sorted(padded) == sorted(len(v) for v in axes)
    else:
        ok_shape = True
    if not box or not ok_shape:
        shape = f"a {_fmt(want)} box" if want is not None else "a box"
        edge = "" if all(pod.wrap) else f" (the pod wraps on axes {_wrapping(pod)})"
        yield Violation(
            "tpu-contiguity",
            job.id,
            f"the {len(chips)} chips do not form {shape} of the mesh in any orientation{edge}",
            pod.name,
        )
        return
    yield from _hosts(job, pod, chips)
    yield from _cubes(job, pod, chips, axes)


def _cubes(job: Job, pod: TpuPod, chips: list[tuple[int, ...]], axes: list[list[int]]) -> Iterator[Violation]:
    """v4/v5p pods are built of cubes (catalog ``cube_shape``): a slice of every extent >= the cube's is
    whole cubes; a smaller one lies inside one cube, without using the cube's wrap links."""
    try:
        cube = tpu_info(pod.generation).cube_shape
    except KeyError:
        return
    if (
        cube is None
        or len(cube) != len(pod.shape)
        or any(n % c for n, c in zip(pod.shape, cube, strict=True))
    ):
        return
    per_cube: dict[tuple[int, ...], int] = {}
    for c in chips:
        k = tuple(x // e for x, e in zip(c, cube, strict=True))
        per_cube[k] = per_cube.get(k, 0) + 1
    if all(len(v) >= e for v, e in zip(axes, cube, strict=True)):
        bad = [k for k, n in per_cube.items() if n != prod(cube)]
        if bad:
            yield Violation(
                "tpu-cubes",
                job.id,
                f"a slice of {len(chips)} chips is made of whole {_fmt(cube)} cubes, but it uses part of "
                f"{len(bad)} cube(s)",
                pod.name,
            )
    elif len(per_cube) > 1 or not all(
        is_interval(v, n, wraps=False) for v, n in zip(axes, pod.shape, strict=True)
    ):
        yield Violation(
            "tpu-cubes",
            job.id,
            f"a slice smaller than a {_fmt(cube)} cube lies inside one cube, but this one spans "
            f"{len(per_cube)} cube(s) or wraps around",
            pod.name,
        )


def _hosts(job: Job, pod: TpuPod, chips: list[tuple[int, ...]]) -> Iterator[Violation]:
    per_host: dict[int, int] = {}
    for c in chips:
        h = pod.host_index(c)
        per_host[h] = per_host.get(h, 0) + 1
    if len(per_host) <= 1:
        return
    size = prod(pod.host_shape)
    partial = sorted(h for h, n in per_host.items() if n != size)
    if partial:
        yield Violation(
            "tpu-hosts",
            job.id,
            f"the slice spans {len(per_host)} hosts but uses only part of host(s) "
            f"{', '.join(f'{pod.name}/host-{h}' for h in partial)}; a multi-host slice is made of whole "
            f"{_fmt(pod.host_shape)} hosts",
            pod.name,
        )


def _fmt(shape: Iterable[int]) -> str:
    return "x".join(str(d) for d in shape)


def _wrapping(pod: TpuPod) -> str:
    axes = [str(i) for i, w in enumerate(pod.wrap) if w]
    return ", ".join(axes) if axes else "none"
