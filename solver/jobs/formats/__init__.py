"""One reader per job format; each turns a parsed document into :class:`~placer.solver.jobs.model.ReadResult`
s.

Every reader has the signature ``read(doc, *, source: str, options: ReadOptions) -> list[ReadResult]``:
``doc`` is the parsed JSON/YAML object for ``ojs`` and ``flux`` and the raw text for ``sss`` (the SSS
reader owns its XML parsing, through :func:`placer.solver.jobs.parse.parse_xml`). A reader never raises for
bad
input: each job of the document gets a result, ``ok`` or with its issues.

Readers are imported lazily so that validating one format does not import the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["FORMATS", "READERS", "reader"]

#: Format name -> module that defines ``read``.
READERS: dict[str, str] = {
    "ojs": "placer.solver.jobs.formats.ojs",
    "flux": "placer.solver.jobs.formats.flux",
    "sss": "placer.solver.jobs.formats.sss",
    "kubernetes": "placer.solver.jobs.formats.kubernetes",
    "slurm": "placer.solver.jobs.formats.slurm",
}

FORMATS: tuple[str, ...] = tuple(READERS)


def reader(fmt: str) -> Callable[..., Any]:
    """The ``read`` function of format ``fmt`` (one of :data:`FORMATS`)."""
    return importlib.import_module(READERS[fmt]).read
