"""From SSS requested-property expressions to demands, label rules and alternatives.

Why separate from the expression parser: the tree says *how* properties combine; this module decides
*what each means for placement*, property by property, and where the model cannot say it:

* **Consumables** (``Processors``, ``Memory``, ``Disk``, ``Swap``, ``Network``, ``Resource``,
  ``NodeCount``, ``WallDuration``) ANDed together narrow an interval per resource. The demand placed is
  the interval's lower bound, the requested minimum (``Memory op="GE" 512`` needs 512; strict ``GT`` on an
  integer adds one, on a continuous amount it is taken as ``GE``: the difference is below allocation
  granularity). With only an upper bound the demand is 1 for counts (processors, nodes, GPUs) and 0 for
  amounts; the bounds are kept in ``metadata``. ``WallDuration`` takes the upper bound when there is one
  (it is a limit). ``NE``/``Match`` on an amount has no placement meaning: unsupported (awareness policy).
* **Alternatives** — ``Or`` between values of one consumable, or a group of positive ``preference`` values
  (§8.1: "at least one of the preferences must be satisfied") — are satisfied by satisfying the smallest,
  so the smallest feasible alternative is the hard demand; all alternatives and their weights go to
  ``metadata["sss"]["alternatives"]``. GPU alternatives of different types (``Resource name="GPU"
  type=...``) give the union of the types that reach that smallest count.
* **Negative preferences** are soft (§8.1: "the job will still run"): label ones become preferred rules,
  consumable ones are only recorded (the placer has no soft amounts).
* **Node properties** (inside ``NodeProperties``, and ``Feature``/``Name``/``NodeList``/``Partition``
  anywhere) are tests on a node, so they become :class:`~placer.solver.jobs.model.LabelRule` s: ``EQ``->In,
  ``NE``->NotIn, ``LT``->Lt, ``GT``->Gt, ``LE``->Lte, ``GE``->Gte, ``Match``->Matches. ``Feature x`` is
  ``Exists`` on label key ``x`` (``Feature k=v`` is ``k In [v]``); ``Name`` tests label ``hostname``; node
  consumables test ``cpu_cores``, ``memory_gb`` (converted), ``storage_gb``, ``swap_gb``, ``network``,
  ``gpu_count`` (+ ``gpu_type``), ``tpu_chips`` or ``resource.<name>[.<type>]``. ``Or``/``Nand``/``Nor``
  over node properties become :class:`AnyOf`/:class:`Not` rules.
* **Match patterns** are regular expressions (the spec's example ``fr15n.*`` only makes sense as one),
  matched against the whole name; the model's ``Matches`` is a glob, so the common regex forms
  (``.``, ``.*``, ``.+``, character classes, ``\\d``, escapes, ``^``/``$``) are translated and anything
  else (alternation, groups, counted repeats) is unsupported.
* **Alternative node shapes** — ``Or`` between conjunctions that mix node tests and amounts
  (``(Processors 8 and Memory >= 4 GB) or (Processors 4 and Memory >= 8 GB)``) — are expanded to DNF; each
  term is one shape of the job (:class:`~placer.solver.jobs.model.JobAlternative`), the first in document
  order is the job's own, the engines run it in one of them (``docs/solver.md``).
* **Credentials** (``UserId``, ``ProjectId``, ``Queue``...) in ``Requested`` set the job's value; ``Or``
  alternatives of them (the §8.1 UserId/AccountName example) take the first alternative and record all.

>>> regex_to_glob("fr15n.*"), regex_to_glob(r"^node\\d.*$"), regex_to_glob("a|b")
('fr15n*', 'node[0-9]*', None)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any
from xml.etree.ElementTree import Element

from placer.solver.jobs.formats.sss_context import Ctx, children, local, text
from placer.solver.jobs.formats.sss_expr import And, Atom, Group, Node, Not, Or, Sub, atoms, show
from placer.solver.jobs.formats.sss_values import (
    parse_boolean,
    parse_duration,
    parse_float,
    parse_integer,
    to_gb,
)
from placer.solver.jobs.model import AffinityOperator, AllOf, AnyOf, LabelRule, Rule
from placer.solver.jobs.model import Not as NotRule

__all__ = [
    "AMOUNT_TAGS",
    "CONSUMABLE_ATTRS",
    "INTEGER_KEYS",
    "LABEL_TAGS",
    "MAX_ALTERNATIVES",
    "NODE_KEYS",
    "SCALAR_TAGS",
    "Alternative",
    "Collector",
    "Interval",
    "Measure",
    "number_text",
    "regex_to_glob",
    "weights_ok",
]

#: Consumable amounts (Table 4, §5.1.8) plus the counted and timed properties that behave alike.
AMOUNT_TAGS: frozenset[str] = frozenset(
    {"Processors", "Memory", "Disk", "Swap", "Network", "Resource", "NodeCount", "WallDuration"}
)
#: Properties that are tests on a node wherever they appear.
LABEL_TAGS: frozenset[str] = frozenset({"Feature", "Name", "NodeList", "Partition"})
#: Job properties a ``Requested`` element may constrain that set a job attribute (equality only).
SCALAR_TAGS: frozenset[str] = frozenset(
    {
        "UserId",
        "GroupId",
        "ProjectId",
        "AccountName",
        "GlobalUserId",
        "Queue",
        "QualityOfService",
        "MachineName",
        "ReservationId",
        "StartTime",
        "EndTime",
        "JobName",
        "Type",
    }
)
#: §5.1.7 attributes of every consumable.
CONSUMABLE_ATTRS: frozenset[str] = frozenset(
    {"dedicated", "units", "metric", "wallDuration", "consumptionRate", "dynamic"}
)
#: Counts: strict bounds move by one, and an upper bound alone still means at least one.
INTEGER_KEYS: frozenset[str] = frozenset({"Processors", "NodeCount", "GPU", "TPU"})
#: Node-label key tested by each consumable inside ``NodeProperties``.
NODE_KEYS: dict[str, str] = {
    "Processors": "cpu_cores",
    "Memory": "memory_gb",
    "Disk": "storage_gb",
    "Swap": "swap_gb",
    "Network": "network",
    "GPU": "gpu_count",
    "TPU": "tpu_chips",
}
#: Most alternatives one expression may expand to (a guard against exponential DNF).
MAX_ALTERNATIVES = 64

_OPERATORS: dict[str, AffinityOperator] = {
    "EQ": AffinityOperator.IN,
    "NE": AffinityOperator.NOT_IN,
    "LT": AffinityOperator.LT,
    "GT": AffinityOperator.GT,
    "LE": AffinityOperator.LTE,
    "GE": AffinityOperator.GTE,
    "Match": AffinityOperator.MATCHES,
}


def regex_to_glob(pattern: str) -> str | None:
    """Translate a whole-name regular expression into the model's glob, or None when it has no glob form.

    >>> regex_to_glob("gpu[0-9]."), regex_to_glob("gpu[0-9]+")
    ('gpu[0-9]?', None)
    """
    p = pattern
    if p.startswith("^"):
        p = p[1:]
    if p.endswith("$") and not p.endswith("\\$"):
        p = p[:-1]
    out: list[str] = []
    i = 0
    while i < len(p):
        c = p[i]
        nxt = p[i + 1] if i + 1 < len(p) else ""
        if c == "\\":
            if not nxt:
                return None
            if nxt == "d":
                out.append("[0-9]")
            elif nxt.isalnum():
                return None  # \w, \s, \b ... have no glob form
            else:
                out.append(f"[{nxt}]" if nxt in "*?[]" else nxt)
            i += 2
        elif c == ".":
            if nxt == "*":
                out.append("*")
                i += 2
            elif nxt == "+":
                out.append("?*")
                i += 2
            else:
                out.append("?")
                i += 1
        elif c == "[":
            j = p.find("]", i + 2 if p[i + 1 : i + 2] in ("]", "^") else i + 1)
            if j < 0:
                return None
            body = p[i + 1 : j]
            out.append("[" + ("!" + body[1:] if body.startswith("^") else body) + "]")
            i = j + 1
        elif c in "*+?{}()|^$]":
            return None
        else:
            out.append(c)
            i += 1
        if i < len(p) and p[i] in "*+?{" and out and not out[-1].endswith("*"):
            return None  # a quantifier on a literal or class ("a+", "[0-9]*") has no glob form
    return "".join(out)


def number_text(v: float) -> str:
    """A label value for a number: ``32`` rather than ``32.0``."""
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


@dataclass
class Interval:
    """Bounds narrowed by ANDed constraints; ``lo``/``hi`` None means unbounded."""

    lo: float | None = None
    hi: float | None = None

    def add(self, op: str, v: float, integer: bool) -> None:
        step = 1 if integer else 0
        if op in ("EQ", "GE", "GT"):
            lo = v + step if op == "GT" else v
            self.lo = lo if self.lo is None else max(self.lo, lo)
        if op in ("EQ", "LE", "LT"):
            hi = v - step if op == "LT" else v
            self.hi = hi if self.hi is None else min(self.hi, hi)

    def meet(self, other: Interval) -> Interval:
        lo = [x for x in (self.lo, other.lo) if x is not None]
        hi = [x for x in (self.hi, other.hi) if x is not None]
        return Interval(max(lo) if lo else None, min(hi) if hi else None)

    @property
    def empty(self) -> bool:
        return self.lo is not None and self.hi is not None and self.lo > self.hi

    def demand(self, key: str) -> float:
        if self.lo is not None:
            return self.lo
        if key in INTEGER_KEYS and (self.hi is None or self.hi >= 1):
            return 1
        return 0

    def as_dict(self) -> dict[str, float | None]:
        return {"min": self.lo, "max": self.hi}


@dataclass
class Measure:
    """A consumable atom's value: ``key`` names the resource (``Memory``, ``GPU``, ``Resource:License``)."""

    key: str
    value: float
    types: list[str] = field(default_factory=list)
    units: str | None = None


@dataclass
class Alternative:
    interval: Interval
    types: list[str]
    label: str
    weight: int | None = None


class Collector:
    """Everything one property set (a job, or one task group) requests."""

    def __init__(self, ctx: Ctx, choose: list[int] | None = None):
        self.ctx = ctx
        #: Alternative node shapes met so far (``Or`` between node tests and amounts): the expression and
        #: the words of each of its alternatives. ``choose[k]`` is the alternative applied for the k-th.
        self.shapes: list[tuple[str, list[str]]] = []
        self.choose = choose
        self.amounts: dict[str, Interval] = {}
        self.types: dict[str, list[str]] = {}
        self.where: dict[str, Element] = {}
        self.alternatives: dict[str, list[list[Alternative]]] = {}
        self.required: list[Rule] = []
        self.preferred: list[LabelRule] = []
        self.scalars: dict[str, tuple[str, Element]] = {}
        self.meta: dict[str, Any] = {}
        self.dedicated: set[str] = set()
        self.shares: dict[str, int] = {}

    # -- entry point ------------------------------------------------------------------------------
    def collect(self, group: Group) -> None:
        """Apply a parsed sequence: conjunctive operands one by one, anything else as a whole.

        An unbalanced sequence (``broken``) was already reported and is not guessed at.
        """
        if group.broken:
            return
        self._prefs(group)
        terms = group.terms()
        if len(terms) > 1:
            self._complex(group.tree())
            return
        for operand in terms[0] if terms else []:
            if isinstance(operand, Atom):
                self._atom(operand)
            elif isinstance(operand, Group):
                self.collect(operand)
            elif isinstance(operand, Sub):
                self.ctx.check_attributes(operand.el, _expr_attrs())
                self.collect(operand.inner)
            else:
                self._complex(operand)

    # -- single properties ------------------------------------------------------------------------
    def _atom(self, a: Atom) -> None:
        if a.node_level or a.tag in LABEL_TAGS:
            rule = self.label_rule(a)
            if rule is not None:
                self.required.append(rule)
        elif a.tag in AMOUNT_TAGS:
            m = self.measure(a)
            if m is None:
                return
            if a.op in ("NE", "Match"):
                self.ctx.unsupported(a.el, f"op {a.op} on an amount ({a.tag}) has no placement meaning")
                return
            self._narrow(m, a)
        elif a.tag in SCALAR_TAGS:
            self.ctx.check_attributes(a.el, _expr_attrs())
            if a.op != "EQ":
                self.ctx.unsupported(a.el, f"op {a.op} on {a.tag} is not supported (only EQ)", attr="op")
            else:
                self.set_scalar(a.tag, a.value, a.el)
        else:
            self.ctx.unsupported(a.el, f"element <{a.tag}> is not supported as a requested property")

    def set_scalar(self, tag: str, value: str, el: Element) -> None:
        """Set a job attribute once; a second, different value for it is a ``conflict``."""
        if not value:
            self.ctx.fail("range", self.ctx.path(el), "must not be empty")
            return
        old = self.scalars.get(tag)
        if old is not None and old[0] != value:
            self.ctx.fail(
                "conflict",
                self.ctx.path(el),
                f"{tag} {value!r} contradicts {old[0]!r} at {self.ctx.path(old[1])}",
            )
            return
        self.scalars[tag] = (value, el)

    def _narrow(self, m: Measure, a: Atom) -> None:
        iv = self.amounts.setdefault(m.key, Interval())
        self.where.setdefault(m.key, a.el)
        iv.add(a.op, m.value, m.key in INTEGER_KEYS and float(m.value).is_integer())
        if m.types:
            old = self.types.get(m.key)
            if old and old != m.types:
                self.ctx.fail(
                    "conflict",
                    self.ctx.path(a.el),
                    f'{m.key} type {m.types[0]!r} contradicts {old[0]!r}; use conj="Or" for alternatives',
                )
            self.types[m.key] = m.types
        if iv.empty:
            self.ctx.fail(
                "conflict",
                self.ctx.path(a.el),
                f"{m.key} constraints leave no value (at least {iv.lo:g}, at most {iv.hi:g})",
            )

    def measure(self, a: Atom) -> Measure | None:
        """Parse a consumable's value (and units, name, type) into a :class:`Measure`, or record why not."""
        ctx, el, path = self.ctx, a.el, self.ctx.path(a.el)
        tag = a.tag
        allowed = _expr_attrs() | CONSUMABLE_ATTRS
        if tag == "Resource":
            allowed = allowed | {"name", "type"}
        if tag in ("NodeCount", "WallDuration"):
            allowed = _expr_attrs() | ({"units"} if tag == "WallDuration" else set())
        if tag == "Processors":
            allowed = allowed - {"units"}
        ctx.check_attributes(el, frozenset(allowed))
        self._consumable_attrs(a)
        units = el.attrib.get("units")
        if tag == "WallDuration":
            secs, err = parse_duration(a.value, units=units)
            if err:
                ctx.fail("type", path, err)
                return None
            return Measure("WallDuration", float(secs or 0))
        if tag in ("Processors", "NodeCount"):
            n, err = parse_integer(a.value)
            if err or n is None:
                ctx.fail("type", path, err or "must be an integer")
                return None
            low = 1 if tag == "NodeCount" else 0
            if n < low:
                ctx.fail("range", path, f"must be >= {low}, got {n}")
                return None
            return Measure(tag, float(n))
        v, err = parse_float(a.value)
        if err or v is None:
            ctx.fail("type", path, err or "must be a number")
            return None
        if v < 0:
            ctx.fail("range", path, f"must be >= 0, got {v:g}")
            return None
        if tag in ("Memory", "Disk", "Swap"):
            gb, uerr = to_gb(v, units)
            if uerr or gb is None:
                ctx.fail("enum", f"{path}@units", uerr or "bad unit")
                return None
            return Measure(tag, gb, units=units)
        if tag == "Network":
            return Measure(tag, v, units=units)
        return self._resource(a, v)

    def _resource(self, a: Atom, v: float) -> Measure | None:
        ctx, el, path = self.ctx, a.el, self.ctx.path(a.el)
        name = el.attrib.get("name", "").strip()
        rtype = el.attrib.get("type", "").strip()
        if not name:
            ctx.fail("required", f"{path}@name", "a Resource must have a name attribute (§5.1.8)")
            return None
        kind = name.upper()
        if kind not in ("GPU", "TPU"):
            key = f"Resource:{name}" + (f":{rtype}" if rtype else "")
            return Measure(key, v, units=el.attrib.get("units"))
        if not float(v).is_integer():
            if kind == "GPU" and 0 < v < 1 and a.op == "EQ" and not a.node_level:
                self.shares["GPU"] = max(1, min(1000, round(v * 1000)))
                return Measure("GPU", 1.0, [rtype] if rtype else [])
            ctx.fail(
                "type",
                path,
                f"a {kind} count must be a whole number (or, for GPU, a fraction below 1 "
                f"with op EQ), got {v:g}",
            )
            return None
        return Measure(kind, v, [rtype] if rtype else [])

    def _consumable_attrs(self, a: Atom) -> None:
        el, path = a.el, self.ctx.path(a.el)
        for attr in ("dedicated", "dynamic"):
            if attr in el.attrib:
                b, err = parse_boolean(el.attrib[attr])
                if err:
                    self.ctx.fail("type", f"{path}@{attr}", err)
                elif b and attr == "dedicated":
                    self.dedicated.add(a.tag if a.tag != "Resource" else el.attrib.get("name", "Resource"))
                elif b:
                    self.meta.setdefault("dynamic", []).append(a.tag)
        if "consumptionRate" in el.attrib:
            _, err = parse_float(el.attrib["consumptionRate"])
            if err:
                self.ctx.fail("type", f"{path}@consumptionRate", err)
        if "wallDuration" in el.attrib:
            _, err = parse_duration(el.attrib["wallDuration"])
            if err:
                self.ctx.fail("type", f"{path}@wallDuration", err)

    # -- node tests ---------------------------------------------------------------------------------
    def label_rule(self, a: Atom) -> Rule | None:
        """The node-label rule of a node property, or None (issue recorded)."""
        ctx, el, path, op, value = self.ctx, a.el, self.ctx.path(a.el), a.op, a.value
        operator = _OPERATORS[op]
        if a.tag in ("Feature", "Name", "Partition", "NodeList"):
            ctx.check_attributes(el, _expr_attrs())
            if a.tag == "NodeList":
                return self._node_list(a)
            if not value:
                ctx.fail("range", path, f"{a.tag} must not be empty")
                return None
            if a.tag == "Feature":
                key, eq, val = value.partition("=")
                if op not in ("EQ", "NE"):
                    ctx.unsupported(el, f"op {op} on a Feature is not supported (EQ or NE)", attr="op")
                    return None
                if eq and key.strip() and val.strip():
                    return LabelRule(key=key.strip(), operator=operator, values=[val.strip()])
                return LabelRule(
                    key=value,
                    operator=AffinityOperator.EXISTS if op == "EQ" else AffinityOperator.DOES_NOT_EXIST,
                )
            key = "hostname" if a.tag == "Name" else "partition"
            if op == "Match":
                glob = regex_to_glob(value)
                if glob is None:
                    ctx.unsupported(
                        el,
                        f"pattern {value!r} uses regex features with no glob form "
                        "(alternation, groups, counted repeats)",
                    )
                    return None
                return LabelRule(key=key, operator=operator, values=[glob])
            return LabelRule(key=key, operator=operator, values=[value])
        if a.tag in AMOUNT_TAGS and a.tag not in ("NodeCount", "WallDuration"):
            m = self.measure(a)
            if m is None:
                return None
            if op == "Match":
                ctx.unsupported(el, f"op Match on a node amount ({a.tag}) has no meaning", attr="op")
                return None
            key = NODE_KEYS.get(m.key) or "resource." + m.key.removeprefix("Resource:").replace(":", ".")
            rule = LabelRule(key=key, operator=operator, values=[number_text(m.value)])
            if m.types and m.key in ("GPU", "TPU"):
                tkey = "gpu_type" if m.key == "GPU" else "tpu_type"
                return AllOf(rules=[rule, LabelRule(key=tkey, operator=AffinityOperator.IN, values=m.types)])
            return rule
        ctx.unsupported(el, f"element <{a.tag}> is not supported as a node property")
        return None

    def _node_list(self, a: Atom) -> Rule | None:
        names: list[str] = []
        for c in children(a.el):
            if local(c.tag) != "Node":
                self.ctx.unsupported(c, f"element <{local(c.tag)}> is not supported in a NodeList")
                continue
            self.ctx.check_attributes(c, frozenset())
            if text(c):
                names.append(text(c))
            else:
                self.ctx.fail("range", self.ctx.path(c), "a Node name must not be empty")
        if not names:
            self.ctx.fail(
                "required", self.ctx.path(a.el), "a NodeList must contain one or more Node elements"
            )
            return None
        if a.op not in ("EQ", "NE"):
            self.ctx.unsupported(a.el, f"op {a.op} on a NodeList is not supported (EQ or NE)", attr="op")
            return None
        return LabelRule(key="hostname", operator=_OPERATORS[a.op], values=names)

    # -- expressions ----------------------------------------------------------------------------------
    def _is_label(self, a: Atom) -> bool:
        return a.node_level or a.tag in LABEL_TAGS

    def _complex(self, node: Node) -> None:
        """An ``Or``/``Not`` expression: node tests become one rule; one consumable's values become
        alternatives; credentials take the first alternative; anything mixed is unsupported."""
        leaves = atoms(node)
        if not leaves:
            return
        for g in _groups(node):
            for p in g.prefs:
                self.ctx.unsupported(p.el, "a preference inside an Or/Nand/Nor expression is not supported")
            g.prefs = []
        leaves = atoms(node)
        if all(self._is_label(a) for a in leaves):
            rule = self._rule(node)
            if rule is not None:
                self.required.append(rule)
            return
        amounts = all(a.tag in AMOUNT_TAGS and not a.node_level for a in leaves)
        if not amounts and not all(a.tag in SCALAR_TAGS for a in leaves):
            self._shapes(node, leaves)
            return
        terms = _dnf(node)
        if terms is None or len(terms) > MAX_ALTERNATIVES:
            self.ctx.unsupported(
                leaves[0].el,
                f"expression {show(node)[:200]} negates (Nand/Nor) amounts or credentials, or has more "
                f"than {MAX_ALTERNATIVES} alternatives",
            )
            return
        # Node-property blocks hold node tests, which made the expression a rule above (all labels) or
        # shapes (mixed): what is left is amounts or credentials, atoms each; a block here is refused.
        dnf = [[a for a in conj if isinstance(a, Atom)] for conj in terms]
        if any(len(c) != len(t) for c, t in zip(dnf, terms, strict=True)):
            self.ctx.unsupported(leaves[0].el, f"expression {show(node)[:200]} mixes node properties in")
            return
        if amounts:
            measured = [(a, self.measure(a)) for a in leaves]
            if any(m is None for _, m in measured):
                return
            keys = {m.key for _, m in measured if m is not None}
            if len(keys) > 1 and not any(a.op in ("NE", "Match") for a in leaves):
                self._shapes(node, leaves)  # several consumables: alternative node shapes
                return
            if len(keys) != 1 or any(a.op in ("NE", "Match") for a in leaves):
                self.ctx.unsupported(
                    leaves[0].el,
                    f"alternatives {show(node)[:200]} must all be EQ/LT/GT/LE/GE values of one consumable",
                )
                return
            key = keys.pop()
            by_atom = {id(a): m for a, m in measured}
            alts: list[Alternative] = []
            for conj in dnf:
                iv = Interval()
                types: list[str] = []
                for a in conj:
                    m = by_atom[id(a)]
                    assert m is not None
                    iv.add(a.op, m.value, key in INTEGER_KEYS and float(m.value).is_integer())
                    types = types or m.types
                alts.append(Alternative(iv, types, " and ".join(show(a) for a in conj)))
            self.alternatives.setdefault(key, []).append(alts)
            self.where.setdefault(key, leaves[0].el)
            return
        # credentials (the only other kind left)
        for a in leaves:
            self.ctx.check_attributes(a.el, _expr_attrs())
        if any(a.op != "EQ" for a in leaves):
            self.ctx.unsupported(leaves[0].el, "credential alternatives must use op EQ")
            return
        for a in dnf[0]:
            self.set_scalar(a.tag, a.value, a.el)
        self.meta.setdefault("credential_alternatives", []).append(
            [{a.tag: a.value for a in conj} for conj in dnf]
        )

    def _shapes(self, node: Node, leaves: list[Atom]) -> None:
        """Node tests and amounts under ``Or``: alternative node shapes ("8 processors on a node with
        feature a, or 4 on one with b"). Each DNF term is one shape; the collector applies the one
        ``choose`` names (the first by default) and records them all for the job's alternatives.
        Credentials mixed in, negated amounts or too many terms stay unsupported."""
        dnf = None if any(a.tag in SCALAR_TAGS for a in leaves) else _dnf(node)
        if dnf is None or len(dnf) > MAX_ALTERNATIVES:
            self.ctx.unsupported(
                leaves[0].el,
                f"expression {show(node)[:200]} combines credentials with node tests or amounts, negates "
                f"(Nand/Nor) amounts, or has more than {MAX_ALTERNATIVES} alternatives; the placer cannot "
                "represent it",
            )
            return
        k = len(self.shapes)
        self.shapes.append((show(node), [" and ".join(show(a) for a in conj) for conj in dnf]))
        pick = self.choose[k] if self.choose is not None and k < len(self.choose) else 0
        for a in dnf[pick]:
            if isinstance(a, Sub):
                rule = self._rule(a)
                if rule is not None:
                    self.required.append(rule)
            else:
                self._atom(a)

    def _rule(self, node: Node) -> Rule | None:
        if isinstance(node, Atom):
            return self.label_rule(node)
        if isinstance(node, Sub):
            self.ctx.check_attributes(node.el, _expr_attrs())
            return self._rule(node.inner.tree())
        if isinstance(node, Group):
            return self._rule(node.tree())
        if isinstance(node, Not):
            inner = self._rule(node.item)
            return None if inner is None else NotRule(rule=inner)
        rules = [self._rule(i) for i in node.items]
        if any(r is None for r in rules):
            return None
        kept = [r for r in rules if r is not None]
        if len(kept) == 1:
            return kept[0]
        return AllOf(rules=kept) if isinstance(node, And) else AnyOf(rules=kept)

    # -- preferences (§8.1) ---------------------------------------------------------------------------
    def _prefs(self, group: Group) -> None:
        sets: dict[tuple[int, str], list[Atom]] = {}
        for a in group.prefs:
            assert a.pref is not None
            if self._is_label(a):
                cat = "label"
            elif a.tag in AMOUNT_TAGS:
                m = self.measure(a)
                if m is None:
                    continue
                cat = m.key
            else:
                self.ctx.unsupported(a.el, f"a preference on <{a.tag}> is not supported", attr="preference")
                continue
            sets.setdefault((1 if a.pref > 0 else -1, cat), []).append(a)
        for (sign, cat), members in sets.items():
            total = sum(abs(a.pref or 0) for a in members)
            weights = [max(1, round(100 * abs(a.pref or 0) / total)) for a in members]
            if cat == "label":
                self._label_prefs(sign, members, weights)
            else:
                self._amount_prefs(sign, cat, members, weights)

    def _label_prefs(self, sign: int, members: list[Atom], weights: list[int]) -> None:
        rules = [self.label_rule(a) for a in members]
        if any(r is None for r in rules):
            return
        kept = [r for r in rules if r is not None]
        if sign > 0:
            self.required.append(kept[0] if len(kept) == 1 else AnyOf(rules=kept))
        for a, r, w in zip(members, kept, weights, strict=True):
            if isinstance(r, LabelRule):
                self.preferred.append(LabelRule(key=r.key, operator=r.operator, values=r.values, weight=w))
            elif sign < 0:
                self.ctx.unsupported(a.el, "a soft preference on a composite node test is not supported")

    def _amount_prefs(self, sign: int, key: str, members: list[Atom], weights: list[int]) -> None:
        alts: list[Alternative] = []
        for a, w in zip(members, weights, strict=True):
            m = self.measure(a)
            if m is None:
                return
            if a.op in ("NE", "Match"):
                self.ctx.unsupported(a.el, f"op {a.op} on an amount ({a.tag}) has no placement meaning")
                return
            iv = Interval()
            iv.add(a.op, m.value, key in INTEGER_KEYS and float(m.value).is_integer())
            alts.append(Alternative(iv, m.types, show(a), w))
        if sign > 0:
            self.alternatives.setdefault(key, []).append(alts)
            self.where.setdefault(key, members[0].el)
        else:
            self.meta.setdefault("soft_preferences", {}).setdefault(key, []).extend(
                {"value": alt.label, "weight": alt.weight} for alt in alts
            )

    # -- results ------------------------------------------------------------------------------------
    def resolve(self) -> None:
        """Fold every alternative set into its interval: the smallest feasible alternative becomes hard."""
        for key, sets in self.alternatives.items():
            base = self.amounts.get(key, Interval())
            for alts in sets:
                feasible = [(alt, base.meet(alt.interval)) for alt in alts]
                feasible = [(alt, iv) for alt, iv in feasible if not iv.empty]
                if not feasible:
                    el = self.where[key]
                    self.ctx.fail(
                        "conflict",
                        self.ctx.path(el),
                        f"no alternative of {key} is compatible with its other constraints",
                    )
                    continue
                best = min(iv.demand(key) for _, iv in feasible)
                tied = [(alt, iv) for alt, iv in feasible if iv.demand(key) == best]
                base = tied[0][1]
                if key in ("GPU", "TPU"):
                    types = [t for alt, _ in tied for t in alt.types]
                    if any(not alt.types for alt, _ in tied):
                        types = []
                    self.types[key] = list(dict.fromkeys(types))
                self.meta.setdefault("alternatives", {}).setdefault(key, []).append(
                    {
                        "chosen": tied[0][0].label,
                        "options": [
                            {"value": alt.label, **({"weight": alt.weight} if alt.weight else {})}
                            for alt in alts
                        ],
                    }
                )
            self.amounts[key] = base
        self.alternatives = {}
        ranges = {k: iv.as_dict() for k, iv in self.amounts.items() if iv.hi is not None and iv.hi != iv.lo}
        if ranges:
            self.meta["ranges"] = ranges

    def demand(self, key: str) -> float | None:
        """The hard amount of ``key`` (None when not requested)."""
        iv = self.amounts.get(key)
        if iv is None or iv.empty:
            return None
        if key == "WallDuration" and iv.hi is not None:
            return iv.hi
        return iv.demand(key)

    def requested_keys(self) -> list[str]:
        return list(self.amounts)


def _expr_attrs() -> frozenset[str]:
    from placer.solver.jobs.formats.sss_expr import EXPR_ATTRS

    return EXPR_ATTRS


def _groups(node: Node) -> list[Group]:
    out: list[Group] = []
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Group):
            out.append(n)
            stack.extend(x for _, x in n.items)
        elif isinstance(n, Sub):
            stack.append(n.inner)
        elif isinstance(n, And | Or):
            stack.extend(n.items)
        elif isinstance(n, Not):
            stack.append(n.item)
    return out


def _dnf(node: Node) -> list[list[Atom | Sub]] | None:
    """Disjunctive normal form over atoms and node-property blocks (a ``NodeProperties`` block is all
    node tests: one operand), or None when a negation is inside."""
    if isinstance(node, Atom | Sub):
        return [[node]]
    if isinstance(node, Group):
        return _dnf(node.tree())
    if isinstance(node, Or):
        out: list[list[Atom | Sub]] = []
        for i in node.items:
            d = _dnf(i)
            if d is None:
                return None
            out.extend(d)
            if len(out) > MAX_ALTERNATIVES:
                return None
        return out
    if isinstance(node, And):
        acc: list[list[Atom | Sub]] = [[]]
        for i in node.items:
            d = _dnf(i)
            if d is None or len(acc) * len(d) > MAX_ALTERNATIVES:
                return None
            acc = [x + y for x, y in itertools.product(acc, d)]
        return acc
    return None


def weights_ok(values: list[float]) -> bool:
    """All finite (a guard used by tests of the weight arithmetic)."""
    return all(math.isfinite(v) for v in values)
