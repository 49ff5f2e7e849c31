"""Slurm's cluster-wide licences: what a job asks (``--licenses``) and what the cluster has
(``scontrol show licenses``, or ``slurm.conf``'s ``Licenses=``).

Why a module of its own: a licence is one count for the whole cluster (a licence server's seats), not a
node's resource, so it is neither a node fact nor a job's per-node demand. Both sides are read here, so
the job reader (``placer.solver.jobs.formats.slurm``), the running-job reader (``squeue --json``,
``scontrol show job -d``) and the pool reader agree on one grammar.

A job's request is what ``squeue --json`` prints in ``licenses`` and ``scontrol show job`` in
``Licenses=``: ``name[@server][:count]`` items joined by ``,`` (all of them needed), the count 1 when left
out; Slurm also takes ``*`` for ``:``. Items joined by ``|`` (any one of them, Slurm 23.02+) are refused:
placer would have to choose which licence to take.

``scontrol show licenses`` (Slurm 22.05, as a live Slurm with ``Licenses=matlab:4,ansys:2`` prints it
while a job holds three ``matlab`` seats; ``-o`` prints each licence on one line)::

    LicenseName=ansys
        Total=2 Used=0 Free=2 Reserved=0 Remote=no
    LicenseName=matlab
        Total=4 Used=3 Free=1 Reserved=0 Remote=no

The pool placer counts on is ``Total`` less ``Reserved`` (seats a Slurm reservation keeps for its own
jobs). ``Used`` is not subtracted: it is the seats the running jobs hold, which placer counts from the
running jobs themselves (``--running squeue.json``), as it counts their GPUs.

>>> job_licenses("matlab:2,ansys")
{'matlab': 2, 'ansys': 1}
>>> parse_slurm_licenses(
...     "LicenseName=matlab\\n    Total=4 Used=3 Free=1 Reserved=1 Remote=no\\n", source="lic.txt"
... )
{'matlab': 3}
>>> parse_slurm_licenses("Licenses=matlab:4,ansys*2\\n", source="slurm.conf")
{'matlab': 4, 'ansys': 2}
"""

from __future__ import annotations

import re
from pathlib import Path

from placer.topology.errors import Problem, TopologyError

__all__ = ["job_licenses", "parse_slurm_licenses", "read_licenses_file"]

_ITEM = re.compile(r"^([A-Za-z0-9_.\-]+(?:@[A-Za-z0-9_.\-]+)?)(?:[:*](\d+))?$")


def job_licenses(text: str) -> dict[str, int]:
    """Seats by licence name of a Slurm licence request (the module docstring's grammar). Raises
    ``ValueError`` naming what is wrong: an ``|`` list, an item that is not ``name[@server][:count]``, a
    count of 0, a licence named twice.

    >>> job_licenses("fluent@db:4")
    {'fluent@db': 4}
    >>> job_licenses("a|b")
    Traceback (most recent call last):
    ...
    ValueError: 'a|b': licences joined by '|' (any one of them) are not modelled
    """
    if "|" in text:
        raise ValueError(f"{text!r}: licences joined by '|' (any one of them) are not modelled")
    out: dict[str, int] = {}
    for item in text.split(","):
        m = _ITEM.match(item.strip())
        if m is None:
            raise ValueError(f"{item.strip()!r} is not name[@server][:count]")
        name, count = m.group(1), int(m.group(2) or 1)
        if count < 1:
            raise ValueError(f"{item.strip()!r}: a licence count must be at least 1")
        if name in out:
            raise ValueError(f"licence {name!r} is named twice")
        out[name] = count
    return out


def parse_slurm_licenses(text: str, *, source: str) -> dict[str, int]:
    """The seats placer may count on per licence, from ``scontrol show licenses`` (plain or ``-o``) or
    from ``slurm.conf``'s ``Licenses=`` line: ``Total`` less ``Reserved``. Raises ``TopologyError`` naming
    the line of a record it cannot read (no ``Total``, a count that is not a whole number, a licence named
    twice)."""
    records: list[tuple[int, dict[str, str]]] = []
    conf: dict[str, int] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.split("#", 1)[0].strip()
        if not stripped:
            continue
        if stripped.startswith("Licenses="):  # slurm.conf
            try:
                conf = {**(conf or {}), **job_licenses(stripped.partition("=")[2].strip())}
            except ValueError as e:
                raise TopologyError([Problem(source, f"line {n}", f"Licenses=: {e}")]) from None
            continue
        fields = dict(tok.partition("=")[::2] for tok in stripped.split() if "=" in tok)
        if "LicenseName" in fields:
            records.append((n, fields))
        elif records:
            records[-1][1].update(fields)  # the indented second line of a record
    if conf is not None and not records:
        return conf
    out: dict[str, int] = {}
    problems: list[Problem] = []
    for n, f in records:
        name = f["LicenseName"]
        try:
            total = int(f["Total"])
            reserved = int(f.get("Reserved", "0"))
        except (KeyError, ValueError):
            problems.append(
                Problem(source, f"line {n}", f"licence {name!r} has no whole Total (and Reserved)")
            )
            continue
        if name in out:
            problems.append(Problem(source, f"line {n}", f"licence {name!r} is listed twice"))
            continue
        out[name] = max(0, total - reserved)
    if problems:
        raise TopologyError(problems)
    if not out and text.strip() and "No licenses configured" not in text:
        raise TopologyError(
            [
                Problem(
                    source, "document", "no licence found (scontrol show licenses, or slurm.conf's Licenses=)"
                )
            ]
        )
    return out


def read_licenses_file(path: str) -> dict[str, int]:
    """:func:`parse_slurm_licenses` of a file (UTF-8; anything else is a ``TopologyError``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TopologyError([Problem(path, "document", f"not UTF-8 text ({e.reason})")]) from None
    return parse_slurm_licenses(text, source=path)
