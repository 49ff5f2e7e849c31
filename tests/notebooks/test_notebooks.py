"""Every notebook in ``notebooks/`` runs top to bottom on its small settings and draws its plots.

Why in the test suite: the notebooks are documentation that executes against the current code; one that
no longer runs, or runs but draws nothing, is worse than none. Each ``notebooks/*.ipynb`` (found by glob,
so a new notebook is covered the day it lands) is executed with nbclient:

* in a kernel of *this* interpreter — ipykernel's own kernel spec for ``sys.executable`` — whatever
  kernels the machine has installed, so a fresh virtual environment needs no ``ipykernel install``;
* from ``notebooks/`` as its working directory, with ``PLACER_NOTEBOOK_SMALL=1`` (each notebook's CI
  setting: one trace or seed, a short horizon) and matplotlib's inline backend;
* with a time limit per cell.

It passes when no cell raised and at least one cell produced an ``image/png`` output. Separately, every
notebook must be committed with its outputs cleared: results belong to whoever runs it, and outputs in
the repository go stale and bloat diffs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
#: Seconds one cell may take on the small settings (they take well under a minute per notebook).
CELL_TIMEOUT_S = 300


def _kernel_manager():  # type: ignore[no-untyped-def]
    """A kernel manager that starts ipykernel with ``sys.executable``, ignoring installed kernel specs."""
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())

    km = KernelManager(kernel_name="python3", kernel_spec_manager=ThisInterpreter())
    assert km.kernel_spec is not None and km.kernel_spec.argv[0] == sys.executable
    return km


def test_there_are_notebooks() -> None:
    assert PATHS, f"no notebooks in {NOTEBOOKS}"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_committed_with_outputs_cleared(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing "
        "(notebooks/README.md says how)"
    )


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_runs_and_plots(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel inherits this environment.
    monkeypatch.setenv("PLACER_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        km=_kernel_manager(),
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:  # the failing cell's source and traceback
        pytest.fail(f"{path.name} raised:\n{e}", pytrace=False)
    except nbclient.exceptions.CellTimeoutError as e:
        pytest.fail(f"{path.name}: a cell ran longer than {CELL_TIMEOUT_S} s: {e}", pytrace=False)
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: {[f'{o.ename}: {o.evalue}' for o in errors]}"
    images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name} ran but drew no plot (no image/png output)"


def test_the_documented_way_to_run_one_leaves_the_notebooks_clean(tmp_path: Path) -> None:
    # notebooks/README.md's command (issue: "jupyter execute --inplace" saved outputs into the notebook,
    # and the test above then failed). Run as documented, on the quickstart, small settings.
    import hashlib
    import os
    import re
    import subprocess

    readme = (NOTEBOOKS / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith("jupyter execute --output="))
    assert "--inplace" not in line
    out = tmp_path / "out" / "notebooks"
    out.mkdir(parents=True)
    command = re.sub(r"notebooks/[\w-]+\.ipynb", "notebooks/00-quickstart.ipynb", line).replace(
        "$PWD/out", str(tmp_path / "out")
    )
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in NOTEBOOKS.iterdir() if p.is_file()}
    env = {**os.environ, "PLACER_NOTEBOOK_SMALL": "1", "MPLBACKEND": "Agg"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    r = subprocess.run(
        ["bash", "-c", command], cwd=NOTEBOOKS.parent, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-2000:]
    executed = nbformat.read(out / "00-quickstart.ipynb", as_version=4)
    assert any(
        o.get("output_type") for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in NOTEBOOKS.iterdir() if p.is_file()}
    assert after == before  # nothing written into notebooks/
