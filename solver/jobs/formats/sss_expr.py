"""SSS requested-property expressions (§8.1): ``op``, ``conj``, ``group`` and ``preference`` into a tree.

Why a tree first: the attributes describe an infix boolean expression spread over sibling elements.
``conj`` relates a property to the *previous* one (``And`` default, ``Or``, ``Nand`` = and-not, ``Nor`` =
or-not); ``group="k"`` opens ``k`` parentheses before the property, ``group="-k"`` closes ``k`` after it.
Only once the expression is a tree can the mapping (:mod:`placer.solver.jobs.formats.sss_properties`) decide
what is a hard demand, a label rule, or an alternative.

Decisions the spec leaves open, documented here:

* Precedence without ``group``: ``And``/``Nand`` bind tighter than ``Or``/``Nor`` (as in SQL and C), so
  ``A, B conj=Or, C`` is ``A or (B and C)``.
* ``preference``: a property carrying it is an *alternative*, not an operand: the spec's example
  ``<Memory preference="2">1024</Memory><Memory preference="1">512</Memory>`` has the default ``And``
  between two contradictory values, which only makes sense as "1024 preferred, 512 acceptable". So
  preferred properties are taken out of the boolean expression (their ``conj`` is not used) and kept as
  preference sets of their parenthetical group; the weights are ratios within that group (§8.1).
* ``NodeProperties`` inside ``Requested`` is one operand whose children form a sub-expression.
* Unbalanced groups (closing more than is open, or leaving groups open) are ``range`` errors.

>>> from xml.etree.ElementTree import fromstring
>>> from placer.solver.jobs.formats.sss_context import Ctx, parent_map, path_map
>>> req = fromstring('<Requested><UserId group="1">a</UserId><AccountName group="-1">x</AccountName>'
...     '<UserId conj="Or" group="1">b</UserId><AccountName group="-1">y</AccountName></Requested>')
>>> ctx = Ctx(path_map(req, "Requested"), parent_map(req), default_policy="Reject", source="s")
>>> show(parse_sequence(list(req), ctx).tree())
'((UserId=a and AccountName=x) or (UserId=b and AccountName=y))'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from placer.solver.jobs.formats.sss_context import Ctx, children, local, text
from placer.solver.jobs.formats.sss_values import parse_integer

__all__ = [
    "CONJS",
    "EXPR_ATTRS",
    "MAX_GROUP_DEPTH",
    "OPS",
    "SUB_EXPRESSIONS",
    "And",
    "Atom",
    "Group",
    "Node",
    "Not",
    "Or",
    "Sub",
    "atoms",
    "parse_sequence",
    "show",
]

#: §8.1 ``op`` values; ``EQ`` is the default.
OPS: tuple[str, ...] = ("EQ", "NE", "LT", "GT", "LE", "GE", "Match")
#: §8.1 ``conj`` values; ``And`` is the default.
CONJS: tuple[str, ...] = ("And", "Or", "Nand", "Nor")
#: Attributes every requested property may carry (§8.1), besides ``awarenessPolicy``.
EXPR_ATTRS: frozenset[str] = frozenset({"op", "conj", "group", "preference", "performanceFactor"})
#: Containers whose children are themselves requested properties (one operand in the parent).
SUB_EXPRESSIONS: frozenset[str] = frozenset({"NodeProperties"})
#: Deepest ``group`` nesting accepted (a guard; real documents use one or two).
MAX_GROUP_DEPTH = 32


@dataclass(eq=False)
class Atom:
    """One requested property: ``<Memory op="GE" units="GB">2</Memory>``."""

    el: Element
    tag: str
    op: str
    pref: int | None
    node_level: bool

    @property
    def value(self) -> str:
        return text(self.el)


@dataclass(eq=False)
class Sub:
    """A ``NodeProperties`` operand: its children form the expression ``inner``."""

    el: Element
    inner: Group


@dataclass(eq=False)
class And:
    items: list[Node]


@dataclass(eq=False)
class Or:
    items: list[Node]


@dataclass(eq=False)
class Not:
    item: Node


@dataclass(eq=False)
class Group:
    """One parenthetical group: ``(conj, operand)`` pairs in document order, and its preferred properties.

    ``opener`` is the element whose ``group`` attribute opened it (None for the whole sequence), for
    error paths.
    """

    opener: Element | None = None
    items: list[tuple[str, Node]] = field(default_factory=list)
    prefs: list[Atom] = field(default_factory=list)
    #: Set on the root when ``group`` attributes do not balance: the expression is not interpreted.
    broken: bool = False

    def terms(self) -> list[list[Node]]:
        """The group as a disjunction of conjunctions, ``Nand``/``Nor`` operands wrapped in :class:`Not`."""
        terms: list[list[Node]] = []
        for i, (conj, node) in enumerate(self.items):
            operand: Node = Not(node) if conj in ("Nand", "Nor") and i > 0 else node
            if i == 0 or conj in ("Or", "Nor"):
                terms.append([operand])
            else:
                terms[-1].append(operand)
        return terms

    def tree(self) -> Node:
        """The group as an :class:`And`/:class:`Or`/:class:`Not` tree (nested groups stay :class:`Group`)."""
        terms = [t[0] if len(t) == 1 else And(t) for t in self.terms()]
        if not terms:
            return And([])
        return terms[0] if len(terms) == 1 else Or(terms)


Node = Atom | Sub | Group | And | Or | Not


def parse_sequence(elements: list[Element], ctx: Ctx, *, node_level: bool = False) -> Group:
    """Parse sibling requested properties into their root :class:`Group`, recording ``enum``/``type``/
    ``range`` issues for bad ``op``/``conj``/``group``/``preference`` values (the property then counts
    with the default)."""
    root = Group()
    stack: list[Group] = [root]
    for el in elements:
        tag = local(el.tag)
        path = ctx.path(el)
        op = _choice(el, "op", OPS, "EQ", ctx)
        conj = _choice(el, "conj", CONJS, "And", ctx)
        depth = _int_attr(el, "group", ctx) or 0
        pref = _int_attr(el, "preference", ctx)
        if pref == 0:
            ctx.fail(
                "range",
                f"{path}@preference",
                "must be a non-zero integer (positive: at least one alternative must hold; negative: soft)",
            )
            pref = None
        if "performanceFactor" in el.attrib:
            from placer.solver.jobs.formats.sss_values import parse_float

            _, err = parse_float(el.attrib["performanceFactor"])
            if err:
                ctx.fail("type", f"{path}@performanceFactor", err)
        if depth > 0:
            if len(stack) + depth > MAX_GROUP_DEPTH:
                ctx.fail("range", f"{path}@group", f"groups nest deeper than {MAX_GROUP_DEPTH}")
                depth = 0
            for i in range(depth):
                g = Group(opener=el)
                stack[-1].items.append((conj if i == 0 else "And", g))
                stack.append(g)
            conj = "And"
        node: Node
        if tag in SUB_EXPRESSIONS:
            if not children(el):  # §5.1.9: "This element MUST contain one or more Node Properties"
                ctx.fail("required", path, f"<{tag}> must contain one or more node properties (§5.1.9)")
            node = Sub(el, parse_sequence(children(el), ctx, node_level=True))
        else:
            node = Atom(el, tag, op, pref, node_level)
        if isinstance(node, Atom) and pref is not None:
            stack[-1].prefs.append(node)
        else:
            stack[-1].items.append((conj, node))
        if depth < 0:
            if -depth > len(stack) - 1:
                ctx.fail(
                    "range",
                    f"{path}@group",
                    f"closes {-depth} group(s) but only {len(stack) - 1} is/are open — a negative group "
                    "closes parentheses opened by an earlier property with a positive group",
                )
                del stack[1:]
                root.broken = True
            else:
                del stack[len(stack) + depth :]
    if len(stack) > 1:
        opener = stack[1].opener
        where = f"{ctx.path(opener)}@group" if opener is not None else "group"
        ctx.fail("range", where, f"{len(stack) - 1} group(s) opened here are never closed")
        root.broken = True
    return root


def _choice(el: Element, attr: str, allowed: tuple[str, ...], default: str, ctx: Ctx) -> str:
    v = el.attrib.get(attr)
    if v is None:
        return default
    if v not in allowed:
        ctx.fail("enum", f"{ctx.path(el)}@{attr}", f"must be one of {', '.join(allowed)}; got {v!r}"[:300])
        return default
    return v


def _int_attr(el: Element, attr: str, ctx: Ctx) -> int | None:
    v = el.attrib.get(attr)
    if v is None:
        return None
    n, err = parse_integer(v)
    if err:
        ctx.fail("type", f"{ctx.path(el)}@{attr}", err)
        return None
    if n is not None and abs(n) > 1000:
        ctx.fail("range", f"{ctx.path(el)}@{attr}", f"must be between -1000 and 1000, got {n}")
        return None
    return n


def atoms(node: Node) -> list[Atom]:
    """Every property of ``node`` (preferred ones of nested groups included), in document order.

    >>> from xml.etree.ElementTree import fromstring
    >>> from placer.solver.jobs.formats.sss_context import Ctx, parent_map, path_map
    >>> r = fromstring('<R><A>1</A><B conj="Or">2</B><C preference="1">3</C></R>')
    >>> ctx = Ctx(path_map(r, "R"), parent_map(r), default_policy="Reject", source="s")
    >>> [a.tag for a in atoms(parse_sequence(list(r), ctx))]
    ['A', 'B', 'C']
    """
    out: list[Atom] = []
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Atom):
            out.append(n)
        elif isinstance(n, Sub):
            stack.append(n.inner)
        elif isinstance(n, Group):
            stack.extend(reversed(n.prefs))
            stack.extend(reversed([x for _, x in n.items]))
        elif isinstance(n, And | Or):
            stack.extend(reversed(n.items))
        else:
            stack.append(n.item)
    return out


def show(node: Node) -> str:
    """A readable rendering, for messages, metadata and doctests.

    >>> from xml.etree.ElementTree import fromstring
    >>> show(Atom(fromstring("<Memory>1</Memory>"), "Memory", "GE", None, False))
    'Memory>=1'
    """
    if isinstance(node, Atom):
        sym = {"EQ": "=", "NE": "!=", "LT": "<", "GT": ">", "LE": "<=", "GE": ">=", "Match": "~"}[node.op]
        return f"{node.tag}{sym}{node.value}"
    if isinstance(node, Sub):
        return f"NodeProperties{show(node.inner)}"
    if isinstance(node, Group):
        inner = show(node.tree())
        return inner if inner.startswith("(") else f"({inner})"
    if isinstance(node, And):
        return "(" + " and ".join(show(i) for i in node.items) + ")"
    if isinstance(node, Or):
        return "(" + " or ".join(show(i) for i in node.items) + ")"
    return f"not {show(node.item)}"
