"""Untrusted text made safe for a terminal: job ids, node names and messages come from the documents a
user was given, and a raw newline forges table rows while an ANSI escape recolours or rewrites the screen.

Every control and format character (Unicode categories Cc, Cf, Zl, Zp: newlines, ESC, NUL, bidi
overrides, zero-width joiners) is shown as a Python escape; everything else is kept.

>>> printable("job\\n a  greedy")
'job\\\\n a  greedy'
>>> printable("\\x1b[31mred")
'\\\\x1b[31mred'
>>> printable("llama-3.1 ✓")
'llama-3.1 ✓'
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]

_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def printable(text: str) -> str:
    """``text`` with every control or format character escaped (module docstring)."""
    if text.isprintable():
        return text
    return "".join(c if unicodedata.category(c) not in _UNSAFE else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    n = ord(c)
    if n < 0x100:
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, f"\\x{n:02x}")
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"
