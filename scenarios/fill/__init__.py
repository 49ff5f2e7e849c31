"""The cluster-fill experiment of the FGD paper (Weng et al., ATC '23), on placer: pods of a trace arrive
until their GPU request is ``load`` x the cluster's GPU capacity, are placed as they arrive and never
leave; the figure of merit is the share of GPU capacity allocated as the arrived load grows.

* :mod:`~placer.scenarios.fill.tables` — node and pod lists as numpy columns;
  :mod:`~placer.scenarios.fill.state` —
  the incremental cluster state; :mod:`~placer.scenarios.fill.sampling` — who arrives, in what order;
* :mod:`~placer.scenarios.fill.policies` — baselines (random, first/best fit, Kubernetes, packing, clustering)
  and FGD; :mod:`~placer.scenarios.fill.engines` — placer's ``greedy``/``cpsat`` through ``place()`` in
  batches;
* :mod:`~placer.scenarios.fill.run` — one run; :mod:`~placer.scenarios.fill.result` — the allocation at each
  arrived
  load; :mod:`~placer.scenarios.fill.bound` — an upper bound any placement obeys;
  :mod:`~placer.scenarios.fill.verify`
  — the run's placements as a placer Decision, re-checked by the independent checker;
  :mod:`~placer.scenarios.fill.stranding` — where the capacity a run did not allocate sits at its end.

Method, definitions and results: ``docs/fill.md``; the command: ``placer fill``.
"""

__all__ = []
