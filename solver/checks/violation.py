"""The :class:`Violation`: one broken placement rule, in words a user understands.

Why a plain frozen dataclass and not a pydantic model: the checker may report thousands of these on a
10k-node decision, and a slotted dataclass costs nothing to build; :meth:`Violation.to_json` gives the
JSON shape the CLI prints. ``rule`` is a short stable code (see :data:`RULES`) that tests and backends
match on; ``message`` is free text and may change.

>>> v = Violation("capacity", "train-1", "cpu over-committed: 224.5 cores placed, capacity 224", "dgx-1")
>>> str(v)
'[capacity] job train-1 on dgx-1: cpu over-committed: 224.5 cores placed, capacity 224'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RULES", "Violation"]

#: Every rule code the checker emits, with the contract rule (docs/placement-rules.md) it enforces.
RULES: dict[str, str] = {
    "accounting": "1. every input job exactly once across placements, pending and rejected",
    "eviction": "1. an eviction names a job that is running on the cluster",
    "eviction-forbidden": "16. only preemptible, non-reserved running jobs are evicted",
    "eviction-priority": "16. an eviction is for placed jobs of strictly higher priority",
    "eviction-unused": "16. a job the eviction is for runs where the evicted job ran",
    "eviction-non-preempting": "16. no eviction is for a job that does not preempt (preemptionPolicy: Never)",
    "eviction-grace": "16. an eviction's grace_period_s is the evicted job's own (default 30)",
    "eviction-checkpoint": "16. an eviction's checkpoint directive is the job's checkpoint-on-preempt flag",
    "eviction-nodes": "16. an eviction lists exactly the nodes and TPU pods the evicted job holds",
    "eviction-failure": "16. an eviction never counts as a failure (counts_as_failure false)",
    "eviction-work-lost": "16. expected_work_lost_gpu_s is the GPU-seconds since the job's last checkpoint",
    "queue-budget": "17. each queue stays within max_total_gpus, max_concurrent_gpu_jobs, "
    "max_total_cpu_cores and max_total_memory_gb",
    "cost-budget": "17. each queue and tenant stays within its dollars per hour (max_cost_per_hour, "
    "budgets.tenants)",
    "throttle": "20. at most max_running jobs of a group run at once, holding at most max_gpus GPUs "
    "(a Slurm array's %N, a QOS's limits)",
    "licenses": "22. the seats of a cluster-wide licence held at once stay within the cluster's pool "
    "(Slurm Licenses=, a job's --licenses)",
    "gang": "2. each task group placed whole: replica count, GPUs per replica, resources",
    "node-unknown": "3. the replica's node exists",
    "node-unusable": "3. the node is schedulable and ready",
    "taint": "3. the node has no NoSchedule/NoExecute taint",
    "accelerator": "4. gpu/tpu jobs only on nodes with that accelerator",
    "gpu-type": "4. the node's GPU type is one the job accepts",
    "gpu-memory": "4. the node's GPU memory is at least the job's minimum",
    "compute-capability": "4. the node's compute capability is at least the job's minimum",
    "model-version": "4. a job pinning a model version is not on a node that has that model at other "
    "versions only (OJS ML §4)",
    "gpu-index": "5. GPU indices exist on the node and are distinct within a replica",
    "gpu-double-booked": "5. a GPU held whole is held by nobody else",
    "gpu-share": "5. fractional shares of one GPU sum to at most 1000 milli",
    "capacity": "6. cpu, memory, storage and shm of a node are not over-committed",
    "structure": "19. a Flux job's sockets (with their cores and GPUs) fit the node's inner tree, with every "
    "other shaped job there",
    "nvlink": "7. an nvlink job's GPUs all lie in one NVLink domain",
    "node-selector": "8. node selector pairs match the node's labels exactly",
    "label-rule": "8. required affinity rules hold on the node's labels",
    "anti-affinity": "9. no co-located job matches the job's anti-affinity rules",
    "pod-affinity": "9. a running job matching every required pod-affinity term is in each replica's domain",
    "topology-spread": "9. a job's DoNotSchedule topology spread holds: its node has the key, and its "
    "domain's count of the jobs a constraint matches (plus itself) is at most max_skew above the least "
    "domain's; no two jobs placed by one decision count each other",
    "exclusive": "10. an exclusive/dedicated job's nodes host nothing else",
    "distinct-nodes": "11. replicas that must be on distinct nodes are",
    "node-count": "11. the number of distinct nodes used is admissible",
    "topology-scope": "12. all replicas share one rack/block/zone/NVLink domain/node",
    "domain-count": "12. a Flux level above the node (rack: 2) is honoured where the cluster describes it: "
    "exactly that many domains, as many replicas in each",
    "slices": "12. Kueue slices above the node: every rack/block/zone holds a multiple of the slice size of "
    "the group's replicas, and a node in none of them holds none; an exclusive slice is alone in its domain",
    "one-flavor": "12. a pod set of a Kueue queue offering it several flavors lies on the nodes of one of "
    "them (the first, in the queue's order, whose node labels a node has)",
    "tpu-pod": "13. a TPU replica names a usable pod of the requested generation",
    "tpu-chip": "13. TPU chips lie in the mesh and are distinct",
    "tpu-double-booked": "13. a TPU chip is held by one job only",
    "tpu-chip-count": "13. a TPU replica has the requested number of chips",
    "tpu-contiguity": "13. a TPU replica's chips form a contiguous box of the requested shape",
    "tpu-hosts": "13. a multi-host TPU slice consists of whole hosts",
    "tpu-cubes": "13. on a v4/v5p pod of 4x4x4 cubes, a slice is whole cubes or lies inside one cube",
    "dependency": "14. no job placed while a dependency is unmet",
    "not-before": "14. no job placed before its not_before time",
    "gated": "14. no job placed or planned while it has scheduling gates",
    "plan-job": "18. a plan is held once, for a pending job of the batch",
    "plan-time": "18. a plan starts after now, not before not_before, once its dependencies are met",
    "plan-placement": "18. the held resources are a valid placement of the job",
    "plan-capacity": "18. at each planned start, running work, placements and plans fit together",
    "reservation": "15. a job with a reservation is placed only under a declared reservation, inside it; "
    "others leave its capacity free",
    "reservation-backfill": "15. work started now by other jobs ends before a reservation that starts later "
    "needs its capacity",
    "reservation-plan": "15. plans of other jobs leave a reservation's capacity free while it is held",
    "extended": "21. a replica asking for an extended resource (a Kubernetes extended resource or huge "
    "pages, a Flux resource type, an SSS Resource, Swap or Network) takes it on a node that has that much "
    "free",
}


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: which rule, which job, where (when a node is involved), and why."""

    rule: str
    job: str
    message: str
    node: str | None = None

    def __str__(self) -> str:
        where = f" on {self.node}" if self.node else ""
        return f"[{self.rule}] job {self.job}{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The violation as a JSON object (``rule``, ``job``, ``node``, ``message``).

        >>> Violation("nvlink", "j", "GPUs in two NVLink domains").to_json()["rule"]
        'nvlink'
        """
        return {"rule": self.rule, "job": self.job, "node": self.node, "message": self.message}
