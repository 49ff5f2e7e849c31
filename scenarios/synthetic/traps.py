"""Rule traps: small instances where a per-node rule (anti-affinity, exclusive use) makes a priority-order
greedy lose, with the optimum known by counting.

Why separate from :mod:`~placer.scenarios.synthetic.hard`: those four are capacity traps (GPUs, NVLink
domains, TPU slices, memory), brute-forced in their tests. These test what the CP-SAT model must express
*per node* — which jobs may share one — which is exactly what aggregating identical nodes into classes
can get wrong (issue "Exact at scale"). Each optimum uses every free GPU, so no placement does better,
and a ``witness`` shows it is feasible.

>>> for t in rule_traps():
...     print(t.name, t.greedy_placed, t.optimal_placed, t.optimal_weighted_demand)
trap-anti-affinity 6 8 80.0
trap-exclusive 3 4 120.0
"""

from __future__ import annotations

from datetime import timedelta

from placer.scenarios.synthetic.hard import _at, _busy
from placer.scenarios.synthetic.scenario import NOW, Scenario, weighted_demand
from placer.solver.jobs.model import GpuDemand, Job, LabelRule, Placement, TaskGroup
from placer.topology import cluster_of, dgx_h100, pcie_inference

__all__ = ["anti_affinity_trap", "exclusive_trap", "rule_traps"]


def _job(
    i: int,
    prefix: str,
    gpus: int,
    gpu_type: str,
    *,
    app: str,
    placement: Placement | None = None,
    **task: object,
) -> Job:
    """Pending job number ``i`` of its kind: priority ``100 - i``, submitted ``i`` minutes after the first."""
    return Job(
        id=f"{prefix}{i:02d}",
        source_format="synthetic",
        priority=100 - i,
        submit_time=NOW - timedelta(minutes=60 - i),
        labels={"app": app},
        placement=placement or Placement(),
        tasks=[TaskGroup(cpu_cores=4, memory_gb=16, gpu=GpuDemand(count=gpus, types=[gpu_type]), **task)],
    )


def anti_affinity_trap() -> Scenario:
    """(e) Anti-affinity: the batch jobs take whole hosts, so the serve replicas have too few hosts.

    Cluster: 4 PCIe hosts ``l4-1..4`` with 2 NVIDIA L4 each (8 GPUs), nothing running.

    Pending, in priority order: ``batch01``-``batch04`` (1 GPU, label ``app=batch``), then
    ``serve05``-``serve08`` (1 GPU, label ``app=serve``, required anti-affinity ``app In [serve]``: no two
    serve replicas on one host, OJS ML §7.3).

    First-fit: batch01, batch02 fill host 1, batch03, batch04 host 2; serve05 -> host 3, serve06 -> host
    4 (host 3 holds a serve replica); serve07, serve08 find a free GPU only beside another serve replica:
    unplaced. Placed **6**. (Best-fit alike: it packs the batch jobs the same way.)

    Optimum: one batch job and one serve replica per host: all **8** placed, every GPU used, so no answer
    places more. Weighted demand 8 GPUs * 10 = **80**.

    >>> anti_affinity_trap().optimal_placed
    8
    """
    cluster = cluster_of(
        pcie_inference(4, gpus_per_node=2, cpu_cores=24, memory_gb=96, name="l4"), name="trap-anti-affinity"
    )
    nodes = [n.name for n in cluster.nodes]
    serve = Placement(anti_affinity=[LabelRule(key="app", operator="In", values=["serve"])])
    jobs = [_job(i, "batch", 1, "nvidia-l4", app="batch") for i in range(1, 5)]
    jobs += [_job(i, "serve", 1, "nvidia-l4", app="serve", placement=serve) for i in range(5, 9)]
    witness = [_at(jobs[i], nodes[i], [0]) for i in range(4)] + [
        _at(jobs[4 + i], nodes[i], [1]) for i in range(4)
    ]
    return Scenario(
        name="trap-anti-affinity",
        cluster=cluster,
        jobs=tuple(jobs),
        description="(e) anti-affinity: 4 hosts x 2 L4; 4 batch jobs then 4 mutually anti-affine serve jobs",
        optimal_placed=8,
        optimal_weighted_demand=weighted_demand(jobs),
        greedy_placed=6,
        witness=tuple(witness),
    )


def exclusive_trap() -> Scenario:
    """(f) Exclusive use: small jobs land on the empty nodes, so an exclusive job finds none.

    Cluster: 4 DGX H100 nodes ``dgx-h100-1..4``. Background jobs hold GPUs 0-3 of nodes 3 and 4; nodes 1
    and 2 are empty.

    Pending, in priority order: ``a01``, ``a02`` (2 GPUs each, shared), then ``x03``, ``x04`` (4 GPUs each,
    ``exclusive``: the replica owns its node whole, OJS ML §7.1 ``dedicated``, Flux ``exclusive``), so
    each needs a node with nothing else on it.

    First-fit: a01, a02 -> node 1; x03 -> node 2, the only empty node left; x04 finds none. Placed **3**,
    8 GPUs, weighted 80.

    Optimum: a01, a02 -> node 3 (4 free); x03 -> node 1, x04 -> node 2: all **4** placed, so no answer
    does better. Weighted demand (2 + 2 + 4 + 4) * 10 = **120**.

    >>> exclusive_trap().optimal_placed
    4
    """
    nodes = [f"dgx-h100-{i}" for i in range(1, 5)]
    busy = [_busy(f"bg-{k}", nodes[k - 1], [0, 1, 2, 3]) for k in (3, 4)]
    cluster = cluster_of(dgx_h100(4), name="trap-exclusive").with_allocations(busy)
    jobs = [_job(i, "a", 2, "nvidia-h100", app="small") for i in (1, 2)]
    jobs += [_job(i, "x", 4, "nvidia-h100", app="whole", exclusive=True) for i in (3, 4)]
    witness = [_at(jobs[0], nodes[2], [4, 5]), _at(jobs[1], nodes[2], [6, 7])]
    witness += [_at(jobs[2], nodes[0], [0, 1, 2, 3]), _at(jobs[3], nodes[1], [0, 1, 2, 3])]
    return Scenario(
        name="trap-exclusive",
        cluster=cluster,
        jobs=tuple(jobs),
        description="(f) exclusive: 2 empty and 2 half-busy DGX; 2 small jobs then 2 exclusive 4-GPU jobs",
        optimal_placed=4,
        optimal_weighted_demand=weighted_demand(jobs),
        greedy_placed=3,
        witness=tuple(witness),
    )


def rule_traps() -> list[Scenario]:
    """The rule traps, (e) and (f).

    >>> [t.name for t in rule_traps()]
    ['trap-anti-affinity', 'trap-exclusive']
    """
    return [anti_affinity_trap(), exclusive_trap()]
