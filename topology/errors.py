"""Errors for cluster descriptions that cannot be read: which file, which item, what is wrong.

>>> problem = Problem(source="nodes.json", item="items[3] (gpu-7)", message="memory '12Zi' is not a quantity")
>>> err = TopologyError([problem])
>>> str(err)
"nodes.json: items[3] (gpu-7): memory '12Zi' is not a quantity"
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Problem", "TopologyError"]


@dataclass(frozen=True)
class Problem:
    """One problem in a cluster description."""

    source: str
    item: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.item}: {self.message}"


class TopologyError(ValueError):
    """A cluster description (inventory file or importer input) that cannot be turned into a cluster."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = list(problems)
        if not self.problems:
            raise ValueError("TopologyError needs at least one problem")
        super().__init__("; ".join(str(p) for p in self.problems))
