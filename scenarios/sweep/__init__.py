"""``placer sweep``: a grid of scenarios x variants x policies x seeds, each cell one simulator run, in
parallel on Ray (a local instance or an existing cluster) or on local processes, collected into one
results table (``docs/sweep.md``).

One module per job:

===============  ======================================================================================
``spec``         the sweep file's model (``placer schema sweep``)
``load``         reading it: the scenarios it names and every merged scenario, all problems as issues
``grid``         the cells, in grid order
``cell``         one cell: simulate, summarize, one row (an error row when it fails)
``row``          the row's columns and types
``backends``     where cells run: Ray tasks or a process pool
``results``      the DataFrame, the text table, ``results.parquet`` and ``sweep.json``
===============  ======================================================================================

>>> sweep = load_sweep("scenarios/library/sweeps/h100-policies.yaml")
>>> len(grid(sweep)), sweep.policies
(6, ['greedy', 'cpsat', 'no-preemption'])
"""

from typing import Any

import pandas as pd

from placer.scenarios.sweep.backends import BACKENDS, RAY_EXTRA, cores, ray_installed, run_cells
from placer.scenarios.sweep.cell import run_cell
from placer.scenarios.sweep.grid import Cell, grid
from placer.scenarios.sweep.load import Sweep, SweepError, load_sweep, load_sweep_text, merge
from placer.scenarios.sweep.results import frame, grid_doc, records, text, write
from placer.scenarios.sweep.row import COLUMNS, TIMING
from placer.scenarios.sweep.spec import SweepSpec


def run_sweep(sweep: Sweep, **options: Any) -> pd.DataFrame:
    """Every cell of ``sweep`` run (``options`` as :func:`run_cells`: ``backend``, ``parallel``,
    ``address``, ``on_row``), as one DataFrame in grid order."""
    return frame(run_cells(grid(sweep), **options))


__all__ = [
    "BACKENDS",
    "COLUMNS",
    "RAY_EXTRA",
    "TIMING",
    "Cell",
    "Sweep",
    "SweepError",
    "SweepSpec",
    "cores",
    "frame",
    "grid",
    "grid_doc",
    "load_sweep",
    "load_sweep_text",
    "merge",
    "ray_installed",
    "records",
    "run_cell",
    "run_cells",
    "run_sweep",
    "text",
    "write",
]
