"""Which slice shapes a TPU demand may take in a given pod.

A demand with ``ext_ml_tpu_topology`` has one shape (any orientation:
:func:`placer.topology.tpu.slices_in_pod`
tries them); a demand with only a chip count may take any shape Google Cloud offers for the pod's
generation with that many chips (squarest first, so the mesh stays compact).

>>> from placer.topology import cluster_of, tpu_pod
>>> from placer.solver.jobs.model import TpuDemand
>>> pod = cluster_of(tpu_pod("v5e")).tpu_pods()[0]
>>> tpu_shapes(TpuDemand(type="v5e", chips=8), pod)
[(2, 4)]
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

from placer.solver.jobs.model import TpuDemand
from placer.topology import TpuPod, is_offered_shape
from placer.topology.tpu import normalize_shape

__all__ = ["host_chips", "tpu_shapes"]


@lru_cache(maxsize=1024)
def _shapes_for(
    generation: str, dims: int, chips: int, fixed: tuple[int, ...] | None
) -> tuple[tuple[int, ...], ...]:
    if fixed is not None:
        return (fixed,) if _product(fixed) == chips else ()
    out: set[tuple[int, ...]] = set()
    divisors = [d for d in range(1, chips + 1) if chips % d == 0]
    for combo in product(divisors, repeat=dims):
        if _product(combo) == chips and list(combo) == sorted(combo) and is_offered_shape(generation, combo):
            out.add(combo)
    return tuple(sorted(out, key=lambda s: (max(s) - min(s), s)))


def _product(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def tpu_shapes(demand: TpuDemand, pod: TpuPod) -> list[tuple[int, ...]]:
    """Candidate shapes (in the pod's number of dimensions) for ``demand`` in ``pod``; empty if none."""
    if demand.topology is not None:
        try:
            return [normalize_shape(pod, demand.topology)]
        except ValueError:
            return []
    chips = demand.chip_count
    if chips is None:
        return []
    fixed = tuple(sorted(pod.shape)) if pod.fixed_slice else None
    return list(_shapes_for(pod.generation, len(pod.shape), chips, fixed))


@lru_cache(maxsize=256)
def _hosts_by_shape(shape: tuple[int, ...], host_shape: tuple[int, ...], name: str) -> dict[int, frozenset]:
    from itertools import product

    grid = tuple(s // h for s, h in zip(shape, host_shape, strict=True))
    out: dict[int, frozenset] = {}
    for i, cell in enumerate(product(*(range(g) for g in grid))):
        origin = tuple(c * h for c, h in zip(cell, host_shape, strict=True))
        out[i] = frozenset(
            tuple(o + d for o, d in zip(origin, delta, strict=True))
            for delta in product(*(range(h) for h in host_shape))
        )
    return out


def host_chips(
    pod: TpuPod, chips: tuple[tuple[int, ...], ...] | list[tuple[int, ...]]
) -> frozenset[tuple[int, ...]]:
    """Every chip of the hosts that ``chips`` touch: what an exclusive (dedicated) TPU job owns.

    >>> from placer.topology import cluster_of, tpu_pod
    >>> pod = cluster_of(tpu_pod("v5e", shape=(4, 4))).tpu_pods()[0]
    >>> len(host_chips(pod, [(0, 0)]))
    4
    """
    hosts = _hosts_by_shape(tuple(pod.shape), tuple(pod.host_shape), pod.name)
    out: set[tuple[int, ...]] = set()
    for c in chips:
        out |= hosts[pod.host_index(tuple(c))]
    return frozenset(out)
