"""RFC 14 resource vertices: validate the ``resources`` tree and keep it as typed :class:`Vertex` objects.

Why a module of its own: the tree is validated once, with every problem reported at its exact path
(``resources[0].with[1].count.min``), before anything is mapped to task groups; the mapping
(:mod:`placer.solver.jobs.formats.flux_slots`) and the V1 rules (:mod:`placer.solver.jobs.formats.flux_v1`)
then work
on clean vertices.

Rules (RFC 14 text and the spec_14 ``schema.json``): ``resources`` is a non-empty array; a vertex is an
object with ``type`` (string) and ``count`` (see :mod:`~placer.solver.jobs.formats.flux_count`), optionally
``unit`` (string), ``exclusive`` (boolean), ``with`` (array of vertices), ``label`` (string) and ``id``
(string); any other key is ``malformed``. Labels are unique in the jobspec (``conflict``). A ``slot``
needs a ``label`` and at least one ``with`` edge (``required``). Stricter than the schema, for the
placer's sake: a slot inside a slot is ``unsupported`` (the RFC gives it no meaning), and ``memory`` /
``storage`` / ``disk`` units must be known byte units (``enum``, see :data:`BYTE_UNITS`; no unit means GB,
the unit of every RFC 14 example).

>>> issues: list = []
>>> [v] = read_resources([{"type": "slot", "count": 2, "label": "s", "with": [{"type": "core", "count": 4}]}],
...                      "resources", issues)
>>> v.type, v.count.min, v.children[0].type, issues
('slot', 2, 'core', [])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.formats.flux_count import read_count, reject_nulls
from placer.solver.jobs.model import CountRange, FluxResource

__all__ = [
    "BYTE_UNITS",
    "MEMORY_TYPES",
    "STORAGE_TYPES",
    "VERTEX_KEYS",
    "Vertex",
    "read_resources",
    "unit_factor",
]

#: Keys a resource vertex may have (RFC 14; ``additionalProperties: false`` in the schema).
VERTEX_KEYS: frozenset[str] = frozenset({"type", "count", "unit", "exclusive", "with", "label", "id"})

MEMORY_TYPES: frozenset[str] = frozenset({"memory"})
STORAGE_TYPES: frozenset[str] = frozenset({"storage", "disk"})

#: Byte units for memory and storage counts, in placer's GB (2^30 bytes; ``docs/inventory.md``, *Units*);
#: matched case-insensitively. KB/MB/GB are binary here, as Fluxion reads them (its resource graphs count
#: memory in binary GB), so ``4 GB`` in a jobspec is the 4 GB a Flux node states.
BYTE_UNITS: dict[str, float] = {
    "b": 2**-30,
    "kb": 2**-20,
    "mb": 2**-10,
    "gb": 1.0,
    "tb": 2**10,
    "pb": 2**20,
    "kib": 2**-20,
    "mib": 2**-10,
    "gib": 1.0,
    "tib": 2**10,
    "pib": 2**20,
}


@dataclass
class Vertex:
    """One validated resource vertex. ``count_is_int`` remembers the V1-relevant spelling of ``count``."""

    type: str
    count: CountRange
    path: str
    keys: frozenset[str]
    count_is_int: bool = True
    unit: str | None = None
    exclusive: bool | None = None
    label: str | None = None
    id: str | None = None
    children: list[Vertex] = field(default_factory=list)

    def to_flux(self) -> FluxResource:
        """The vertex and its subtree as the model's :class:`FluxResource`."""
        return FluxResource(
            type=self.type,
            count=self.count,
            unit=self.unit,
            exclusive=self.exclusive,
            label=self.label,
            with_=[c.to_flux() for c in self.children],
        )

    def walk(self) -> list[Vertex]:
        """This vertex and all below it, depth first."""
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


def unit_factor(unit: str | None) -> float | None:
    """GB per counted unit of a memory/storage vertex (None for an unknown unit; no unit is GB).

    >>> unit_factor("MiB"), unit_factor(None), unit_factor("furlong")
    (0.0009765625, 1.0, None)
    """
    if unit is None:
        return 1.0
    return BYTE_UNITS.get(unit.lower())


class _Context:
    def __init__(self, issues: list[Issue]):
        self.issues = issues
        self.labels: dict[str, str] = {}


def _vertex(raw: Any, path: str, ctx: _Context, in_slot: bool) -> Vertex | None:
    issues = ctx.issues
    if not isinstance(raw, Mapping):
        issues.append(issue("type", path, f"a resource vertex must be an object, got {type_name(raw)}"))
        return None
    start = len(issues)
    f = Fields(raw, path, issues)
    for key in raw:
        if key not in VERTEX_KEYS:
            f.fail(
                "malformed",
                str(key),
                f"unknown resource vertex key; allowed: {', '.join(sorted(VERTEX_KEYS))}",
            )
    nulls = reject_nulls(raw, ("type", "unit", "exclusive", "label", "id", "with"), path, issues)
    rtype = None if "type" in nulls else f.string("type", required=True)
    count: CountRange | None = None
    if "count" not in raw:
        f.fail("required", "count", "is required")
    else:
        count = read_count(raw["count"], join(path, "count"), issues)
    unit = f.string("unit")
    exclusive = f.boolean("exclusive")
    label = f.string("label", non_empty=False)
    vid = f.string("id")
    if rtype in MEMORY_TYPES | STORAGE_TYPES and unit is not None and unit_factor(unit) is None:
        f.fail("enum", "unit", f"unknown unit {unit!r} for {rtype}; use one of {', '.join(BYTE_UNITS)}"[:300])
    if label is not None:
        if label in ctx.labels:
            f.fail(
                "conflict",
                "label",
                f"label {label!r} is already used at {ctx.labels[label]} (labels are unique)",
            )
        else:
            ctx.labels[label] = path
    is_slot = rtype == "slot"
    if is_slot:
        if "label" not in raw:
            f.fail("required", "label", "a slot needs a label (RFC 14)")
        if in_slot:
            f.fail("unsupported", "type", "a slot inside a slot has no meaning in RFC 14")
        if not raw.get("with") and "with" not in nulls:
            f.fail("required", "with", "a slot needs at least one resource under 'with' (RFC 14)")
    children: list[Vertex] = []
    kids = f.array("with")
    for i, child in enumerate(kids or []):
        v = _vertex(child, join(join(path, "with"), i), ctx, in_slot or is_slot)
        if v is not None:
            children.append(v)
    if len(issues) > start or rtype is None or count is None:
        return None
    raw_count = raw["count"]
    return Vertex(
        type=rtype,
        count=count,
        path=path,
        keys=frozenset(str(k) for k in raw),
        count_is_int=isinstance(raw_count, int) and not isinstance(raw_count, bool),
        unit=unit,
        exclusive=exclusive,
        label=label,
        id=vid,
        children=children,
    )


def read_resources(value: Any, path: str, issues: list[Issue]) -> list[Vertex] | None:
    """The validated ``resources`` list, or None when anything in it is wrong (issues appended).

    >>> issues: list = []
    >>> read_resources([{"type": "node", "count": {"min": 0}}], "resources", issues)
    >>> [(i.code, i.path) for i in issues]
    [('range', 'resources[0].count.min')]
    """
    if not isinstance(value, list):
        issues.append(issue("type", path, f"must be an array of resource vertices, got {type_name(value)}"))
        return None
    if not value:
        issues.append(issue("range", path, "must define at least one resource"))
        return None
    start = len(issues)
    ctx = _Context(issues)
    out = [_vertex(raw, join(path, i), ctx, False) for i, raw in enumerate(value)]
    if len(issues) > start:
        return None
    return [v for v in out if v is not None]
