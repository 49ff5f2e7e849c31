"""The ``kubernetes`` job format: pods, batch/v1 Jobs, JobSets and Kueue Workloads, alone or in a List (what
``kubectl get pods,jobs -o json`` prints), dispatched by ``kind`` to
:mod:`~placer.solver.jobs.formats.kubernetes_pods` and
:mod:`~placer.solver.jobs.formats.kubernetes_workloads`. The ``PriorityClass`` and
``WorkloadPriorityClass`` objects of a List (``kubectl get priorityclasses,workloadpriorityclasses,jobs
-o json``) give its jobs' priorities (:mod:`~placer.solver.jobs.formats.kubernetes_priority`).

>>> is_pod_document({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod"}, {"kind": "Job"}]})
True
>>> is_pod_document({"id": "j", "ext_ml_gpu_count": 1})
False
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placer.solver.jobs.errors import issue
from placer.solver.jobs.formats.kubernetes_pods import read_pod
from placer.solver.jobs.formats.kubernetes_priority import Classes, is_class, read_classes
from placer.solver.jobs.formats.kubernetes_workloads import read_workload
from placer.solver.jobs.model import ReadResult

__all__ = ["KINDS", "is_pod_document", "read"]


#: Kinds read (pods here, the workloads in :mod:`~placer.solver.jobs.formats.kubernetes_workloads`).
KINDS = frozenset({"Pod", "Job", "JobSet", "Workload", "LeaderWorkerSet"})
_LISTS = frozenset({"List", "PodList", "JobList", "JobSetList", "WorkloadList", "LeaderWorkerSetList"})
#: Kinds a List may carry for ``--pods`` (the same file may serve both, ``docs/kubernetes.md``): read past
#: here, by their kind, as the pods importer reads past the job kinds.
FOR_PODS = frozenset({"PodDisruptionBudget"})


def is_pod_document(doc: Any) -> bool:
    """A Pod, Job, JobSet or Kueue Workload, or a List of them (``kubectl get pods,jobs -o json``)."""
    if not isinstance(doc, dict):
        return False
    if _kind(doc) in KINDS and isinstance(doc.get("apiVersion"), str):
        return True
    items = doc.get("items")
    return (
        _kind(doc) in _LISTS
        and isinstance(items, list)
        and all(
            isinstance(i, dict) and ((_kind(i) or "Pod") in KINDS or is_class(i) or _kind(i) in FOR_PODS)
            for i in items
        )
        and any((_kind(i) or "Pod") in KINDS for i in items)
    )


def read(doc: Any, *, source: str, options: Any) -> list[ReadResult]:
    """Every pod, Job, JobSet or Workload of the document as one result (module docstring); never raises
    for bad input."""
    levels = getattr(options, "topology_levels", None) or {}
    if isinstance(doc, dict) and _kind(doc) in KINDS:
        return _one(doc, "", source, levels)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        err = issue(
            "malformed",
            source or "<input>",
            "expected a Pod, Job, JobSet, Workload, LeaderWorkerSet or a List of them",
        )
        return [ReadResult(id=source or "<input>", ok=False, errors=[err], source=source)]
    # The priority classes listed beside the jobs (kubernetes_priority.py): read first, used by every job.
    classes, problems = read_classes(items, "", source)
    jobs = [
        r
        for i, p in enumerate(items)
        if not is_class(p) and _kind(p) not in FOR_PODS
        for r in _one(p, f"items[{i}]", source, levels, classes)
    ]
    return [*problems, *jobs]


def _kind(raw: Any) -> str | None:
    """The ``kind`` of an object when it is a string (hostile documents put anything there)."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    return kind if isinstance(kind, str) else None


def _one(
    raw: Any, base: str, source: str, levels: Mapping[str, str], classes: Classes | None = None
) -> list[ReadResult]:
    kind = raw.get("kind", "Pod") if isinstance(raw, dict) else "Pod"
    if kind in ("Job", "JobSet", "Workload", "LeaderWorkerSet"):
        return read_workload(raw, base, source, levels, classes)
    return [read_pod(raw, base, source, classes)]
