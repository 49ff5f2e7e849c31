"""The scenario's cluster: topology builders, a synthetic layout, or a cluster file of any format.

Why three ways: a what-if study of "16 DGX and 8 spot L4 nodes" should be one line of YAML (builders), a
study comparable with the solver benchmarks should reuse their layouts (``S``, ``M``, ``L``), and a study
of one's own cluster should read its inventory or ``kubectl get nodes`` dump as ``placer cluster`` does.
A live Slurm snapshot is a node file with ``slurm_jobs`` (``squeue --json``: the running jobs by id, with
their end times) and ``running: keep``.

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
from typing import Any, TypeVar

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
from placer.topology.importers.slurm_assoc import AssocTable, read_assoc_file
from placer.topology.importers.slurm_job_text import read_running
from placer.topology.importers.slurm_jobs import with_slurm_jobs
from placer.topology.importers.slurm_partitions import SlurmPartition, read_partitions_file
from placer.topology.importers.slurm_qos import SlurmQos, read_qos_file, with_preemption_rules
from placer.topology.inputs import read_input

__all__ = [
    "BUILDERS",
    "build",
    "built",
    "slurm_assoc_of",
    "slurm_partitions_of",
    "slurm_qos_limits_of",
    "slurm_qos_of",
]

T = TypeVar("T")

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
    cluster = _with_licenses(cluster, spec, base)
    kept = list(cluster.running_jobs()) if spec.running == "keep" else []
    return cluster.without_allocations(), kept


def _with_licenses(cluster: Cluster, spec: ClusterSpec, base: Path | None) -> Cluster:
    """The cluster with the licence seats ``cluster.licenses`` or ``cluster.slurm_licenses`` states."""
    if spec.licenses is not None:
        seats = dict(spec.licenses)
    elif spec.slurm_licenses is not None:
        from placer.topology.importers.slurm_licenses import read_licenses_file

        seats = _table("cluster.slurm_licenses", resolve(spec.slurm_licenses, base), read_licenses_file)
    else:
        return cluster
    return cluster.with_licenses(seats)


def _parts(builders: list[dict[str, dict[str, Any]]]) -> list[Inventory]:
    return [built(entry, f"cluster.builders[{i}]") for i, entry in enumerate(builders)]


def built(entry: dict[str, dict[str, Any]], where: str) -> Inventory:
    """The inventory of one ``{builder: {arguments}}`` entry (``count`` standing for the node or rack
    count); a problem is a :class:`~placer.scenarios.load.ScenarioError` under ``where``."""
    ((name, args),) = entry.items()
    path = f"{where}.{name}"
    fn = BUILDERS.get(name)
    if fn is None:
        raise fail("enum", where, f"unknown builder {name!r}; known: {', '.join(BUILDERS)}")
    kwargs = dict(args or {})
    first = next(iter(inspect.signature(fn).parameters))
    if "count" in kwargs and first in ("n", "racks"):
        kwargs[first] = kwargs.pop("count")
    try:
        return validate_call(fn)(**kwargs)
    except ValidationError as e:
        raise ScenarioError(issues_of(e, path)) from None
    except (ValueError, TopologyError) as e:
        raise fail("range", path, str(e)) from None


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
        cluster = load_cluster(path, spec.format, pods=pods)
    except OSError as e:
        raise fail("required", "cluster.file", f"cannot open {path}: {e.strerror or e}") from None
    except TopologyError as e:
        raise fail("malformed", "cluster.file", str(e)) from None
    if spec.slurm_jobs is None:
        return cluster
    return _with_slurm_jobs(cluster, spec, base)


def slurm_partitions_of(spec: ClusterSpec, base: Path | None) -> dict[str, SlurmPartition] | None:
    """``cluster.slurm_partitions`` read (None when not given)."""
    if spec.slurm_partitions is None:
        return None
    return _table("cluster.slurm_partitions", resolve(spec.slurm_partitions, base), read_partitions_file)


def slurm_qos_of(spec: ClusterSpec, base: Path | None) -> dict[str, SlurmQos] | None:
    """``cluster.slurm_qos`` read, with ``cluster.slurm_preempt_mode`` (None when not given)."""
    if spec.slurm_qos is None:
        return None
    mode = spec.slurm_preempt_mode
    return _table(
        "cluster.slurm_qos", resolve(spec.slurm_qos, base), lambda p: read_qos_file(p, cluster_mode=mode)
    )


def slurm_qos_limits_of(spec: ClusterSpec, base: Path | None) -> dict[str, SlurmQos] | None:
    """``cluster.slurm_qos_limits`` read for its limits alone (None when not given)."""
    if spec.slurm_qos_limits is None:
        return None
    path = resolve(spec.slurm_qos_limits, base)
    return _table("cluster.slurm_qos_limits", path, lambda p: read_qos_file(p, limits_only=True))


def slurm_assoc_of(spec: ClusterSpec, base: Path | None) -> AssocTable | None:
    """``cluster.slurm_assoc`` read (None when not given)."""
    if spec.slurm_assoc is None:
        return None
    return _table("cluster.slurm_assoc", resolve(spec.slurm_assoc, base), read_assoc_file)


def _table(field: str, path: Path, read: Callable[[str], T]) -> T:
    """A Slurm table the scenario names at ``field``: ``read(path)``, an unopenable file ``required`` and
    an unreadable one ``malformed``, both naming ``field``."""
    try:
        return read(str(path))
    except OSError as e:
        raise fail("required", field, f"cannot open {path}: {e.strerror or e}") from None
    except TopologyError as e:
        raise fail("malformed", field, str(e)) from None


def _with_slurm_jobs(cluster: Cluster, spec: ClusterSpec, base: Path | None) -> Cluster:
    """The Slurm cluster with the jobs ``cluster.slurm_jobs`` names running by their ids (a live
    snapshot), with their partitions' rules when ``cluster.slurm_partitions`` is given, their QOSes' with
    ``cluster.slurm_qos``, their QOSes' limit groups with ``cluster.slurm_qos_limits``, their associations'
    with ``cluster.slurm_assoc``."""
    assert spec.slurm_jobs is not None
    path = resolve(spec.slurm_jobs, base)
    partitions, qos = slurm_partitions_of(spec, base), slurm_qos_of(spec, base)
    limits, assoc = slurm_qos_limits_of(spec, base), slurm_assoc_of(spec, base)
    try:
        jobs, _ = read_running(read_input(str(path)).decode("utf-8-sig"), source=str(path))
        if jobs is not None:
            jobs = with_preemption_rules(
                jobs, partitions=partitions, qos=qos, qos_limits=limits, assoc=assoc, source=str(path)
            )
            return with_slurm_jobs(cluster, jobs)
    except OSError as e:
        raise fail("required", "cluster.slurm_jobs", f"cannot open {path}: {e.strerror or e}") from None
    except TopologyError as e:
        raise fail("malformed", "cluster.slurm_jobs", str(e)) from None
    except ValueError as e:  # not UTF-8, or not strict JSON
        raise fail("malformed", "cluster.slurm_jobs", f"{path}: {e}") from None
    raise fail("format", "cluster.slurm_jobs", f"{path} is neither squeue --json nor scontrol show job")
