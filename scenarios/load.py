"""Reading a scenario file: safe YAML/JSON, the :class:`~placer.scenarios.spec.ScenarioSpec` model, and every
problem as one :class:`ScenarioError` of ``{code, path, message}`` issues — never a traceback.

Why one error type: ``placer simulate`` prints each issue as ``path: message [code]`` and exits 1, tests
assert on the path, and the codes are the job readers' (``placer.solver.jobs.ISSUE_CODES``), so a tool that
already reports job errors reports scenario errors the same way.

>>> try:
...     load_scenario_text("name: x\\nhorizon: 1h\\nintreval: 30s\\ncluster: {layout: S}\\n"
...                        "workload: {jobs: []}\\n", source="x.yaml")
... except ScenarioError as e:
...     print(e.issues[0])
intreval: Extra inputs are not permitted [unsupported]
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from placer.scenarios.spec import ScenarioSpec
from placer.solver.jobs.errors import ISSUE_CODES, Issue
from placer.topology.inputs import read_input, source_name
from placer.topology.safe_load import UnsafeDocument, load_text

__all__ = [
    "MAX_SCENARIO_CHARS",
    "M",
    "ScenarioError",
    "fail",
    "issues_of",
    "load_scenario",
    "load_scenario_text",
    "parse_document",
    "read_document",
    "resolve",
    "with_overrides",
]

M = TypeVar("M", bound=BaseModel)

#: Largest scenario file read, in characters (a scenario is a page of YAML, not a data set).
MAX_SCENARIO_CHARS = 4 * 1024 * 1024

#: pydantic error types -> issue codes (types that already are issue codes pass through).
_CODES = {
    "missing": "required",
    "extra_forbidden": "unsupported",
    "literal_error": "enum",
    "enum": "enum",
    "greater_than": "range",
    "greater_than_equal": "range",
    "less_than": "range",
    "less_than_equal": "range",
    "too_short": "range",
    "too_long": "range",
    "string_too_short": "range",
    "string_too_long": "range",
    "string_pattern_mismatch": "range",
    "missing_argument": "required",
    "unexpected_keyword_argument": "unsupported",
}
#: Parts of a pydantic error location that name a union member, not a field of the document.
_UNION_TAGS = {
    "str",
    "int",
    "float",
    "bool",
    "datetime",
    "none",
    "function-after",
    "layout-name",
    "layout-pools",
}


class ScenarioError(ValueError):
    """A scenario that cannot be run, with every problem found: ``issues`` (``code``, ``path``,
    ``message``), paths relative to the document (``workload.synthetic.classes[0].gpus``)."""

    def __init__(self, issues: Iterable[Issue], source: str = "scenario"):
        self.issues: list[Issue] = list(issues)
        self.source = source
        super().__init__(f"{source}: " + "; ".join(str(i) for i in self.issues))


def fail(code: str, path: str, message: str, source: str = "scenario") -> ScenarioError:
    """One-issue :class:`ScenarioError` (for the later stages: cluster, workload, failures)."""
    return ScenarioError(
        [Issue(code=code if code in ISSUE_CODES else "type", path=path, message=message)], source
    )


def _path(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and (part in _UNION_TAGS or "[" in part):
            continue
        else:
            out += f".{part}"
    return out.lstrip(".")


def issues_of(error: ValidationError, prefix: str = "", *, root: str = "scenario") -> list[Issue]:
    """pydantic's errors as issues, one per path (union members' messages joined with "or").

    >>> from placer.scenarios.spec import PolicySpec
    >>> try:
    ...     PolicySpec.model_validate({"engine": "fast"})
    ... except ValidationError as e:
    ...     print(issues_of(e, "policy")[0])
    policy.engine: Input should be 'auto', 'cpsat', 'greedy', ... or 'fgd' [enum]
    """
    by_path: dict[str, Issue] = {}
    for err in error.errors(include_url=False):
        path = ".".join(p for p in (prefix, _path(err["loc"])) if p)
        kind = err["type"]
        code = kind if kind in ISSUE_CODES else _CODES.get(kind, "type")
        message = str(err["msg"]).removeprefix("Value error, ")
        if path in by_path:
            old = by_path[path]
            if message not in old.message:
                by_path[path] = Issue(code=old.code, path=path, message=f"{old.message}, or {message}")
            continue
        by_path[path] = Issue(code=code, path=path or root, message=message)
    return list(by_path.values())


def parse_document(
    text: str,
    model: type[M],
    *,
    source: str,
    what: str = "scenario",
    error: type[ScenarioError] = ScenarioError,
) -> M:
    """A ``model`` document (the scenario, a sweep) from YAML or JSON text; ``error`` (a
    :class:`ScenarioError`) of issues for anything wrong, the document's root named ``what``."""
    try:
        doc = load_text(text, max_chars=MAX_SCENARIO_CHARS)
    except UnsafeDocument as e:
        raise error([Issue(code="malformed", path=what, message=str(e))], source) from None
    if not isinstance(doc, dict):
        message = f"a {what} is a mapping, got {type(doc).__name__}"
        raise error([Issue(code="malformed", path=what, message=message)], source)
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise error(issues_of(e, root=what), source) from None


def read_document(
    path: str | os.PathLike[str], *, what: str = "scenario", error: type[ScenarioError] = ScenarioError
) -> str:
    """The text of a document file: ``OSError`` when it cannot be opened; ``error`` when it is too large
    or not UTF-8."""
    data = read_input(path, MAX_SCENARIO_CHARS)
    if len(data) > MAX_SCENARIO_CHARS:
        raise error(
            [Issue(code="limit", path=what, message=f"file is larger than {MAX_SCENARIO_CHARS} bytes")],
            source_name(path),
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(
            [Issue(code="malformed", path=what, message=f"not UTF-8 text (byte {e.start})")],
            source_name(path),
        ) from None


def load_scenario_text(text: str, *, source: str = "scenario") -> ScenarioSpec:
    """A scenario from YAML or JSON text; :class:`ScenarioError` for anything wrong."""
    return parse_document(text, ScenarioSpec, source=source)


def load_scenario(path: str | os.PathLike[str]) -> ScenarioSpec:
    """A scenario from a file. ``OSError`` when the file cannot be opened (a usage error for the CLI);
    :class:`ScenarioError` for content that is not a valid scenario (including non-UTF-8 bytes)."""
    return load_scenario_text(read_document(path), source=str(Path(path)))


def resolve(path: str, base: Path | None) -> Path:
    """A path named in a scenario, relative to the scenario file's folder (absolute paths as they are).

    >>> resolve("traces/a.csv", Path("/s")).as_posix(), resolve("/t/b.csv", Path("/s")).as_posix()
    ('/s/traces/a.csv', '/t/b.csv')
    """
    p = Path(path)
    return p if p.is_absolute() or base is None else base / p


def with_overrides(spec: ScenarioSpec, **changes: Any) -> ScenarioSpec:
    """``spec`` with top-level fields (``horizon="6h"``, ``seed=3``) and policy fields (``engine=...``,
    ``time_limit_s``, ``plan``, ``preemption``) replaced, validated again (a bad value is a
    :class:`ScenarioError` naming the field).

    >>> s = load_scenario_text("name: x\\nhorizon: 1d\\ncluster: {layout: S}\\nworkload: {jobs: []}\\n")
    >>> t = with_overrides(s, horizon="2h", engine="cpsat")
    >>> t.horizon, t.policy.engine, s.policy.engine
    (7200.0, 'cpsat', 'greedy')
    """
    policy_keys = set(type(spec.policy).model_fields)
    doc = spec.model_dump(by_alias=True, exclude_unset=True)
    policy = dict(doc.get("policy", {}))
    for key, value in changes.items():
        if value is None:
            continue
        if key in policy_keys:
            policy[key] = value
        else:
            doc[key] = value
    doc["policy"] = policy
    try:
        return ScenarioSpec.model_validate(doc)
    except ValidationError as e:
        raise ScenarioError(issues_of(e)) from None
