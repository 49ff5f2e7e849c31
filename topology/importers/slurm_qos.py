"""Slurm's QOS table (``sacctmgr show qos -P``) -> who may preempt whom, and how, under
``PreemptType=preempt/qos``.

Why: under ``preempt/qos`` (the common setup of Slurm GPU clusters: a ``scavenger`` or ``low`` QOS that
``normal`` and ``high`` jobs may take back) partitions do not decide preemption; each QOS lists the QOSes
its jobs may preempt (``Preempt``) and says how its own jobs go when preempted (``PreemptMode``, after its
``GraceTime``). ``squeue`` prints a job's QOS but none of that, so without this table placer proposes no
evictions on such a cluster.

placer's preemption rule is one order: a job may evict preemptible running jobs of strictly lower
priority. A QOS table becomes that order, exactly or not at all:

* a QOS's **level** is 0 when it preempts nothing, else one more than the highest level among the QOSes it
  lists; a job's placer **priority** is its QOS's level (Slurm's job priority number and the QOS's
  ``Priority`` only order jobs, never let one preempt another: they stay as the labels ``slurm_priority``
  and ``slurm_qos_priority``);
* a running job is **preemptible** when some QOS lists its QOS and its QOS's ``PreemptMode`` is ``requeue``
  or ``cancel`` (``cluster``: the cluster's ``PreemptMode``, ``scontrol show config``; ``off``, ``suspend``
  and ``gang`` keep it, as with partitions: placer does not suspend jobs);
* its **grace period** is its QOS's ``GraceTime``; the mode is the label ``slurm_preempt_mode``, so an
  eviction is applied as Slurm applies it (:mod:`placer.cli.slurm_apply`).

That order says what Slurm says only when every QOS of a higher level lists every preemptible QOS of a
lower one. Where it does not (``interactive`` preempts ``low``, ``batch`` preempts ``scavenger``, both at
level 1), one order cannot say it: the table is refused, naming the QOS pair, rather than let placer
propose an eviction Slurm would not make. A QOS that lists itself, or a cycle, is refused too.

**Limits.** A QOS's ``GrpJobs`` and ``GrpTRES=gres/gpu=N`` bound the jobs running in it and the GPUs
they hold, together; ``MaxJobsPU``/``MaxTRESPU`` the same per user, ``MaxJobsPA``/``MaxTRESPA`` per
account. Each is a group limit (:func:`qos_limits`: the groups ``qos/<name>``, ``qos/<name>/user/<user>``,
``qos/<name>/account/<account>``) that placer's engines keep and its checker checks, as Slurm's
scheduler keeps a job pending with ``QOSGrpJobsLimit``, ``QOSGrpGRES``, ``QOSMaxGRESPerUser``... Other
TRES in those limits (``cpu``, ``mem``, ``node``, ``billing``, a typed ``gres/gpu:a100``) are not
modelled: they are listed in :attr:`SlurmQos.unmodelled`, and the readers name them in a warning on each
job of the QOS.

Both ``sacctmgr -P`` (``--parsable2``) and ``--parsable`` (a trailing ``|``) are read; the header line is
required (it names the columns), ``Name``, ``Preempt`` and ``PreemptMode`` must be among them.

>>> text = '''Name|Priority|GraceTime|Preempt|PreemptExemptTime|PreemptMode|Flags
... normal|0|00:00:00|||cluster|
... low|10|00:01:00|||requeue|
... high|100|00:00:00|low||cluster|
... '''
>>> table = parse_slurm_qos(text, source="qos.txt")
>>> [(q.name, q.level, q.preemptible, q.grace_time_s) for q in table.values()]
[('normal', 0, False, 0), ('low', 0, True, 60), ('high', 1, False, 0)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from placer.topology.errors import Problem, TopologyError
from placer.topology.importers._common import counting_against, read_text, short, whole_number
from placer.topology.importers.sacctmgr import limit_fields, parsable_rows
from placer.topology.importers.slurm_assoc import AssocTable
from placer.topology.importers.slurm_partitions import (
    PREEMPTING_MODES,
    SlurmPartition,
    deciding_mode,
    preemption_applied,
    with_partition_rules,
)
from placer.topology.inventory import RunningJob

__all__ = [
    "SlurmQos",
    "level_of",
    "parse_slurm_qos",
    "qos_groups",
    "qos_limits",
    "read_qos_file",
    "with_partition_qos_groups",
    "with_preemption_rules",
    "with_qos_groups",
    "with_qos_rules",
]

_MODES = frozenset({"OFF", "CANCEL", "REQUEUE", "SUSPEND", "GANG", "WITHIN", "CLUSTER"})
_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


@dataclass(frozen=True)
class SlurmQos:
    """What placer reads of one QOS: what it may preempt, how its own jobs go, and its level."""

    name: str
    #: The QOS's ``Priority`` (a job priority factor; the label ``slurm_qos_priority``).
    priority: int = 0
    #: The QOSes its jobs may preempt.
    preempt: frozenset[str] = frozenset()
    #: ``PreemptMode``'s first deciding word, upper case, ``CLUSTER`` resolved to the cluster's mode.
    preempt_mode: str = "OFF"
    grace_time_s: int = 0
    #: Its place in placer's one order (module docstring): a job's priority.
    level: int = 0
    #: Some QOS may preempt it and its mode lets its jobs' resources go.
    preemptible: bool = False
    #: Its limits (None: none): jobs running and GPUs held in it together (``GrpJobs``, ``GrpTRES``), per
    #: user (``MaxJobsPU``, ``MaxTRESPU``) and per account (``MaxJobsPA``, ``MaxTRESPA``).
    grp_jobs: int | None = None
    grp_gpus: int | None = None
    user_jobs: int | None = None
    user_gpus: int | None = None
    account_jobs: int | None = None
    account_gpus: int | None = None
    #: GPUs one job may ask for, in all and per node (``MaxTRES``, ``MaxTRESPerNode``): a job asking more
    #: never runs (``QOSMaxGRESPerJob``, ``QOSMaxGRESPerNode``), and the readers reject it, naming the limit.
    job_gpus: int | None = None
    node_gpus: int | None = None
    #: Limits it states that placer does not model (``"GrpTRES cpu=100"``): the readers warn of them.
    unmodelled: tuple[str, ...] = ()


#: The limit columns read: column -> (the SlurmQos field, whether it is a TRES list).
_LIMITS = {
    "GrpJobs": ("grp_jobs", False),
    "GrpTRES": ("grp_gpus", True),
    "MaxJobsPU": ("user_jobs", False),
    "MaxTRESPU": ("user_gpus", True),
    "MaxJobsPA": ("account_jobs", False),
    "MaxTRESPA": ("account_gpus", True),
    "MaxTRES": ("job_gpus", True),
    "MaxTRESPerNode": ("node_gpus", True),
}
#: Limit columns whose values are never modelled (time, submissions, minimums).
_NOT_READ = (
    "GrpTRESMins",
    "GrpTRESRunMins",
    "GrpSubmit",
    "GrpWall",
    "MaxTRESMins",
    "MaxWall",
    "MaxSubmitPU",
    "MaxSubmitPA",
    "MinTRES",
)


def _limits(row: dict[str, str], item: str, source: str, problems: list[Problem]) -> dict[str, object]:
    """The limit columns of one row as :class:`SlurmQos` fields (and ``unmodelled``)."""
    return limit_fields(row, _LIMITS, _NOT_READ, item, source, problems)


def qos_limits(
    qos: SlurmQos, user: str | None, account: str | None
) -> list[tuple[str, int | None, int | None]]:
    """The group limits a job of ``qos`` run by ``user`` under ``account`` counts against, each as (group,
    max jobs, max GPUs): ``qos/<name>``, ``qos/<name>/user/<user>``, ``qos/<name>/account/<account>``
    (module docstring), those the QOS limits.

    >>> q = SlurmQos("gpu", grp_gpus=16, user_jobs=2)
    >>> qos_limits(q, "ana", "ml")
    [('qos/gpu', None, 16), ('qos/gpu/user/ana', 2, None)]
    """
    out: list[tuple[str, int | None, int | None]] = []
    if qos.grp_jobs is not None or qos.grp_gpus is not None:
        out.append((f"qos/{qos.name}", qos.grp_jobs, qos.grp_gpus))
    if user and (qos.user_jobs is not None or qos.user_gpus is not None):
        out.append((f"qos/{qos.name}/user/{user}", qos.user_jobs, qos.user_gpus))
    if account and (qos.account_jobs is not None or qos.account_gpus is not None):
        out.append((f"qos/{qos.name}/account/{account}", qos.account_jobs, qos.account_gpus))
    return out


def qos_groups(qos: SlurmQos, user: str | None, account: str | None) -> list[str]:
    """The groups of :func:`qos_limits` (what a running job of ``qos`` counts against)."""
    return [g for g, _, _ in qos_limits(qos, user, account)]


def _counting(rj: RunningJob, qos: SlurmQos) -> RunningJob:
    """``rj`` counting against the groups of ``qos``'s limits for its user and account."""
    return counting_against(rj, qos_groups(qos, rj.labels.get("slurm_user"), rj.labels.get("slurm_account")))


def _seconds(text: str) -> int | None:
    """Slurm's duration ``[D-][HH:]MM:SS`` in seconds (None when it is not one).

    >>> _seconds("00:01:30"), _seconds("1-00:00:00"), _seconds("5:00"), _seconds("soon")
    (90, 86400, 300, None)
    """
    m = _DURATION.match(text.strip())
    if m is None:
        return None
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _rows(text: str, source: str, problems: list[Problem]) -> list[tuple[int, dict[str, str]]]:
    return parsable_rows(
        text, source, problems, ("Name", "Preempt", "PreemptMode"), "QOS", "sacctmgr show qos -P"
    )


def parse_slurm_qos(
    text: str, *, source: str, cluster_mode: str | None = None, limits_only: bool = False
) -> dict[str, SlurmQos]:
    """``sacctmgr show qos -P`` text -> name -> :class:`SlurmQos`, in the order given. ``cluster_mode``: the
    cluster's ``PreemptMode`` (``scontrol show config``), what a QOS whose mode is ``cluster`` means; None
    when not known, which is fine unless such a QOS may be preempted. ``limits_only``: the table is read
    for its limits alone (a cluster that preempts by partition, ``--slurm-qos-limits``): every QOS is level
    0 and not preemptible, and what only preemption needs (one order, the cluster's mode) is not asked.
    ``TopologyError`` naming each problem (module docstring)."""
    problems: list[Problem] = []
    read: dict[str, tuple[str, int, frozenset[str], str, int]] = {}
    limits: dict[str, dict[str, object]] = {}
    for number, row in _rows(text, source, problems):
        name = row["Name"]
        item = f"line {number} (QOS {name})"
        if not name:
            problems.append(Problem(source, item, "Name is empty"))
            continue
        if name in read:
            problems.append(Problem(source, item, "the QOS is given twice"))
        priority_text = row.get("Priority", "") or "0"
        if whole_number(priority_text) is None:
            problems.append(Problem(source, item, f"Priority {short(priority_text)} is not a whole number"))
        grace = _seconds(row.get("GraceTime", "") or "00:00:00")
        if grace is None:
            problems.append(Problem(source, item, f"GraceTime {short(row['GraceTime'])} is not [D-]HH:MM:SS"))
        words = [w.strip().upper() for w in (row["PreemptMode"] or "cluster").split(",") if w.strip()]
        unknown = [w for w in words if w not in _MODES]
        if not words or unknown:
            allowed = ", ".join(sorted(m.lower() for m in _MODES))
            what = f"PreemptMode {short(row['PreemptMode'])} is not one of {allowed}"
            problems.append(Problem(source, item, what))
            words = ["OFF"]
        mode = deciding_mode(words)
        preempt = frozenset(p.strip() for p in row["Preempt"].split(",") if p.strip())
        read[name] = (item, whole_number(priority_text) or 0, preempt, mode, grace or 0)
        limits[name] = _limits(row, item, source, problems)
    for name, (item, _, preempt, _, _) in read.items():
        for other in sorted(preempt - set(read)):
            problems.append(Problem(source, item, f"Preempt names QOS {other!r}, which is not in the table"))
        if name in preempt:
            problems.append(Problem(source, item, "the QOS lists itself in Preempt"))
    if problems:
        raise TopologyError(problems)
    if limits_only:
        return {
            name: SlurmQos(name=name, priority=priority, grace_time_s=grace, **limits[name])  # type: ignore[arg-type]
            for name, (_, priority, _, _, grace) in read.items()
        }
    levels = _levels({n: r[2] for n, r in read.items()}, source, {n: r[0] for n, r in read.items()})
    preempted = {p for r in read.values() for p in r[2]}
    out: dict[str, SlurmQos] = {}
    for name, (item, priority, preempt, mode, grace) in read.items():
        if mode == "CLUSTER" and name in preempted:
            if cluster_mode is None:
                why = (
                    "PreemptMode is cluster and a QOS may preempt it: give the cluster's PreemptMode "
                    "(scontrol show config; --slurm-preempt-mode)"
                )
                problems.append(Problem(source, item, why))
                continue
            mode = cluster_mode.split(",")[0].strip().upper()
        out[name] = SlurmQos(
            name=name,
            priority=priority,
            preempt=preempt,
            preempt_mode=mode,
            grace_time_s=grace,
            level=levels[name],
            preemptible=name in preempted and mode in PREEMPTING_MODES,
            **limits[name],  # type: ignore[arg-type]
        )
    if not problems:
        problems = _one_order(out, source, {n: r[0] for n, r in read.items()})
    if problems:
        raise TopologyError(problems)
    return out


def _levels(preempts: dict[str, frozenset[str]], source: str, items: dict[str, str]) -> dict[str, int]:
    """Each QOS's level (module docstring); ``TopologyError`` naming a QOS on a cycle of ``Preempt``."""
    levels: dict[str, int] = {}
    on_path: list[str] = []

    def visit(name: str) -> int:
        if name in levels:
            return levels[name]
        if name in on_path:
            cycle = " -> ".join([*on_path[on_path.index(name) :], name])
            raise TopologyError([Problem(source, items[name], f"Preempt makes a cycle ({cycle})")])
        on_path.append(name)
        level = max((visit(p) + 1 for p in sorted(preempts[name])), default=0)
        on_path.pop()
        levels[name] = level
        return level

    for name in preempts:
        visit(name)
    return levels


def _one_order(table: dict[str, SlurmQos], source: str, items: dict[str, str]) -> list[Problem]:
    """Where placer's one order would let a job evict one Slurm would keep: a higher-level QOS that does
    not list a preemptible lower-level one."""
    problems = []
    for q in table.values():
        for victim in table.values():
            if victim.preemptible and q.level > victim.level and victim.name not in q.preempt:
                why = (
                    f"QOS {q.name!r} (level {q.level}) ranks above preemptible QOS {victim.name!r} (level "
                    f"{victim.level}) but does not list it in Preempt: placer's one priority order cannot "
                    "say that (docs/slurm.md)"
                )
                problems.append(Problem(source, items[q.name], why))
    return problems


def read_qos_file(
    path: str, *, cluster_mode: str | None = None, limits_only: bool = False
) -> dict[str, SlurmQos]:
    """:func:`parse_slurm_qos` of a file (``OSError`` when it cannot be opened; ``TopologyError`` when it
    is not UTF-8 text)."""
    source, text = read_text(path)
    return parse_slurm_qos(text, source=source, cluster_mode=cluster_mode, limits_only=limits_only)


def level_of(qos: str | None, table: dict[str, SlurmQos], *, item: str) -> SlurmQos:
    """The QOS a job names, from ``table``; ``TopologyError`` naming ``item`` when it names none or one
    not in the table."""
    if not qos or qos not in table:
        what = (
            f"QOS {qos!r} is not among the QOSes read"
            if qos
            else "it names no QOS (Slurm without accounting)"
        )
        raise TopologyError([Problem("qos", item, what)])
    return table[qos]


def with_qos_rules(jobs: list[RunningJob], table: dict[str, SlurmQos], *, source: str) -> list[RunningJob]:
    """Running Slurm jobs (``squeue --json``, ``scontrol show job -d``; their QOS in the label
    ``slurm_qos``) with their QOS's level as priority, preemptibility, grace period and mode (module
    docstring, :func:`~.slurm_partitions.preemption_applied`); the QOS's ``Priority`` as the label
    ``slurm_qos_priority``; the groups of its QOS's limits (:func:`qos_groups`) in ``limit_groups``.
    ``TopologyError`` naming every job whose QOS is not in ``table``."""

    def rule(rj: RunningJob) -> tuple[int, bool, int, str, dict[str, str]]:
        q = level_of(rj.labels.get("slurm_qos"), table, item=f"job {rj.job}")
        return q.level, q.preemptible, q.grace_time_s, q.preempt_mode, {"slurm_qos_priority": str(q.priority)}

    out = []
    for rj in preemption_applied(jobs, rule, source=source):
        q = table[rj.labels["slurm_qos"]]  # every job's QOS is known here (preemption_applied raised)
        out.append(_counting(rj, q))
    return out


def with_qos_groups(jobs: list[RunningJob], table: dict[str, SlurmQos], *, source: str) -> list[RunningJob]:
    """Running Slurm jobs with the groups of their QOS's limits (:func:`qos_groups`) in ``limit_groups``,
    and nothing else changed (the QOS table read for its limits alone). ``TopologyError`` naming every job
    whose QOS is not in ``table``: its limits are not known, so what it counts against is not either."""
    problems: list[Problem] = []
    out: list[RunningJob] = []
    for rj in jobs:
        try:
            q = level_of(rj.labels.get("slurm_qos"), table, item=f"job {rj.job}")
        except TopologyError as e:
            problems.extend(Problem(source, p.item, p.message) for p in e.problems)
            continue
        out.append(_counting(rj, q))
    if problems:
        raise TopologyError(problems)
    return out


def with_partition_qos_groups(
    jobs: list[RunningJob], partitions: dict[str, SlurmPartition], table: dict[str, SlurmQos]
) -> list[RunningJob]:
    """Running Slurm jobs with the groups of their partition's QOS (``QOS=`` of the partition: its limits
    count every job of the partition, whatever the job's own QOS; :func:`qos_groups`) in ``limit_groups``,
    a group already there not added twice. A partition, or its QOS, missing from the tables adds nothing
    (the pending jobs' readers warn of it)."""
    out = []
    for rj in jobs:
        name = (rj.labels.get("slurm_partition") or rj.queue or "").split(",")[0]
        part = partitions.get(name)
        q = table.get(part.qos) if part is not None and part.qos is not None else None
        out.append(rj if q is None else _counting(rj, q))
    return out


def with_preemption_rules(
    jobs: list[RunningJob],
    *,
    partitions: dict[str, SlurmPartition] | None,
    qos: dict[str, SlurmQos] | None,
    source: str,
    qos_limits: dict[str, SlurmQos] | None = None,
    assoc: AssocTable | None = None,
) -> list[RunningJob]:
    """Running Slurm jobs with the preemption rules of the QOS table when it is given (``preempt/qos``;
    partitions given too only add their partition QOS's groups), else of the partitions; unchanged with
    neither. ``qos_limits``:
    a QOS table read for its limits alone (with partitions, or none), whose groups the jobs then count
    against (:func:`with_qos_groups`; with partitions, their partition QOS's groups too:
    :func:`with_partition_qos_groups`); ``assoc``: the associations, whose limits' groups they count
    against (:func:`.slurm_assoc.with_assoc_groups`)."""
    if partitions is not None and qos is None:
        jobs = with_partition_rules(jobs, partitions, source=source)
    if qos is not None:
        jobs = with_qos_rules(jobs, qos, source=source)
    if qos_limits is not None:
        jobs = with_qos_groups(jobs, qos_limits, source=source)
    limits = qos if qos is not None else qos_limits  # one QOS table at most (callers refuse both)
    if partitions is not None and limits is not None:  # partition QOSes hold under either preemption
        jobs = with_partition_qos_groups(jobs, partitions, limits)
    if assoc is not None:
        from placer.topology.importers.slurm_assoc import (
            with_assoc_groups,
        )  # it reads rows as this module does

        jobs = with_assoc_groups(jobs, assoc, source=source)
    return jobs
