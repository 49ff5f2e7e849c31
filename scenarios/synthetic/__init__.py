"""Synthetic, seeded scenarios for the solver's benchmarks and tests.

Why: benchmarks need realistic inputs that every run and every machine reproduces exactly. Everything
here is built from the public ``topology`` builders and the ``placer.solver.jobs.model`` types, is drawn from
a
``random.Random`` seeded by the caller (never the global random state), and is timed against a fixed
clock (:data:`NOW`), so the same seed gives identical clusters, running jobs and pending jobs.

* :func:`scenario_s`, :func:`scenario_m`, :func:`scenario_l` — 40 nodes / 60 jobs, 1,000 GPU nodes /
  1,000 jobs, 10,000 GPU nodes / 5,000 jobs; 60% of GPUs busy with a fragmented running set;
* :func:`hard_instances` (and :func:`fragmentation_trap`, :func:`nvlink_packing`,
  :func:`tpu_slice_packing`, :func:`memory_stranding`) — small instances where a priority-order greedy is
  provably not optimal, with the optimum worked out by hand;
* :class:`Scenario`, :func:`weighted_demand` — the record and the measure the optimum is stated in.

Distributions and hand-worked optima: ``docs/scenarios-synthetic.md``.

>>> s = scenario_s(seed=3)
>>> s.name, len(s.jobs), s.jobs == scenario_s(seed=3).jobs
('synthetic-s', 60, True)
"""

from placer.scenarios.synthetic.hard import (
    fragmentation_trap,
    hard_instances,
    memory_stranding,
    nvlink_packing,
    tpu_slice_packing,
)
from placer.scenarios.synthetic.scenario import CLASS_WEIGHT, NOW, Scenario, demand_units, weighted_demand
from placer.scenarios.synthetic.standard import scenario_l, scenario_m, scenario_s

__all__ = [
    "CLASS_WEIGHT",
    "NOW",
    "Scenario",
    "demand_units",
    "fragmentation_trap",
    "hard_instances",
    "memory_stranding",
    "nvlink_packing",
    "scenario_l",
    "scenario_m",
    "scenario_s",
    "tpu_slice_packing",
    "weighted_demand",
]
