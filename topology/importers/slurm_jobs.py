"""Slurm's running jobs (``squeue --json``) -> named :class:`~placer.topology.inventory.RunningJob` objects.

Why: the node forms (``scontrol show node``, ``sinfo --json``) say what each node has allocated but not to
whom, so placer reads them as one anonymous job per node (``slurm-alloc-<node>``, priority 0, no end
time). Preemption, planning ("starts when job 4711 ends") and anti-affinity need the real jobs: their ids,
owners, partitions, priorities, start and end times, and which GPUs of which node each one holds.
``squeue --json`` prints all of that (Slurm's OpenAPI plugins ``v0.0.37``-``v0.0.39``, Slurm 21.08-23.02;
the numbers of ``v0.0.40``+, ``{"set": true, "number": N}``, are read too).

Mapping (also in ``docs/importers.md``):

* Jobs whose ``job_state`` is ``RUNNING``, ``SUSPENDED`` or ``COMPLETING`` (they still hold what they
  were given) are running jobs; others (pending, completed, ...) are left out.
* Id: ``job_id``; array tasks ``<array_job_id>_<array_task_id>``, heterogeneous components
  ``<het_job_id>+<het_job_offset>``, as Slurm prints them. An array task's ``throttle_group`` is its
  ``array_job_id``: it counts against its array's throttle (``%N``), which the array's pending tasks
  carry (``Job.throttle``).
* One replica per allocated node (``job_resources.allocated_nodes``): GPUs from the ``gres_detail`` entry of
  the same position (``gpu:h100:2(IDX:0-1)``: the indices); CPUs are the job's ``cpu=`` of
  ``tres_alloc_str`` split over nodes in proportion to the cores allocated on each; memory is the node's
  ``memory_allocated`` (MB, else ``mem=`` split evenly), in GB of 2**30 bytes.
* ``partition`` -> queue, ``account`` (else ``user_name``) -> tenant, ``priority`` -> priority (class
  ``on-demand``: Slurm has no spot class); ``start_time`` -> started at; ``end_time`` -> expected end when
  the job has a time limit (an unlimited job's ``end_time`` is a placeholder a year ahead, so none);
  labels ``slurm_job_id``, ``slurm_job_name``, ``slurm_user``, ``slurm_account``, ``slurm_partition``,
  ``slurm_qos``, ``slurm_state``. Preemptibility stays unknown (``squeue`` does not print the partition's or
  QOS's ``PreemptMode``) unless the partitions or QOSes are read (:mod:`.slurm_partitions`,
  :mod:`.slurm_qos`).

:func:`with_slurm_jobs` puts them on a cluster read from a node form: each node's anonymous allocation
keeps only what the named jobs do not explain (nothing, when ``squeue`` listed every job), so no GPU is
counted twice and none is lost. Every problem names the job by its position and id; nothing is dropped
silently.

>>> doc = {"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "jobs": [{"job_id": 7, "name": "train",
...     "job_state": "RUNNING", "partition": "gpu", "user_name": "ana", "account": "ml", "priority": 90,
...     "start_time": 1700000000, "end_time": 1700003600, "time_limit": 60,
...     "tres_alloc_str": "cpu=8,mem=64G,node=1,gres/gpu=2", "gres_detail": ["gpu:h100:2(IDX:2-3)"],
...     "job_resources": {"allocated_nodes": [{"nodename": "g1", "memory_allocated": 65536}]}}]}
>>> (rj,) = squeue_running(doc, source="squeue.json")
>>> rj.job, rj.queue, rj.tenant, rj.replicas[0].gpus, rj.replicas[0].cpu_cores, rj.replicas[0].memory_gb
('7', 'gpu', 'ml', [2, 3], 8.0, 64.0)
>>> rj.expected_end.isoformat()
'2023-11-14T23:13:20+00:00'
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from placer.topology.importers._common import GB, Problems, short
from placer.topology.importers.slurm import cores_holding, node_cpus_per_core, parse_gres, parse_memory_mb
from placer.topology.importers.slurm_json import is_slurm_output
from placer.topology.importers.slurm_licenses import job_licenses
from placer.topology.importers.slurm_mixed import parts_in, slurm_node_of, split_replica
from placer.topology.inventory import ReplicaAllocation, RunningJob
from placer.topology.safe_load import UnsafeDocument, check_values

if TYPE_CHECKING:
    from placer.topology.cluster import Cluster

__all__ = [
    "ANONYMOUS_PREFIX",
    "RUNNING_STATES",
    "in_cores",
    "is_squeue_json",
    "on_parts",
    "singleton_group",
    "slurm_number",
    "slurm_states",
    "slurm_text",
    "squeue_running",
    "with_slurm_jobs",
]

#: Job states in which a Slurm job holds its allocation.
RUNNING_STATES = frozenset({"RUNNING", "SUSPENDED", "COMPLETING"})
#: Id prefix of the per-node anonymous allocations the node importers make.
ANONYMOUS_PREFIX = "slurm-alloc-"


def is_squeue_json(obj: Any) -> bool:
    """Whether ``obj`` is ``squeue --json`` output: a ``meta`` naming Slurm or its plugin, and ``jobs``.

    >>> is_squeue_json({"meta": {"Slurm": {}}, "jobs": []}), is_squeue_json({"jobs": []})
    (True, False)
    """
    return is_slurm_output(obj, "jobs")


def slurm_number(value: Any) -> float | None:
    """A Slurm number: plain, or ``{"set": .., "infinite": .., "number": ..}`` (None when unset or
    infinite, or not a number; :func:`squeue_running` has refused non-finite and huge ones already)."""
    if isinstance(value, dict):
        if value.get("set") is False or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def slurm_states(value: Any) -> list[str]:
    """A job state as Slurm prints it (a word, or a list of words in ``v0.0.40``+), upper case."""
    items = value if isinstance(value, list) else [value]
    return [str(v).upper() for v in items if isinstance(v, str)]


def _job_id(job: Mapping[str, Any]) -> str | None:
    jid = slurm_number(job.get("job_id"))
    if jid is None:
        return None
    array_id, task = slurm_number(job.get("array_job_id")), slurm_number(job.get("array_task_id"))
    if array_id and task is not None:
        return f"{int(array_id)}_{int(task)}"
    het_id, offset = slurm_number(job.get("het_job_id")), slurm_number(job.get("het_job_offset"))
    if het_id and offset is not None:
        return f"{int(het_id)}+{int(offset)}"
    return str(int(jid))


def _tres(text: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(text, str):
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if sep:
                out[key.strip()] = value.strip()
    return out


def _allocated_nodes(job: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The per-node allocation objects, in Slurm's order (``v0.0.37`` prints them as an object keyed by
    position, ``v0.0.38``-``v0.0.39`` as a list, ``v0.0.40``+ under ``nodes.allocation``)."""
    res = job.get("job_resources")
    if not isinstance(res, dict):
        return None
    nodes = res.get("allocated_nodes")
    if nodes is None and isinstance(res.get("nodes"), dict):
        nodes = res["nodes"].get("allocation")
    if isinstance(nodes, dict):
        try:
            nodes = [nodes[k] for k in sorted(nodes, key=int)]
        except (TypeError, ValueError):
            return None
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        return None
    return nodes


def _cores(node: Mapping[str, Any]) -> float:
    """Cores allocated on one node: ``cpus`` (v0.0.37), ``cpus.count`` (v0.0.40+), else the cores marked
    allocated under ``sockets``."""
    n = slurm_number(node.get("cpus"))
    if n is None and isinstance(node.get("cpus"), dict):
        n = slurm_number(node["cpus"].get("count"))
    if n is not None:
        return n
    sockets = node.get("sockets")
    count = 0
    if isinstance(sockets, dict):
        for sock in sockets.values():
            cores = sock.get("cores") if isinstance(sock, dict) else None
            if isinstance(cores, dict):
                count += sum(1 for v in cores.values() if isinstance(v, str) and v.lower() == "allocated")
    return float(count)


def _memory_mb(node: Mapping[str, Any]) -> float | None:
    for key in ("memory_allocated", "memory"):
        value = node.get(key)
        if isinstance(value, dict):
            value = value.get("allocated")
        n = slurm_number(value)
        if n is not None:
            return n
    return None


def _when(job: Mapping[str, Any], field: str, item: str, problems: Problems) -> datetime | None:
    """A Unix time of the job (None when unset or 0, as Slurm prints a time not yet known); a value that is
    no time at all is a problem naming the field."""
    n = slurm_number(job.get(field))
    if n is None or n <= 0:
        return None
    try:
        return datetime.fromtimestamp(n, UTC)
    except (OverflowError, OSError, ValueError):
        problems.add(item, f"{field} {short(job.get(field))} is not a Unix time")
        return None


def slurm_text(value: Any) -> str:
    """A Slurm string field: "" for a missing, blank or ``(null)`` one, else the text stripped.

    >>> slurm_text(" gpu "), slurm_text("(null)"), slurm_text(None)
    ('gpu', '', '')
    """
    return value.strip() if isinstance(value, str) and value.strip() not in ("", "(null)") else ""


def singleton_group(user: str, name: str) -> str:
    """The group of ``--dependency=singleton`` jobs of one user and job name: at most one of them runs at
    once (Slurm: "only one job by that name and owned by that user can be running or suspended at any
    point in time"). Every running Slurm job counts against its own (:func:`squeue_running`); a pending
    singleton job is limited to one in it (``placer.solver.jobs.formats.slurm``).

    >>> singleton_group("ana", "train")
    'singleton/ana/train'
    """
    return f"singleton/{user}/{name}"


def squeue_running(obj: Mapping[str, Any], *, source: str) -> list[RunningJob]:
    """The running jobs of ``squeue --json`` output (see the module docstring). Raises ``TopologyError``
    listing every job it cannot read (by position and id)."""
    problems = Problems(source)
    try:
        check_values(obj)  # the one rule for every number: finite, at most 2^53 (topology/safe_load.py)
    except UnsafeDocument as e:
        problems.add(e.path or "document", str(e))
        problems.check()
    out: list[RunningJob] = []
    jobs = obj.get("jobs") or []
    if not isinstance(jobs, list):
        problems.add("jobs", f"must be a list of jobs, got {short(jobs)}")
        problems.check()
    for k, job in enumerate(jobs):
        item = f"jobs[{k}]"
        if not isinstance(job, dict):
            problems.add(item, f"a job must be an object, got {short(job)}")
            continue
        if not RUNNING_STATES & set(slurm_states(job.get("job_state"))):
            continue
        jid = _job_id(job)
        if jid is None:
            problems.add(item, f"job_id must be a number, got {short(job.get('job_id'))}")
            continue
        item = f"jobs[{k}] (job {jid})"
        rj = _running(job, jid, item, problems)
        if rj is not None:
            out.append(rj)
    problems.check()
    return out


def _running(job: Mapping[str, Any], jid: str, item: str, problems: Problems) -> RunningJob | None:
    nodes = _allocated_nodes(job)
    if not nodes:
        problems.add(
            item,
            "which node holds what is missing: squeue --json prints job_resources.allocated_nodes, "
            "scontrol show job prints it only with -d",
        )
        return None
    tres = _tres(job.get("tres_alloc_str"))
    detail = job.get("gres_detail")
    detail = detail if isinstance(detail, list) else []
    cores = [_cores(n) for n in nodes]
    try:
        total_cpu = float(tres["cpu"]) if "cpu" in tres else sum(cores)
        total_mem = parse_memory_mb(tres["mem"]) if "mem" in tres else None
    except ValueError as e:
        problems.add(item, f"tres_alloc_str {short(job.get('tres_alloc_str'))}: {e}")
        return None
    replicas: list[ReplicaAllocation] = []
    for i, node in enumerate(nodes):
        name = node.get("nodename") or node.get("name")
        if not isinstance(name, str) or not name:
            problems.add(item, f"allocated node {i} has no nodename")
            return None
        gpus: list[int] = []
        if i < len(detail) and isinstance(detail[i], str):
            try:
                entries = [g for g in parse_gres(detail[i]) if g.name == "gpu"]
            except ValueError as e:
                problems.add(item, f"gres_detail[{i}]: {e}")
                return None
            for g in entries:
                if g.indices is None and g.count:
                    problems.add(item, f"gres_detail[{i}] {detail[i]!r} gives no GPU indices (IDX)")
                    return None
                gpus.extend(g.indices or ())
        share = cores[i] / sum(cores) if sum(cores) > 0 else 1 / len(nodes)
        mem = _memory_mb(node)
        if mem is None:
            mem = (total_mem or 0.0) / len(nodes)
        replicas.append(
            ReplicaAllocation(
                node=name, gpus=sorted(set(gpus)), cpu_cores=total_cpu * share, memory_gb=mem * 2**20 / GB
            )
        )
    if "gres/gpu" in tres and not any(r.gpus for r in replicas):
        problems.add(item, f"tres_alloc_str counts {tres['gres/gpu']} GPUs but gres_detail names none")
        return None
    limit = job.get("time_limit")
    limited = slurm_number(limit) is not None and not (
        isinstance(limit, str) and limit.upper() == "UNLIMITED"
    )
    labels = {
        "slurm_job_id": jid,
        "slurm_job_name": slurm_text(job.get("name")),
        "slurm_user": slurm_text(job.get("user_name")),
        "slurm_account": slurm_text(job.get("account")),
        "slurm_partition": slurm_text(job.get("partition")),
        "slurm_qos": slurm_text(job.get("qos")),
        "slurm_state": "+".join(slurm_states(job.get("job_state"))),
    }
    priority = slurm_number(job.get("priority"))
    array_id = slurm_number(job.get("array_job_id"))
    asked = job.get("licenses")
    if asked is not None and not isinstance(asked, str):
        problems.add(item, f"licenses must be text (matlab:2,ansys), got {short(asked)}")
        return None
    try:
        licenses = job_licenses(slurm_text(asked)) if slurm_text(asked) else {}
    except ValueError as e:
        problems.add(item, f"licenses: {e}")
        return None
    return problems.model(
        RunningJob,
        {
            "job": jid,
            # An array task counts against its array's throttle (``%N``, ``Job.throttle``).
            "throttle_group": str(int(array_id)) if array_id else None,
            "queue": slurm_text(job.get("partition")) or None,
            "tenant": slurm_text(job.get("account")) or slurm_text(job.get("user_name")) or None,
            "priority": int(priority) if priority is not None else 0,
            "started_at": _when(job, "start_time", item, problems),
            "expected_end": _when(job, "end_time", item, problems) if limited else None,
            "labels": {k: v for k, v in labels.items() if v},
            # A running job counts against the group of --dependency=singleton jobs of its user and name.
            "limit_groups": [singleton_group(labels["slurm_user"], labels["slurm_job_name"])],
            "licenses": licenses,
            "replicas": [r.model_dump() for r in replicas],
        },
        item,
    )


def in_cores(cluster: Cluster, jobs: list[RunningJob]) -> list[RunningJob]:
    """``jobs`` with the CPUs Slurm counts as cores of the nodes they run on: on a node whose CPUs are
    hardware threads (label ``slurm_cpus_per_core``), a replica's CPUs become the cores that hold them,
    rounded up (Slurm allocates whole cores)."""
    per_core = {slurm_node_of(n.labels, n.name): node_cpus_per_core(n.labels) for n in cluster.nodes}
    out: list[RunningJob] = []
    for rj in jobs:
        if all(per_core.get(r.node or "", 1) == 1 for r in rj.replicas):
            out.append(rj)
            continue
        replicas = [
            r.model_copy(update={"cpu_cores": cores_holding(r.cpu_cores, per_core.get(r.node or "", 1))})
            for r in rj.replicas
        ]
        out.append(rj.model_copy(update={"replicas": replicas}))
    return out


def on_parts(cluster: Cluster, jobs: list[RunningJob]) -> list[RunningJob]:
    """``jobs`` with each replica on a Slurm node that ``cluster`` holds as one node per GPU type
    (:mod:`~placer.topology.importers.slurm_mixed`) split over those parts: its GPUs to the part holding
    them, by Slurm's index, its cores and memory by the parts' shares. ``TopologyError`` naming the job
    when a GPU index is not the node's."""
    parts = parts_in(cluster.nodes)
    if not parts:
        return jobs
    problems = Problems(cluster.source)
    out: list[RunningJob] = []
    for rj in jobs:
        if not any(r.node in parts for r in rj.replicas):
            out.append(rj)
            continue
        replicas: list[ReplicaAllocation] = []
        for r in rj.replicas:
            if r.node not in parts:
                replicas.append(r)
                continue
            split = split_replica(r.gpus, r.cpu_cores, r.memory_gb, parts[r.node])
            if isinstance(split, int):
                problems.add(f"job {rj.job}", f"node {r.node!r} has no GPU {split}")
                break
            replicas += [
                r.model_copy(update={"node": n, "gpus": g, "cpu_cores": c, "memory_gb": m})
                for n, g, c, m in split
            ]
        else:
            out.append(rj.model_copy(update={"replicas": replicas}))
    problems.check()
    return out


def with_slurm_jobs(cluster: Cluster, jobs: list[RunningJob]) -> Cluster:
    """``cluster`` (read from a Slurm node form) with ``jobs`` running on it by name: each node's anonymous
    ``slurm-alloc-<node>`` allocation keeps only the GPUs, CPUs and memory the named jobs on that node do
    not account for (and goes when they account for all), and every generic resource other than GPUs
    in use there (``gres/<name>``: the named jobs' ``gres_detail`` is read for GPUs only). Their CPUs
    count as cores where the node's CPUs are threads (:func:`in_cores`). ``TopologyError`` when a job
    does not fit (an unknown node, a GPU index the node lacks, more than the node has)."""
    jobs = on_parts(cluster, in_cores(cluster, jobs))
    on: dict[str, list[ReplicaAllocation]] = {}
    for rj in jobs:
        for r in rj.replicas:
            if r.node is not None:
                on.setdefault(r.node, []).append(r)
    anonymous = [rj for rj in cluster.running_jobs() if rj.job.startswith(ANONYMOUS_PREFIX)]
    kept: list[RunningJob] = []
    for rj in anonymous:
        left: list[ReplicaAllocation] = []
        for r in rj.replicas:
            named = on.get(r.node or "", [])
            taken = {g for n in named for g in n.gpus}
            rest = r.model_copy(
                update={
                    "gpus": [g for g in r.gpus if g not in taken],
                    "cpu_cores": max(0.0, r.cpu_cores - sum(n.cpu_cores for n in named)),
                    "memory_gb": max(0.0, r.memory_gb - sum(n.memory_gb for n in named)),
                }
            )
            # Generic resources other than GPUs stay with it: squeue's gres_detail is read for GPUs only.
            if rest.gpus or rest.cpu_cores > 1e-9 or rest.memory_gb > 1e-9 or rest.extra:
                left.append(rest)
        if left:
            kept.append(rj.model_copy(update={"replicas": left}))
    base = cluster.release(*[rj.job for rj in anonymous]) if anonymous else cluster
    return base.with_allocations([*kept, *jobs])
