"""Rules 3 and 4: each replica's node exists and takes work, and has the accelerator the job needs.

Why: a node that is cordoned or NotReady is refused by the backend, and one tainted ``NoSchedule``/
``NoExecute`` is refused to every job that does not tolerate the taint (its ``ext_ml_tolerations``, or
the resource it requests: Kubernetes' ExtendedResourceToleration); OJS ML §3.1 forbids dispatching a
``gpu``/``tpu`` job to a worker without that accelerator, and §3.2 makes GPU memory and compute
capability minimums MUSTs. GPU types compare as catalog ids (``H100`` and ``nvidia-h100`` are one
type); capabilities as (major, minor).

The accelerator gate applies to the groups that demand the accelerator (``g.gpu`` / ``g.tpu`` set); only
when no group of a ``gpu``/``tpu`` job demands one (a bare ``ext_ml_accelerator``) does it apply to all.
A CPU job may use GPU nodes (§3.1), but no group without a TPU demand may hold TPU chips.

>>> cc("8.9") < cc("10.0")
True
"""

from __future__ import annotations

from collections.abc import Iterator

from placer.solver.checks.context import Context, group_of
from placer.solver.checks.violation import Violation
from placer.solver.decision import ReplicaPlacement
from placer.solver.jobs.model import Accelerator, Job, TaskGroup
from placer.topology import Node, canonical_gpu_type

__all__ = ["BLOCKING", "cc", "check_accelerator", "check_model_version", "check_nodes", "tolerates"]

#: Taint effects that keep a job off a node unless it tolerates them.
BLOCKING = ("NoSchedule", "NoExecute")


def cc(text: str) -> tuple[int, int]:
    """A ``"major.minor"`` compute capability as integers (``"10.0"`` -> ``(10, 0)``).

    >>> cc("9.0")
    (9, 0)
    """
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def _canon(gpu_type: str) -> str:
    return canonical_gpu_type(gpu_type) or gpu_type


def check_nodes(ctx: Context, job: Job, rep: ReplicaPlacement) -> Iterator[Violation]:
    """Rule 3 for one non-TPU replica: known, usable, untainted node."""
    if rep.tpu_pod is not None:
        return
    if not ctx.cluster.has_node(rep.node):
        yield Violation("node-unknown", job.id, f"node {rep.node!r} is not in the cluster", rep.node)
        return
    node = ctx.cluster.node(rep.node)
    if not node.usable:
        state = "cordoned (not schedulable)" if not node.schedulable else "NotReady"
        yield Violation("node-unusable", job.id, f"the node is {state}", rep.node)
    for t in node.taints:
        if t.effect in BLOCKING and not tolerates(job, rep, t.key, t.value, t.effect):
            value = f"={t.value}" if t.value else ""
            yield Violation(
                "taint",
                job.id,
                f"the node has taint {t.key}{value}:{t.effect}, which the job does not tolerate",
                rep.node,
            )


#: Taints a job tolerates by requesting the resource (Kubernetes' ExtendedResourceToleration).
_RESOURCE_TAINTS = {"gpu": ("nvidia.com/gpu", "amd.com/gpu"), "tpu": ("google.com/tpu",)}


def tolerates(job: Job, rep: ReplicaPlacement, key: str, value: str | None, effect: str) -> bool:
    """Kubernetes' matching: a toleration with the taint's key (or no key and ``Exists``), ``Exists`` or an
    equal value, and no effect or the taint's; or the replica's group requests the resource the taint is
    for."""
    g = group_of(job, rep)
    if (
        g is not None
        and g.gpu is not None
        and (g.gpu.count or g.gpu.share_milli)
        and key in _RESOURCE_TAINTS["gpu"]
    ):
        return True
    if g is not None and g.tpu is not None and key in _RESOURCE_TAINTS["tpu"]:
        return True
    for tol in job.placement.tolerations:
        same_key = tol.key is None or tol.key == key
        same_value = tol.operator == "Exists" or tol.value == value
        if same_key and same_value and (tol.effect is None or tol.effect == effect):
            return True
    return False


def _demands(job: Job, g: TaskGroup) -> Accelerator:
    if g.tpu is not None:
        return Accelerator.TPU
    if g.gpu is not None:
        return Accelerator.GPU
    if job.accelerator is Accelerator.GPU and all(t.gpu is None for t in job.tasks):
        return Accelerator.GPU
    if job.accelerator is Accelerator.TPU and all(t.tpu is None for t in job.tasks):
        return Accelerator.TPU
    return Accelerator.CPU


def check_accelerator(ctx: Context, job: Job, rep: ReplicaPlacement) -> Iterator[Violation]:
    """Rule 4 for one replica: accelerator kind, GPU type, GPU memory, compute capability."""
    g = group_of(job, rep)
    if g is None:
        return
    need = _demands(job, g)
    if need is Accelerator.TPU:
        if rep.tpu_pod is None:
            yield Violation(
                "accelerator", job.id, f"task group {g.name} needs TPU chips but sits on a node", rep.node
            )
        return
    if rep.tpu_pod is not None:
        yield Violation(
            "accelerator", job.id, f"task group {g.name} asks for no TPU but holds chips of pod {rep.tpu_pod}"
        )
        return
    node = ctx.node(rep)
    if node is None or need is not Accelerator.GPU:
        return
    if node.gpu_count == 0:
        yield Violation("accelerator", job.id, "a GPU job is placed on a node without GPUs", node.name)
        return
    if g.gpu is not None:
        yield from _check_gpu_facts(job, g, node)


def _check_gpu_facts(job: Job, g: TaskGroup, node: Node) -> Iterator[Violation]:
    assert g.gpu is not None
    have = node.gpu_type or ""
    if g.gpu.types and _canon(have) not in {_canon(t) for t in g.gpu.types}:
        yield Violation(
            "gpu-type",
            job.id,
            f"the node has {have or 'unknown'} GPUs; the job accepts {', '.join(g.gpu.types)}",
            node.name,
        )
    if g.gpu.min_memory_gb is not None and (
        node.gpu_memory_gb is None or node.gpu_memory_gb < g.gpu.min_memory_gb
    ):
        mem = "unknown" if node.gpu_memory_gb is None else f"{node.gpu_memory_gb:g} GB"
        yield Violation(
            "gpu-memory",
            job.id,
            f"the node's GPUs have {mem} of memory; the job needs at least {g.gpu.min_memory_gb:g} GB",
            node.name,
        )
    want = g.gpu.min_compute_capability
    if want is not None and (node.compute_capability is None or cc(node.compute_capability) < cc(want)):
        yield Violation(
            "compute-capability",
            job.id,
            f"the node's GPUs have compute capability {node.compute_capability or 'unknown'}; "
            f"the job needs at least {want}",
            node.name,
        )


def check_model_version(ctx: Context, job: Job, rep: ReplicaPlacement) -> Iterator[Violation]:
    """Rule 4b for one node replica: a job naming a model id and version (OJS ML §4 "MUST only dispatch the
    job to workers that have that specific model version loaded or accessible") is not on a node that
    advertises that model at other versions only. A node that does not advertise the model may fetch it."""
    if rep.tpu_pod is not None or not job.model.id or not job.model.version:
        return
    if not ctx.cluster.has_node(rep.node):
        return
    node = ctx.cluster.node(rep.node)
    loaded = [m for m in node.models_loaded if m.model_id == job.model.id]
    if loaded and all(m.model_version != job.model.version for m in loaded):
        have = ", ".join(sorted(str(m.model_version) for m in loaded))
        yield Violation(
            "model-version",
            job.id,
            f"the job pins model {job.model.id!r} at version {job.model.version!r}; the node has {have}",
            rep.node,
        )
