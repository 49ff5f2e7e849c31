"""What a Kubernetes priority class is worth: ``PriorityClass`` (``scheduling.k8s.io/v1``) for pods and
Kueue's ``WorkloadPriorityClass`` (``kueue.x-k8s.io/v1beta1``) for the jobs Kueue admits.

A pod manifest names its class (``spec.priorityClassName``) and carries no number: the API server's
``Priority`` admission plugin writes ``spec.priority`` from the class when the pod is created, refuses a
pod naming a class that does not exist, gives a pod without a class the value of the ``globalDefault``
class (the smallest, if several say so) or 0, and copies the class's ``preemptionPolicy``. Kueue orders
and preempts workloads by a number found the same way, except that a job labelled
``kueue.x-k8s.io/priority-class: <name>`` takes that ``WorkloadPriorityClass``'s value instead
(``sigs.k8s.io/kueue/pkg/util/priority``; a missing one stops the workload from being created). Both
class kinds are cluster objects, so placer reads them where ``kubectl get
priorityclasses,workloadpriorityclasses,jobs -o json`` puts them: as items of the same ``List`` as the
jobs.

Without the class objects, a name's number is unknown: it is read as 0, with a warning that says so
(the name still sets placer's own priority class, :func:`~placer.topology.importers.kubernetes.
priority_class_for`). With them, a name missing among them is a ``reference`` error, as the API server
and Kueue refuse it.

>>> items = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
...           "metadata": {"name": "high-priority"}, "value": 100000}]
>>> classes, problems = read_classes(items, "")
>>> errors, warnings = [], []
>>> resolve({"priorityClassName": "high-priority"}, {}, classes, "spec", errors, warnings)
Resolved(name='high-priority', value=100000, preempts=True)
>>> resolve({"priorityClassName": "nightly"}, {}, classes, "spec", errors, warnings).value, errors[0].code
(0, 'reference')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.model import ReadResult
from placer.topology.importers._common import child_list, child_map

__all__ = [
    "CLASS_KINDS",
    "QUEUE_LABEL",
    "SYSTEM_CLASSES",
    "WORKLOAD_CLASS_LABEL",
    "Classes",
    "Resolved",
    "read_classes",
    "resolve",
]

#: The kinds read as classes, not as jobs (and their list kinds).
CLASS_KINDS = frozenset({"PriorityClass", "WorkloadPriorityClass"})
CLASS_LISTS = frozenset({"PriorityClassList", "WorkloadPriorityClassList"})
#: The label by which a job (or a plain pod) names its Kueue LocalQueue: Kueue manages it.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: The label by which a job names its Kueue ``WorkloadPriorityClass``.
WORKLOAD_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
#: The classes every cluster has (``k8s.io/api/scheduling/v1``: ``SystemCriticalPriority`` and the node
#: one above it), with no object listed.
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
#: A user class's value is at most one billion (the API server's validation; above is the system's).
HIGHEST_USER_VALUE = 1_000_000_000
_POLICIES = {"PreemptLowerPriority": True, "Never": False}


@dataclass(frozen=True)
class Classes:
    """The class objects of one document: pod classes (value, and whether their pods may preempt) and
    Kueue workload classes (value), each by name; ``listed`` says whether the document lists any of
    that kind (then a name missing among them is an error, not an unknown)."""

    pods: dict[str, tuple[int, bool]] = field(default_factory=dict)
    workloads: dict[str, int] = field(default_factory=dict)
    default: tuple[str, int] | None = None
    pods_listed: bool = False
    workloads_listed: bool = False


class Resolved(NamedTuple):
    """A job's class name (for placer's own priority class), its numeric priority, and whether its pods
    may preempt by the class (None: the class says nothing, the pod spec decides)."""

    name: str | None
    value: int
    preempts: bool | None


def _kind(raw: Any) -> str | None:
    kind = raw.get("kind") if isinstance(raw, dict) else None
    return kind if isinstance(kind, str) else None


def is_class(raw: Any) -> bool:
    """A ``PriorityClass`` or ``WorkloadPriorityClass`` object, or a list of them."""
    return _kind(raw) in CLASS_KINDS or _kind(raw) in CLASS_LISTS


def read_classes(items: Sequence[Any], base: str, source: str = "") -> tuple[Classes, list[ReadResult]]:
    """The class objects among ``items`` (a ``List``'s items, at ``base[i]``; a class list's own items
    too), and one refused result per malformed class: a class the reader cannot trust is not used, and
    says why, never dropped in silence.

    >>> bad = {"kind": "PriorityClass", "metadata": {"name": "x"}, "value": "high"}
    >>> _, problems = read_classes([bad], "")
    >>> problems[0].errors[0].path, problems[0].errors[0].code
    ('items[0].value', 'type')
    """
    pods: dict[str, tuple[int, bool]] = {}
    workloads: dict[str, int] = {}
    defaults: list[tuple[int, str]] = []
    problems: list[ReadResult] = []
    listed = {"PriorityClass": False, "WorkloadPriorityClass": False}

    def one(raw: dict[str, Any], at: str) -> None:
        kind = str(_kind(raw))
        listed[kind] = True
        errors: list[Issue] = []
        meta = child_map(raw, "metadata")
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            errors.append(issue("required", f"{at}.metadata.name", f"a {kind} needs a name"))
        value = raw.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(issue("type" if value is not None else "required", f"{at}.value", "an integer"))
        elif not -(2**31) <= value <= (HIGHEST_USER_VALUE if kind == "PriorityClass" else 2**31 - 1):
            errors.append(issue("range", f"{at}.value", f"{value} is outside what the API server takes"))
        policy = raw.get("preemptionPolicy", "PreemptLowerPriority")
        if kind == "PriorityClass" and (not isinstance(policy, str) or policy not in _POLICIES):
            errors.append(issue("enum", f"{at}.preemptionPolicy", f"one of {', '.join(_POLICIES)}"))
        default = raw.get("globalDefault", False)
        if not isinstance(default, bool):
            errors.append(issue("type", f"{at}.globalDefault", "true or false"))
        if errors or not isinstance(name, str) or not isinstance(value, int):  # (each said in errors)
            rid = f"{kind}/{name}" if isinstance(name, str) and name else f"{kind}#{at}"
            problems.append(ReadResult(id=rid, ok=False, errors=errors, source=source, path=at))
            return
        if kind == "WorkloadPriorityClass":
            workloads[name] = value
            return
        pods[name] = (value, _POLICIES[policy])
        if default:
            defaults.append((value, name))

    for i, raw in enumerate(items):
        at = f"{base}items[{i}]" if base else f"items[{i}]"
        if _kind(raw) in CLASS_KINDS:
            one(raw, at)
        elif _kind(raw) in CLASS_LISTS:  # the API's typed list: its items carry no kind of their own
            kind = str(_kind(raw)).removesuffix("List")
            inner = child_list(raw, "items")
            for j, r in enumerate(inner):
                one({**(r if isinstance(r, dict) else {}), "kind": kind}, f"{at}.items[{j}]")
    # Several global defaults: the smallest value is the default (the API reference's rule).
    default = min(defaults)[::-1] if defaults else None
    return (
        Classes(
            pods=pods,
            workloads=workloads,
            default=default,
            pods_listed=listed["PriorityClass"],
            workloads_listed=listed["WorkloadPriorityClass"],
        ),
        problems,
    )


def resolve(
    spec: dict[str, Any],
    labels: dict[str, Any],
    classes: Classes,
    at: str,
    errors: list[Issue],
    warnings: list[Issue],
    *,
    label_at: str = "metadata.labels",
) -> Resolved:
    """The priority of a pod spec (or a pod template's), Kueue's label first (module docstring).
    ``spec.priority`` given wins over its class: a pod read back from the API server has both, and the
    number is what the server wrote. ``at``: the spec's path; ``label_at``: the labels' path."""
    label = labels.get(WORKLOAD_CLASS_LABEL)
    if isinstance(label, str) and label:
        where = f"{label_at}.{WORKLOAD_CLASS_LABEL}"
        if label in classes.workloads:
            return Resolved(label, classes.workloads[label], None)
        if classes.workloads_listed:
            errors.append(
                issue(
                    "reference",
                    where,
                    f"no WorkloadPriorityClass {label!r} in the input: Kueue creates no workload for it",
                )
            )
        else:
            warnings.append(
                issue(
                    "unknown",
                    where,
                    f"the value of WorkloadPriorityClass {label!r} is not in the input (list it with the "
                    "jobs: kubectl get workloadpriorityclasses,jobs -o json); read as priority 0",
                )
            )
        return Resolved(label, 0, None)
    name = spec.get("priorityClassName")
    name = name if isinstance(name, str) and name else None
    given = spec.get("priority")
    given = given if isinstance(given, int) and not isinstance(given, bool) else None
    if name is None:
        if given is not None:
            return Resolved(None, given, None)
        if classes.default is not None:  # the admission plugin gives the global default's name and value
            value, preempts = classes.pods[classes.default[0]]
            return Resolved(classes.default[0], value, preempts)
        return Resolved(None, 0, None)
    if name in SYSTEM_CLASSES:
        return Resolved(name, given if given is not None else SYSTEM_CLASSES[name], None)
    if name in classes.pods:
        value, preempts = classes.pods[name]
        return Resolved(name, given if given is not None else value, preempts)
    if classes.pods_listed and given is None:
        errors.append(
            issue(
                "reference",
                f"{at}.priorityClassName",
                f"no PriorityClass {name!r} in the input: the API server refuses the pod",
            )
        )
    elif given is None:
        warnings.append(
            issue(
                "unknown",
                f"{at}.priorityClassName",
                f"the value of PriorityClass {name!r} is not in the input (list it with the jobs: kubectl "
                "get priorityclasses,pods -o json); read as priority 0",
            )
        )
    return Resolved(name, given if given is not None else 0, None)
