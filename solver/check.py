"""The independent placement checker (see :mod:`solver.checks` for the rule modules and
``docs/placement-rules.md`` for the rules): ``check(decision, jobs, cluster) -> list[Violation]``.

>>> from solver.decision import Decision
>>> from topology import cluster_of, cpu_nodes
>>> check(Decision(), [], cluster_of(cpu_nodes(1)))
[]
"""

from solver.checks import RULES, Violation, check

__all__ = ["RULES", "Violation", "check"]
