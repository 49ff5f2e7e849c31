"""The Alibaba GPU v2023 "openb" traces (Weng et al., ATC '23, the FGD paper): node list -> cluster, pod
list -> jobs.

Node list columns: ``sn, cpu_milli, memory_mib, gpu, model``. Pod list columns: ``name, cpu_milli,
memory_mib, num_gpu, gpu_milli`` and, in most variants, ``gpu_spec`` (allowed GPU models, ``A|B``; empty
for any) plus timing and QoS columns this loader does not need. A pod asks for ``num_gpu`` whole GPUs on
one node, or — when ``num_gpu == 1`` and ``gpu_milli < 1000`` — a share of one GPU (GPU sharing); a pod
with ``num_gpu == 0`` is CPU-only.

Mapping onto placer's model (units: cores, GB of 10^9 bytes):

* ``cpu_milli`` / 1000 -> cores; ``memory_mib`` x 2^20 / 10^9 -> GB;
* GPU models -> placer GPU types (:data:`GPU_TYPES`): the catalog's ``nvidia-t4`` and ``nvidia-a10`` for
  T4 and A10; trace-specific ids ``openb-*`` for the rest, because V100M16 and V100M32 must stay apart (a
  pod may accept only one of them) and G1-G3 are undisclosed internal models. Their GPU memory is the
  product's (P100 16 GB, V100M16 16, V100M32 32) or, for G1-G3, a placeholder (:data:`UNDISCLOSED_GB`):
  openb pods never ask for GPU memory, so it is never compared;
* a pod -> a one-replica :class:`~placer.solver.jobs.model.Job`: whole GPUs as ``GpuDemand(count=num_gpu)``
  (on
  one node: placer never splits a job without a distributed strategy), a share as
  ``GpuDemand(count=1, share_milli=gpu_milli)``, ``gpu_spec`` as the accepted ``types``.

>>> nodes = parse_nodes("sn,cpu_milli,memory_mib,gpu,model\\nn1,96000,393216,8,G2\\n", "nodes.csv")
>>> c = nodes_to_cluster(nodes)
>>> n = c.nodes[0]
>>> (n.name, n.cpu_cores, round(n.memory_gb, 1), n.gpu_count, n.gpu_type)
('n1', 96.0, 412.3, 8, 'openb-g2')
>>> text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\\np1,6000,12288,1,460,G2|T4\\n"
>>> pods = parse_pods(text, "p.csv")
>>> job = pod_to_job(pods[0])
>>> g = job.tasks[0].gpu
>>> (job.id, job.tasks[0].cpu_cores, g.count, g.share_milli, g.types)
('p1', 6.0, 1, 460, ['openb-g2', 'nvidia-t4'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from placer.scenarios.traces.table import Row, Table
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.topology import Cluster
from placer.topology.build import build_cluster
from placer.topology.inventory import Inventory, NodeGpus, NodeSpec

__all__ = [
    "GB_PER_MIB",
    "GPU_MEMORY_GB",
    "GPU_TYPES",
    "MAX_GPUS",
    "MILLI",
    "NODE_COLUMNS",
    "POD_COLUMNS",
    "UNDISCLOSED_GB",
    "OpenbNode",
    "OpenbPod",
    "gpu_demand",
    "nodes_to_cluster",
    "parse_nodes",
    "parse_pods",
    "pod_to_job",
    "read_nodes",
    "read_pods",
]

#: openb GPU model -> placer GPU type id.
GPU_TYPES: dict[str, str] = {
    "G1": "openb-g1",
    "G2": "openb-g2",
    "G3": "openb-g3",
    "T4": "nvidia-t4",
    "P100": "openb-p100",
    "V100M16": "openb-v100m16",
    "V100M32": "openb-v100m32",
    "A10": "nvidia-a10",
}
#: GPU memory (GB) placeholder for the undisclosed models G1-G3 (never compared: pods ask for none).
UNDISCLOSED_GB = 16.0
#: GPU memory (GB) of the trace-specific types; catalog types (T4, A10) take the catalog's.
GPU_MEMORY_GB: dict[str, float] = {
    "openb-g1": UNDISCLOSED_GB,
    "openb-g2": UNDISCLOSED_GB,
    "openb-g3": UNDISCLOSED_GB,
    "openb-p100": 16.0,
    "openb-v100m16": 16.0,
    "openb-v100m32": 32.0,
}
#: Largest GPU count the trace's schema allows on one node or pod.
MAX_GPUS = 8
MILLI = 1000
#: Bytes per MiB over bytes per GB: the memory conversion.
GB_PER_MIB = 1_048_576 / 1e9

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


@dataclass(frozen=True, slots=True)
class OpenbNode:
    """One row of an openb node list (amounts in the trace's own units)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str | None

    @property
    def gpu_type(self) -> str | None:
        """The placer GPU type of the node's GPUs (None for a CPU-only node)."""
        return GPU_TYPES[self.model] if self.gpus and self.model else None


@dataclass(frozen=True, slots=True)
class OpenbPod:
    """One row of an openb pod list. ``gpu_milli`` is per GPU (1000 for whole GPUs, 0 for CPU-only);
    ``models`` the accepted GPU models (empty: any)."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...] = ()

    @property
    def total_gpu_milli(self) -> int:
        """GPU request in thousandths of a GPU: ``num_gpu x gpu_milli``."""
        return self.num_gpu * self.gpu_milli

    @property
    def is_share(self) -> bool:
        """A fraction of one GPU (GPU sharing)."""
        return self.num_gpu == 1 and 0 < self.gpu_milli < MILLI


# -- nodes ----------------------------------------------------------------------------------------------


def read_nodes(path: str | Path) -> list[OpenbNode]:
    """Read an openb node list file (``OSError`` if it cannot be opened, ``TraceError`` if bad)."""
    return _nodes(Table.read(path, NODE_COLUMNS))


def parse_nodes(text: str, source: str = "<nodes>") -> list[OpenbNode]:
    """Parse an openb node list from its CSV text; every bad cell is a problem of the ``TraceError``.

    >>> parse_nodes("sn,cpu_milli,memory_mib,gpu,model\\nn1,64000,262144,2,K80\\n", "n.csv")
    Traceback (most recent call last):
    ...
    placer.scenarios.traces.table.TraceError: n.csv: line 2, column 'model': unknown GPU model 'K80' (know...
    """
    return _nodes(Table.parse(text, source, NODE_COLUMNS))


def _nodes(t: Table) -> list[OpenbNode]:
    out: list[OpenbNode] = []
    seen: dict[str, int] = {}
    for r in t.rows:
        name = t.text(r, "sn")
        cpu = t.integer(r, "cpu_milli")
        mem = t.integer(r, "memory_mib")
        gpus = t.integer(r, "gpu", high=MAX_GPUS)
        model = r.cells.get("model", "") or None
        if model is not None and model not in GPU_TYPES:
            t.problem(r.line, "model", f"unknown GPU model {model!r} (known: {', '.join(GPU_TYPES)})")
            continue
        if gpus and model is None:
            t.problem(r.line, "model", f"empty, but the node has {gpus} GPUs")
            continue
        if name and name in seen:
            t.problem(r.line, "sn", f"duplicate node name {name!r} (first on line {seen[name]})")
            continue
        if name and cpu is not None and mem is not None and gpus is not None:
            seen[name] = r.line
            out.append(OpenbNode(name, cpu, mem, gpus, model if gpus else None))
    t.raise_problems()
    return out


def nodes_to_cluster(nodes: Sequence[OpenbNode], name: str = "openb") -> Cluster:
    """The placer cluster of an openb node list: one inventory node per row, in file order.

    >>> a, b = OpenbNode("a", 8000, 32768, 1, "V100M16"), OpenbNode("b", 32000, 65536, 0, None)
    >>> c = nodes_to_cluster([a, b])
    >>> [(n.name, n.gpu_type, n.gpu_memory_gb) for n in c.nodes]
    [('a', 'openb-v100m16', 16.0), ('b', None, None)]
    """
    specs = []
    for n in nodes:
        gpus = None
        if n.gpus and n.gpu_type is not None:
            gpus = NodeGpus(type=n.gpu_type, count=n.gpus, memory_gb=GPU_MEMORY_GB.get(n.gpu_type))
        specs.append(
            NodeSpec(
                name=n.name,
                cpu_cores=n.cpu_milli / MILLI,
                memory_gb=n.memory_mib * GB_PER_MIB,
                gpus=gpus,
                labels={"openb_model": n.model} if n.model else {},
            )
        )
    return build_cluster(Inventory(name=name, nodes=specs), source=name)


# -- pods -----------------------------------------------------------------------------------------------


def read_pods(path: str | Path) -> list[OpenbPod]:
    """Read an openb pod list file (``OSError`` if it cannot be opened, ``TraceError`` if bad)."""
    return _pods(Table.read(path, POD_COLUMNS, optional=("gpu_spec",)))


def parse_pods(text: str, source: str = "<pods>") -> list[OpenbPod]:
    """Parse an openb pod list from its CSV text.

    >>> parse_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\\np,1000,1024,2,500\\n", "p.csv")
    Traceback (most recent call last):
    ...
    placer.scenarios.traces.table.TraceError: p.csv: line 2, column 'gpu_milli': 500 milli per GPU with nu...
    """
    return _pods(Table.parse(text, source, POD_COLUMNS, optional=("gpu_spec",)))


def _models(t: Table, r: Row) -> tuple[str, ...] | None:
    spec = r.cells.get("gpu_spec", "")
    models: list[str] = []
    for m in (s.strip() for s in spec.split("|")) if spec else ():
        if m not in GPU_TYPES:
            t.problem(r.line, "gpu_spec", f"unknown GPU model {m!r} (known: {', '.join(GPU_TYPES)})")
            return None
        if m not in models:
            models.append(m)
    return tuple(models)


def _pods(t: Table) -> list[OpenbPod]:
    out: list[OpenbPod] = []
    for r in t.rows:
        name = t.text(r, "name")
        cpu = t.integer(r, "cpu_milli")
        mem = t.integer(r, "memory_mib")
        num = t.integer(r, "num_gpu", high=MAX_GPUS)
        milli = t.integer(r, "gpu_milli", high=MILLI)
        models = _models(t, r)
        if num is None or milli is None or cpu is None or mem is None or models is None or not name:
            continue
        if num == 0 and milli:
            t.problem(
                r.line, "gpu_milli", f"{milli} milli per GPU with num_gpu 0: a CPU-only pod asks for none"
            )
        elif num and not milli:
            t.problem(r.line, "gpu_milli", f"0 milli per GPU with num_gpu {num}: give 1-1000")
        elif num > 1 and milli < MILLI:
            t.problem(
                r.line,
                "gpu_milli",
                f"{milli} milli per GPU with num_gpu {num}: a share (gpu_milli < 1000) is of one GPU only",
            )
        else:
            out.append(OpenbPod(name, cpu, mem, num, milli, models if num else ()))
    t.raise_problems()
    return out


def gpu_demand(pod: OpenbPod) -> GpuDemand | None:
    """The GPU demand of one replica of the pod (None for a CPU-only pod)."""
    if not pod.num_gpu:
        return None
    types = [GPU_TYPES[m] for m in pod.models]
    if pod.is_share:
        return GpuDemand(count=1, share_milli=pod.gpu_milli, types=types)
    return GpuDemand(count=pod.num_gpu, types=types)


def pod_to_job(pod: OpenbPod, job_id: str | None = None) -> Job:
    """The placer job of one pod (``job_id`` defaults to the pod's name; a fill experiment samples a pod
    several times and names each arrival)."""
    task = TaskGroup(
        cpu_cores=pod.cpu_milli / MILLI,
        memory_gb=pod.memory_mib * GB_PER_MIB,
        gpu=gpu_demand(pod),
    )
    return Job(id=job_id or pod.name, tasks=[task], source_format="openb")
