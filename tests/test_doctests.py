"""Every docstring example of every placer module runs, once, under the module's installed name.

pytest's ``--doctest-modules`` imports files by path, so with the repository's folders mapped under
``placer.`` it would import ``solver/engine.py`` a second time as ``solver.engine``; walking the installed
package keeps one copy of each module.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import placer

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules() -> list[str]:
    names = ["placer"]
    for info in pkgutil.walk_packages(placer.__path__, "placer."):
        names.append(info.name)
    for sub in ("solver", "topology", "scenarios"):  # mapped folders: walk them under their placer name
        package = importlib.import_module(f"placer.{sub}")
        names.append(package.__name__)
        names += [i.name for i in pkgutil.walk_packages(package.__path__, f"placer.{sub}.")]
    return sorted(set(names))


MODULES = _modules()
#: Modules whose examples are their documentation: each must have at least one (the job readers of the
#: Flux and SSS formats, whose grammars are easiest to learn from examples, and the cluster model).
MUST_SHOW = (
    "placer.solver.jobs.formats.flux",
    "placer.solver.jobs.formats.sss",
    "placer.topology.allocations",
    "placer.topology.build",
    "placer.topology.catalog",
    "placer.topology.cluster",
    "placer.topology.graph",
    "placer.topology.presets",
    "placer.topology.tpu",
    "placer.topology.views",
    "placer.solver.core",
    "placer.solver.engine",
    "placer",
)


def test_every_package_is_walked() -> None:
    """The walk reaches the engine, the checker and the importers (a broken walk would test nothing)."""
    for name in ("placer.solver.engine", "placer.solver.checks", "placer.topology.importers.kubernetes"):
        assert name in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in finder.find(module, name):
        if test.examples:
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
    if name in MUST_SHOW or name.startswith(MUST_SHOW[:2]):
        assert result.attempted > 0, f"{name} has no example"
