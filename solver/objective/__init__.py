"""What a good decision is, in one place: the terms both engines optimize.

* :mod:`~placer.solver.objective.preferences` — soft preferences per (unit, node): preferred affinity
  weights, model and data locality, spot preference, preferred rules on the jobs beside a replica;
* :mod:`~placer.solver.objective.cost` — dollars per hour of a replica on each node (the cost term);
* :mod:`~placer.solver.objective.fragmentation` — FGD's expected-fragmentation measure against a target
  workload;
* :mod:`~placer.solver.objective.score` — the one objective an answer is judged by, level by level.

Greedy reads these as its node-choice keys, CP-SAT as its objective levels (``docs/solver.md``).
"""

from placer.solver.objective.cost import Pricing
from placer.solver.objective.fragmentation import Targets, fragmentation, target_workload
from placer.solver.objective.preferences import preference_scores

__all__ = ["Pricing", "Targets", "fragmentation", "preference_scores", "target_workload"]
