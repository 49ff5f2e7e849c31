"""Kubernetes quantity grammar: every suffix family, decimal exponents, and what is not a quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest

from placer.topology.importers.quantity import parse_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("96", Decimal(96)),  # plain integer
        ("207690m", Decimal("207.69")),  # 207690 / 1000
        ("100n", Decimal("0.0000001")),  # 100 x 10^-9
        ("250u", Decimal("0.00025")),  # 250 x 10^-6
        ("2k", Decimal(2000)),
        ("500M", Decimal(500_000_000)),
        ("500G", Decimal(500_000_000_000)),
        ("3T", Decimal(3 * 10**12)),
        ("2P", Decimal(2 * 10**15)),
        ("1E", Decimal(10**18)),  # bare E is exa
        ("1Ki", Decimal(1024)),
        ("2113626Mi", Decimal(2113626 * 1024**2)),  # 2,216,297,496,576 bytes
        ("1871Gi", Decimal(1871 * 1024**3)),
        ("2Ti", Decimal(2 * 1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("0.5Gi", Decimal(512 * 1024**2)),  # half of 1024^3
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),  # E followed by digits is an exponent
        ("12e-3", Decimal("0.012")),
        ("1.5e+2", Decimal(150)),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+2k", Decimal(2000)),
        ("-1", Decimal(-1)),
        ("107374182400", Decimal(100 * 1024**3)),  # plain bytes: 100 GiB
        (8, Decimal(8)),  # YAML may give a number
        (1.5, Decimal("1.5")),
    ],
)
def test_quantities(text: object, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["", "12Zi", "1KiB", "Gi", "1.2.3", "1 Gi", "0x10", "1e", "1e1.5", "nan", "inf", True, None, [1]]
)
def test_not_quantities(text: object) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


def test_huge_exponent_is_refused() -> None:
    with pytest.raises(ValueError, match="exponent out of range"):
        parse_quantity("1e999999999")
