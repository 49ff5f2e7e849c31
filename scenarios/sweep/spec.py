"""The sweep file: which scenarios, seeds, policies and scenario variants ``placer sweep`` crosses
(``docs/sweep.md``).

Why the scenario's own models inside: a policy override is a partial scenario ``policy`` block and a
variant a set of top-level scenario fields, so each is validated field by field by the same models the
scenario file uses (``policies.cpsat.engine: Input should be 'auto', 'cpsat' or 'greedy'``) before any
scenario is read; :mod:`placer.scenarios.sweep.load` then validates every merged scenario as a whole.
``placer schema sweep`` prints the JSON Schema.

>>> s = SweepSpec.model_validate({"name": "x", "scenarios": ["a.yaml"], "seeds": {"start": 3, "count": 2},
...     "policies": {"greedy": {"engine": "greedy"}, "no-preemption": {"preemption": False}}})
>>> s.seeds, {k: p.model_dump(exclude_unset=True) for k, p in s.policies.items()}
([3, 4], {'greedy': {'engine': 'greedy'}, 'no-preemption': {'preemption': False}})
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from placer.scenarios.spec import (
    AutoscalingSpec,
    ClusterSpec,
    FailuresSpec,
    PolicySpec,
    ReservationSpec,
    WorkloadSpec,
    _bad,
    _Spec,
)
from placer.scenarios.units import Duration

__all__ = ["MAX_CELLS", "MAX_SEEDS", "Name", "Overrides", "Seeds", "SweepSpec", "VariantSpec"]

#: Most cells (scenarios x variants x policies x seeds) one sweep may have: a typo in a seed range
#: (``count: 100000``) is refused rather than queued for days.
MAX_CELLS = 10_000
#: Most seeds one range may expand to.
MAX_SEEDS = 1_000

#: A policy or variant name: a table column value and a file-name-safe label.
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$")]


def _seed_range(value: Any) -> Any:
    """``{start: 3, count: 2}`` -> ``[3, 4]``; a list passes through (an int is a one-seed list)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, dict):
        return value
    extra = sorted(set(value) - {"start", "count"})
    if extra:
        raise _bad("unsupported", f"a seed range has start and count, not {', '.join(map(str, extra))}")
    start, count = value.get("start", 0), value.get("count")
    if count is None:
        raise _bad("required", "a seed range needs count (how many seeds from start)")
    for key, v in (("start", start), ("count", count)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise _bad("type", f"seed range {key} must be an integer")
    if not 1 <= count <= MAX_SEEDS:
        raise _bad("range", f"seed range count must be between 1 and {MAX_SEEDS}")
    return list(range(start, start + count))


Seeds = Annotated[
    list[StrictInt],
    Field(min_length=1),
    BeforeValidator(_seed_range),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer"},
                {"type": "array", "items": {"type": "integer"}, "minItems": 1},
                {
                    "type": "object",
                    "properties": {
                        "start": {"type": "integer", "default": 0},
                        "count": {"type": "integer", "minimum": 1, "maximum": MAX_SEEDS},
                    },
                    "required": ["count"],
                    "additionalProperties": False,
                },
            ],
            "description": "a seed, a list of seeds, or a range {start, count}",
        }
    ),
]


class Overrides(_Spec):
    """Applied to every cell last, over the scenario and its variant: a shorter ``horizon`` or a
    coarser ``interval`` for a quick run."""

    horizon: Duration | None = None
    interval: Duration | None = None


class VariantSpec(_Spec):
    """Top-level scenario fields replaced as a whole (``cluster: {...}`` replaces the scenario's cluster;
    ``prices: null`` returns to the default catalog). ``policy`` belongs under ``policies``, the seed under
    ``seeds``."""

    description: str | None = None
    start: datetime | None = None
    horizon: Duration | None = None
    interval: Duration | None = None
    cluster: ClusterSpec | None = None
    workload: WorkloadSpec | None = None
    prices: str | dict[str, Any] | None = None
    failures: FailuresSpec | None = None
    reservations: list[ReservationSpec] | None = None
    autoscaling: AutoscalingSpec | None = None


class SweepSpec(_Spec):
    """A whole sweep: the grid is ``scenarios x variants x policies x seeds``, in that order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name
    description: str = ""
    scenarios: list[str] = Field(min_length=1, description="scenario files, relative to the sweep file")
    seeds: Seeds
    policies: dict[Name, PolicySpec] = Field(
        default_factory=dict,
        description="named partial policy blocks merged over each scenario's; none: the scenario's own",
    )
    variants: dict[Name, VariantSpec] = Field(
        default_factory=dict, description="named replacements of top-level scenario fields; none: as written"
    )
    overrides: Overrides = Field(default_factory=Overrides)
    verify: bool = Field(default=False, description="re-check every decision with the independent checker")

    @field_validator("scenarios", "seeds")
    @classmethod
    def _unique(cls, v: list[Any]) -> list[Any]:
        dup = sorted({str(x) for x in v if v.count(x) > 1})
        if dup:
            raise _bad("duplicate", f"listed twice: {', '.join(dup)}")
        return v

    @field_validator("policies", "variants")
    @classmethod
    def _not_empty(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not v:
            raise _bad("required", "give at least one, or leave the field out")
        return v

    @model_validator(mode="after")
    def _size(self) -> SweepSpec:
        n = len(self.scenarios) * max(1, len(self.variants)) * max(1, len(self.policies)) * len(self.seeds)
        if n > MAX_CELLS:
            raise _bad("limit", f"the grid has {n} cells; the most is {MAX_CELLS}")
        return self
