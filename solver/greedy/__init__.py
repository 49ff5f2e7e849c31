"""Greedy: job by job in priority order, gang-aware best fit — milliseconds, always valid.

* :mod:`~placer.solver.greedy.core` — :func:`greedy` and the order it takes jobs in (:func:`priority_order`);
  :func:`place_alone`, what it places for one plain replica alone (the express lane's);
* :mod:`~placer.solver.greedy.state` — the scratch :class:`State` it (and CP-SAT's realization) places on;
* :mod:`~placer.solver.greedy.evictions` — placing a job by evicting running work of lower rank.
"""

from placer.solver.greedy.core import greedy, place_alone, priority_key, priority_order
from placer.solver.greedy.state import State

__all__ = ["State", "greedy", "place_alone", "priority_key", "priority_order"]
