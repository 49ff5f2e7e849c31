"""The extra restrictions of RFC 25 (jobspec version 1) on top of the RFC 14 canonical rules.

Why a module of its own: a ``version: 1`` jobspec is a canonical jobspec *and* one of exactly four resource
graphs; keeping these checks apart keeps the canonical reader general and makes the V1 rules easy to
audit against the RFC text.

=========================================================  ===============  ==============================
RFC 25 rule                                                code             path
=========================================================  ===============  ==============================
``resources`` has exactly one element                      ``range``        ``resources``
... which is ``node`` or ``slot``                          ``unsupported``  ``resources[0].type``
types are only ``node``, ``slot``, ``core``, ``gpu``       ``enum``         ``....type``
``count`` is a single integer                              ``type``         ``....count``
keys only type, count, unit, with, label (+ ``exclusive``  ``unsupported``  ``....<key>``
on ``node``, and on ``slot`` as the V1 schema allows)
one of the graphs ``[node>]slot>core|(core,gpu)``:         ``unsupported``  ``....with[i]``
a node holds exactly one slot, a slot one core and at most
one gpu, core and gpu hold nothing
a node must hold its slot; a slot must hold a core         ``required``     ``....with``
exactly one task                                           ``range``        ``tasks``
no ``per_resource``                                        ``unsupported``  ``tasks[0].count.per_resource``
``per_slot`` is 1                                          ``range``        ``tasks[0].count.per_slot``
``total`` >= the number of nodes, when a node is given     ``range``        ``tasks[0].count.total``
``attributes.system`` and its ``duration`` are present     ``required``     ``attributes.system.duration``
=========================================================  ===============  ==============================

Where RFC 25 contradicts itself: it says ``total`` MUST be "less than or equal to the count key of the
associated slot", yet its own use case 2.1 asks for ``total: 5`` on ``node: 4 > slot: 1`` (5 tasks on 4
slots, the RFC 14 oversubscription). That rule is reported as a *warning* only (code ``range``), so the
RFC's example is accepted. The RFC text allows ``exclusive`` on ``node`` while the V1 schema allows it on
``slot`` instead; both are accepted.

>>> from placer.solver.jobs.formats.flux_resources import read_resources
>>> issues: list = []
>>> slot = {"type": "slot", "count": 4, "label": "d", "with": [{"type": "node", "count": 1}]}
>>> tree = read_resources([slot], "resources", issues)
>>> [(i.code, i.path) for i in check_resources(tree)]
[('unsupported', 'resources[0].with[0]'), ('required', 'resources[0].with')]
"""

from __future__ import annotations

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import join
from placer.solver.jobs.formats.flux_resources import Vertex

__all__ = ["GRAPHS", "V1_KEYS", "V1_TYPES", "check_resources", "check_task_count"]

V1_TYPES: tuple[str, ...] = ("node", "slot", "core", "gpu")
V1_KEYS: frozenset[str] = frozenset({"type", "count", "unit", "with", "label"})
GRAPHS = "[node>]slot>core or [node>]slot>(core,gpu)"


def _keys_and_count(v: Vertex, out: list[Issue]) -> None:
    if v.type not in V1_TYPES:
        out.append(
            issue(
                "enum",
                join(v.path, "type"),
                f"V1 allows only the types {', '.join(V1_TYPES)}; got {v.type!r}",
            )
        )
    if not v.count_is_int:
        out.append(issue("type", join(v.path, "count"), "V1 counts are a single integer"))
    allowed = V1_KEYS | ({"exclusive"} if v.type in ("node", "slot") else set())
    for key in sorted(v.keys - allowed):
        out.append(issue("unsupported", join(v.path, key), f"V1 vertices may not have {key!r}"))


def _slot(v: Vertex, out: list[Issue]) -> None:
    cores = [c for c in v.children if c.type == "core"]
    gpus = [c for c in v.children if c.type == "gpu"]
    for c in v.children:
        if (
            c.type not in ("core", "gpu")
            or (c.type == "core" and c is not cores[0])
            or (c.type == "gpu" and c is not gpus[0])
        ):
            out.append(
                issue("unsupported", c.path, f"a V1 slot holds one core and at most one gpu ({GRAPHS})")
            )
    if not cores:
        out.append(issue("required", join(v.path, "with"), "a V1 slot must hold a core"))
    for c in v.children:
        for g in c.children:
            out.append(issue("unsupported", g.path, f"V1 core and gpu vertices hold nothing ({GRAPHS})"))


def check_resources(resources: list[Vertex]) -> list[Issue]:
    """RFC 25 issues of an already validated canonical resource tree (empty when it is valid V1)."""
    out: list[Issue] = []
    if len(resources) != 1:
        out.append(
            issue("range", "resources", f"V1 resources hold exactly one element, got {len(resources)}")
        )
    for v in resources:
        for w in v.walk():
            _keys_and_count(w, out)
    top = resources[0]
    if top.type not in ("node", "slot"):
        out.append(
            issue(
                "unsupported", join(top.path, "type"), f"the V1 top-level resource is node or slot ({GRAPHS})"
            )
        )
        return out
    if top.type == "node":
        if not top.children:
            out.append(issue("required", join(top.path, "with"), f"a V1 node must hold a slot ({GRAPHS})"))
        for i, c in enumerate(top.children):
            if c.type != "slot" or i > 0:
                out.append(issue("unsupported", c.path, f"a V1 node holds exactly one slot ({GRAPHS})"))
        slots = [c for c in top.children if c.type == "slot"][:1]
    else:
        slots = [top]
    for s in slots:
        _slot(s, out)
    return out


def check_task_count(
    kind: str, value: int, slots_total: int, nodes: int | None, path: str
) -> tuple[list[Issue], list[Issue]]:
    """RFC 25 rules on one task's ``count``: (errors, warnings).

    >>> errs, warns = check_task_count("total", 5, 4, 4, "tasks[0].count")
    >>> errs, [(w.code, w.path) for w in warns]
    ([], [('range', 'tasks[0].count.total')])
    """
    errors: list[Issue] = []
    warnings: list[Issue] = []
    if kind == "per_resource":
        errors.append(issue("unsupported", join(path, kind), "V1 task counts are per_slot or total"))
    elif kind == "per_slot" and value != 1:
        errors.append(issue("range", join(path, kind), f"V1 per_slot must be 1, got {value}"))
    elif kind == "total":
        if nodes is not None and value < nodes:
            errors.append(
                issue("range", join(path, kind), f"V1 total ({value}) must be >= the node count ({nodes})")
            )
        if value > slots_total:
            warnings.append(
                issue(
                    "range",
                    join(path, kind),
                    f"RFC 25 says total ({value}) must be <= the slot count ({slots_total}); "
                    "accepted, as the RFC's own use case 2.1 oversubscribes",
                )
            )
    return errors, warnings
