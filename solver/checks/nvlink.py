"""Rule 7, NVLink: a job asking ``nvlink`` with more than one GPU has all its GPUs in one NVLink domain.

Why: OJS ML §3.2 — ``nvlink`` "requires NVLink interconnect between all allocated GPUs"; two DGX boards
are two domains (they talk over InfiniBand), while the 18 trays of a GB200 NVL72 rack share one domain.
A PCIe node has no domain and never satisfies ``nvlink``. With one GPU the attribute is ignored (§3.2:
"SHOULD be ignored"). The GPUs considered are those of the job's groups that ask ``nvlink`` (for an OJS
job, its one group: all its GPUs).

>>> from placer.solver.decision import JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.checks.context import build_context
>>> from placer.solver.decision import Decision
>>> job = Job(id="j", distributed_strategy="fsdp",
...           tasks=[TaskGroup(gpu=GpuDemand(count=16, interconnect="nvlink"))])
>>> reps = [ReplicaPlacement(node=f"dgx-h100-{i}", gpus=list(range(8))) for i in (1, 2)]
>>> ctx = build_context(Decision(), [job], cluster_of(dgx_h100(2)))
>>> [v.rule for v in check_nvlink(ctx, job, JobPlacement(job="j", replicas=reps))]
['nvlink']
"""

from __future__ import annotations

from collections.abc import Iterator

from placer.solver.checks.context import Context
from placer.solver.checks.violation import Violation
from placer.solver.decision import JobPlacement
from placer.solver.jobs.model import Interconnect, Job

__all__ = ["check_nvlink"]


def check_nvlink(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 7 for one placed job."""
    groups = {g.name for g in job.tasks if g.gpu is not None and g.gpu.interconnect is Interconnect.NVLINK}
    demand = sum(g.count * g.gpus_per_replica for g in job.tasks if g.name in groups)
    if not groups or demand <= 1:
        return
    first: str | None = None
    first_node = ""
    for rep in placement.replicas:
        if rep.task_group not in groups or not rep.gpus:
            continue
        node = ctx.node(rep)
        if node is None:
            continue  # unknown node: rule 3
        if node.nvlink_domain is None:
            yield Violation(
                "nvlink",
                job.id,
                f"the job needs NVLink between all its GPUs; the node's GPUs are on "
                f"{node.gpu_interconnect or 'no'} interconnect, in no NVLink domain",
                node.name,
            )
            continue
        if first is None:
            first, first_node = node.nvlink_domain, node.name
        elif node.nvlink_domain != first:
            yield Violation(
                "nvlink",
                job.id,
                f"the job needs all its GPUs in one NVLink domain; this node is in {node.nvlink_domain}, "
                f"{first_node} in {first}",
                node.name,
            )
