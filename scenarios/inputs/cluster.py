"""The scenario's cluster: topology builders, a synthetic layout, or a cluster file of any format.

Why three ways: a what-if study of "16 DGX and 8 spot L4 nodes" should be one line of YAML (builders), a
study comparable with the solver benchmarks should reuse their layouts (``S``, ``M``, ``L``), and a study
of one's own cluster should read its inventory or ``kubectl get nodes`` dump as ``placer cluster`` does.

Builder arguments are type-checked against the builder's own signature (``pydantic.validate_call``), so a
wrong argument is reported as ``cluster.builders[0].dgx_h100.nodes_per_rack``, never as a traceback.

>>> from placer.scenarios.spec import ClusterSpec
>>> c, kept = build(ClusterSpec(builders=[{"dgx_h100": {"count": 2}}, {"tpu_pod": {"generation": "v5e",
...     "shape": [4, 4]}}]), None)
>>> len(c.nodes), [p.chips for p in c.tpu_pods()], kept
(2, [16], [])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError, validate_call

from placer.scenarios.load import ScenarioError, fail, issues_of, resolve
from placer.scenarios.spec import ClusterSpec, LayoutSpec
from placer.topology import (
    Cluster,
    Inventory,
    RunningJob,
    TopologyError,
    capacity_pool,
    cluster_of,
    cpu_nodes,
    dgx_h100,
    gb200_nvl72,
    hgx_a100,
    pcie_inference,
    tpu_pod,
)

__all__ = ["BUILDERS", "build"]

#: Builders a scenario may name, from :mod:`placer.topology.presets`.
BUILDERS: dict[str, Callable[..., Inventory]] = {
    "dgx_h100": dgx_h100,
    "hgx_a100": hgx_a100,
    "gb200_nvl72": gb200_nvl72,
    "pcie_inference": pcie_inference,
    "cpu_nodes": cpu_nodes,
    "tpu_pod": tpu_pod,
    "capacity_pool": capacity_pool,
}


def build(spec: ClusterSpec, base: Path | None) -> tuple[Cluster, list[RunningJob]]:
    """The cluster with nothing running, and the running jobs the file declared that ``running: keep``
    keeps (empty otherwise). ``base``: the scenario file's folder, for relative paths."""
    if spec.builders is not None:
        cluster = cluster_of(*_parts(spec.builders), name=spec.name or "scenario", source="scenario")
    elif spec.layout is not None:
        cluster = _layout(spec.layout, spec.name)
    else:
        cluster = _file(spec, base)
    kept = list(cluster.running_jobs()) if spec.running == "keep" else []
    return cluster.without_allocations(), kept


def _parts(builders: list[dict[str, dict[str, Any]]]) -> list[Inventory]:
    parts: list[Inventory] = []
    for i, entry in enumerate(builders):
        ((name, args),) = entry.items()
        path = f"cluster.builders[{i}].{name}"
        fn = BUILDERS.get(name)
        if fn is None:
            raise fail(
                "enum", f"cluster.builders[{i}]", f"unknown builder {name!r}; known: {', '.join(BUILDERS)}"
            )
        kwargs = dict(args or {})
        first = next(iter(inspect.signature(fn).parameters))
        if "count" in kwargs and first in ("n", "racks"):
            kwargs[first] = kwargs.pop("count")
        try:
            parts.append(validate_call(fn)(**kwargs))
        except ValidationError as e:
            raise ScenarioError(issues_of(e, path)) from None
        except (ValueError, TopologyError) as e:
            raise fail("range", path, str(e)) from None
    return parts


def _layout(layout: str | LayoutSpec, name: str | None) -> Cluster:
    from placer.scenarios.synthetic.layout import Layout, Pool, TpuPool, build_layout
    from placer.scenarios.synthetic.standard import L_LAYOUT, M_LAYOUT, S_LAYOUT

    if isinstance(layout, str):
        chosen = {"S": S_LAYOUT, "M": M_LAYOUT, "L": L_LAYOUT}[layout]
    else:
        pods = []
        for k, pod in enumerate(layout.tpu_pods):
            try:
                pods.append(TpuPool(**{**pod, "mesh": tuple(pod.get("mesh", ()))}))
            except TypeError as e:
                raise fail(
                    "type", f"cluster.layout.tpu_pods[{k}]", f"{e} (name, generation, mesh, zone)"
                ) from None
        chosen = Layout(
            pools=tuple(Pool(p.shape, p.zone, p.capacity_class, p.nodes) for p in layout.pools),
            tpu_pods=tuple(pods),
            nodes_per_rack=layout.nodes_per_rack,
            racks_per_block=layout.racks_per_block,
        )
    if name:
        chosen = Layout(chosen.pools, chosen.tpu_pods, chosen.nodes_per_rack, chosen.racks_per_block, name)
    try:
        return build_layout(chosen)
    except (ValueError, KeyError, TopologyError) as e:
        raise fail("range", "cluster.layout", str(e)) from None


def _file(spec: ClusterSpec, base: Path | None) -> Cluster:
    from placer.topology.load import load_cluster

    assert spec.file is not None
    path = resolve(spec.file, base)
    pods = resolve(spec.pods, base) if spec.pods else None
    try:
        return load_cluster(path, spec.format, pods=pods)
    except OSError as e:
        raise fail("required", "cluster.file", f"cannot open {path}: {e.strerror or e}") from None
    except TopologyError as e:
        raise fail("malformed", "cluster.file", str(e)) from None
