"""Why a job could never run, even on the empty cluster — the ``UNSATISFIABLE`` test of phase 4.

Why apart from the candidates: candidates say where a unit may go *now*; this asks whether any state of
the cluster would do (a replica bigger than the biggest node, more distinct nodes than could ever hold
one, a gang scope no single domain can hold, a TPU shape no pod offers). Such a job is not worth waiting
for, and its reason says so.
"""

from __future__ import annotations

import numpy as np

from placer.solver.candidates import NodeArrays, UnitCandidates, pod_admits
from placer.solver.demand import JobPlan, Unit
from placer.solver.domains import domains_why
from placer.solver.rules import holds
from placer.solver.snapshot import Snapshot
from placer.solver.tpu_shapes import tpu_shapes
from placer.topology.tpu import slices_in_pod

__all__ = ["impossible_topology", "split_kept_apart", "unsatisfiable_why"]


def unsatisfiable_why(
    plan: JobPlan, cands: list[UnitCandidates], snap: Snapshot, spot_ok: bool, arrays: NodeArrays
) -> str | None:
    """Why the job could not run even on the empty cluster, or None when it could."""
    biggest = snap.biggest_node_gpus
    for u in plan.units:
        if (
            u.gpu is not None
            and u.tpu is None
            and not u.split
            and u.need.gpus > biggest
            and not plan.job.may_span_nodes()
        ):
            strategy = plan.job.distributed_strategy
            name = strategy.value if strategy else "unset"
            return (
                f"needs {u.need.gpus} GPUs on one node and the biggest node has {biggest}: distributed "
                f"strategy {name!r} keeps a replica on one node (data_parallel, fsdp, deepspeed, "
                "pipeline_parallel or tensor_parallel may span nodes)"
            )
    for u, c in zip(plan.units, cands, strict=True):
        if u.tpu is not None:
            if not _tpu_possible(u, snap, spot_ok, arrays):
                return f"no TPU pod offers a {(u.tpu.type + ' ') if u.tpu.type else ''}slice of that shape"
            continue
        n = int(c.static.sum())
        if n == 0:
            return f"no node satisfies the constraints of task group {u.group!r}"
        if u.distinct and n < u.replicas:
            return (
                f"task group {u.group!r} needs {u.replicas} distinct nodes; "
                f"only {n} could ever hold one replica"
            )
        why = domains_why(u, c, arrays)
        if why is not None:
            return why
    node_count = plan.job.placement.node_count
    if node_count is not None:
        least = max((u.replicas for u in plan.units if u.distinct and u.tpu is None), default=1)
        allowed = node_count.values(max(least, 1) + 10_000)
        if not any(v >= least for v in allowed) and least > 0:
            most = max(allowed, default=0)
            return f"its replicas need {least} distinct nodes and its node count allows at most {most}"
    if plan.scope is not None:
        node_units = [(u, c) for u, c in zip(plan.units, cands, strict=True) if u.tpu is None]
        if node_units and not _scope_possible(plan, node_units, snap, arrays):
            what = {"nvlink_domain": "NVLink domain"}.get(
                plan.scope, plan.scope.replace("nvlink_domain+", "NVLink domain and ")
            )
            return f"no single {what} could ever hold the whole gang"
    return None


def impossible_topology(
    plan: JobPlan, snap: Snapshot, spot_ok: bool, arrays: NodeArrays
) -> dict[str, str] | None:
    """The error that rejects a job whose ``ext_ml_tpu_topology`` no TPU pod of the cluster could ever
    provide (OJS ML §3.3: "Backends that cannot satisfy the topology requirement MUST reject the job"), or
    None. A job that names only a chip count is not rejected: it waits UNSATISFIABLE, as other jobs."""
    for u in plan.units:
        if u.tpu is None or u.tpu.topology is None or _tpu_possible(u, snap, spot_ok, arrays):
            continue
        shape = "x".join(str(d) for d in u.tpu.topology)
        pods = sorted({"x".join(str(d) for d in pv.pod.shape) for pv in snap.pods}) or ["none"]
        return {
            "code": "tpu_topology",
            "path": "ext_ml_tpu_topology",
            "message": (
                f"no TPU pod of this cluster can ever provide a contiguous {u.tpu.type or ''} {shape} slice "
                f"(pod shapes: {', '.join(pods)}); OJS ML §3.3: a backend that cannot satisfy the topology "
                "MUST reject the job"
            ),
        }
    return None


def split_kept_apart(plan: JobPlan) -> dict[str, str] | None:
    """The error that rejects a job split into node replicas (a replica of more GPUs than its nodes
    hold, or ``gpu_affinity: spread``) whose anti-affinity on a zone or rack matches its own labels: each
    part would need a domain of its own, which the engines do not model — admission refuses a job of
    several replicas so kept apart for the same reason, before it is split (``admission.py``)."""
    if not plan.anti_domains or not any(u.split for u in plan.units):
        return None
    if not any(holds(rule, plan.labels) for _, rule in plan.anti_domains):
        return None
    parts = sum(u.replicas for u in plan.units if u.split)
    return {
        "code": "unsupported",
        "path": "placement.anti_affinity_domains",
        "message": (
            f"its GPUs split into {parts} node replicas, which its rule on a zone or rack (it matches its "
            "own labels) would each keep in a domain of its own: not represented; ask for what one node "
            "holds, or submit the parts as jobs of their own"
        ),
    }


def _scope_possible(plan: JobPlan, node_units: list, snap: Snapshot, arrays: NodeArrays) -> bool:
    assert plan.scope is not None
    codes = arrays.scope_codes(plan.scope)
    any_static = np.zeros(len(snap.nodes), dtype=bool)
    for _, c in node_units:
        any_static |= c.static
    any_static &= codes >= 0
    if not any_static.any():
        return False
    sel = codes[any_static]
    gpus = np.bincount(sel, weights=arrays.cap_gpus[any_static])
    nodes = np.bincount(sel)
    need = sum(u.replicas * u.need.gpus for u, _ in node_units)
    need_nodes = max((u.replicas for u, _ in node_units if u.distinct), default=1)
    return bool(((gpus >= need) & (nodes >= need_nodes)).any())


def _tpu_possible(unit: Unit, snap: Snapshot, spot_ok: bool, arrays: NodeArrays) -> bool:
    assert unit.tpu is not None
    for pv in snap.pods:
        pod = pv.pod
        if not pod_admits(unit, pod, spot_ok):
            continue
        for shape in tpu_shapes(unit.tpu, pod):
            key = ("__tpu_empty__", pv.idx, shape)
            if key not in arrays._static_cache:
                arrays._static_cache[key] = bool(slices_in_pod(pod, shape, ()))
            if arrays._static_cache[key]:
                return True
    return False
