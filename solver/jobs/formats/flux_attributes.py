"""RFC 14 ``attributes``: the ``system`` dictionary a scheduler reads and the free-form ``user`` one.

Why a module of its own: ``attributes.system`` carries most of what a placer needs besides resources
(duration, queue, bank, constraints, dependencies), each with its own rule; and RFC 14 says unknown
system attributes "SHALL trigger no more than a warning", so they are kept, not refused.

=========================  =================================  ==============================================
system attribute           rule                               normalized
=========================  =================================  ==============================================
``duration``               number >= 0 (V1: required)         ``Job.duration_s``; ``0`` means "unlimited or
                                                              unset" (RFC 14) and becomes None
``preemptible-after``      number >= 0                        ``Preemption(preemptible=True)`` and
                                                              ``metadata["flux_preemptible_after_s"]`` (RFC
                                                              14: not set at all when never preemptible)
``queue``                  string                             ``Job.queue``
``bank``                   string                             ``Job.tenant`` (the accounting bank)
``project``                string                             ``Job.project``
``cwd``                    string, an absolute path           ``metadata["cwd"]``
``environment``            object of string-or-null values    ``metadata["environment"]``
``constraints``            RFC 31 object                      ``placement.required`` (see flux_constraints)
``dependencies``           RFC 26 array                       ``Job.dependencies``, ``Job.not_before``,
                                                              ``metadata["flux_dependencies"]``
``job``                    object of string values            ``Job.labels``; ``name`` also ``Job.name``
``shell``                  object (``options`` an object)     ``metadata["flux_shell"]``
``files``                  object (RFC 37 archive)            ``metadata["flux_files"]``: the file names
anything else              kept                               ``Job.unknown["attributes.system.<key>"]`` and
                                                              an ``unsupported`` *warning*
=========================  =================================  ==============================================

``attributes`` itself may be null (the schema allows it) but not absent (RFC 14 "MUST contain");
``system`` and ``user``, when present, are objects (``type``); other keys of ``attributes`` are
``malformed`` (schema ``additionalProperties: false``). ``user`` is kept whole in
``metadata["user_attributes"]``.

>>> errors: list = []
>>> s = read_attributes({"system": {"duration": 0, "bank": "physics", "color": "blue"}}, False, errors, [])
>>> s.duration_s, s.tenant, s.unknown, errors
(None, 'physics', {'attributes.system.color': 'blue'}, [])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.formats.flux_constraints import read_constraints
from placer.solver.jobs.formats.flux_count import reject_nulls
from placer.solver.jobs.formats.flux_dependencies import read_dependencies
from placer.solver.jobs.formats.flux_tasks import check_environment
from placer.solver.jobs.model import Dependency, Rule

__all__ = ["KNOWN_SYSTEM", "Attributes", "read_attributes"]

KNOWN_SYSTEM: frozenset[str] = frozenset(
    {
        "duration",
        "preemptible-after",
        "queue",
        "bank",
        "project",
        "cwd",
        "environment",
        "constraints",
        "dependencies",
        "job",
        "shell",
        "files",
    }
)


@dataclass
class Attributes:
    """What ``attributes`` gave, ready for the :class:`~placer.solver.jobs.model.Job`."""

    duration_s: float | None = None
    queue: str | None = None
    tenant: str | None = None
    project: str | None = None
    name: str | None = None
    preemptible: bool | None = None
    not_before: datetime | None = None
    dependencies: list[Dependency] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    unknown: dict[str, Any] = field(default_factory=dict)


def _present_object(
    container: Mapping[str, Any], key: str, path: str, errors: list[Issue]
) -> Mapping[str, Any] | None:
    """The object at ``key``; a present null or non-object is a ``type`` issue (not "missing")."""
    if key not in container:
        return None
    v = container[key]
    if not isinstance(v, Mapping):
        errors.append(issue("type", join(path, key), f"must be an object, got {type_name(v)}"))
        return None
    return v


def _job(value: Mapping[str, Any], path: str, out: Attributes, errors: list[Issue]) -> None:
    start = len(errors)
    for k, v in value.items():
        if not isinstance(k, str):
            errors.append(issue("type", path, f"keys are strings, got {type_name(k)}"))
        elif not isinstance(v, str):
            errors.append(
                issue("type", join(path, k), f"job attribute values are strings, got {type_name(v)}")
            )
    if len(errors) == start:
        out.labels = dict(value)
        name = value.get("name")
        if name is not None and name.strip():
            out.name = name


def _system(
    sysattrs: Mapping[str, Any], v1: bool, out: Attributes, errors: list[Issue], warnings: list[Issue]
) -> None:
    path = "attributes.system"
    f = Fields(sysattrs, path, errors)
    handled = {
        "constraints",
        "dependencies",
        "environment",
        "job",
        "shell",
        "files",
    }  # null is a type issue there
    nulls = reject_nulls(sysattrs, sorted(KNOWN_SYSTEM - handled), path, errors)
    duration = None if "duration" in nulls else f.number("duration", required=v1, minimum=0)
    out.duration_s = duration if duration else None
    after = f.number("preemptible-after", minimum=0)
    if after is not None:
        out.preemptible = True
        out.metadata["flux_preemptible_after_s"] = after
    out.queue = f.string("queue")
    out.tenant = f.string("bank")
    out.project = f.string("project")
    cwd = f.string("cwd")
    if cwd is not None:
        if cwd.startswith("/"):
            out.metadata["cwd"] = cwd
        else:
            f.fail("range", "cwd", f"must be an absolute path, got {cwd!r}"[:200])
    if f.has("environment"):
        env = check_environment(f.raw("environment"), join(path, "environment"), errors)
        if env is not None:
            out.metadata["environment"] = env
    if f.has("constraints"):
        out.rules = read_constraints(f.raw("constraints"), join(path, "constraints"), errors)
    if f.has("dependencies"):
        deps = read_dependencies(f.raw("dependencies"), join(path, "dependencies"))
        errors.extend(deps.issues)
        out.dependencies, out.not_before = deps.dependencies, deps.not_before
        if deps.other:
            out.metadata["flux_dependencies"] = deps.other
    f.read.update({"constraints", "dependencies", "environment"})
    job = _present_object(sysattrs, "job", path, errors)
    if job is not None:
        _job(job, join(path, "job"), out, errors)
    shell = _present_object(sysattrs, "shell", path, errors)
    options_ok = shell is None or _present_object(shell, "options", join(path, "shell"), errors) is not None
    if shell is not None and (options_ok or "options" not in shell):
        out.metadata["flux_shell"] = dict(shell)
    files = _present_object(sysattrs, "files", path, errors)
    if files is not None:
        out.metadata["flux_files"] = sorted(str(k) for k in files)
    for key, value in sysattrs.items():
        if key not in KNOWN_SYSTEM:
            out.unknown[f"{path}.{key}"] = value
            warnings.append(
                issue(
                    "unsupported",
                    f"{path}.{key}",
                    "unrecognized system attribute, kept but not used (RFC 14)",
                )
            )


def read_attributes(value: Any, v1: bool, errors: list[Issue], warnings: list[Issue]) -> Attributes:
    """Read ``attributes`` (the value of the key; the caller reports a missing key)."""
    out = Attributes()
    path = "attributes"
    if value is None:
        if v1:
            errors.append(issue("required", join(path, "system"), "V1 jobspecs need attributes.system"))
        return out
    if not isinstance(value, Mapping):
        errors.append(issue("type", path, f"must be an object, got {type_name(value)}"))
        return out
    for key in value:
        if key not in ("system", "user"):
            errors.append(issue("malformed", f"{path}.{key}", "attributes holds only 'system' and 'user'"))
    user = _present_object(value, "user", path, errors)
    if user is not None:
        out.metadata["user_attributes"] = dict(user)
    sysattrs = _present_object(value, "system", path, errors)
    if sysattrs is not None:
        _system(sysattrs, v1, out, errors, warnings)
    elif v1 and "system" not in value:
        errors.append(
            issue("required", join(path, "system"), "V1 jobspecs need attributes.system (duration)")
        )
    return out
