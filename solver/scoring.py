"""Soft preferences and fragmentation, as per-node scores shared by greedy and CP-SAT.

Why one module: "the same constraints and the same scoring" for both engines. Level 2 (preferences) is a
non-negative integer per node and unit: the weights of satisfied preferred affinity rules, model locality
(the node has the job's model loaded, OJS ML §11), data locality (the node's ``data_locality`` label lists
a URI prefix of the job's ``ext_mlx_scheduling_data_locality``), and spot preference (ML extensions §7).
Level 3 (fragmentation) is computed by each engine from free GPUs left on the nodes it touches.

>>> from topology import cluster_of, dgx_h100
>>> from solver.snapshot import Snapshot
>>> from solver.candidates import NodeArrays
>>> from solver.jobs.model import Job, LabelRule, Placement
>>> from solver.demand import expand
>>> snap = Snapshot.of(cluster_of(dgx_h100(2, zones=["z1"])))
>>> rule = LabelRule(key="zone", operator="In", values=["z1"], weight=40)
>>> job = Job(id="j", placement=Placement(preferred=[rule]))
>>> plan = expand(job, 0, max_node_gpus=8)
>>> preference_scores(plan, plan.units[0], NodeArrays.of(snap, {"zone"}), Policy()).tolist()
[40, 40]
"""

from __future__ import annotations

import numpy as np

from solver.candidates import NodeArrays
from solver.demand import JobPlan, Unit
from solver.jobs.model import SpotPreference
from solver.policy import Policy
from solver.rules import holds


def preference_scores(plan: JobPlan, unit: Unit, arrays: NodeArrays, policy: Policy) -> np.ndarray:
    """Level-2 score of placing one replica of ``unit`` on each node (int64 array)."""
    snap = arrays.snap
    out = np.zeros(len(snap.nodes), dtype=np.int64)
    if unit.preferred:
        for members in arrays.group_members:
            labels = snap.nodes[int(members[0])].node.labels
            s = sum(
                max(0, r.weight if r.weight is not None else 1) for r in unit.preferred if holds(r, labels)
            )
            if s:
                out[members] += s * policy.preferred_affinity
    job = plan.job
    if job.model.id:
        for v in snap.nodes:
            for m in v.node.models_loaded:
                if m.model_id == job.model.id and (job.model.version in (None, m.model_version)):
                    out[v.idx] += policy.model_locality
                    break
    if job.placement.data_locality:
        uri = job.placement.data_locality
        for v in snap.nodes:
            prefixes = v.node.labels.get("data_locality")
            if prefixes and any(uri.startswith(p.strip()) for p in prefixes.split(",") if p.strip()):
                out[v.idx] += policy.data_locality
    if job.placement.spot_preference is SpotPreference.SPOT_PREFERRED:
        for members in arrays.group_members:
            if snap.nodes[int(members[0])].node.capacity_class == "spot":
                out[members] += policy.spot_preference
    return out
