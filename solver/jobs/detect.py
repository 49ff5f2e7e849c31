"""Recognize which job format a document is in, and parse it once.

Rules, in order: text starting with ``<`` is SSS XML; text starting with ``JobId=`` is ``scontrol show
job`` output, read as the ``squeue --json`` document of the same jobs (``slurm``); Kubernetes objects are
``kubernetes``; ``squeue --json`` output (``meta`` naming Slurm, and ``jobs``) is ``slurm``; a mapping
with ``version``, ``resources`` and ``tasks`` is a Flux jobspec (RFC 14/25; JSON or YAML); so is a
mapping with ``version`` and ``resources`` but no ``ext_ml*`` key (a jobspec missing ``tasks``: the Flux
reader then names the missing key, where the OJS reader could only say "not an envelope"); any other
JSON/YAML mapping or list is OJS (flat ``ext_ml_*`` envelope, v0.1.0 ``meta`` form, a workflow, or a list
of envelopes).

>>> parse_document('{"type": "ml.train", "ext_ml_gpu_count": 2}')[0]
'ojs'
>>> parse_document("version: 1\\nresources: []\\ntasks: []\\n")[0]
'flux'
>>> detect_object({"version": 1, "resources": [], "attributes": {}})
'flux'
"""

from __future__ import annotations

from typing import Any

from placer.solver.jobs.errors import JobValidationError, issue
from placer.solver.jobs.formats import FORMATS
from placer.solver.jobs.parse import parse_json_or_yaml

__all__ = ["detect_object", "parse_document"]


def detect_object(obj: Any, *, source: str = "") -> str:
    """Format of an already-parsed document (JSON/YAML object, or SSS XML given as a string)."""
    if isinstance(obj, str) and obj.lstrip("\ufeff \t\r\n").startswith("<"):
        return "sss"
    if isinstance(obj, dict):
        from placer.solver.jobs.formats.kubernetes import is_pod_document
        from placer.topology.importers.slurm_json import is_slurm_output

        if is_pod_document(obj):
            return "kubernetes"
        if is_slurm_output(obj, "jobs"):  # squeue --json: its pending jobs
            return "slurm"
        if {"version", "resources", "tasks"} <= obj.keys():
            return "flux"
        if {"version", "resources"} <= obj.keys() and not any(
            isinstance(k, str) and k.startswith("ext_ml") for k in obj
        ):
            return "flux"
        return "ojs"
    if isinstance(obj, list):
        return "ojs"
    raise JobValidationError(
        [
            issue(
                "format",
                source or "<input>",
                "not a job document: expected a JSON/YAML object, a list of OJS envelopes, or SSS XML",
            )
        ]
    )


def parse_document(text: str, *, source: str = "", fmt: str = "auto") -> tuple[str, Any]:
    """Parse ``text`` and return ``(format, document)``; SSS documents stay text for their reader.

    ``fmt`` forces a format (``ojs``, ``flux``, ``sss``): detection is skipped and that format's reader
    reports whatever does not fit.
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise JobValidationError([issue("format", "format", f"unknown format {fmt!r}; use one of {FORMATS}")])
    stripped = text.lstrip("\ufeff \t\r\n")
    if fmt == "sss" or (fmt == "auto" and stripped.startswith("<")):
        return "sss", text
    if fmt in ("auto", "slurm") and stripped.startswith("JobId="):  # scontrol show job: as squeue --json
        from placer.topology.errors import TopologyError
        from placer.topology.importers.slurm_job_text import show_job_document

        try:
            return "slurm", show_job_document(text, source=source)
        except TopologyError as e:
            raise JobValidationError([issue("malformed", p.item, p.message) for p in e.problems]) from None
    doc = parse_json_or_yaml(text, source=source)
    # A forced format skips detection: its reader reports what does not fit.
    return (detect_object(doc, source=source) if fmt == "auto" else fmt), doc
