"""Sorting the children of a Job, JobDefaults, TaskGroup or Task into a :class:`PropertySet`, and the
defaults inheritance between two of them.

Why: Job, JobDefaults, TaskGroup(Defaults) and Task(Defaults) share one vocabulary (§5-7: "Job
Properties" may appear in all of them), and the spec's rule for defaults is the same at every level:
"properties in Job elements override any properties found in a sibling JobDefaults element". So each
element is scanned once into the same shape, and :meth:`PropertySet.inherit` applies the rule by
property name (``Resource`` by its ``name`` attribute): a property the element states replaces the
default's; everything else is inherited, including requested expressions (an overridden property is
dropped from the default's expression before it is parsed).

Elements are sorted by what the placer does with them: placement properties (amounts, node tests), job
attributes, structure (task groups, dependencies...), informational properties that do not affect
placement (kept in ``metadata``: §9 allows ignoring what "would not cause an incorrect result"), and
anything else, which goes to the awareness policy.

>>> from xml.etree.ElementTree import fromstring
>>> from placer.solver.jobs.formats.sss_context import Ctx, parent_map, path_map
>>> job = fromstring("<Job><JobId>1</JobId><Processors>4</Processors><Executable>/bin/a</Executable></Job>")
>>> ctx = Ctx(path_map(job, "Job[0]"), parent_map(job), default_policy="Reject", source="s")
>>> ps = PropertySet.scan(job, ctx)
>>> [local(e.tag) for e in ps.placement], sorted(ps.scalars), ps.info
(['Processors'], ['JobId'], {'Executable': '/bin/a'})
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from placer.solver.jobs.formats.sss_context import Ctx, children, local, raw_xml, text
from placer.solver.jobs.formats.sss_expr import EXPR_ATTRS, SUB_EXPRESSIONS
from placer.solver.jobs.formats.sss_properties import AMOUNT_TAGS, CONSUMABLE_ATTRS, LABEL_TAGS
from placer.solver.jobs.formats.sss_values import parse_boolean, parse_datetime, parse_float, parse_integer

#: Job attributes read from simple elements, with their Table 2/3/6/7 type.
SCALARS: dict[str, str] = {
    "JobId": "String",
    "JobName": "String",
    "UserId": "String",
    "GlobalUserId": "String",
    "GroupId": "String",
    "ProjectId": "String",
    "AccountName": "String",
    "Queue": "String",
    "QualityOfService": "String",
    "Priority": "Integer",
    "ReservationId": "String",
    "SubmissionTime": "DateTime",
    "EligibleTime": "DateTime",
    "Type": "String",
    "Checkpointable": "Boolean",
    "Restartable": "Boolean",
    "Suspendable": "Boolean",
    "MachineName": "String",
    "TaskCount": "Integer",
    "TaskGroupName": "String",
    "TaskGroupId": "String",
}

#: Properties that describe the job's execution or history, not where it may run (Tables 1-2, 7, §5.1.1.x);
#: type-checked and kept in ``metadata["sss"]["info"]``.
INFO: dict[str, str] = {
    "Application": "String",
    "Arguments": "String",
    "Charge": "Float",
    "EndTime": "DateTime",
    "Executable": "String",
    "ExitCode": "Integer",
    "GlobalJobId": "String",
    "Hold": "String",
    "InitialWorkingDirectory": "String",
    "Interactive": "Boolean",
    "JobState": "String",
    "QuoteId": "String",
    "ReservationTime": "DateTime",
    "StagedTime": "DateTime",
    "StartCount": "Integer",
    "StartTime": "DateTime",
    "StatusMessage": "String",
    "SubmitHost": "String",
    "SuspendDuration": "Integer",
    "TimeCategory": "String",
    "OutputFile": "String",
    "ErrorFile": "String",
    "InputFile": "String",
    # Table 7 task properties, and ProcessId which the spec's own §1.3.3 example puts in a Task.
    "Node": "String",
    "SessionId": "Integer",
    "TaskId": "String",
    "ProcessId": "Integer",
}

#: Attributes understood on informational elements.
INFO_ATTRS: dict[str, frozenset[str]] = {
    "Charge": frozenset({"units"}),
    "OutputFile": frozenset({"redirect"}),
    "ErrorFile": frozenset({"redirect"}),
    "InputFile": frozenset({"redirect"}),
}

#: Elements handled structurally by the job builder.
STRUCTURE: frozenset[str] = frozenset(
    {
        "Requested",
        "Delivered",
        "Environment",
        "ResourceLimit",
        "Extension",
        "Dependency",
        "TaskDistribution",
        "TaskGroup",
        "TaskGroupDefaults",
        "Task",
        "TaskDefaults",
    }
)

PLACEMENT: frozenset[str] = AMOUNT_TAGS | LABEL_TAGS | SUB_EXPRESSIONS


def override_key(el: Element) -> str:
    """The name under which a property overrides a default: its tag, ``Resource`` per resource name.

    >>> from xml.etree.ElementTree import fromstring
    >>> override_key(fromstring("<Memory>1</Memory>"))
    'Memory'
    >>> override_key(fromstring('<Resource name="GPU">1</Resource>'))
    'Resource:GPU:'
    """
    tag = local(el.tag)
    if tag == "Resource":
        return f"Resource:{el.attrib.get('name', '')}:{el.attrib.get('type', '')}"
    return tag


def check_value(ctx: Ctx, el: Element, kind: str) -> object | None:
    """Type-check a simple element's text against its table type; the typed value or None.

    >>> from xml.etree.ElementTree import fromstring
    >>> from placer.solver.jobs.formats.sss_context import Ctx
    >>> ctx = Ctx({}, {}, default_policy="Reject", source="s")
    >>> check_value(ctx, fromstring("<Priority>7</Priority>"), "Integer")
    7
    >>> check_value(ctx, fromstring("<Priority>x</Priority>"), "Integer") is None
    True
    >>> [i.code for i in ctx.errors]
    ['type']
    """
    t = text(el)
    path = ctx.path(el)
    if kind == "String":
        return t
    v: object
    if kind == "Integer":
        v, err = parse_integer(t)
    elif kind == "Float":
        v, err = parse_float(t)
    elif kind == "Boolean":
        v, err = parse_boolean(t)
    else:
        v, err = parse_datetime(t)
    if err:
        ctx.fail("type", path, err)
        return None
    return v


@dataclass
class PropertySet:
    """The children of one Job-like element, sorted."""

    placement: list[Element] = field(default_factory=list)
    requested: list[list[Element]] = field(default_factory=list)
    scalars: dict[str, Element] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)
    dependencies: list[Element] = field(default_factory=list)
    environment: Element | None = None
    extensions: list[Element] = field(default_factory=list)
    limits: list[Element] = field(default_factory=list)
    delivered: list[Element] = field(default_factory=list)
    distribution: Element | None = None
    task_groups: list[Element] = field(default_factory=list)
    task_group_defaults: Element | None = None
    tasks: list[Element] = field(default_factory=list)
    task_defaults: Element | None = None

    @classmethod
    def scan(cls, el: Element, ctx: Ctx, *, skip: frozenset[str] = frozenset()) -> PropertySet:
        """Sort ``el``'s children; ``skip`` names children the caller handles (JobGroup level)."""
        ps = cls()
        ctx.check_attributes(el, frozenset())
        for c in children(el):
            tag = local(c.tag)
            if tag in skip:
                continue
            if tag in PLACEMENT:
                ps.placement.append(c)
            elif tag in SCALARS or tag in INFO:
                ps._simple(c, tag, ctx)
            elif tag in STRUCTURE:
                ps._structure(c, tag, ctx)
            else:
                ctx.unsupported(c, f"element <{tag}> is not supported")
        return ps

    def _simple(self, c: Element, tag: str, ctx: Ctx) -> None:
        ctx.check_attributes(c, INFO_ATTRS.get(tag, frozenset()) | (EXPR_ATTRS if tag in SCALARS else set()))
        if children(c):
            ctx.fail("type", ctx.path(c), f"<{tag}> must contain text only, not elements")
            return
        if tag in SCALARS:
            if tag in self.scalars:
                ctx.fail("conflict", ctx.path(c), f"<{tag}> appears more than once; it takes one value")
                return
            if check_value(ctx, c, SCALARS[tag]) is not None:
                self.scalars[tag] = c
            return
        if check_value(ctx, c, INFO[tag]) is not None:
            self.info[tag] = text(c)

    def _structure(self, c: Element, tag: str, ctx: Ctx) -> None:
        if tag == "Requested":
            ctx.check_attributes(c, frozenset())
            self.requested.append(children(c))
        elif tag == "Delivered":
            self.delivered.append(c)  # what was used, not what is asked: never affects placement
        elif tag == "Environment":
            ctx.check_attributes(c, frozenset())
            self.environment = c
        elif tag == "ResourceLimit":
            ctx.check_attributes(c, frozenset({"name", "type"}))
            if c.attrib.get("type", "Hard") not in ("Hard", "Soft"):
                ctx.fail(
                    "enum",
                    f"{ctx.path(c)}@type",
                    f"must be Hard or Soft (§5.1.1.4); got {c.attrib['type']!r}"[:300],
                )
            self.limits.append(c)
        elif tag == "Extension":
            ctx.check_attributes(c, frozenset({"name", "type"}))
            self.extensions.append(c)
        elif tag == "Dependency":
            ctx.check_attributes(c, frozenset({"type", "code"}))
            self.dependencies.append(c)
        elif tag == "TaskDistribution":
            ctx.check_attributes(c, frozenset({"type"}))
            self.distribution = c
        elif tag == "TaskGroup":
            self.task_groups.append(c)
        elif tag == "Task":
            self.tasks.append(c)
        elif tag == "TaskGroupDefaults":
            self.task_group_defaults = c
        else:
            self.task_defaults = c

    def inherit(self, defaults: PropertySet) -> PropertySet:
        """This set with ``defaults`` filled in where it states nothing (§5: the element overrides)."""
        own = {override_key(e) for e in self.placement} | {
            override_key(e) for seq in self.requested for e in seq
        }
        return PropertySet(
            placement=self.placement + [e for e in defaults.placement if override_key(e) not in own],
            requested=self.requested
            + [
                kept for seq in defaults.requested if (kept := [e for e in seq if override_key(e) not in own])
            ],
            scalars={**defaults.scalars, **self.scalars},
            info={**defaults.info, **self.info},
            dependencies=self.dependencies or defaults.dependencies,
            environment=self.environment if self.environment is not None else defaults.environment,
            extensions=self.extensions or defaults.extensions,
            limits=self.limits or defaults.limits,
            delivered=self.delivered or defaults.delivered,
            distribution=self.distribution if self.distribution is not None else defaults.distribution,
            task_groups=self.task_groups or defaults.task_groups,
            task_group_defaults=(
                self.task_group_defaults
                if self.task_group_defaults is not None
                else defaults.task_group_defaults
            ),
            tasks=self.tasks or defaults.tasks,
            task_defaults=self.task_defaults if self.task_defaults is not None else defaults.task_defaults,
        )

    def metadata(self, ctx: Ctx) -> dict[str, object]:
        """Informational content for ``metadata["sss"]``: environment, extensions, limits, delivered."""
        out: dict[str, object] = {}
        if self.info:
            out["info"] = dict(self.info)
        if self.environment is not None:
            env: dict[str, str] = {}
            for v in children(self.environment):
                if local(v.tag) != "Variable":
                    ctx.unsupported(v, f"element <{local(v.tag)}> is not supported in an Environment")
                    continue
                ctx.check_attributes(v, frozenset({"name"}))
                name = v.attrib.get("name", "").strip()
                if not name:
                    ctx.fail(
                        "required", f"{ctx.path(v)}@name", "a Variable must have a name attribute (§5.1.3.1)"
                    )
                    continue
                env[name] = v.text or ""
            if not env and not children(self.environment):
                ctx.fail(
                    "required",
                    ctx.path(self.environment),
                    "an Environment must contain one or more Variable elements (§5.1.3)",
                )
            out["environment"] = env
        if self.extensions:
            out["extensions"] = [self._named(ctx, e, "Extension", "§5.1.10") for e in self.extensions]
        if self.limits:
            out["resource_limits"] = [self._named(ctx, e, "ResourceLimit", "§5.1.1.4") for e in self.limits]
        if self.delivered:
            out["delivered"] = [raw_xml(d) for d in self.delivered]
        return out

    @staticmethod
    def _named(ctx: Ctx, e: Element, what: str, section: str) -> dict[str, str]:
        name = e.attrib.get("name", "").strip()
        if not name:
            ctx.fail("required", f"{ctx.path(e)}@name", f"an {what} must have a name attribute ({section})")
        if children(e):
            ctx.fail("type", ctx.path(e), f"<{what}> must contain text only, not elements")
        out = {"name": name, "value": text(e)}
        if "type" in e.attrib:
            out["type"] = e.attrib["type"]
        return out


#: Attributes of consumables, re-exported for the job builder's checks.
__all__ = ["CONSUMABLE_ATTRS", "INFO", "PLACEMENT", "SCALARS", "PropertySet", "check_value", "override_key"]
