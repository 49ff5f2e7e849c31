"""Run the doctest examples of every topology core module, so the documented examples stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "topology",
    "topology.allocations",
    "topology.build",
    "topology.builders",
    "topology.catalog",
    "topology.cluster",
    "topology.graph",
    "topology.inventory_file",
    "topology.labels",
    "topology.model",
    "topology.safe_load",
    "topology.schema",
    "topology.structure",
    "topology.tpu",
    "topology.views",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no doctest example"
