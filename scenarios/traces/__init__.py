"""Loaders for public cluster traces: each turns a trace file into placer's own types.

Why here and not in ``solver``: a trace is an *experiment input* (the FGD cluster-fill experiment, the
what-if simulator), not something a backend hands to ``place()``. Each loader is a pure function of the
file's text, validates every column it reads and reports bad input as a
:class:`~placer.scenarios.traces.table.
TraceError` naming the file, line and column — never a traceback.

* :mod:`placer.scenarios.traces.alibaba` — Alibaba GPU v2023 "openb" node and pod lists (the FGD paper's
  traces):
  nodes -> a :class:`~placer.topology.Cluster`, pods -> :class:`~placer.solver.jobs.model.Job` objects;
* :mod:`placer.scenarios.traces.philly` — Microsoft Philly jobs (arrival, duration, GPU count) -> jobs with
  submit times and durations, for the simulator.

The traces themselves are never copied into the repository: they are read from ``../shared/traces`` beside
it, or ``$PLACER_SHARED/traces`` (:func:`traces_dir`); callers skip with a message where they are absent.

>>> traces_dir().name
'traces'
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO", "openb_dir", "traces_dir"]

#: The repository root (``scenarios/traces/__init__.py`` is two levels below it).
REPO = Path(__file__).resolve().parents[2]


def traces_dir() -> Path:
    """Where the shared traces live: ``$PLACER_SHARED/traces``, else ``../shared/traces`` beside the
    repository. The folder may not exist; callers check and skip with a message."""
    shared = os.environ.get("PLACER_SHARED")
    return (Path(shared) if shared else REPO.parent / "shared") / "traces"


def openb_dir() -> Path:
    """The folder of the Alibaba GPU v2023 ("openb") node and pod lists inside :func:`traces_dir`.

    >>> openb_dir().name
    'alibaba-gpu-v2023'
    """
    return traces_dir() / "alibaba-gpu-v2023"
