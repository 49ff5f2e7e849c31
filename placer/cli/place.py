"""``placer place --cluster FILE --jobs FILE... [--running FILE] [--now TIME] [--time-limit S]
[--engine auto|cpsat|greedy|BASELINE] [--seed N] [--json]``: decide where a batch of jobs runs.

The cluster file may be in any format ``placer cluster`` reads (auto-detected); job files in any job format
(OJS, Flux jobspec, SSS XML). Jobs the readers refuse are not dropped: they go to the decision's
``rejected`` with their errors. ``--running`` is a JSON list of running jobs (job envelopes plus
``node``/``gpus`` or ``replicas``, see :mod:`placer.solver.running`), or Slurm's ``squeue --json`` (its
jobs by name in place of the anonymous per-node allocations of a Slurm node file), added to what the
cluster file already runs.
``--now`` (RFC 3339 with an offset, e.g. ``2025-06-01T12:00:00Z``) is the decision time that
``not_before`` and dependencies are compared with; default: the current time. ``--queue-config`` and
``--limits`` read jobs under the same queue configuration and administrative limits as ``placer validate``.

Output: a table (per placed job: engine, nodes, GPUs, TPU chips; per pending job: its first reason;
rejected jobs; one stats line), or with ``--json`` the Decision JSON (``docs/decision.md``). ``--engine``
also takes a baseline scorer (``first-fit``, ``best-fit``, ``least-allocated``, ``most-allocated``,
``fgd``: greedy choosing nodes by that rule, :mod:`placer.solver.scorers`) to see what it would decide.

Exit codes: 0 a decision was made (pending jobs included), 1 the cluster, a job file or the running-jobs
file was opened but its content cannot be read (not parseable, not a cluster), 2 a usage error (bad
``--now``, bad option value) or a file that cannot be opened.

Why the heavy imports live in :func:`run`: ``placer --help`` and ``placer validate`` must not pay for
OR-Tools, networkx and pandas.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="placer"); sub = p.add_subparsers()
>>> add_parser(sub)
>>> a = p.parse_args(["place", "--cluster", "c.yaml", "--jobs", "a.json", "b.yaml", "--engine", "greedy"])
>>> (a.cluster, a.jobs, a.engine, a.time_limit, a.seed, a.json)
('c.yaml', ['a.json', 'b.yaml'], 'greedy', 5.0, 0, False)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime
from typing import Any

from placer.cli import numbers
from placer.cli.printable import printable

__all__ = ["ENGINE_CHOICES", "add_parser", "decision_table", "parse_rfc3339", "run"]

_NAME = "placer place"
#: RFC 3339 ``date-time`` (section 5.6): full date, ``T`` (or space), full time with a mandatory offset.
_RFC3339 = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
#: ``--engine`` values: placer's engines, then the baseline scorers (``placer.solver.policy.ENGINES`` and
#: ``BASELINES``; spelled out so that ``placer --help`` need not import pydantic).
ENGINE_CHOICES = (
    "auto",
    "cpsat",
    "greedy",
    "first-fit",
    "best-fit",
    "least-allocated",
    "most-allocated",
    "fgd",
)


def parse_rfc3339(text: str) -> datetime:
    """An RFC 3339 timestamp as an aware ``datetime``; ``ValueError`` for anything else (a date alone, a
    time without offset, an impossible date).

    Why stricter than ``datetime.fromisoformat``: a naive time would be compared with timezone-aware
    ``not_before`` values, and a wrong offset silently shifts every start by hours.

    >>> parse_rfc3339("2025-06-01T12:00:00Z").isoformat()
    '2025-06-01T12:00:00+00:00'
    >>> parse_rfc3339("2025-06-01")
    Traceback (most recent call last):
    ...
    ValueError: '2025-06-01' is not an RFC 3339 timestamp (e.g. 2025-06-01T12:00:00Z)
    """
    if not _RFC3339.match(text):
        raise ValueError(f"{text!r} is not an RFC 3339 timestamp (e.g. 2025-06-01T12:00:00Z)")
    normalized = text[:10] + "T" + text[11:]
    if normalized[-1] in "Zz":
        normalized = normalized[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(normalized)
    except ValueError as e:  # 2025-02-30T00:00:00Z matches the pattern but is no date
        raise ValueError(f"{text!r} is not a valid timestamp: {e}") from None


def add_parser(sub: Any) -> None:
    """Register ``placer place`` on an ``argparse`` subparsers object."""
    p = sub.add_parser("place", help="place a batch of jobs on a cluster and print the decision")
    from placer.cli.inputs import add_limits_argument, add_pods_argument

    p.add_argument("--cluster", required=True, metavar="FILE", help="cluster description (any format)")
    add_pods_argument(p)
    p.add_argument("--jobs", required=True, nargs="+", metavar="FILE", help="job files (OJS, Flux, SSS)")
    p.add_argument(
        "--running",
        metavar="FILE",
        help="running jobs: a JSON list (envelopes + node/gpus), or squeue --json",
    )
    p.add_argument(
        "--queue-config",
        metavar="FILE",
        help="OJS §10 queue configuration: ml_defaults, ml_limits, GPU and dollar budgets "
        "(as placer validate)",
    )
    add_limits_argument(p)
    p.add_argument(
        "--reservations",
        metavar="FILE",
        help='JSON/YAML list of {"id", "nodes": [...] or "gpus": {node: count}, "start", "end", '
        '"timeout_s"}, or what scontrol show reservation prints (a Slurm job\'s --reservation names one)',
    )
    p.add_argument(
        "--prices",
        metavar="FILE",
        help="$ per GPU-hour / TPU chip-hour / core-hour by capacity class, over the defaults; "
        "tenant dollar budgets (budgets.tenants)",
    )
    p.add_argument("--now", metavar="RFC3339", help="the decision time (default: now)")
    p.add_argument(
        "--time-limit",
        type=numbers.seconds,
        default=5.0,
        metavar="S",
        help="seconds the solver may use, greedy included (default: 5)",
    )
    p.add_argument(
        "--engine",
        default="auto",
        choices=ENGINE_CHOICES,
        help="default: auto; a baseline (first-fit ... fgd) is greedy with that node scorer",
    )
    p.add_argument(
        "--seed", type=numbers.seed, default=0, metavar="N", help="CP-SAT random seed (default: 0)"
    )
    p.add_argument(
        "--reproducible",
        action="store_true",
        help="one CP-SAT worker and a deterministic-time budget: the same decision on any machine "
        "(docs/solver.md, Determinism)",
    )
    p.add_argument(
        "--no-plan",
        action="store_true",
        help="decide only what starts now: no planned starts, no backfill rule (docs/solver.md)",
    )
    p.add_argument("--json", action="store_true", help="print the Decision JSON (as --output json)")
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw the decision: every GPU of every node by rack, coloured by job (needs matplotlib)",
    )
    p.add_argument(
        "--output",
        choices=("table", "json", "bindings", "slurm"),
        default=None,
        help="table (default), json (the Decision JSON), bindings: v1 Binding objects for the placed "
        "pending pods, for kubectl create -f - (docs/kubernetes.md), or slurm: the scontrol commands that "
        "pin and release held Slurm jobs and requeue evicted ones (docs/slurm.md)",
    )
    p.set_defaults(run=run)


def _usage(message: str) -> int:
    print(f"{_NAME}: {message}", file=sys.stderr)
    return 2


def _bad_content(message: str) -> int:
    print(f"{_NAME}: {message}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    """Read everything, place, print; the exit code says what went wrong (see the module docstring)."""
    from placer.cli.inputs import (
        InputError,
        cluster_arg,
        in_slurm_cores,
        jobs_arg,
        prices_arg,
        read_options_arg,
        reservations_arg,
        shown,
        slurm_assoc_arg,
        slurm_partitions_arg,
        slurm_qos_arg,
        slurm_qos_limits_arg,
        topology_labels_arg,
        with_licenses_arg,
        with_running_arg,
        with_slurm_ranks_arg,
    )
    from placer.solver.engine import place
    from placer.solver.jobs.queues import in_cluster_queues
    from placer.solver.policy import Policy, engine_fields

    now = None
    if args.now:
        try:
            now = parse_rfc3339(args.now)
        except ValueError as e:
            return _usage(f"--now: {e}")
    try:
        levels = topology_labels_arg(args.topology_labels)
        cluster = cluster_arg(args.cluster, args.pods, levels, args.slurm_topology)
        options = read_options_arg(args.queue_config, args.limits, levels)
        results = jobs_arg(args.jobs, options)
        unreadable = [r for r in results if r.unreadable]
        if unreadable:  # a whole document failed: it names no job that could be answered in the decision
            return _bad_content("; ".join(f"{r.source}: {shown(list(r.errors))}" for r in unreadable))
        partitions = slurm_partitions_arg(args.slurm_partitions)
        qos = slurm_qos_arg(args.slurm_qos, args.slurm_preempt_mode)
        qos_limits = slurm_qos_limits_arg(args.slurm_qos_limits, args.slurm_qos)
        assoc = slurm_assoc_arg(args.slurm_assoc)
        results = in_slurm_cores(with_slurm_ranks_arg(results, partitions, qos, qos_limits, assoc), cluster)
        running = with_running_arg(cluster, args.running, partitions, qos, qos_limits, assoc)
        cluster = with_licenses_arg(in_cluster_queues(running, options.queues), args.slurm_licenses)
        reservations = reservations_arg(args.reservations, cluster)
        prices = prices_arg(args.prices)
    except InputError as e:
        return _usage(e.message) if e.kind == "usage" else _bad_content(e.message)
    policy = Policy(
        **engine_fields(args.engine),
        time_limit_s=args.time_limit,
        seed=args.seed,
        plan=not args.no_plan,
        reproducible=args.reproducible,
    )
    try:
        decision = place(
            results, cluster, policy, now=now, queues=options.queues, reservations=reservations, prices=prices
        )
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("placer.solver.cpsat"):
            raise
        return _usage(f"the CP-SAT engine is not available ({e}); use --engine greedy")
    if args.plot:
        try:
            from placer.plot import decision as draw
        except ModuleNotFoundError as e:
            return _usage(f"--plot needs {e.name}; install the extra: pip install 'placer-engine[sim]'")
        try:
            draw(decision, cluster).savefig(args.plot, dpi=150)
        except OSError as e:
            return _usage(f"cannot write {args.plot}: {e.strerror or e}")
    output = args.output or ("json" if args.json else "table")
    if output == "bindings":
        from placer.cli.bindings import bindings

        doc, skipped = bindings(decision, [r.job for r in results if r.ok and r.job is not None])
        print(json.dumps(doc, indent=2))
        for note in skipped:
            print(f"{_NAME}: {printable(note)}", file=sys.stderr)
    elif output == "slurm":
        from placer.cli.slurm_apply import slurm_script

        slurm = [rj for rj in cluster.running_jobs() if "slurm_job_id" in rj.labels]
        cancel = {rj.job for rj in slurm if rj.labels.get("slurm_preempt_mode") == "CANCEL"}
        from placer.topology.importers.slurm_mixed import parts_in

        parts = {p.name: (p.node, p.gres_type) for ps in parts_in(cluster.nodes).values() for p in ps}
        text, skipped = slurm_script(
            decision,
            [r.job for r in results if r.ok and r.job is not None],
            {rj.job for rj in slurm},
            cancel,
            parts,
        )
        print(text, end="")
        for note in skipped:
            print(f"{_NAME}: {printable(note)}", file=sys.stderr)
    elif output == "json":
        print(json.dumps(decision.to_json(), indent=2))
    else:
        print(decision_table(decision))
    return 0


def _ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    out: list[str] = []
    for i in sorted(set(indices)):
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


def _gpu_text(replicas: list[Any]) -> str:
    """GPUs held: how many (shares as fractions), then the indices on each node in the NODES column's
    order, ``/`` between nodes: ``8 [0-7]``, ``16 [0-7 / 0-7]``, ``0.5 [3]``.

    >>> from placer.solver.decision import ReplicaPlacement as R
    >>> _gpu_text([R(node="a", gpus=[0, 1, 2, 3]), R(node="b", gpus=[4, 5, 6, 7])])
    '8 [0-3 / 4-7]'
    """
    whole = sum(len(r.gpus) for r in replicas if r.gpu_milli is None)
    shares = [r.gpu_milli for r in replicas if r.gpu_milli is not None]
    parts = [str(whole)] if whole or not shares else []
    parts += [f"{m / 1000:g}" for m in shares]
    by_node: dict[str, list[int]] = {}
    for r in replicas:
        by_node.setdefault(r.node, []).extend(r.gpus)
    indices = " / ".join(_ranges(g) for g in by_node.values() if g)
    return "+".join(parts) + (f" [{indices}]" if indices else "")


def _when(t: datetime | None) -> str:
    """A time to the second, ``Z`` for UTC: ``2026-01-01 02:30:00Z``.

    >>> from datetime import UTC, timedelta, timezone
    >>> _when(datetime(2026, 1, 1, 2, 30, 0, 123456, tzinfo=UTC))
    '2026-01-01 02:30:00Z'
    >>> _when(datetime(2026, 1, 1, 2, 30, tzinfo=timezone(timedelta(hours=2)))), _when(None)
    ('2026-01-01 02:30:00+02:00', '?')
    """
    if t is None:
        return "?"
    text = t.isoformat(sep=" ", timespec="seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as aligned columns; a column empty (``""``) on every row below the header is left out."""
    keep = [i for i in range(len(rows[0])) if any(r[i] for r in rows[1:])] if len(rows) > 1 else []
    rows = [tuple(r[i] for i in keep) for r in rows]
    if not rows or not rows[0]:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def stats_line(decision: Any) -> str:
    """The stats in plain words: what was placed, at what price, how good the answer is proven to be (on
    placed work, the objective's first level), what CP-SAT added to greedy's answer, and where the time
    went. Every claim is the stats' own: a gap is the proven one, "optimal" only with a bound to match.

    >>> from placer.solver.decision import Decision, Stats
    >>> d = Decision(stats=Stats(engine="cpsat", status="FEASIBLE", objective=1600.0, bound=1700.0,
    ...     gap=100 / 1700, greedy_objective=1540.0, model_status="FEASIBLE", wall_s=1.2, build_s=0.3,
    ...     solve_s=0.8))
    >>> print(stats_line(d))
    cpsat placed 0 of 0 jobs.
    Placed work 1,600, proven within 5.88 % of optimal (bound 1,700); status FEASIBLE.
    CP-SAT improved greedy's answer by 3.9 % (greedy 1,540). 1.200 s (model 0.300 s, search 0.800 s).
    """
    s = decision.stats
    n = len(decision.placements) + len(decision.pending) + len(decision.rejected)
    first = f"{s.engine} placed {len(decision.placements)} of {n} jobs"
    if decision.pending or decision.rejected:
        first += f" ({len(decision.pending)} pending, {len(decision.rejected)} rejected)"
    if s.cost_per_hour:
        first += f", ${s.cost_per_hour:,.2f}/h"
    second = ""
    if s.objective is not None:
        second = f"Placed work {s.objective:,.0f}, "
        if s.gap is None or s.bound is None:
            second += "no bound proven; "
        elif s.gap == 0:
            second += f"proven optimal (bound {s.bound:,.0f}); "
        else:
            second += f"proven within {s.gap * 100:.3g} % of optimal (bound {s.bound:,.0f}); "
    second += f"status {s.status}"
    if s.status != "OPTIMAL" and s.gap == 0:
        second += ": later levels (preferences, fragmentation, cost) not proven"
        if s.model_exact is False and s.model_approximations:
            second += f", the model approximated {s.model_approximations[0]}"
    third = ""
    g = s.greedy_objective
    if s.model_status is not None and g is not None and s.objective is not None:
        if s.engine == "cpsat" and s.objective > g:
            gain = (s.objective - g) / max(g, 1e-9) * 100
            third = f"CP-SAT improved greedy's answer by {gain:.3g} % (greedy {g:,.0f}). "
        elif s.engine == "cpsat":
            third = f"CP-SAT's answer ties greedy's on placed work and wins on {_won_on(s)}. "
        else:
            third = "CP-SAT found nothing better than greedy's answer. "
    timing = f"{s.wall_s:.3f} s (model {s.build_s:.3f} s, search {s.solve_s:.3f} s)."
    if s.cut_by:
        timing += f" Wall-clock limits bounded {', '.join(s.cut_by)}: not reproducible (see --reproducible)."
    return f"{first}.\n{second}.\n{third}{timing}"


#: The objective's levels after the first, as ``stats.levels`` names them, in words.
_LEVEL_WORDS = {
    "eviction": "eviction cost",
    "preference": "preferences",
    "compactness": "compactness",
    "fragmentation": "fragmentation",
    "money": "cost",
    "fit": "best fit",
}


def _won_on(s: Any) -> str:
    """The first level after placed work on which the kept answer beats greedy's (``stats.levels``), or
    "a later level" when the decision does not carry them.

    >>> from placer.solver.decision import Stats
    >>> _won_on(Stats(levels={"placed": 5, "eviction": 0, "preference": 3}, greedy_levels={"placed": 5,
    ...     "eviction": 0, "preference": 1}))
    'preferences'
    """
    mine, theirs = s.levels, s.greedy_levels
    if mine and theirs:
        for name, words in _LEVEL_WORDS.items():
            if name in mine and name in theirs and mine[name] != theirs[name]:
                return words if mine[name] > theirs[name] else "a later level"
    return "a later level"


def decision_table(decision: Any) -> str:
    """The human-readable decision: placed jobs (nodes, GPU indices, TPU chips and price where there are
    any), pending jobs with their first reason, rejected jobs with their first error, the jobs' notes
    (readers' warnings among them), plans, declared reservations, evictions, and the stats in words
    (:func:`stats_line`).

    >>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement, Stats
    >>> d = Decision(placements=[JobPlacement(job="a", replicas=[ReplicaPlacement(node="n1", gpus=[0, 1])])],
    ...              stats=Stats(engine="greedy", status="FEASIBLE", objective=20.0))
    >>> print(decision_table(d))
    JOB  NODES  GPUS
    a    n1     2 [0-1]
    <BLANKLINE>
    greedy placed 1 of 1 jobs.
    Placed work 20, no bound proven; status FEASIBLE.
    0.000 s (model 0.000 s, search 0.000 s).
    """
    rows: list[tuple[str, ...]] = [("JOB", "NODES", "GPUS", "TPU CHIPS", "$/H")]
    for p in decision.placements:
        nodes = ",".join(dict.fromkeys(r.tpu_pod or r.node for r in p.replicas))
        chips = sum(len(r.tpu_chips) for r in p.replicas)
        gpus = _gpu_text(p.replicas) if any(r.gpus for r in p.replicas) else ""
        price = f"{p.cost_per_hour:,.2f}" if p.cost_per_hour else ""
        rows.append((p.job, nodes, gpus, str(chips) if chips else "", price))
    lines = _table(rows) if decision.placements else ["nothing placed"]
    if decision.pending:
        lines.append("")
        lines.append(f"pending ({len(decision.pending)}):")
        for p in decision.pending:
            first = p.reasons[0] if p.reasons else None
            lines.append(f"  {p.job}: {first.code}: {first.message}" if first else f"  {p.job}")
            lines.extend(f"    {r.code}: {r.message}" for r in p.reasons[1:] if r.code == "PLANNED_START")
    if decision.rejected:
        lines.append("")
        lines.append(f"rejected ({len(decision.rejected)}):")
        for r in decision.rejected:
            e = r.errors[0] if r.errors else {}
            lines.append(f"  {r.job}: {e.get('path', '')}: {e.get('message', '')} [{e.get('code', '')}]")
    noted = [(p.job, n) for p in (*decision.placements, *decision.pending) for n in p.notes]
    if noted:  # what was read into a request, and what its reader read past (warnings)
        lines.append("")
        lines.append(f"notes ({len(noted)}):")
        lines.extend(f"  {job}: {note}" for job, note in noted)
    for title, holds in (
        ("planned", [h for h in decision.reservations if h.kind != "reservation"]),
        ("reservations held", [h for h in decision.reservations if h.kind == "reservation"]),
    ):
        if not holds:
            continue
        lines.append("")
        lines.append(f"{title} ({len(holds)}):")
        for h in holds:
            nodes = ",".join(dict.fromkeys(r.tpu_pod or r.node for r in h.replicas))
            until = _when(h.end) if h.end else "open end"
            who = (
                h.job if h.kind != "reservation" else f"{h.reservation}" + (f" for {h.job}" if h.job else "")
            )
            gpus = f", GPUs {_gpu_text(h.replicas)}" if any(r.gpus for r in h.replicas) else ""
            lines.append(f"  {who}: {h.kind} {_when(h.start)} .. {until} on {nodes}{gpus}")
    if decision.preemptions:
        lines.append("")
        lines.append(f"preemptions ({len(decision.preemptions)}):")
        for ev in decision.preemptions:
            save = "checkpoint first" if ev.checkpoint else "no checkpoint"
            lines.append(
                f"  {ev.job} for {', '.join(ev.for_)}: grace {ev.grace_period_s} s, {save}, "
                f"loses {ev.expected_work_lost_gpu_s / 3600:.1f} GPU-h (a scheduling event, not a failure)"
            )
    lines.append("")
    lines.extend(stats_line(decision).splitlines())
    return "\n".join(printable(line) for line in lines)
