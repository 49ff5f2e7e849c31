"""The discrete-event what-if simulator: a scenario's jobs arrive, ``placer.solver.place()`` decides at every
scheduling interval, and the simulator books what follows — starts, completions, evictions with grace
periods, checkpoint-and-resume, node failures, reservations — into tidy tables.

One module per job:

==================  ===================================================================================
``clock``           events, their order at one instant, seconds <-> datetimes
``work``            checkpoint arithmetic: what a stop keeps and loses
``state``           each job's phase and runs (attempts)
``allocation``      a placement as a running-job allocation; what it occupies
``ledger``          the cluster ``place()`` sees: allocations and failed nodes
``autoscaler``      node groups: when to add nodes, when to remove them, what they cost
``loop``            the simulator itself (:class:`Simulator`, :func:`simulate`)
``fragmentation``   free capacity no waiting job can use
``record``          the tables (:class:`SimResult`)
``metrics``         waits, utilization, lost work, cost, fragmentation, the summary
``output``          parquet / CSV files; ``plots`` (matplotlib) and ``progress`` (tqdm) are optional
==================  ===================================================================================

``docs/simulator.md`` states the semantics and the metrics' definitions; ``placer simulate`` runs it.
"""

from placer.scenarios.sim.loop import SimulationError, Simulator, simulate
from placer.scenarios.sim.record import SimResult

__all__ = ["SimResult", "SimulationError", "Simulator", "simulate"]
