"""Where the cells run: Ray tasks (a local Ray instance, or an existing Ray cluster at ``address``) or
local processes (``concurrent.futures.ProcessPoolExecutor``), each cell one call of
:func:`placer.scenarios.sweep.cell.run_cell`.

Why two backends with one contract: Ray is how a study outgrows one machine, but it is an optional extra
(``pip install 'placer-engine[sweep]'``); without it a sweep still runs on every local core. Either way each
cell is a pure function of plain data, so the rows — sorted back into grid order — are the same whatever
the backend, the parallelism and the order cells finish in. A cell whose worker dies (killed, out of
memory) becomes an error row like a cell that raised.

>>> from placer.scenarios.sweep.grid import Cell
>>> cells = [Cell(index=i, sweep="s", scenario="x", file="x.yaml", variant="base", policy="p", seed=i,
...               spec={"name": "x"}, base=".") for i in range(2)]
>>> [(r["cell"], r["status"]) for r in run_cells(cells, backend="processes", parallel=1)]
[(0, 'error'), (1, 'error')]
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Literal

from placer.scenarios.sweep.cell import keys_of, run_cell
from placer.scenarios.sweep.grid import Cell
from placer.scenarios.sweep.row import error_row

__all__ = ["BACKENDS", "RAY_EXTRA", "Backend", "OnRow", "cores", "ray_installed", "run_cells"]

Backend = Literal["ray", "processes"]
BACKENDS: tuple[str, ...] = ("ray", "processes")
#: Called with each row as its cell finishes (in finishing order): a progress bar's ``update``.
OnRow = Callable[[dict[str, Any]], None]
#: What to install for the Ray backend.
RAY_EXTRA = "pip install 'placer-engine[sweep]'"


def ray_installed() -> bool:
    """Whether ``import ray`` can work (without importing it: that takes seconds)."""
    return importlib.util.find_spec("ray") is not None


def cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_cells(
    cells: Sequence[Cell],
    *,
    backend: Backend,
    parallel: int | None = None,
    address: str | None = None,
    on_row: OnRow | None = None,
) -> list[dict[str, Any]]:
    """Run every cell on ``backend`` with at most ``parallel`` at a time (default: the cores here; on an
    existing Ray cluster, ``address``, the cluster's CPUs decide); the rows in grid order."""
    if not cells:
        return []
    on_row = on_row or (lambda row: None)
    if backend == "ray":
        rows = _ray(cells, parallel, address, on_row)
    elif backend == "processes":
        if address is not None:
            raise ValueError("address is for the ray backend")
        rows = _processes(cells, parallel or cores(), on_row)
    else:
        raise ValueError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    return sorted(rows, key=lambda r: r["cell"])


def _lost(cell: Cell, error: BaseException, started: float) -> dict[str, Any]:
    """The row of a cell whose worker failed (the cell itself never raises)."""
    return error_row(keys_of(cell), f"worker failed: {type(error).__name__}: {error}", time.time() - started)


def _processes(cells: Sequence[Cell], parallel: int, on_row: OnRow) -> list[dict[str, Any]]:
    # spawn: a fresh interpreter per worker, the same on every platform, no state inherited from the
    # parent (a fork of a process with threads may deadlock).
    context = multiprocessing.get_context("spawn")
    rows = []
    started = time.time()
    pool = ProcessPoolExecutor(max_workers=max(1, min(parallel, len(cells))), mp_context=context)
    try:
        futures = {pool.submit(run_cell, cell): cell for cell in cells}
        for future in as_completed(futures):
            try:
                row = future.result()
            except Exception as e:  # BrokenProcessPool: a worker died
                row = _lost(futures[future], e, started)
            rows.append(row)
            on_row(row)
    except BaseException:  # Ctrl-C: stop the workers and drop the queued cells rather than wait for them
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return rows


def _ray(
    cells: Sequence[Cell], parallel: int | None, address: str | None, on_row: OnRow
) -> list[dict[str, Any]]:
    import logging

    import ray

    started_here = False
    if not ray.is_initialized():
        quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
        if address is not None:
            ray.init(address=address, **quiet)
        else:
            # "local": a new instance of our own, even when another one runs on this machine
            ray.init(address="local", num_cpus=parallel or cores(), include_dashboard=False, **quiet)
        started_here = True
    try:
        task = ray.remote(num_cpus=1)(run_cell)
        pending = {task.remote(cell): cell for cell in cells}
        rows = []
        started = time.time()
        while pending:
            # Whatever finished in the next half second: one call per batch, not one per cell.
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.5)
            for ref in done:
                cell = pending.pop(ref)
                try:
                    row = ray.get(ref)
                except Exception as e:  # a worker that died, a node lost: the cell is lost, not the sweep
                    row = _lost(cell, e, started)
                rows.append(row)
                on_row(row)
        return rows
    finally:
        if started_here:
            ray.shutdown()
