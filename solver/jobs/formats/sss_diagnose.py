"""Friendly diagnoses of broken SSS XML: word-processor quotes and mismatched tags.

Why: the spec's own examples were typed in a word processor, so real documents copied from it carry
curly quotes (``op=”GE”``) and a few broken tags (``<Memory>2048<Memory>``). The XML parser rejects them
with messages like "not well-formed (invalid token): line 3, column 14", which do not say what to fix.
These scans run on the raw text and name the problem: the character, its code point and line, or the
mismatched tag names with both lines. They never replace the parser's verdict: :func:`diagnose` is only
consulted to explain a document, the parser decides whether it is accepted.

>>> curly_quotes('<Job>\\n<Memory op=”GE”>2</Memory></Job>')[0]
'curly quote U+201D (”) used as attribute quote at line 2 column 12 — replace with a straight quote (")'
>>> tag_mismatches("<Job>\\n<Memory>2048<Memory>\\n</Job>")[0]
'closing tag </Job> at line 3 does not match <Memory> opened at line 2 — is a closing tag missing its "/"?'
"""

from __future__ import annotations

import re

__all__ = ["CURLY_QUOTES", "MAX_DIAGNOSES", "curly_quotes", "diagnose", "tag_mismatches"]

#: Typographic quotes a word processor substitutes for ``"`` and ``'``.
CURLY_QUOTES: dict[str, str] = {
    "\u201c": "left double quotation mark",
    "\u201d": "right double quotation mark",
    "\u2018": "left single quotation mark",
    "\u2019": "right single quotation mark",
    "\u201e": "double low-9 quotation mark",
    "\u00ab": "left guillemet",
    "\u00bb": "right guillemet",
}

#: At most this many diagnoses per kind: enough to fix a document, short enough to read.
MAX_DIAGNOSES = 20

_MARKUP = re.compile(
    r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!.*?>|<(/?)([^\s<>/!?]+)((?:[^<>\"']|\"[^\"]*\"|'[^']*')*?)(/?)>",
    re.DOTALL,
)
_CURLY_IN_TAG = re.compile(r"<[^<>]*?([\u201c\u201d\u2018\u2019\u201e\u00ab\u00bb])[^<>]*>")


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _column(text: str, pos: int) -> int:
    return pos - (text.rfind("\n", 0, pos) + 1) + 1


def curly_quotes(text: str) -> list[str]:
    """Curly quotes inside tags (where XML needs ``"`` or ``'``); curly quotes in text content are fine.

    >>> curly_quotes("<Job><Name>job\\u2019s</Name></Job>")
    []
    """
    out: list[str] = []
    for m in _CURLY_IN_TAG.finditer(text):
        tag = m.group(0)
        for i, ch in enumerate(tag):
            if ch not in CURLY_QUOTES:
                continue
            before = tag[:i].rstrip()
            role = (
                "attribute quote" if before.endswith("=") or _inside_value(tag, i) else "character in a tag"
            )
            straight = "'" if ch in "\u2018\u2019" else '"'
            out.append(
                f"curly quote U+{ord(ch):04X} ({ch}) used as {role} at line {_line(text, m.start() + i)}"
                f" column {_column(text, m.start() + i)}"
                f" — replace with a straight quote ({straight})"
            )
            if len(out) >= MAX_DIAGNOSES:
                return out
    return out


def _inside_value(tag: str, i: int) -> bool:
    """Whether position ``i`` closes a value opened by a curly quote after ``=`` earlier in the tag."""
    j = tag.rfind("=", 0, i)
    return j >= 0 and any(c in CURLY_QUOTES for c in tag[j + 1 : i].lstrip()[:1])


def tag_mismatches(text: str) -> list[str]:
    """Mismatched, stray or unclosed tags, each with the tag names and lines involved.

    >>> tag_mismatches("<Job>\\n</Delivered>\\n</Job>")
    ['closing tag </Delivered> at line 2 has no matching opening tag (open element is <Job> from line 1)']
    """
    out: list[str] = []
    stack: list[tuple[str, int]] = []
    for m in _MARKUP.finditer(text):
        if m.group(2) is None:  # comment, CDATA, processing instruction, doctype
            continue
        closing, name, self_closing = m.group(1) == "/", m.group(2), m.group(4) == "/"
        line = _line(text, m.start())
        if self_closing and not closing:
            continue
        if not closing:
            stack.append((name, line))
            continue
        if stack and stack[-1][0] == name:
            stack.pop()
            continue
        if any(n == name for n, _ in stack):
            open_name, open_line = stack[-1]
            out.append(
                f"closing tag </{name}> at line {line} does not match <{open_name}> opened at line "
                f"{open_line}"
                ' — is a closing tag missing its "/"?'
            )
            while stack and stack[-1][0] != name:
                stack.pop()
            stack.pop()
        else:
            where = f" (open element is <{stack[-1][0]}> from line {stack[-1][1]})" if stack else ""
            out.append(f"closing tag </{name}> at line {line} has no matching opening tag{where}")
        if len(out) >= MAX_DIAGNOSES:
            return out
    for name, line in reversed(stack):
        if len(out) >= MAX_DIAGNOSES:
            break
        out.append(f"<{name}> opened at line {line} is never closed")
    return out


def diagnose(text: str) -> list[str]:
    """All friendly diagnoses of ``text``: curly quotes first (they also break tag scanning), then tags.

    >>> diagnose("<Job><JobId>1</JobId></Job>")
    []
    """
    quotes = curly_quotes(text)
    # With curly quotes, a tag like <Memory op=”GE”> may still scan; report tags only when quotes are fine
    # or when the tag problems are independent (scanning tolerates curly quotes as ordinary characters).
    return [*quotes, *tag_mismatches(text)]
