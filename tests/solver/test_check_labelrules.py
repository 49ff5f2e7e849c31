"""The checker's own label-rule evaluation (OJS ML §7.2 operators, Kubernetes semantics)."""

from __future__ import annotations

import pytest

from placer.solver.checks.labelrules import compare, satisfied
from placer.solver.jobs.model import AllOf, AnyOf, LabelRule, Not

NODE = {"gpu_type": "nvidia-h100", "gpu_memory_gb": "80", "compute_capability": "9.0", "hostname": "dgx-7"}


def r(key: str, op: str, *values: str) -> LabelRule:
    return LabelRule(key=key, operator=op, values=list(values))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (r("gpu_type", "In", "nvidia-a100", "nvidia-h100"), True),
        (r("gpu_type", "In", "nvidia-a100"), False),
        (r("zone", "In", "a"), False),  # absent label: In fails
        (r("gpu_type", "NotIn", "nvidia-a100"), True),
        (r("zone", "NotIn", "a"), True),  # absent label: NotIn holds
        (r("gpu_type", "NotIn", "nvidia-h100"), False),
        (r("gpu_type", "Exists"), True),
        (r("zone", "Exists"), False),
        (r("zone", "DoesNotExist"), True),
        (r("gpu_type", "DoesNotExist"), False),
        (r("gpu_memory_gb", "Gt", "40"), True),
        (r("gpu_memory_gb", "Gt", "80"), False),
        (r("gpu_memory_gb", "Gte", "80"), True),
        (r("gpu_memory_gb", "Lt", "100"), True),  # numeric: "80" < "100" although "80" > "100" as text
        (r("gpu_memory_gb", "Lte", "79.5"), False),
        (r("compute_capability", "Gte", "8.0"), True),
        (r("compute_capability", "Lt", "10.0"), True),
        (r("gpu_type", "Gt", "5"), False),  # not comparable: not satisfied
        (r("zone", "Lt", "5"), False),  # absent: not satisfied
        (r("hostname", "Matches", "dgx-*"), True),
        (r("hostname", "Matches", "DGX-*"), False),  # case-sensitive
    ],
)
def test_operators(rule: LabelRule, expected: bool) -> None:
    assert satisfied(rule, NODE) is expected


def test_versions_compare_as_integer_tuples() -> None:
    assert compare("1.10.0", "1.9.3") == 1
    assert compare("8.0", "8.0") == 0
    assert compare("v1", "1") is None


def test_combinators() -> None:
    h100 = r("gpu_type", "In", "nvidia-h100")
    zone = r("zone", "Exists")
    assert satisfied(AllOf(rules=[h100, Not(rule=zone)]), NODE)
    assert not satisfied(AllOf(rules=[h100, zone]), NODE)
    assert satisfied(AnyOf(rules=[zone, h100]), NODE)
    assert not satisfied(AnyOf(rules=[zone]), NODE)
