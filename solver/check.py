"""The independent placement checker (see :mod:`placer.solver.checks` for the rule modules and
``docs/placement-rules.md`` for the rules): ``check(decision, jobs, cluster) -> list[Violation]``.

>>> from placer.solver.decision import Decision
>>> from placer.topology import cluster_of, cpu_nodes
>>> check(Decision(), [], cluster_of(cpu_nodes(1)))
[]
"""

from placer.solver.checks import RULES, Violation, check

__all__ = ["RULES", "Violation", "check"]
