"""placer: where a batch of ML/AI jobs runs on a GPU/TPU cluster, and why the rest waits.

The public API, resolved lazily (PEP 562) so that ``import placer`` — and ``placer validate`` — stay free of
OR-Tools and pandas until a name that needs them is used:

* deciding: :func:`place` (``place(jobs, cluster, policy) -> Decision``), :class:`Policy`,
  :class:`Decision`, and :class:`Session` (``place()`` on state kept between calls: ``decide``,
  ``commit``, ``finish``); the independent checker :func:`check` and its :class:`Violation`;
* jobs, in every supported format: :func:`read_files`, :func:`read_file`, :func:`read_text`,
  :func:`read_object`, :class:`Job`, :class:`ReadResult`, :class:`ReadOptions`, :class:`QueueConfig`;
* clusters: :func:`load_cluster` (inventory YAML, kubectl, Slurm, Flux JGF, OJS workers),
  :func:`build_cluster`, and one-line builders (:func:`cluster_of`, :func:`dgx_h100`, :func:`tpu_pod`, ...);
* offline: :func:`simulate` / :class:`Simulator` with :func:`load_scenario`, and :func:`run_fill` (the
  Alibaba fill experiment) with :func:`stranding` (where a run's unallocated capacity sits).

The packages underneath, each importing only the ones below it:
``placer.cli``/``placer.service`` -> ``placer.scenarios`` -> ``placer.solver`` -> ``placer.solver.jobs``
+ ``placer.topology``.

>>> import placer
>>> cluster = placer.cluster_of(placer.dgx_h100(1))
>>> [read] = placer.read_text('{"id": "train", "ext_ml_gpu_count": 4}')
>>> decision = placer.place([read], cluster, placer.Policy(engine="greedy"))
>>> decision.placements[0].replicas[0].gpus
[0, 1, 2, 3]
>>> placer.check(decision, [read.job], cluster)
[]
"""

from __future__ import annotations

import importlib
from typing import Any

from placer import solver as _solver  # its package module is light: names only, resolved lazily

#: Public name -> module that defines it: the engine's public names (``placer.solver``), the checker, and
#: the cluster and offline entry points.
_EXPORTS: dict[str, str] = {
    **_solver._EXPORTS,
    "check": "placer.solver.checks",
    "load_cluster": "placer.topology.load",
    **{
        name: "placer.topology"
        for name in (
            "Cluster",
            "build_cluster",
            "read_inventory",
            "cluster_of",
            "capacity_pool",
            "cpu_nodes",
            "dgx_h100",
            "gb200_nvl72",
            "hgx_a100",
            "pcie_inference",
            "tpu_pod",
            "summary_text",
        )
    },
    "Simulator": "placer.scenarios.sim.loop",
    "simulate": "placer.scenarios.sim.loop",
    "load_scenario": "placer.scenarios.load",
    "run_fill": "placer.scenarios.fill.run",
    "stranding": "placer.scenarios.fill.stranding",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("placer-engine")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


__version__ = _version()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'placer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
