"""The grid of a sweep: one :class:`Cell` per scenario x variant x policy x seed, in that order (the
seed varies fastest, then the policy, then the variant, then the scenario).

Why a cell carries its merged scenario as a plain JSON document and its folder as a string: a cell is sent
to another process or to a Ray worker on another machine; plain data pickles anywhere, is written to
``sweep.json`` as it is, and the worker validates it again with the scenario model, so what runs is
exactly what the file says.

>>> from placer.scenarios.sweep.load import load_sweep
>>> cells = grid(load_sweep("scenarios/library/sweeps/h100-policies.yaml"))
>>> [(c.policy, c.seed) for c in cells]  # doctest: +NORMALIZE_WHITESPACE
[('greedy', 0), ('greedy', 1), ('cpsat', 0), ('cpsat', 1), ('no-preemption', 0), ('no-preemption', 1)]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from placer.scenarios.sweep.load import Sweep

__all__ = ["Cell", "grid", "size"]


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: which scenario (``scenario``: its name; ``file``: as the sweep names it),
    variant, policy and seed; ``spec`` the merged scenario (JSON), ``base`` the folder its relative paths
    start from, ``verify`` whether every decision is re-checked."""

    index: int
    sweep: str
    scenario: str
    file: str
    variant: str
    policy: str
    seed: int
    spec: dict[str, Any]
    base: str
    verify: bool = False

    def label(self) -> str:
        """``scenario/variant/policy/seed``, for messages."""
        return f"{self.scenario}/{self.variant}/{self.policy}/{self.seed}"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def size(sweep: Sweep) -> int:
    """How many cells :func:`grid` gives."""
    return len(sweep.scenarios) * len(sweep.variants) * len(sweep.policies) * len(sweep.spec.seeds)


def grid(sweep: Sweep) -> list[Cell]:
    """Every cell of ``sweep``, in grid order (``index`` 0, 1, ...)."""
    cells: list[Cell] = []
    for i, scenario in enumerate(sweep.scenarios):
        base = str(sweep.base(i).absolute())
        for variant in sweep.variants:
            for policy in sweep.policies:
                merged = sweep.merged[(i, variant, policy)]
                doc = merged.model_dump(mode="json", by_alias=True, exclude_unset=True)
                for seed in sweep.spec.seeds:
                    cells.append(
                        Cell(
                            index=len(cells),
                            sweep=sweep.spec.name,
                            scenario=scenario.name,
                            file=sweep.files[i],
                            variant=variant,
                            policy=policy,
                            seed=seed,
                            spec=doc,
                            base=base,
                            verify=sweep.spec.verify,
                        )
                    )
    return cells
