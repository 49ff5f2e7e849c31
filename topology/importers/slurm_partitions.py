"""Slurm's partitions (``scontrol show partition``, or the ``PartitionName=`` lines of ``slurm.conf``) -> who
may preempt whom, and how.

Why: ``squeue`` does not say whether a running job may be preempted. Under Slurm's
``PreemptType=preempt/partition_prio`` that is a property of partitions: a pending job may preempt running
jobs of partitions with a lower ``PriorityTier`` whose ``PreemptMode`` lets them go (``REQUEUE``,
``CANCEL``), after the partition's ``GraceTime``. Without that, placer proposes no evictions on a Slurm
cluster; with it, placer's own preemption rule (evict only for strictly higher priority, only preemptible
jobs, grace honoured) reproduces Slurm's:

* a job's **priority** is its partition's ``PriorityTier`` (a pending job listed in several partitions: the
  highest tier among them). Slurm's own job priority number only orders jobs within a tier and never lets
  one preempt another, so placer keeps it as the label ``slurm_priority`` and does not rank by it;
* a running job is **preemptible** when its partition's ``PreemptMode`` is ``REQUEUE`` or ``CANCEL``;
  ``OFF``, ``SUSPEND`` and ``GANG`` keep it (placer does not suspend jobs: a suspended job keeps its
  memory, and its GPUs stay bound to it);
* its **grace period** is the partition's ``GraceTime`` (seconds; 0 is none, as Slurm reads it);
* the mode is kept as the label ``slurm_preempt_mode``, so an eviction is applied as Slurm would apply it:
  requeued (held) for ``REQUEUE``, cancelled for ``CANCEL`` (:mod:`placer.cli.slurm_apply`).

Under QOS-based preemption (``preempt/qos``) partitions do not decide: :mod:`.slurm_qos` reads the QOSes.

Both forms are ``Key=Value`` records, one per partition (``scontrol show partition`` prints each over
several lines, ``slurm.conf`` on one); in ``slurm.conf``, ``PartitionName=DEFAULT`` sets defaults for
the lines after it, and the global ``PreemptMode=`` line is the mode of partitions that name none (as
Slurm reads it). Every problem is named (record, key, value); nothing is skipped.

>>> text = '''PartitionName=gpu
...    AllocNodes=ALL Default=YES QoS=N/A GraceTime=0 Hidden=NO
...    PriorityJobFactor=1 PriorityTier=10 RootOnly=NO ReqResv=NO OverSubscribe=NO
...    OverTimeLimit=NONE PreemptMode=OFF
...
... PartitionName=scavenger
...    GraceTime=60 PriorityTier=1 PreemptMode=REQUEUE
... '''
>>> parts = parse_slurm_partitions(text, source="show-partition.txt")
>>> parts["gpu"].preemptible, parts["scavenger"].preemptible, parts["scavenger"].grace_time_s
(False, True, 60)
>>> tier_of("scavenger,gpu", parts, item="job 7")
10
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from placer.topology.errors import Problem, TopologyError
from placer.topology.importers._common import read_text, short, whole_number
from placer.topology.inventory import RunningJob

__all__ = [
    "PREEMPTING_MODES",
    "Rule",
    "SlurmPartition",
    "deciding_mode",
    "parse_slurm_partitions",
    "preemption_applied",
    "read_partitions_file",
    "tier_of",
    "with_partition_rules",
]

#: ``PreemptMode`` values under which a running job's resources go to the preemptor.
PREEMPTING_MODES = frozenset({"REQUEUE", "CANCEL"})
_MODES = frozenset({"OFF", "CANCEL", "REQUEUE", "SUSPEND", "GANG", "WITHIN", "PRIORITY"})
_PAIR = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)=(.*)$")


@dataclass(frozen=True)
class SlurmPartition:
    """What placer reads of one partition: its tier, preemption mode and grace time, and what decides
    whether and how it starts a job (state, ``OverSubscribe=EXCLUSIVE``, ``MaxTime``, ``MaxNodes``,
    ``MinNodes``)."""

    name: str
    priority_tier: int = 1
    #: ``PreemptMode``'s first word (``REQUEUE`` of ``REQUEUE,GANG``), upper case.
    preempt_mode: str = "OFF"
    grace_time_s: int = 0
    #: ``State``: ``UP``, ``DRAIN`` (takes no new jobs, starts those queued), ``DOWN`` (queues jobs, starts
    #: none: ``PartitionDown``) or ``INACTIVE`` (neither).
    state: str = "UP"
    #: ``OverSubscribe=EXCLUSIVE``: each job holds its nodes whole.
    exclusive: bool = False
    #: ``MaxTime`` in minutes (None: unlimited) and ``MaxNodes``/``MinNodes``: a job beyond them stays pending
    #: for good (``PartitionTimeLimit``, ``PartitionNodeLimit``).
    max_time_min: int | None = None
    max_nodes: int | None = None
    min_nodes: int = 0
    #: The partition's QOS (``QoS=``/``QOS=``; None for ``N/A``): its limits apply to the partition's jobs
    #: (with the QOS table: ``slurm_qos.with_partition_qos_groups`` for running jobs, the pending readers'
    #: partition rules for pending ones; without it the readers warn).
    qos: str | None = None

    def refuses(self, nodes: int | None, time_limit_min: float | None) -> str | None:
        """Why this partition starts no job of ``nodes`` nodes and this time limit (None: it may).

        >>> SlurmPartition("short", max_time_min=60).refuses(1, 120)
        "partition 'short' has MaxTime=60 minutes and the job's time limit is 120 (PartitionTimeLimit)"
        >>> SlurmPartition("gpu", state="DOWN").refuses(1, None)
        "partition 'gpu' is DOWN: Slurm starts none of its jobs (PartitionDown)"
        """
        if self.state in ("DOWN", "INACTIVE"):
            return f"partition {self.name!r} is {self.state}: Slurm starts none of its jobs (PartitionDown)"
        if (
            self.max_time_min is not None
            and time_limit_min is not None
            and time_limit_min > self.max_time_min
        ):
            return (
                f"partition {self.name!r} has MaxTime={self.max_time_min} minutes and the job's time limit "
                f"is {time_limit_min:g} (PartitionTimeLimit)"
            )
        if nodes is not None and (
            (self.max_nodes is not None and nodes > self.max_nodes) or nodes < self.min_nodes
        ):
            most = "UNLIMITED" if self.max_nodes is None else self.max_nodes
            return (
                f"partition {self.name!r} takes jobs of {self.min_nodes} to {most} nodes and the job asks "
                f"{nodes} (PartitionNodeLimit)"
            )
        return None

    @property
    def preemptible(self) -> bool:
        """Whether its running jobs may be preempted (their resources go to the preemptor)."""
        return self.preempt_mode in PREEMPTING_MODES


def _records(text: str) -> list[tuple[int, dict[str, str]]]:
    """``(line, {key: value})`` per ``PartitionName=`` record, plus the global keys as record ``0``
    (``slurm.conf``'s other lines). Comments (``#``) are dropped; ``\\`` continues a line."""
    records: list[tuple[int, dict[str, str]]] = []
    globals_: dict[str, str] = {}
    current: dict[str, str] | None = None
    joined = re.sub(r"\\\n", " ", text)
    for number, raw in enumerate(joined.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            current = None if not raw.startswith((" ", "\t")) else current
            continue
        tokens = line.split()
        if tokens[0].startswith("PartitionName="):
            current = {}
            records.append((number, current))
        elif not raw.startswith((" ", "\t")):
            current = None  # a slurm.conf line of its own (NodeName=..., SchedulerType=...)
        for token in tokens:
            m = _PAIR.match(token)
            target = current if current is not None else globals_
            if m is None:
                target.setdefault("", token)  # text that is not Key=Value: named below if it matters
                continue
            target[m[1]] = m[2]
    return [(0, globals_), *records]


def parse_slurm_partitions(text: str, *, source: str) -> dict[str, SlurmPartition]:
    """``scontrol show partition`` or ``slurm.conf`` text -> name -> :class:`SlurmPartition`;
    ``TopologyError`` naming each problem (an unknown ``PreemptMode``, a tier or grace time that is not a
    whole number, a partition given twice, no partition at all)."""
    problems: list[Problem] = []
    (_, globals_), *records = _records(text)
    default_mode = globals_.get("PreemptMode", "OFF")
    defaults: dict[str, str] = {}
    out: dict[str, SlurmPartition] = {}
    for number, record in records:
        name = record["PartitionName"]
        item = f"line {number} (PartitionName={name})"
        if name.upper() == "DEFAULT":
            defaults = {**defaults, **{k: v for k, v in record.items() if k != "PartitionName"}}
            continue
        values = {**defaults, **record}
        if "" in record:
            text = f"unexpected text {short(record[''])} (expected Key=Value)"
            problems.append(Problem(source, item, text))
        if not name.strip():
            problems.append(Problem(source, item, "PartitionName is empty"))
            continue
        if name in out:
            problems.append(Problem(source, item, "the partition is given twice"))
        numbers: dict[str, int] = {}
        for key, fallback in (("PriorityTier", "1"), ("GraceTime", "0")):
            value = values.get(key, fallback)
            whole = whole_number(value)
            if whole is None:
                problems.append(Problem(source, item, f"{key} {short(value)} is not a whole number"))
            numbers[key] = whole or 0
        mode_text = values.get("PreemptMode", default_mode)
        words = [w.strip().upper() for w in mode_text.split(",") if w.strip()]
        unknown = [w for w in words if w not in _MODES]
        if not words or unknown:
            problems.append(
                Problem(
                    source,
                    item,
                    f"PreemptMode {short(mode_text)} is not one of {', '.join(sorted(_MODES))} "
                    "(comma-separated)",
                )
            )
            words = ["OFF"]
        mode = deciding_mode(words)
        tier, grace = numbers["PriorityTier"], numbers["GraceTime"]
        out[name] = SlurmPartition(
            name=name,
            priority_tier=tier,
            preempt_mode=mode,
            grace_time_s=grace,
            **_start_rules(values, item, source, problems),  # type: ignore[arg-type]
        )
    if not out and not problems:
        problems.append(Problem(source, "document", "no PartitionName= record (scontrol show partition)"))
    if problems:
        raise TopologyError(problems)
    return out


_STATES = frozenset({"UP", "DOWN", "DRAIN", "INACTIVE"})


def _start_rules(
    values: dict[str, str], item: str, source: str, problems: list[Problem]
) -> dict[str, object]:
    """``State``, ``OverSubscribe``, ``MaxTime``, ``MaxNodes`` and ``MinNodes`` of a record as
    :class:`SlurmPartition` fields (Slurm's defaults where absent); a value Slurm would not print is a
    problem naming the key."""
    from placer.topology.importers.slurm_job_text import parse_time_limit

    out: dict[str, object] = {}
    state = values.get("State", "UP").upper()
    if state not in _STATES:
        problems.append(
            Problem(source, item, f"State {short(state)} is not one of {', '.join(sorted(_STATES))}")
        )
    out["state"] = state if state in _STATES else "UP"
    out["exclusive"] = values.get("OverSubscribe", "NO").upper().startswith("EXCLUSIVE")
    qos = values.get("QoS", values.get("QOS", ""))
    out["qos"] = qos if qos not in ("", "N/A", "(null)") else None
    try:
        out["max_time_min"] = parse_time_limit(values.get("MaxTime", "UNLIMITED"))
    except ValueError:
        problems.append(Problem(source, item, f"MaxTime {short(values.get('MaxTime'))} is not a Slurm time"))
    for key, field, unlimited in (("MaxNodes", "max_nodes", None), ("MinNodes", "min_nodes", 0)):
        text = values.get(key, "UNLIMITED")
        if text.upper() in ("UNLIMITED", "INFINITE"):
            out[field] = unlimited
        elif whole_number(text) is not None:
            out[field] = whole_number(text)
        else:
            problems.append(Problem(source, item, f"{key} {short(text)} is not a whole number or UNLIMITED"))
    return out


def read_partitions_file(path: str) -> dict[str, SlurmPartition]:
    """:func:`parse_slurm_partitions` of a file (``OSError`` when it cannot be opened; ``TopologyError``
    when it is not UTF-8 text)."""
    source, text = read_text(path)
    return parse_slurm_partitions(text, source=source)


def deciding_mode(words: list[str]) -> str:
    """The word of a ``PreemptMode`` list (upper case) that says what happens to a preempted job: the
    first of ``REQUEUE``, ``CANCEL``, ``SUSPEND``, ``OFF`` (or ``CLUSTER``, a QOS's "the cluster's"),
    else the first word (``GANG`` alone, ``WITHIN``).

    >>> deciding_mode(["GANG", "REQUEUE"]), deciding_mode(["GANG"])
    ('REQUEUE', 'GANG')
    """
    return next((w for w in words if w in PREEMPTING_MODES | {"SUSPEND", "OFF", "CLUSTER"}), words[0])


#: A running job -> (its priority, preemptible, grace seconds, preemption mode, labels to add); raises
#: ``TopologyError`` naming the job when its table does not list it.
Rule = Callable[[RunningJob], tuple[int, bool, int, str, dict[str, str]]]


def preemption_applied(jobs: list[RunningJob], rule: Rule, *, source: str) -> list[RunningJob]:
    """Running Slurm jobs with what ``rule`` says of each (a partition's or a QOS's): priority,
    preemptibility, grace period, and the mode as the label ``slurm_preempt_mode``; Slurm's priority number
    moves to the label ``slurm_priority``. ``TopologyError`` naming every job the rule does not know."""
    problems: list[Problem] = []
    out: list[RunningJob] = []
    for rj in jobs:
        try:
            priority, preemptible, grace, mode, extra = rule(rj)
        except TopologyError as e:
            problems.extend(Problem(source, p.item, p.message) for p in e.problems)
            continue
        labels = {**rj.labels, "slurm_priority": str(rj.priority), "slurm_preempt_mode": mode, **extra}
        update = {"priority": priority, "preemptible": preemptible, "grace_period_s": grace, "labels": labels}
        out.append(rj.model_copy(update=update))
    if problems:
        raise TopologyError(problems)
    return out


def tier_of(partitions: str, table: dict[str, SlurmPartition], *, item: str) -> int:
    """The priority of a job in ``partitions`` (Slurm's comma list): the highest ``PriorityTier`` among
    them. ``TopologyError`` naming ``item`` when one is not in ``table``."""
    names = [p for p in partitions.split(",") if p]
    unknown = [p for p in names if p not in table]
    if unknown or not names:
        what = f"partition {unknown[0]!r} is" if unknown else "no partition is"
        raise TopologyError([Problem("partitions", item, f"{what} not among the partitions read")])
    return max(table[p].priority_tier for p in names)


def with_partition_rules(
    jobs: list[RunningJob], table: dict[str, SlurmPartition], *, source: str
) -> list[RunningJob]:
    """Running Slurm jobs (``squeue --json``, ``scontrol show job -d``) with their partition's tier as
    priority, preemptibility, grace period and mode (module docstring, :func:`preemption_applied`).
    ``TopologyError`` naming every job whose partition is not in ``table``."""

    def rule(rj: RunningJob) -> tuple[int, bool, int, str, dict[str, str]]:
        name = rj.labels.get("slurm_partition") or rj.queue or ""
        tier = tier_of(name, table, item=f"job {rj.job}")
        part = table[name.split(",")[0]]
        return tier, part.preemptible, part.grace_time_s, part.preempt_mode, {}

    return preemption_applied(jobs, rule, source=source)
