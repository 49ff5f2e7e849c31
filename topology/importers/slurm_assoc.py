"""Slurm's associations (``sacctmgr show assoc tree -P``) -> the job and GPU limits of accounts and users.

Why: on most Slurm GPU clusters the GPU quota lives on the association, not on a QOS: "account ``vision``
may hold 16 GPUs" is ``sacctmgr modify account vision set GrpTRES=gres/gpu=16``. ``squeue`` prints a job's
account and user but none of its association's limits, so without this table placer places jobs Slurm
then keeps pending (``AssocGrpGRES``, ``AssocGrpJobsLimit``, ``AssocMaxJobsLimit``).

What is read (as Slurm 22.05's ``sacctmgr`` man page defines the limits), each as a group limit
(``Job.limits`` on pending jobs, ``RunningJob.limit_groups`` on running ones):

* an **account** association's ``GrpJobs`` and ``GrpTRES=gres/gpu=N``: the running jobs, and the GPUs
  they hold, "in aggregate for this association and all associations which are children of this
  association" — every job of the account and of the accounts under it (group ``assoc/<account>``);
* a **user** association's ``GrpJobs``, ``GrpTRES=gres/gpu=N`` and ``MaxJobs``: that user's jobs under that
  account (and partition, for an association that names one; group ``assoc/<account>/user/<user>``, with
  ``/partition/<p>``). A user's row shows the ``MaxJobs`` it inherits from its account (seen on Slurm
  22.05), so an account's own ``MaxJobs`` ("each user is allowed") needs nothing more.

Which accounts are under which comes from the ``tree`` form (an account's depth is the spaces before its
name) or a ``ParentName`` column (``format=...,ParentName``). Without either, a limit on an account other
than ``root`` is refused, naming it: its sub-accounts' jobs would escape it. Associations of several
clusters are refused too (give one cluster's: ``cluster=NAME``).

Per job, ``MaxTRES=gres/gpu=N`` and ``MaxTRESPerNode=gres/gpu=N`` (a user's own, else the nearest
account's) bound what one job may ask: a job asking more never runs (``AssocMaxGRESPerJob``), and the
readers reject it, naming the limit. Other limits (``MaxWall``, submit and TRES-minute limits, and CPU,
memory, node or typed ``gres/gpu:a100`` TRES) are not modelled: they are listed in
:attr:`SlurmAssoc.unmodelled` and the readers name them in a warning on each job they apply to.

>>> text = '''Cluster|Account|User|Partition|GrpJobs|GrpTRES|MaxJobs
... placer|root|||||
... placer| ml||||gres/gpu=12|
... placer|  vision||||gres/gpu=4|2
... placer|   vision|ana||||2
... '''
>>> table = parse_slurm_assoc(text, source="assoc.txt")
>>> table.limits("vision", "ana", None)
[('assoc/vision/user/ana', 2, None), ('assoc/vision', None, 4), ('assoc/ml', None, 12)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placer.topology.errors import Problem, TopologyError
from placer.topology.importers._common import counting_against, read_text
from placer.topology.importers.sacctmgr import limit_fields, parsable_rows
from placer.topology.inventory import RunningJob

__all__ = ["AssocTable", "SlurmAssoc", "parse_slurm_assoc", "read_assoc_file", "with_assoc_groups"]

#: The limit columns read: column -> (the SlurmAssoc field, whether it is a TRES list).
_LIMITS = {
    "GrpJobs": ("grp_jobs", False),
    "GrpTRES": ("grp_gpus", True),
    "MaxJobs": ("max_jobs", False),
    "MaxTRES": ("job_gpus", True),
    "MaxTRESPerNode": ("node_gpus", True),
}
#: Limit columns whose values are never modelled.
_NOT_READ = (
    "GrpSubmit",
    "GrpWall",
    "GrpTRESMins",
    "GrpTRESRunMins",
    "MaxSubmit",
    "MaxWall",
    "MaxTRESMins",
)
_COMMAND = "sacctmgr show assoc tree -P"


@dataclass(frozen=True)
class SlurmAssoc:
    """What placer reads of one association: whose it is, its parent account, and its limits."""

    account: str
    user: str | None = None
    partition: str | None = None
    #: The account above (an account association's; None for ``root`` or where the table does not say).
    parent: str | None = None
    grp_jobs: int | None = None
    grp_gpus: int | None = None
    max_jobs: int | None = None
    #: GPUs one job may ask for, in all and per node (``MaxTRES``, ``MaxTRESPerNode``; a user's own, else
    #: the nearest account's above it, as Slurm inherits them): a job asking more never runs.
    job_gpus: int | None = None
    node_gpus: int | None = None
    #: Limits it sets that placer does not model (``"MaxTRES gres/gpu=8"``): the readers warn of them.
    unmodelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class AssocTable:
    """One cluster's associations: accounts by name, users' by (account, user, partition)."""

    accounts: dict[str, SlurmAssoc] = field(default_factory=dict)
    users: dict[tuple[str, str, str | None], SlurmAssoc] = field(default_factory=dict)

    def user_assoc(self, account: str, user: str, partition: str | None) -> SlurmAssoc | None:
        """The association a job of ``user`` under ``account`` in ``partition`` runs under: the one naming
        that partition, else the user's one without a partition."""
        if partition is not None:
            hit = self.users.get((account, user, partition))
            if hit is not None:
                return hit
        return self.users.get((account, user, None))

    def limits(
        self, account: str | None, user: str | None, partition: str | None, *, item: str = "job"
    ) -> list[tuple[str, int | None, int | None]]:
        """The group limits a job counts against, each as (group, max jobs, max GPUs): its user
        association's, then its account's and each account's above it (module docstring), those that
        limit anything. ``TopologyError`` naming ``item`` when the job names no account or user, or the
        table has no association for them (Slurm would not run it)."""
        assoc = self._assoc_of(account, user, partition, item)
        out: list[tuple[str, int | None, int | None]] = []
        jobs = _least(assoc.grp_jobs, assoc.max_jobs)
        if jobs is not None or assoc.grp_gpus is not None:
            group = f"assoc/{assoc.account}/user/{assoc.user}"
            out.append(
                (
                    group if assoc.partition is None else f"{group}/partition/{assoc.partition}",
                    jobs,
                    assoc.grp_gpus,
                )
            )
        seen: set[str] = set()
        name: str | None = assoc.account
        while name is not None and name not in seen:
            seen.add(name)
            acct = self.accounts.get(name)
            if acct is None:
                break
            if acct.grp_jobs is not None or acct.grp_gpus is not None:
                out.append((f"assoc/{name}", acct.grp_jobs, acct.grp_gpus))
            name = acct.parent
        return out

    def per_job(
        self, account: str | None, user: str | None, partition: str | None
    ) -> tuple[int | None, int | None]:
        """The most GPUs a job of this association may ask for, in all and per node (``MaxTRES``,
        ``MaxTRESPerNode``): the user association's own, else the nearest account's above it; (None,
        None) when none is set or the job has no association here."""
        try:
            assoc = self._assoc_of(account, user, partition, "job")
        except TopologyError:
            return None, None
        job, node = assoc.job_gpus, assoc.node_gpus
        name: str | None = assoc.account
        seen: set[str] = set()
        while (
            (job is None or node is None) and name is not None and name not in seen and name in self.accounts
        ):
            seen.add(name)
            acct = self.accounts[name]
            job = acct.job_gpus if job is None else job
            node = acct.node_gpus if node is None else node
            name = acct.parent
        return job, node

    def unmodelled(self, account: str | None, user: str | None, partition: str | None) -> tuple[str, ...]:
        """What the job's associations limit that placer does not model (for a warning; empty when the
        job has no association here)."""
        try:
            assoc = self._assoc_of(account, user, partition, "job")
        except TopologyError:
            return ()
        out = list(assoc.unmodelled)
        name: str | None = assoc.account
        seen: set[str] = set()
        while name is not None and name not in seen and name in self.accounts:
            seen.add(name)
            out += [f"{u} (account {name})" for u in self.accounts[name].unmodelled]
            name = self.accounts[name].parent
        return tuple(out)

    def _assoc_of(
        self, account: str | None, user: str | None, partition: str | None, item: str
    ) -> SlurmAssoc:
        if not account or not user:
            what = "it names no account" if not account else "it names no user"
            raise TopologyError([Problem("associations", item, what)])
        assoc = self.user_assoc(account, user, partition)
        if assoc is None:
            what = f"no association of user {user!r} under account {account!r} among the associations read"
            raise TopologyError([Problem("associations", item, what)])
        return assoc


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def parse_slurm_assoc(text: str, *, source: str) -> AssocTable:
    """``sacctmgr show assoc [tree] -P`` text (any columns with ``Account`` and ``User``) -> its
    :class:`AssocTable`. ``TopologyError`` naming each problem (module docstring)."""
    problems: list[Problem] = []
    rows = parsable_rows(text, source, problems, ("Account", "User"), "association", _COMMAND)
    clusters = sorted({r.get("Cluster", "") for _, r in rows} - {""})
    if len(clusters) > 1:
        names = ", ".join(clusters)
        why = f"associations of several clusters ({names}): give one cluster's ({_COMMAND} cluster=NAME)"
        problems.append(Problem(source, "document", why))
    has_parent = bool(rows) and "ParentName" in rows[0][1]
    tree = any(r["Account"] != r["Account"].lstrip(" ") for _, r in rows)
    table = AssocTable()
    path: list[str] = []  # tree form: the accounts from root down to the row's depth
    for number, row in rows:
        raw = row["Account"]
        account, depth = raw.lstrip(" "), len(raw) - len(raw.lstrip(" "))
        user = row["User"].strip() or None
        partition = (row.get("Partition") or "").strip() or None
        item = f"line {number} (account {account}" + (f", user {user})" if user else ")")
        if not account:
            problems.append(Problem(source, item, "Account is empty"))
            continue
        fields = limit_fields(row, _LIMITS, _NOT_READ, item, source, problems)
        if user is None:
            parent = (row.get("ParentName") or "").strip() or None
            if tree:
                del path[depth:]
                parent = path[-1] if path else None
                path.append(account)
            if account in table.accounts:
                problems.append(Problem(source, item, "the account is given twice"))
            table.accounts[account] = SlurmAssoc(account, parent=parent, **fields)  # type: ignore[arg-type]
        else:
            key = (account, user, partition)
            if key in table.users:
                problems.append(Problem(source, item, "the association is given twice"))
            table.users[key] = SlurmAssoc(account, user, partition, **fields)  # type: ignore[arg-type]
    if not tree and not has_parent:
        for name, acct in table.accounts.items():
            if name != "root" and (acct.grp_jobs is not None or acct.grp_gpus is not None):
                why = (
                    "it limits its jobs and those of the accounts under it, which the table does not say: "
                    f"give {_COMMAND} (or format=...,ParentName)"
                )
                problems.append(Problem(source, f"account {name}", why))
    if problems:
        raise TopologyError(problems)
    return table


def read_assoc_file(path: str) -> AssocTable:
    """:func:`parse_slurm_assoc` of a file (``OSError`` when it cannot be opened; ``TopologyError`` when it
    is not UTF-8 text)."""
    source, text = read_text(path)
    return parse_slurm_assoc(text, source=source)


def with_assoc_groups(jobs: list[RunningJob], table: AssocTable, *, source: str) -> list[RunningJob]:
    """Running Slurm jobs (their account, user and partition in the labels ``slurm_account``,
    ``slurm_user``, ``slurm_partition``) with the groups of their associations' limits in
    ``limit_groups``. ``TopologyError`` naming every job the table has no association for."""
    problems: list[Problem] = []
    out: list[RunningJob] = []
    for rj in jobs:
        labels = rj.labels
        try:
            found = table.limits(
                labels.get("slurm_account"),
                labels.get("slurm_user"),
                labels.get("slurm_partition") or None,
                item=f"job {rj.job}",
            )
        except TopologyError as e:
            problems.extend(Problem(source, p.item, p.message) for p in e.problems)
            continue
        out.append(counting_against(rj, [g for g, _, _ in found]))
    if problems:
        raise TopologyError(problems)
    return out
