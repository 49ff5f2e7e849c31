"""A decision as the ``scontrol`` commands that apply it to Slurm, for ``placer place --output slurm``.

Why a script: an administrator (or a cron loop) wants to read what will happen before it happens, and Slurm's
own tools are the interface that always exists. placer decides for jobs *held* for it (``sbatch -H``, or
held by an administrator); the script pins each placed job to the nodes placer chose and releases it:

* ``scontrol update JobId=<id> NumNodes=<n> NodeList=<nodes>`` — Slurm will start it only there;
* ``scontrol release <id>`` — only when the update succeeded (``&&``), so a job is never released to run
  anywhere;
* an eviction is ``scontrol requeuehold <id>``: the running job is requeued (it ends now and runs again
  later) *and held*, so it does not take the capacity back before the job it made room for starts; a
  later decision releases it. Its grace period is honoured by signalling it first and waiting:
  ``scancel --signal=TERM --full <id>``, ``sleep <grace>``, then the requeue. A job whose partition's
  ``PreemptMode`` is ``CANCEL`` (``--slurm-partitions``) is cancelled instead, as Slurm would.

Slurm chooses the GPU indices on each node itself (``gres.conf``); placer's indices are in a comment, and
its node choice is what is applied. On a node of several GPU types (read as one placer node per type) the
type placer chose is applied too: the job's GPU request becomes ``TresPerNode=gres:gpu:<type>:<n>``
(cleared first, since Slurm refuses a typed request over an untyped one).

Only Slurm jobs are applied (jobs read from ``squeue --json``); others
are named in ``skipped`` (stderr). A job placed on several nodes gets them all in its ``NodeList``.

>>> from placer.solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import Job
>>> d = Decision(placements=[JobPlacement(job="5", replicas=[ReplicaPlacement(node="gpu01", gpus=[0, 1])])],
...              preemptions=[Eviction(job="2", for_=["5"], grace_period_s=30)])
>>> text, skipped = slurm_script(d, [Job(id="5", source_format="slurm")], {"2"})
>>> print(text.split("set -u", 1)[1].strip())
# eviction: job 2, for 5 (grace 30 s)
scancel --signal=TERM --full 2
sleep 30
scontrol requeuehold 2
<BLANKLINE>
# job 5: gpu01 (placer's GPUs: gpu01 [0,1])
scontrol update JobId=5 NumNodes=1 NodeList=gpu01 && scontrol release 5
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Iterable, Mapping

from placer.solver.decision import Decision, ReplicaPlacement
from placer.solver.jobs.model import Job

__all__ = ["slurm_script"]

#: A Slurm job id as ``squeue`` prints it (plain, array task, heterogeneous component).
_JOB_ID = re.compile(r"^[0-9]+(?:_[0-9]+|\+[0-9]+)?$")
#: A node name as Slurm accepts it in a NodeList (no blanks, brackets or commas inside one name).
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def slurm_script(
    decision: Decision,
    jobs: Iterable[Job],
    running_ids: Collection[str],
    cancel: Collection[str] = (),
    parts: Mapping[str, tuple[str, str]] | None = None,
) -> tuple[str, list[str]]:
    """``(shell script, notes on what was not applied)`` for ``decision`` (module docstring).
    ``running_ids``: ids of the running Slurm jobs (from ``squeue --json``), the only ones an eviction
    may requeue; ``cancel``: those of them whose partition cancels preempted jobs rather than requeue
    them; ``parts``: placer node -> (Slurm node, GPU type as Slurm names it) for the nodes that stand for
    one GPU type of a Slurm node with several (:mod:`~placer.topology.importers.slurm_mixed`)."""
    parts = parts or {}
    by_id = {j.id: j for j in jobs}
    skipped: list[str] = []
    lines = [
        "#!/bin/sh",
        f"# placer's decision applied to Slurm: {len(decision.placements)} placed, "
        f"{len(decision.preemptions)} evicted.",
        "# Slurm chooses the GPU indices on each node itself; placer's node choice is what is applied.",
        "set -u",
    ]
    for ev in decision.preemptions:
        if ev.job not in running_ids or not _JOB_ID.match(ev.job):
            skipped.append(f"{ev.job}: to evict, but it is not a running Slurm job; not requeued")
            continue
        lines += ["", f"# eviction: job {ev.job}, for {', '.join(ev.for_)} (grace {ev.grace_period_s} s)"]
        if ev.grace_period_s > 0:
            lines += [f"scancel --signal=TERM --full {ev.job}", f"sleep {ev.grace_period_s}"]
        lines.append(f"scancel {ev.job}" if ev.job in cancel else f"scontrol requeuehold {ev.job}")
    for p in decision.placements:
        job = by_id.get(p.job)
        if job is None or job.source_format != "slurm" or not _JOB_ID.match(p.job):
            what = "no job" if job is None else job.source_format
            skipped.append(f"{p.job}: placed, but it is not a pending Slurm job ({what}); not applied")
            continue
        if "slurm_het_job_id" in job.labels:
            # Slurm 22.05 takes no NodeList for a held het job's first component (the update goes to the
            # whole job: "Job resizing not supported"), and an ExcNodeList there binds every component.
            where = "; ".join(f"component {r.task_group}: {r.node}" for r in p.replicas)
            skipped.append(
                f"{p.job}: a heterogeneous job is placed ({where}), but scontrol cannot pin its components; "
                "not applied (it stays held)"
            )
            continue
        update = _update(p.job, p.replicas, parts, skipped, p.job)
        if update is None:
            continue
        gpus = "; ".join(f"{r.node} [{','.join(map(str, r.gpus))}]" for r in p.replicas if r.gpus)
        nodes = list(dict.fromkeys(parts.get(r.node, (r.node, ""))[0] for r in p.replicas))
        lines += ["", f"# job {p.job}: {','.join(nodes)}" + (f" (placer's GPUs: {gpus})" if gpus else "")]
        lines.append(f"{update} && scontrol release {p.job}")
    return "\n".join(lines) + "\n", skipped


def _update(
    target: str,
    replicas: list[ReplicaPlacement],
    parts: Mapping[str, tuple[str, str]],
    skipped: list[str],
    job: str,
) -> str | None:
    """The ``scontrol update`` commands that put Slurm job (or het job component) ``target`` on the nodes
    of ``replicas``, pinning its GPU type where the nodes stand for one type of a mixed node; None (and a
    note in ``skipped``) when that cannot be said to Slurm."""
    nodes = list(dict.fromkeys(parts.get(r.node, (r.node, ""))[0] for r in replicas))
    bad = [n for n in nodes if not _NODE.match(n)]
    if bad:
        skipped.append(f"{job}: node name {bad[0]!r} cannot be in a Slurm NodeList; not applied")
        return None
    pin = _gpu_type(job, replicas, parts, skipped)
    if pin is False:
        return None
    node_list = shlex.quote(",".join(nodes))
    update = f"scontrol update JobId={target} NumNodes={len(nodes)} NodeList={node_list}"
    if pin:  # Slurm refuses a typed request over an untyped one: cleared first (the job is held)
        update += f" && scontrol update JobId={target} TresPerNode= && scontrol update JobId={target} {pin}"
    return update


def _gpu_type(
    job: str, replicas: list[ReplicaPlacement], parts: Mapping[str, tuple[str, str]], skipped: list[str]
) -> str | bool | None:
    """The ``TresPerNode=gres:gpu:<type>:<n>`` that pins a job placed on a node of several GPU types to
    the type placer chose there (None when no replica is on such a node; False, with a note, when Slurm's
    one request per node cannot say it: different types or counts per node, or a node of one type
    besides, whose type Slurm would then require too)."""
    on_parts = [r for r in replicas if r.node in parts and r.gpus]
    if not on_parts:
        return None
    per_node: dict[str, int] = {}
    types: set[str] = set()
    for r in replicas:
        node, typ = parts.get(r.node, (r.node, ""))
        per_node[node] = per_node.get(node, 0) + len(r.gpus)
        types.add(typ)
    if len(types) > 1 or len(set(per_node.values())) > 1:
        skipped.append(
            f"{job}: placed on a node of several GPU types, with other GPU types or counts per node "
            "than one TresPerNode can ask for; not applied"
        )
        return False
    (typ,) = types
    return f"TresPerNode=gres:gpu:{typ}:{next(iter(per_node.values()))}"
