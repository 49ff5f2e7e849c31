"""Flux count ranges (RFC 14 ``count: {min, max, operator, operand}``): the scheduler "SHALL generate the
R that contains the maximum number of the resource that is available and subject to the operator and
operand", never fewer than ``min``, never more than ``max``."""

from __future__ import annotations

from placer.solver.jobs import read_text
from placer.solver.jobs.model import ReadResult
from placer.topology import cluster_of, cpu_nodes, dgx_h100
from tests.solver.conftest import Solve, pending_reason


def _slots(
    count: str, per_slot: str = "- type: gpu\n        count: 1\n      - type: core\n        count: 2"
) -> ReadResult:
    text = f"""
version: 999
resources:
  - type: slot
    label: default
    count: {count}
    with:
      {per_slot}
tasks:
  - command: ["app"]
    slot: default
    count: {{per_slot: 1}}
attributes: {{system: {{duration: 60}}}}
"""
    [r] = read_text(text, source="range.yaml")
    assert r.ok, r.errors
    return r


def _replicas(decision, job: str) -> int:  # type: ignore[no-untyped-def]
    p = decision.placement_of(job)
    assert p is not None, pending_reason(decision, job)
    return len(p.replicas)


def test_use_case_1_2_takes_every_node_up_to_max(solve: Solve, specs_dir) -> None:  # type: ignore[no-untyped-def]
    # use_case_1.2: slots of one whole node, count {min: 3, max: 30, +1}. 8 empty nodes -> 8 slots.
    [r] = read_text((specs_dir / "flux-examples/spec_14/use_case_1.2.yaml").read_text(), source="uc12")
    d = solve([r], cluster_of(cpu_nodes(8)))
    assert _replicas(d, r.id) == 8


def test_multiplicative_range_takes_the_largest_admissible_power(solve: Solve) -> None:
    # {min 2, max 20, * 2} admits 2, 4, 8, 16; two DGX nodes have 16 free GPUs -> 16 one-GPU slots.
    r = _slots('{min: 2, max: 20, operator: "*", operand: 2}')
    d = solve([r], cluster_of(dgx_h100(2)))
    assert _replicas(d, r.id) == 16


def test_max_caps_the_count(solve: Solve) -> None:
    # {min 2, max 5, + 1} on 16 free GPUs: 5, not 16.
    r = _slots('{min: 2, max: 5, operator: "+", operand: 1}')
    assert _replicas(solve([r], cluster_of(dgx_h100(2))), r.id) == 5


def test_fewer_than_min_available_stays_pending(solve: Solve) -> None:
    # {min 12, max 20, +4} admits 12, 16, 20; one DGX has 8 GPUs: even 12 one-GPU slots cannot fit.
    r = _slots('{min: 12, max: 20, operator: "+", operand: 4}')
    d = solve([r], cluster_of(dgx_h100(1)))
    assert d.placement_of(r.id) is None
    assert pending_reason(d, r.id) is not None
