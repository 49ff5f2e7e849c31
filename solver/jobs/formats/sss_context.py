"""Per-job reading state for SSS: issues, warnings, unknown elements and the awareness policy (§9).

Why: the awareness policy is inherited through the XML tree ("the default action for the elements that
the containment element encloses") and overridable on any element, so deciding what to do with an
element the reader does not support needs the element's ancestry. :class:`Ctx` holds the parent map of
the document, the caller's default policy (:attr:`ReadOptions.sss_awareness`, itself defaulting to the
spec's ``Reject``), and collects what one job's reading produces.

Paths name elements the way a person finds them: ``Job[0].Requested.Memory``, with ``[i]`` after a
name that repeats among its siblings (``TaskGroup[1]``) and ``@attr`` for an attribute.

>>> from xml.etree.ElementTree import fromstring
>>> root = fromstring('<Job awarenessPolicy="Warn"><Foo/></Job>')
>>> ctx = Ctx(path_map(root, "Job[0]"), parent_map(root), default_policy="Reject", source="x.xml")
>>> ctx.unsupported(root[0], "element <Foo> is not supported")
>>> [w.code for w in ctx.warnings], list(ctx.unknown)
(['unsupported'], ['Job[0].Foo'])
"""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element, tostring

from placer.solver.jobs.errors import Issue, issue

__all__ = ["POLICIES", "POLICY_ATTR", "Ctx", "children", "local", "parent_map", "path_map", "raw_xml", "text"]

#: §9: the values of ``awarenessPolicy``.
POLICIES: tuple[str, ...] = ("Reject", "Warn", "Ignore")
#: The attribute's name (§9: "This name of this attribute is awarenessPolicy").
POLICY_ATTR = "awarenessPolicy"


def local(tag: Any) -> str:
    """Element name without an XML namespace (SSSRMAP documents may carry one).

    >>> local("{urn:sss}Job")
    'Job'
    """
    if not isinstance(tag, str):  # comments and processing instructions have function tags
        return ""
    return tag.rsplit("}", 1)[-1]


def path_map(root: Element, root_path: str) -> dict[Element, str]:
    """Path of every element under ``root``; ``[i]`` on names that repeat among siblings, and always on
    ``Job`` (so results and issues line up: ``Job[0]``, ``JobGroup.Job[1]``).

    >>> from xml.etree.ElementTree import fromstring
    >>> sorted(path_map(fromstring("<R><A/><B/><A/><Job/></R>"), "R").values())
    ['R', 'R.A[0]', 'R.A[1]', 'R.B', 'R.Job[0]']
    """
    paths = {root: root_path}
    stack = [root]
    while stack:
        el = stack.pop()
        base = paths[el]
        kids = [c for c in el if local(c.tag)]
        counts: dict[str, int] = {}
        for c in kids:
            counts[local(c.tag)] = counts.get(local(c.tag), 0) + 1
        seen: dict[str, int] = {}
        for c in kids:
            name = local(c.tag)
            i = seen.get(name, 0)
            seen[name] = i + 1
            paths[c] = f"{base}.{name}[{i}]" if counts[name] > 1 or name == "Job" else f"{base}.{name}"
            stack.append(c)
    return paths


def parent_map(root: Element) -> dict[Element, Element]:
    """Parent of every element under ``root`` (ElementTree keeps no parent pointers).

    >>> from xml.etree.ElementTree import fromstring
    >>> r = fromstring("<A><B/></A>"); parent_map(r)[r[0]] is r
    True
    """
    return {c: p for p in root.iter() for c in p}


def children(el: Element) -> list[Element]:
    """Element children of ``el`` (comments and processing instructions left out).

    >>> from xml.etree.ElementTree import Comment, Element
    >>> el = Element("A"); el.extend([Comment("c"), Element("B")])
    >>> [c.tag for c in children(el)]
    ['B']
    """
    return [c for c in el if local(c.tag)]


def text(el: Element) -> str:
    """Character content of a simple element, stripped (the examples indent with tabs and newlines).

    >>> from xml.etree.ElementTree import fromstring
    >>> text(fromstring("<JobId>\\n\\tPBS.1 </JobId>"))
    'PBS.1'
    """
    return (el.text or "").strip()


def raw_xml(el: Element) -> str:
    """The element as XML text, unchanged except for the whitespace after it: what ``Job.unknown``
    keeps, so nothing the producer said is lost.

    >>> from xml.etree.ElementTree import fromstring
    >>> raw_xml(fromstring("<A><Foo x='1'>t</Foo> tail</A>")[0])
    '<Foo x="1">t</Foo>'
    """
    tail, el.tail = el.tail, None
    try:
        return tostring(el, encoding="unicode")
    finally:
        el.tail = tail


class Ctx:
    """Issues and unknowns of one job, and the awareness policy of any element of the document."""

    def __init__(
        self,
        paths: dict[Element, str],
        parents: dict[Element, Element],
        *,
        default_policy: str,
        source: str,
    ):
        self.paths = paths
        self.parents = parents
        self.default_policy = default_policy if default_policy in POLICIES else "Reject"
        self.source = source
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []
        self.unknown: dict[str, Any] = {}
        self._bad_policy_reported: set[int] = set()

    def path(self, el: Element) -> str:
        """Where ``el`` is in the document (see :func:`path_map`)."""
        return self.paths.get(el, local(el.tag))

    # -- issues ---------------------------------------------------------------------------------
    def fail(self, code: str, path: str, message: str) -> None:
        """Record an error: the job will not be accepted."""
        self.errors.append(issue(code, path, message))

    def warn(self, code: str, path: str, message: str) -> None:
        """Record a warning: the job is accepted, the requestor is told."""
        self.warnings.append(issue(code, path, message))

    # -- awareness policy (§9) --------------------------------------------------------------------
    def policy(self, el: Element | None) -> str:
        """The effective policy of ``el``: its own attribute, else the nearest ancestor's, else the default.

        An invalid value is an ``enum`` error (reported once per element) and counts as ``Reject``, the
        spec's default, so a typo never loosens the policy.
        """
        node = el
        while node is not None:
            value = node.attrib.get(POLICY_ATTR)
            if value is not None:
                if value in POLICIES:
                    return value
                if id(node) not in self._bad_policy_reported:
                    self._bad_policy_reported.add(id(node))
                    self.fail(
                        "enum",
                        f"{self.path(node)}@{POLICY_ATTR}",
                        f"must be one of {', '.join(POLICIES)}; got {value!r}"[:300],
                    )
                return "Reject"
            node = self.parents.get(node)
        return self.default_policy

    def unsupported(self, el: Element, message: str, *, attr: str | None = None) -> None:
        """Something the reader does not support, at ``path``: Reject -> error, Warn -> warning and kept
        in ``unknown``, Ignore -> kept in ``unknown`` silently.

        ``attr`` names an attribute of ``el`` (its value is kept); otherwise the element's XML is kept.
        """
        where = f"{self.path(el)}@{attr}" if attr else self.path(el)
        policy = self.policy(el)
        if policy == "Reject":
            self.fail("unsupported", where, f"{message} (awarenessPolicy Reject)")
            return
        self.unknown[where] = el.attrib.get(attr) if attr else raw_xml(el)
        if policy == "Warn":
            self.warn("unsupported", where, f"{message}; kept in unknown (awarenessPolicy Warn)")

    def check_attributes(self, el: Element, allowed: frozenset[str]) -> None:
        """Apply the awareness policy to every attribute of ``el`` outside ``allowed``.

        ``awarenessPolicy`` itself is always understood; a namespaced attribute (``xmlns``-qualified) is
        judged by its local name.
        """
        for name in el.attrib:
            ln = local(name)
            if ln == POLICY_ATTR or ln in allowed:
                continue
            self.unsupported(el, f"attribute {ln!r} of <{local(el.tag)}> is not supported", attr=name)
