"""``placer check --cluster FILE --jobs FILE... --decision FILE [--running FILE] [--now T] [--json]``.

Checks a decision against the placement rules (``docs/placement-rules.md``) with the independent checker
:func:`placer.solver.checks.check`. Prints one violation per line (``[rule] job J on NODE: message``), or with
``--json`` one JSON list of ``{rule, job, node, message}``. Jobs the readers refuse must appear in the
decision's ``rejected``. ``--running``: a JSON list of running jobs (job envelopes plus ``node``/``gpus``
or ``replicas``, see :mod:`placer.solver.running`), added to what the cluster file already runs.
``--queue-config``
and ``--prices`` bring the budgets of rule 17: queue GPU budgets, queue dollar budgets
(``ml_limits.max_cost_per_hour``) and tenant dollar budgets (``budgets.tenants`` of the prices file),
counted with the prices the decision was made with.

Exit 0 when there is no violation, 1 when there is any, 2 for a usage error, a file that cannot be opened
or an input that cannot be read (cluster, decision, running jobs), since then nothing can be checked.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from placer.cli.printable import printable
from placer.topology.inputs import read_input

__all__ = ["add_parser", "run"]

_NAME = "placer check"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="check a placement decision against the placement rules")
    from placer.cli.inputs import add_limits_argument, add_pods_argument

    p.add_argument("--cluster", required=True, metavar="FILE", help="cluster description (any format)")
    add_pods_argument(p)
    p.add_argument("--jobs", required=True, nargs="+", metavar="FILE", help="job files of the batch")
    p.add_argument("--decision", required=True, metavar="FILE", help="the decision JSON")
    p.add_argument("--running", metavar="FILE", help="JSON list of running jobs (envelopes + node/gpus)")
    p.add_argument("--reservation", action="append", default=[], metavar="ID", help="a declared reservation")
    p.add_argument("--reservations", metavar="FILE", help="the reservations file placer place was given")
    p.add_argument(
        "--queue-config",
        metavar="FILE",
        help="OJS §10 queue configuration (GPU, CPU, memory and dollar budgets)",
    )
    p.add_argument("--prices", metavar="FILE", help="the prices file placer place was given (tenant budgets)")
    add_limits_argument(p)
    p.add_argument("--now", metavar="RFC3339", help="the decision time (default: now)")
    p.add_argument("--json", action="store_true", help="print the violations as one JSON list")
    p.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"{_NAME}: {message}", file=sys.stderr)
    return 2


def _read_json(path: str) -> Any:
    """Parsed JSON of a file; ``OSError`` when unopenable, ``ValueError`` when not JSON."""
    return json.loads(read_input(path).decode("utf-8-sig"))


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from placer.cli.inputs import (
        InputError,
        cluster_arg,
        in_slurm_cores,
        jobs_arg,
        prices_arg,
        read_options_arg,
        reservations_arg,
        slurm_assoc_arg,
        slurm_partitions_arg,
        slurm_qos_arg,
        slurm_qos_limits_arg,
        topology_labels_arg,
        with_licenses_arg,
        with_running_arg,
        with_slurm_ranks_arg,
    )
    from placer.cli.place import parse_rfc3339
    from placer.solver.checks import check
    from placer.solver.decision import Decision
    from placer.solver.jobs.queues import in_cluster_queues

    now = None
    if args.now:
        try:
            now = parse_rfc3339(args.now)  # as placer place reads it: a naive time is refused
        except ValueError as e:
            return _fail(f"--now: {e}")
    try:
        levels = topology_labels_arg(args.topology_labels)
        cluster = cluster_arg(args.cluster, args.pods, levels, args.slurm_topology)
        # The jobs are read under the queue configuration and limits placer place had, so both agree on
        # which jobs are rejected.
        options = read_options_arg(args.queue_config, args.limits, levels)
        results = jobs_arg(args.jobs, options)
        try:
            decision = Decision.model_validate(_read_json(args.decision))
        except OSError as e:
            return _fail(f"cannot open decision {args.decision}: {e.strerror or e}")
        except ValueError as e:  # JSON or pydantic ValidationError (a ValueError subclass)
            detail = _pydantic_lines(e) if isinstance(e, ValidationError) else str(e)
            return _fail(f"decision {args.decision} is not a valid decision: {detail}")
        partitions = slurm_partitions_arg(args.slurm_partitions)
        qos = slurm_qos_arg(args.slurm_qos, args.slurm_preempt_mode)
        qos_limits = slurm_qos_limits_arg(args.slurm_qos_limits, args.slurm_qos)
        assoc = slurm_assoc_arg(args.slurm_assoc)
        results = in_slurm_cores(with_slurm_ranks_arg(results, partitions, qos, qos_limits, assoc), cluster)
        running = with_running_arg(cluster, args.running, partitions, qos, qos_limits, assoc)
        cluster = with_licenses_arg(in_cluster_queues(running, options.queues), args.slurm_licenses)
        declared: list[object] = [*args.reservation, *(reservations_arg(args.reservations, cluster) or [])]
        prices = prices_arg(args.prices)
    except InputError as e:  # nothing can be checked without every input: exit 2 either way
        return _fail(e.message)
    jobs = [r.job for r in results if r.ok and r.job is not None]
    refused = [r.id for r in results if not r.ok and not r.unreadable]
    for r in results:
        if r.unreadable:
            print(f"{_NAME}: warning: {r.source} holds no readable job: {r.errors[0]}", file=sys.stderr)
    violations = check(
        decision,
        jobs,
        cluster,
        now=now,
        reservations=declared,
        rejected_ids=refused,
        queues=options.queues,
        prices=prices,
    )
    if args.json:
        print(json.dumps([v.to_json() for v in violations], indent=2))
    else:
        for v in violations:
            print(printable(str(v)))
        if not violations:
            print(f"ok: {len(decision.placements)} placements, {len(jobs) + len(refused)} jobs, no violation")
    return 1 if violations else 0


def _pydantic_lines(e: Any) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()[:10])
