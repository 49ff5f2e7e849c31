"""Structured validation errors shared by every job reader.

Why a separate type: a backend turns these into an HTTP 422 body (OJS ML resources §10.2), the CLI prints
them, and tests assert on ``code`` and ``path`` rather than on message wording. No reader may let any
other exception escape; it converts what it finds into :class:`Issue` objects and raises
:class:`JobValidationError` (or returns the issues in a :class:`~placer.solver.jobs.results.ReadResult`).

>>> err = JobValidationError([Issue(code="type", path="ext_ml_gpu_count", message="must be an integer")])
>>> str(err)
'ext_ml_gpu_count: must be an integer [type]'
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

__all__ = ["ISSUE_CODES", "Issue", "JobValidationError", "issue", "located", "prefixed"]

#: Codes a backend may rely on. Readers may only use these; tests check it.
ISSUE_CODES: dict[str, str] = {
    "malformed": "the document is not well-formed JSON / YAML / XML, or not of the expected shape",
    "format": "the document is none of the supported job formats, or not the forced one",
    "type": 'a value has the wrong type (e.g. the string "8" where an integer is required)',
    "enum": "a value is outside the closed list the specification gives",
    "range": "a number is outside its allowed range (negative count, weight above 100, ...)",
    "required": "a required attribute or element is missing",
    "conflict": "attributes contradict each other (e.g. ext_ml_gpu_count 0 with ext_ml_gpu_type)",
    "limit": "the job exceeds a queue limit (ml_limits) or a configured upper bound",
    "uri": "a URI has a disallowed scheme, lacks a required trailing slash, or tries path traversal",
    "denied": "a producer set a node selector / affinity key on the administrative deny-list",
    "unsupported": "an element or attribute the reader does not support, under a Reject awareness policy",
    "duplicate": "two jobs of one batch have the same id",
    "dependency": "a dependency refers to nothing, or dependencies form a cycle",
    "reference": "a name refers to an object the input lists none of (a PriorityClass, a Kueue "
    "WorkloadPriorityClass)",
    "unknown": "(a warning) an ext_ml_* / ext_mlx_* attribute none of the OJS documents defines: kept, not "
    "applied",
    "secret": "a credential (an access key, a token, a private key) in an envelope attribute: OJS ML "
    "extensions §12.4 says credentials MUST NOT appear there",
}


class Issue(BaseModel):
    """One problem found in an input document: machine-readable code, field path, human message."""

    model_config = ConfigDict(frozen=True)

    code: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.code}]"


class JobValidationError(ValueError):
    """Raised by readers for a document (or job) that breaks the specification.

    Subclasses ``ValueError`` so callers that only know the standard library still catch it.
    """

    def __init__(self, issues: Iterable[Issue]):
        self.issues: list[Issue] = list(issues)
        if not self.issues:
            raise ValueError("JobValidationError needs at least one issue")
        super().__init__("; ".join(str(i) for i in self.issues))


def issue(code: str, path: str, message: str) -> Issue:
    """Build an :class:`Issue`, refusing codes outside :data:`ISSUE_CODES` (typos would break backends)."""
    if code not in ISSUE_CODES:
        raise KeyError(f"unknown issue code {code!r}")
    return Issue(code=code, path=path, message=message)


def prefixed(prefix: str, path: str) -> str:
    """``path`` (relative to one envelope) located inside its document by ``prefix`` (``[1]``, ``steps[0]``).

    >>> prefixed("[1]", "ext_ml_gpu_count"), prefixed("[1]", "[0]"), prefixed("", "id"), prefixed("[2]", "")
    ('[1].ext_ml_gpu_count', '[1][0]', 'id', '[2]')
    """
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def located(prefix: str, issues: Iterable[Issue]) -> list[Issue]:
    """``issues`` with every path prefixed by ``prefix`` (see :func:`prefixed`)."""
    return [Issue(code=i.code, path=prefixed(prefix, i.path), message=i.message) for i in issues]
