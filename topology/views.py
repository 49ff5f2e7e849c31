"""Tables and summaries of a cluster snapshot, for people (``placer cluster``) and notebooks.

Why here and not in the CLI: the same numbers serve the CLI, notebooks and tests; a summary is a plain
dict (JSON-ready) and its text rendering is a pure function of it.

Counting rules: ``nodes`` counts schedulable, ready nodes (TPU hosts are counted under ``tpu_hosts``);
``gpus`` and ``tpu_chips`` count all hardware; ``free_gpus`` and ``free_tpu_chips`` count only what no job
holds on schedulable, ready nodes/pods; ``nvlink_domains`` counts domains of two or more GPUs.

>>> from placer.topology.presets import cluster_of, dgx_h100, tpu_pod
>>> s = summary(cluster_of(dgx_h100(3), tpu_pod("v5e", shape=(4, 4))))
>>> s["gpus"], s["nvlink_domains"], s["tpu_chips"]
({'nvidia-h100': 24}, 3, {'v5e': 16})
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from placer.topology.catalog import format_shape
from placer.topology.cluster import Cluster

__all__ = ["FREE_BY_LEVELS", "free_by", "free_dataframe", "summary", "summary_text", "to_dataframe"]

#: Pods listed one per line in :func:`summary_text` before the rest are summed up (one screen).
_MAX_POD_LINES = 12
_NODE_COLUMNS = [
    "name",
    "zone",
    "region",
    "block",
    "rack",
    "capacity_class",
    "schedulable",
    "ready",
    "taints",
    "cpu_cores",
    "memory_gb",
    "storage_gb",
    "gpu_type",
    "gpu_count",
    "gpu_memory_gb",
    "gpu_interconnect",
    "nvlink_domain",
    "price_per_hour",
]
_FREE_COLUMNS = [
    "name",
    "usable",
    "gpu_type",
    "gpu_count",
    "free_gpus",
    "free_gpu_milli",
    "cpu_cores",
    "free_cpu_cores",
    "memory_gb",
    "free_memory_gb",
    "storage_gb",
    "free_storage_gb",
    "jobs",
]


def to_dataframe(cluster: Cluster) -> pd.DataFrame:
    """One row per node: location, capacity class, state, capacity and GPU facts.

    >>> from placer.topology.presets import cluster_of, cpu_nodes
    >>> to_dataframe(cluster_of(cpu_nodes(2))).shape
    (2, 18)
    """
    rows = [
        (
            n.name,
            n.zone,
            n.region,
            n.block,
            n.rack,
            n.capacity_class,
            n.schedulable,
            n.ready,
            len(n.taints),
            n.cpu_cores,
            n.memory_gb,
            n.storage_gb,
            n.gpu_type,
            n.gpu_count,
            n.gpu_memory_gb,
            n.gpu_interconnect,
            n.nvlink_domain,
            n.price_per_hour,
        )
        for n in cluster.nodes
    ]
    return pd.DataFrame.from_records(rows, columns=_NODE_COLUMNS)


def free_dataframe(cluster: Cluster) -> pd.DataFrame:
    """One row per node: capacity next to what is free now, and how many jobs hold something there.

    ``free_gpu_milli`` sums the free milli-GPUs of all the node's GPUs (1000 per unused GPU).

    >>> from placer.topology.presets import cluster_of, dgx_h100
    >>> c = cluster_of(dgx_h100(1)).allocate({"job": "j", "replicas": [{"node": "dgx-h100", "gpus": [0]}]})
    >>> int(free_dataframe(c).loc[0, "free_gpus"])
    7
    """
    nodes_usage = cluster.state.nodes
    rows = []
    for n in cluster.nodes:
        u = nodes_usage.get(n.name)
        if u is None:
            rows.append(
                (
                    n.name,
                    n.usable,
                    n.gpu_type,
                    n.gpu_count,
                    n.gpu_count,
                    1000 * n.gpu_count,
                    n.cpu_cores,
                    n.cpu_cores,
                    n.memory_gb,
                    n.memory_gb,
                    n.storage_gb,
                    n.storage_gb,
                    0,
                )
            )
            continue
        busy = sum(1 for h in u.gpus.values() if h)
        milli_used = sum(m for h in u.gpus.values() for _, m in h)
        rows.append(
            (
                n.name,
                n.usable,
                n.gpu_type,
                n.gpu_count,
                n.gpu_count - busy,
                1000 * n.gpu_count - milli_used,
                n.cpu_cores,
                n.cpu_cores - u.cpu_cores,
                n.memory_gb,
                n.memory_gb - u.memory_gb,
                n.storage_gb,
                None if n.storage_gb is None else n.storage_gb - u.storage_gb,
                len(u.jobs),
            )
        )
    return pd.DataFrame.from_records(rows, columns=_FREE_COLUMNS)


#: Levels :func:`free_by` can group by: the location tree and the node facts people slice capacity by.
FREE_BY_LEVELS = ("zone", "region", "block", "rack", "nvlink_domain", "gpu_type", "capacity_class")


def free_by(cluster: Cluster, level: str) -> pd.DataFrame:
    """Capacity and free capacity summed per zone, region, block, rack, NVLink domain, GPU type or capacity
    class: "what is free at any level" in one call, for notebooks and capacity questions.

    Only usable nodes (schedulable, ready) count, as only they can take work; nodes without a value at
    ``level`` (no rack given, say) are grouped under ``"-"``.

    >>> from placer.topology.presets import cluster_of, dgx_h100
    >>> c = cluster_of(dgx_h100(4, nodes_per_rack=2))
    >>> c = c.allocate({"job": "j", "replicas": [{"node": c.nodes[0].name, "gpus": [0, 1, 2]}]})
    >>> free_by(c, "rack")[["nodes", "gpu_count", "free_gpus"]].to_dict("index")
    {'dgx-h100-rack-1': {'nodes': 2, 'gpu_count': 16, 'free_gpus': 13}, \
'dgx-h100-rack-2': {'nodes': 2, 'gpu_count': 16, 'free_gpus': 16}}
    """
    if level not in FREE_BY_LEVELS:
        raise ValueError(f"level must be one of {', '.join(FREE_BY_LEVELS)}, got {level!r}")
    free = free_dataframe(cluster)
    where = to_dataframe(cluster)[["name", level]] if level != "gpu_type" else None
    if where is not None:
        free = free.merge(where, on="name", how="left")
    free = free[free["usable"]].copy()
    free[level] = free[level].fillna("-")
    sums = [c for c in _FREE_COLUMNS if c not in ("name", "usable", "gpu_type", "jobs")]
    out = free.groupby(level, sort=True)[sums].sum()
    out.insert(0, "nodes", free.groupby(level, sort=True).size())
    return out


def summary(cluster: Cluster) -> dict[str, Any]:
    """Counts of the snapshot as a JSON-ready dict.

    Keys: ``name``, ``nodes``, ``nodes_total``, ``unusable_nodes``, ``tainted_nodes`` (usable, but with a
    ``NoSchedule``/``NoExecute`` taint: only jobs that tolerate it may use them, and placer's job formats
    carry no tolerations, so their free capacity is counted but the solver leaves it alone), ``cpu_cores``,
    ``free_cpu_cores``,
    ``gpus``, ``free_gpus``, ``used_gpus`` (held by jobs, partly or wholly; by GPU type),
    ``nvlink_domains`` (domains of >= 2 GPUs),
    ``free_nvlink_domains_8`` (domains with >= 8 free GPUs, by type), ``tpu_pods``, ``tpu_hosts``,
    ``tpu_chips``, ``free_tpu_chips`` (by generation), ``running_jobs``, ``licenses`` (cluster-wide licence
    seats by name, and ``licenses_held``: what running jobs hold of each, a licence the cluster does not
    define included).

    >>> from placer.topology.presets import cluster_of, cpu_nodes
    >>> summary(cluster_of(cpu_nodes(2)))["nodes"]
    2
    """
    gpus: Counter[str] = Counter()
    free_gpus: Counter[str] = Counter()
    used_gpus: Counter[str] = Counter()
    usage = cluster.state.nodes
    usable = tainted = 0
    cpu = free_cpu = 0.0
    for n in cluster.nodes:
        cpu += n.cpu_cores
        u = usage.get(n.name)
        if n.gpu_count and n.gpu_type:
            gpus[n.gpu_type] += n.gpu_count
            if u:
                used_gpus[n.gpu_type] += sum(1 for h in u.gpus.values() if h)
        if not n.usable:
            continue
        usable += 1
        tainted += any(t.effect in ("NoSchedule", "NoExecute") for t in n.taints)
        free_cpu += n.cpu_cores - (u.cpu_cores if u else 0.0)
        if n.gpu_count and n.gpu_type:
            busy = sum(1 for h in u.gpus.values() if h) if u else 0
            free_gpus[n.gpu_type] += n.gpu_count - busy
    domains = [d for d in cluster.nvlink_domains() if d.size >= 2]
    free8: Counter[str] = Counter(fd.domain.gpu_type for fd in cluster.free_nvlink_domains(min_free=8))
    chips: Counter[str] = Counter()
    free_chips: Counter[str] = Counter()
    hosts = 0
    held: Counter[str] = Counter()
    for rj in cluster.running_jobs():
        held.update(rj.licenses)
    for p in cluster.tpu_pods():
        chips[p.generation] += p.chips
        free_chips[p.generation] += cluster.free_tpu_chips(p.name)
        hosts += len(list(p.hosts()))
    return {
        "name": cluster.name,
        "nodes": usable,
        "nodes_total": len(cluster.nodes),
        "unusable_nodes": len(cluster.nodes) - usable,
        "tainted_nodes": tainted,
        "cpu_cores": cpu,
        "free_cpu_cores": free_cpu,
        "gpus": dict(sorted(gpus.items())),
        "free_gpus": {t: free_gpus.get(t, 0) for t in sorted(gpus)},
        "used_gpus": {t: used_gpus.get(t, 0) for t in sorted(gpus)},
        "nvlink_domains": len(domains),
        "free_nvlink_domains_8": {t: free8.get(t, 0) for t in sorted({d.gpu_type for d in domains})},
        "tpu_pods": len(cluster.tpu_pods()),
        "tpu_hosts": hosts,
        "tpu_chips": dict(sorted(chips.items())),
        "free_tpu_chips": {g: free_chips.get(g, 0) for g in sorted(chips)},
        "running_jobs": len(cluster.state.jobs),
        "licenses": dict(sorted(cluster.licenses.items())),
        "licenses_held": dict(sorted(held.items())),
    }


def summary_text(cluster: Cluster) -> str:
    """A one-screen text summary: nodes, GPUs by type (free/total), NVLink domains, TPU pods, jobs.

    >>> from placer.topology.presets import cluster_of, dgx_h100
    >>> print(summary_text(cluster_of(dgx_h100(2), name="lab")).splitlines()[0])
    cluster lab: 2 usable nodes of 2, 448 CPU cores (448 free), 0 running jobs
    """
    s = summary(cluster)
    lines = [
        f"cluster {s['name']}: {s['nodes']} usable nodes of {s['nodes_total']}, {s['cpu_cores']:g} CPU cores "
        f"({s['free_cpu_cores']:g} free), {s['running_jobs']} running jobs"
    ]
    if s["tainted_nodes"]:
        lines.append(
            f"{s['tainted_nodes']} usable node(s) tainted NoSchedule/NoExecute: their capacity counts as "
            "free, but only jobs tolerating the taint may use it"
        )
    if s["gpus"]:
        lines.append("GPUs (free / total):")
        for t, total in s["gpus"].items():
            lines.append(f"  {t:<16} {s['free_gpus'][t]:>7} / {total:<7} held by jobs {s['used_gpus'][t]}")
    else:
        lines.append("GPUs: none")
    lines.append(
        f"NVLink domains: {s['nvlink_domains']}"
        + (
            " (with 8+ free GPUs: "
            + ", ".join(f"{t} {c}" for t, c in s["free_nvlink_domains_8"].items())
            + ")"
            if s["free_nvlink_domains_8"]
            else ""
        )
    )
    names = sorted({*s["licenses"], *s["licenses_held"]})
    if names:
        lines.append(
            "Licences (free / seats): "
            + ", ".join(
                f"{n} {s['licenses'][n] - s['licenses_held'].get(n, 0)} / {s['licenses'][n]}"
                if n in s["licenses"]
                else f"{n} {s['licenses_held'][n]} held, no seats defined"
                for n in names
            )
        )
    if cluster.tpu_pods():
        lines.append(f"TPU pods: {s['tpu_pods']} ({s['tpu_hosts']} hosts)")
        pods = cluster.tpu_pods()
        for p in pods[:_MAX_POD_LINES]:
            flag = " fixed slice" if p.fixed_slice else ""
            state = "" if p.usable else " (unusable)"
            lines.append(
                f"  {p.name:<16} {p.generation:<4} {format_shape(p.shape):<9} "
                f"{cluster.free_tpu_chips(p.name):>5} / {p.chips} chips free{flag}{state}"
            )
        if len(pods) > _MAX_POD_LINES:
            lines.append(f"  ... and {len(pods) - _MAX_POD_LINES} more pods")
    else:
        lines.append("TPU pods: none")
    return "\n".join(lines)
