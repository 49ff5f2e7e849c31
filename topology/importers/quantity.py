"""Kubernetes resource quantities (``207690m``, ``1871Gi``, ``500G``, ``1e3``) as exact decimals.

Why exact: capacities are compared and summed (allocatable minus pod requests); binary floats would turn
``0.1`` cores into ``0.1000000000000000055``. The grammar is the one of ``k8s.io/apimachinery``
``resource.Quantity``::

    quantity  ::= signedNumber suffix
    suffix    ::= binarySI | decimalExponent | decimalSI
    binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei                 (powers of 1024)
    decimalSI ::= n | u | m | "" | k | M | G | T | P | E      (powers of 1000)
    decimalExponent ::= "e" signedNumber | "E" signedNumber   (integer exponent)
    signedNumber ::= [+-] (digits | digits "." digits | digits "." | "." digits)

``1E`` is one exa, ``1E3`` is 1000: a bare ``E`` is the suffix, ``E`` followed by a number an exponent.

>>> parse_quantity("207690m")
Decimal('207.690')
>>> parse_quantity("1871Gi") == 1871 * 2**30
True
>>> parse_quantity("1e3")
Decimal('1E+3')
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["MAX_EXPONENT", "parse_quantity"]

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
#: ASCII digits only: ``\d`` would also take Arabic-Indic and other Unicode digits (``٨``), which Kubernetes'
#: own parser refuses.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))$"
)
#: Largest decimal exponent accepted, so ``1e999999999`` cannot make a gigantic Decimal.
MAX_EXPONENT = 30


def parse_quantity(value: Any) -> Decimal:
    """A quantity string (or a plain JSON number) as an exact ``Decimal``; ``ValueError`` if malformed.

    >>> [float(parse_quantity(q)) for q in ("96", "2Mi", "500G", "1.5", "100u", "1E", "1E3")]
    [96.0, 2097152.0, 500000000000.0, 1.5, 0.0001, 1e+18, 1000.0]
    >>> parse_quantity("12Zi")
    Traceback (most recent call last):
    ...
    ValueError: '12Zi' is not a Kubernetes quantity
    >>> parse_quantity("\u0668")  # ARABIC-INDIC DIGIT EIGHT
    Traceback (most recent call last):
    ...
    ValueError: '٨' is not a Kubernetes quantity
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a Kubernetes quantity")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise ValueError(f"{str(value)[:40]!r} is not a Kubernetes quantity")
    text = value.strip()
    match = _QUANTITY.match(text) if len(text) <= 64 else None
    if match is None:
        raise ValueError(f"{value[:40]!r} is not a Kubernetes quantity")
    try:
        number = Decimal(match["num"])
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        raise ValueError(f"{value[:40]!r} is not a Kubernetes quantity") from None
    if match["bin"]:
        return number * (Decimal(1024) ** _BINARY[match["bin"]])
    if match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > MAX_EXPONENT:
            raise ValueError(f"{value[:40]!r}: exponent out of range")
        return number.scaleb(exponent)
    return number.scaleb(_DECIMAL[match["dec"] or ""])
