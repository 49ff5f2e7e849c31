"""RFC 14 ``tasks``: validate each task and work out how many tasks it runs.

Why a module of its own: the placer does not launch tasks, but a task must name an existing slot and
carry a valid count, and the number of tasks per slot is what a backend needs to launch the job once
placed; both are checked here and recorded in ``Job.metadata["flux_tasks"]``.

Rules (RFC 14 text and spec_14 ``schema.json``): ``tasks`` is a non-empty array (``required`` / ``range``;
the schema lacks ``minItems``, the RFC says "MUST define at least one task"). A task is an object with
``command`` (a non-empty array of strings; V1 also a string, as its schema allows), ``slot`` (the label
of a ``slot`` vertex, else ``enum``) and ``count``; optional ``distribution`` (string) and ``attributes``
(object, its ``environment`` an object of string-or-null values); other keys are ``malformed``. ``count``
holds exactly one of ``per_slot`` (positive integer), ``total`` (positive integer) or ``per_resource``
(``{type, count}``, ``type`` a resource type declared in the task's slot): none is ``required``, two are
``conflict``, a key other than these (RFC 14 reserves them for extensions) is ``unsupported``.

Tasks run: ``per_slot`` x slots, ``total``, or ``per_resource.count`` x (resources of that type per slot)
x slots, using the minimum of count ranges.

>>> info = {"default": SlotInfo(slots_total=4, per_slot_types={"node": 1}, nodes=4)}
>>> issues: list = []
>>> t = read_tasks([{"command": ["hostname"], "slot": "default", "count": {"per_slot": 5}}], info, False,
...                issues, [])
>>> t[0]["total_tasks"], issues
(20, [])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.formats.flux_count import reject_nulls
from placer.solver.jobs.formats.flux_v1 import check_task_count

__all__ = ["COUNT_KEYS", "TASK_KEYS", "SlotInfo", "check_environment", "read_tasks"]

TASK_KEYS: frozenset[str] = frozenset({"command", "slot", "count", "attributes", "distribution"})
COUNT_KEYS: tuple[str, ...] = ("per_slot", "per_resource", "total")


@dataclass
class SlotInfo:
    """What the tasks need to know of one slot label."""

    slots_total: int
    per_slot_types: dict[str, int] = field(default_factory=dict)
    nodes: int | None = None


def check_environment(value: Any, path: str, issues: list[Issue]) -> dict[str, str | None] | None:
    """RFC 14 ``environment``: names (strings) to a string value, or null to unset the variable.

    >>> issues: list = []
    >>> check_environment({"FOO": None, "BAR": 2}, "env", issues), [(i.code, i.path) for i in issues]
    (None, [('type', 'env.BAR')])
    """
    if not isinstance(value, Mapping):
        issues.append(issue("type", path, f"must be an object, got {type_name(value)}"))
        return None
    start = len(issues)
    for k, v in value.items():
        if not isinstance(k, str):
            issues.append(issue("type", path, f"variable names are strings, got {type_name(k)} {k!r}"[:200]))
        elif v is not None and not isinstance(v, str):
            issues.append(issue("type", join(path, k), f"must be a string or null, got {type_name(v)}"))
    return dict(value) if len(issues) == start else None


def _command(value: Any, path: str, v1: bool, issues: list[Issue]) -> list[str] | None:
    if v1 and isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        issues.append(issue("type", path, f"must be an array of strings, got {type_name(value)}"))
        return None
    if not value:
        issues.append(issue("range", path, "must hold at least the executable"))
        return None
    bad = [i for i, a in enumerate(value) if not isinstance(a, str)]
    for i in bad:
        issues.append(issue("type", join(path, i), f"must be a string, got {type_name(value[i])}"))
    return None if bad else list(value)


def _count(
    value: Any, path: str, slot: SlotInfo | None, v1: bool, issues: list[Issue], warnings: list[Issue]
) -> tuple[dict[str, Any], int | None] | None:
    if not isinstance(value, Mapping):
        issues.append(issue("type", path, f"must be an object, got {type_name(value)}"))
        return None
    keys = [k for k in value if k in COUNT_KEYS]
    others = [str(k) for k in value if k not in COUNT_KEYS]
    f = Fields(value, path, issues)
    if reject_nulls(value, COUNT_KEYS, path, issues):
        return None
    for k in others:
        f.fail("unsupported", k, f"unsupported task count key; use one of {', '.join(COUNT_KEYS)}")
    if len(keys) > 1:
        issues.append(
            issue("conflict", path, f"holds exactly one of {', '.join(COUNT_KEYS)}; got {', '.join(keys)}")
        )
        return None
    if not keys:
        if not others:
            issues.append(issue("required", path, f"needs one of {', '.join(COUNT_KEYS)}"))
        return None
    kind = keys[0]
    start = len(issues)
    total: int | None = None
    if kind == "per_resource":
        sub = f.sub("per_resource")
        if sub is None:
            return None
        rtype = sub.string("type", required=True)
        n = sub.integer("count", required=True, minimum=1)
        if rtype is not None and slot is not None and rtype not in slot.per_slot_types:
            sub.fail("enum", "type", f"{rtype!r} is not a resource type declared in the task's slot")
        if len(issues) > start or n is None or rtype is None:
            return None
        if slot is not None:
            total = n * slot.per_slot_types[rtype] * slot.slots_total
        number = n
    else:
        number_or_none = f.integer(kind, required=True, minimum=1)
        if number_or_none is None:
            return None
        number = number_or_none
        if slot is not None:
            total = number * slot.slots_total if kind == "per_slot" else number
    if v1 and slot is not None:
        errs, warns = check_task_count(kind, number, slot.slots_total, slot.nodes, path)
        issues.extend(errs)
        warnings.extend(warns)
        if errs:
            return None
    return dict(value), total


def _task(
    raw: Any,
    path: str,
    slots: dict[str, SlotInfo] | None,
    v1: bool,
    issues: list[Issue],
    warnings: list[Issue],
) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping):
        issues.append(issue("type", path, f"a task must be an object, got {type_name(raw)}"))
        return None
    start = len(issues)
    f = Fields(raw, path, issues)
    for key in raw:
        if key not in TASK_KEYS:
            f.fail("malformed", str(key), f"unknown task key; allowed: {', '.join(sorted(TASK_KEYS))}")
    nulls = reject_nulls(raw, ("command", "slot", "count", "distribution", "attributes"), path, issues)
    command = None
    if "command" in nulls:
        pass
    elif "command" not in raw:
        f.fail("required", "command", "is required")
    else:
        command = _command(raw["command"], join(path, "command"), v1, issues)
    label = None if "slot" in nulls else f.string("slot", required=True, non_empty=False)
    slot: SlotInfo | None = None
    if label is not None and slots is not None:
        slot = slots.get(label)
        if slot is None:
            known = ", ".join(sorted(slots)) or "none"
            f.fail("enum", "slot", f"no slot is labelled {label!r}; slot labels: {known}"[:300])
    count = None
    if "count" in nulls:
        pass
    elif "count" not in raw:
        f.fail("required", "count", "is required")
    else:
        count = _count(raw["count"], join(path, "count"), slot, v1, issues, warnings)
    distribution = f.string("distribution")
    attrs = f.mapping("attributes")
    if attrs is not None and "environment" in attrs:
        check_environment(attrs["environment"], join(join(path, "attributes"), "environment"), issues)
    if len(issues) > start or count is None:
        return None
    out: dict[str, Any] = {"slot": label, "command": command, "count": count[0], "total_tasks": count[1]}
    if distribution is not None:
        out["distribution"] = distribution
    if attrs is not None:
        out["attributes"] = dict(attrs)
    return out


def read_tasks(
    value: Any,
    slots: dict[str, SlotInfo] | None,
    v1: bool,
    issues: list[Issue],
    warnings: list[Issue],
    path: str = "tasks",
) -> list[dict[str, Any]]:
    """Validate ``tasks`` against the slot labels (None when the resources were unreadable: the slot
    reference and counts are then checked for form only); returns one summary per valid task."""
    if not isinstance(value, list):
        issues.append(issue("type", path, f"must be an array of tasks, got {type_name(value)}"))
        return []
    if not value:
        issues.append(issue("range", path, "must define at least one task"))
        return []
    if v1 and len(value) != 1:
        issues.append(issue("range", path, f"a V1 jobspec defines exactly one task, got {len(value)}"))
    out = [_task(raw, join(path, i), slots, v1, issues, warnings) for i, raw in enumerate(value)]
    return [t for t in out if t is not None]
