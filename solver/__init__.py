"""placer's engine: jobs in, a placement decision out.

The public API is re-exported here lazily (PEP 562), so that ``import solver`` or reading jobs does not
import OR-Tools; names resolve on first use.

* Deciding: ``place(jobs, cluster, policy, now=...) -> Decision`` and ``Policy`` (engine, time limit,
  seed, weights); ``Session`` (``place()`` on state kept between calls, with its ``Express`` lane for a
  lone plain job); the independent checker is ``placer.solver.checks.check(decision, jobs, cluster)``.
* Jobs: ``placer.solver.jobs`` — ``read_files``, ``read_text``, ``Job``, ``ReadOptions``, ``Issue`` ...

>>> from placer import solver
>>> [result] = solver.read_text('{"id": "a", "ext_ml_tpu_type": "v5e", "ext_ml_tpu_topology": "2x4"}')
>>> result.job.total_tpu_chips
8
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> module that defines it.
_EXPORTS: dict[str, str] = {
    "place": "placer.solver.engine",
    "Policy": "placer.solver.policy",
    "Decision": "placer.solver.decision",
    "Violation": "placer.solver.checks",
    "Session": "placer.solver.session",
    "Express": "placer.solver.express",
    **{
        name: "placer.solver.jobs"
        for name in (
            "Issue",
            "Job",
            "JobValidationError",
            "QueueConfig",
            "ReadOptions",
            "ReadResult",
            "check_batch",
            "read_file",
            "read_files",
            "read_object",
            "read_text",
        )
    },
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'solver' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
