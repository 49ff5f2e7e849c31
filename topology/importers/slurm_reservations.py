"""Slurm's reservations (``scontrol show reservation``) -> placer's reservation documents.

Why: a Slurm job submitted with ``--reservation=maint`` runs only on the reservation's nodes, and while a
reservation is active no other job starts there. ``squeue`` names the reservation (``resv_name``) and says
nothing of its nodes or times; placer's reservations (``placer place --reservations``) hold exactly that
(whole nodes from ``start`` to ``end``, for the jobs naming it), so the text Slurm prints becomes the same
list of objects a placer reservations file holds, and the same rules apply.

Mapping of one record: ``ReservationName`` -> ``id``, ``Nodes`` (a hostlist) -> ``nodes``, ``StartTime``
and ``EndTime`` -> ``start`` and ``end``. Slurm prints times without a zone, in the controller's local
time; they are read in the local time zone of the machine running placer, as ``scontrol show job`` times
are (set ``TZ`` to the controller's when they differ). ``Users``, ``Accounts`` and ``Groups`` say who may
submit into it, which Slurm checks at submission: a pending job naming it was allowed.

Refused, naming the record and the key, rather than read as something else: a reservation of part of its
nodes' cores (``CoreCnt`` below the nodes' cores, given ``cores_of``) or of ``Licenses`` or a
``BurstBuffer`` only; one without nodes; flags placer cannot keep (``FLEX``, which lets members run
outside the reserved nodes; ``ANY_NODES``; ``MAGNETIC``, which draws jobs that do not name it; and
``REPLACE``/``REPLACE_DOWN``, whose nodes change as jobs end).

>>> text = '''ReservationName=maint StartTime=2026-11-27T17:33:33 EndTime=2026-11-27T19:33:33
...    Duration=02:00:00 Nodes=gpu[03-04] NodeCnt=2 CoreCnt=4 Features=(null) PartitionName=(null)
...    Flags=IGNORE_JOBS,SPEC_NODES
...    TRES=cpu=4
...    Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a
...    MaxStartDelay=(null)
... '''
>>> [r] = slurm_reservations(text, source="resv.txt")
>>> r["id"], r["nodes"], r["end"] - r["start"]
('maint', ['gpu03', 'gpu04'], datetime.timedelta(seconds=7200))
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from placer.topology.errors import Problem, TopologyError
from placer.topology.importers._common import whole_number
from placer.topology.importers.jgf import expand_hostlist
from placer.topology.importers.slurm_job_text import local_time

__all__ = ["UNKEPT_FLAGS", "is_show_reservation_text", "slurm_reservations"]

#: Reservation flags whose meaning placer's reservations cannot keep (module docstring).
UNKEPT_FLAGS = frozenset({"FLEX", "ANY_NODES", "MAGNETIC", "REPLACE", "REPLACE_DOWN"})
_TOKEN = re.compile(r"(\S+?)=(\S*)")


def is_show_reservation_text(text: str) -> bool:
    """Whether ``text`` is what ``scontrol show reservation`` prints (its first word names a reservation,
    or it says there are none)."""
    head = text.lstrip()
    return head.startswith("ReservationName=") or head.startswith("No reservations in the system")


def slurm_reservations(
    text: str, *, source: str, cores_of: Callable[[str], int | None] | None = None
) -> list[dict[str, Any]]:
    """The reservations of ``scontrol show reservation`` text as placer reservation objects (``id``,
    ``nodes``, ``start``, ``end``); ``cores_of(node)``: its cores, to tell a whole-node reservation from
    one of some cores (None: not known, taken as whole). ``TopologyError`` naming every record placer
    cannot represent (module docstring)."""
    if text.lstrip().startswith("No reservations in the system"):
        return []
    records: list[dict[str, str]] = []
    for line in text.splitlines():
        if line.strip().startswith("ReservationName="):
            records.append({})
        if records:
            for k, v in _TOKEN.findall(line):
                records[-1].setdefault(k, v)
    problems: list[Problem] = []
    out: list[dict[str, Any]] = []
    for n, rec in enumerate(records, 1):
        name = rec.get("ReservationName", "")
        item = f"reservation {name or n}"
        before = len(problems)

        def bad(key: str, why: str, item: str = item, rec: dict[str, str] = rec) -> None:
            problems.append(Problem(source, item, f"{key}={rec.get(key, '')!r}: {why}"))

        nodes_text = rec.get("Nodes", "")
        nodes: list[str] = []
        if nodes_text in ("", "(null)"):
            bad(
                "Nodes",
                "a reservation of no nodes (licenses or burst buffers only) holds nothing placer models",
            )
        else:
            try:
                nodes = expand_hostlist(nodes_text)
            except ValueError as e:
                bad("Nodes", f"not a Slurm hostlist: {e}")
        unkept = sorted(set(rec.get("Flags", "").split(",")) & UNKEPT_FLAGS)
        if unkept:
            bad(
                "Flags", f"{', '.join(unkept)}: not kept by placer's reservations (whole nodes, members only)"
            )
        cores = whole_number(rec.get("CoreCnt"))
        if cores is not None and nodes and cores_of is not None:
            known = [cores_of(v) for v in nodes]
            if all(c is not None for c in known) and cores < sum(c for c in known if c is not None):
                bad("CoreCnt", f"some cores of {nodes_text}, not whole nodes: not modelled")
        start, end = local_time(rec.get("StartTime", "")), local_time(rec.get("EndTime", ""))
        if start is None:
            bad("StartTime", "not a Slurm time")
        if end is None:
            bad("EndTime", "not a Slurm time")
        if len(problems) == before:
            out.append({"id": name, "nodes": nodes, "start": start, "end": end})
    if problems:
        raise TopologyError(problems)
    return out
