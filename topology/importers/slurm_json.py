"""Slurm's JSON about nodes (``sinfo --json``, ``scontrol show node --json``) -> ``scontrol`` records.

Why: the JSON forms are the most complete Slurm prints — they carry GPU usage with indices
(``gres_used: "gpu:h100:4(IDX:0-3)"``) even where plain ``scontrol show node`` prints none — and a site's
tooling often already has them. Each node object becomes the ``Key=Value`` record ``scontrol show node``
would print for it, so both go through one reader (:mod:`placer.topology.importers.slurm`) with one set of
rules. Field names are Slurm's OpenAPI ones (plugin ``openapi/v0.0.37`` to ``v0.0.39``, Slurm 21.08-23.02;
``data_parser/v0.0.40`` and later, Slurm 23.11+, print ``cpus``/``real_memory`` the same way and a
``state`` list).

>>> doc = {"meta": {"Slurm": {"release": "22.05.8"}}, "nodes": [{"name": "g1", "cpus": 64,
...        "real_memory": 515072, "gres": "gpu:h100:8", "gres_used": "gpu:h100:2(IDX:0-1)",
...        "alloc_cpus": 4, "alloc_memory": 1000, "state": "mixed", "state_flags": ["DRAIN"]}]}
>>> (rec,) = json_records(doc)
>>> rec["NodeName"], rec["State"], rec["GresUsed"], rec["CPUAlloc"]
('g1', 'MIXED+DRAIN', 'gpu:h100:2(IDX:0-1)', '4')
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROBLEM_KEY", "is_slurm_json", "is_slurm_output", "json_records", "sinfo_records"]

#: JSON field -> ``scontrol show node`` key (values printed as ``str``).
_FIELDS = {
    "name": "NodeName",
    "architecture": "Arch",
    "cpus": "CPUTot",
    "alloc_cpus": "CPUAlloc",
    "real_memory": "RealMemory",
    "alloc_memory": "AllocMem",
    "temporary_disk": "TmpDisk",
    "sockets": "Sockets",
    "cores": "CoresPerSocket",
    "threads": "ThreadsPerCore",
    "gres": "Gres",
    "gres_used": "GresUsed",
    "tres": "CfgTRES",
    "tres_used": "AllocTRES",
    "features": "AvailableFeatures",
    "active_features": "ActiveFeatures",
    "reason": "Reason",
    "comment": "Comment",
    "extra": "Extra",
}


def is_slurm_json(obj: Any) -> bool:
    """Whether ``obj`` is Slurm's JSON about nodes: a ``meta`` naming Slurm (or its OpenAPI plugin) and a
    ``nodes`` list, or the ``sinfo`` list of ``sinfo --json`` since Slurm 23.11 (:func:`sinfo_records`).

    >>> is_slurm_json({"meta": {"Slurm": {}}, "nodes": []}), is_slurm_json({"nodes": []})
    (True, False)
    >>> is_slurm_json({"meta": {"slurm": {"release": "24.11.1"}}, "sinfo": []})
    True
    """
    return is_slurm_output(obj, "nodes") or is_slurm_output(obj, "sinfo")


def sinfo_records(obj: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """``(item, record)`` per node of ``sinfo --json`` as Slurm 23.11 and later print it: a ``sinfo`` list
    of node groups, each with its partition, ``nodes.nodes`` (the names), ``cpus``, ``memory``, ``gres``
    (``total``/``used``), ``sockets``/``cores``/``threads``, ``features`` (``total``/``active``), ``reason``
    and ``node.state``, numbers as plain values or ``{"set", "infinite", "number"}``.

    A group's figures are the group's (``cpus.allocated`` sums its nodes), so only a group of one node says
    what that node holds: ``sinfo -N --json`` prints one node per group. A group of several nodes becomes
    a record naming the problem (the reader refuses it with its index). A node listed once per partition
    is one record with every partition; its figures must agree.

    >>> doc = {"meta": {}, "sinfo": [{"partition": {"name": "gpu"}, "node": {"state": ["MIXED"]},
    ...        "nodes": {"nodes": ["g1"]}, "cpus": {"allocated": 4, "total": 64},
    ...        "memory": {"maximum": 515072, "allocated": 1000},
    ...        "gres": {"total": "gpu:h100:8(S:0-1)", "used": "gpu:h100:2(IDX:0-1)"}}]}
    >>> ((item, rec),) = sinfo_records(doc)
    >>> item, rec["NodeName"], rec["CPUTot"], rec["CPUAlloc"], rec["GresUsed"], rec["Partitions"]
    ('sinfo[0] (g1)', 'g1', '64', '4', 'gpu:h100:2(IDX:0-1)', 'gpu')
    """
    out: dict[str, tuple[str, dict[str, str]]] = {}
    extra: list[tuple[str, dict[str, str]]] = []
    for k, group in enumerate(obj["sinfo"]):
        if not isinstance(group, dict):
            extra.append((f"sinfo[{k}]", {}))
            continue
        listed = _field(group, "nodes", "nodes")
        names = [str(n) for n in listed] if isinstance(listed, list) else []
        if len(names) != 1:
            shown = ", ".join(names[:5]) or "no node"
            why = f"a group of {len(names)} nodes ({shown}): give `sinfo -N --json`, one node per group"
            extra.append((f"sinfo[{k}]", {_PROBLEM: why}))
            continue
        (name,) = names
        rec = _sinfo_record(group, name)
        partition = _text(_field(group, "partition", "name"))
        seen = out.get(name)
        if seen is None:
            rec["Partitions"] = partition
            out[name] = (f"sinfo[{k}] ({name})", rec)
            continue
        first = seen[1]
        differ = sorted(key for key in rec if rec[key] != first.get(key))
        if differ:
            first[_PROBLEM] = f"listed again in partition {partition!r} with other {', '.join(differ)}"
        elif partition and partition not in first["Partitions"].split(","):
            first["Partitions"] = ",".join(p for p in (first["Partitions"], partition) if p)
    return list(out.values()) + extra


#: A record key no Slurm form has: the reason the record cannot be read (the reader reports it).
PROBLEM_KEY = _PROBLEM = "__problem__"


def _field(group: dict[str, Any], outer: str, inner: str) -> Any:
    """``group[outer][inner]``, None where either is missing or ``group[outer]`` is not an object."""
    part = group.get(outer)
    return part.get(inner) if isinstance(part, dict) else None


#: ``sinfo`` (23.11+) group path -> ``scontrol show node`` key.
_SINFO_FIELDS = {
    ("cpus", "total"): "CPUTot",
    ("cpus", "allocated"): "CPUAlloc",
    ("memory", "maximum"): "RealMemory",
    ("memory", "allocated"): "AllocMem",
    ("disk", "maximum"): "TmpDisk",
    ("gres", "total"): "Gres",
    ("gres", "used"): "GresUsed",
    ("sockets", "maximum"): "Sockets",
    ("cores", "maximum"): "CoresPerSocket",
    ("threads", "maximum"): "ThreadsPerCore",
    ("features", "total"): "AvailableFeatures",
    ("features", "active"): "ActiveFeatures",
}


def _sinfo_record(group: dict[str, Any], name: str) -> dict[str, str]:
    rec = {"NodeName": name}
    for (outer, inner), key in _SINFO_FIELDS.items():
        value = _field(group, outer, inner)
        if value is not None:
            rec[key] = _text(value)
    for field, key in (("reason", "Reason"), ("comment", "Comment"), ("extra", "Extra")):
        if field in group:
            rec[key] = _text(group[field])
    state = _field(group, "node", "state")
    words = [state] if isinstance(state, str) else list(state or []) if isinstance(state, list) else []
    if words:
        rec["State"] = "+".join(str(w).upper() for w in words if w)
    return rec


def is_slurm_output(obj: Any, listing: str) -> bool:
    """Whether ``obj`` is JSON a Slurm command printed with a ``listing`` list (``nodes``, ``jobs``): its
    ``meta`` names Slurm or Slurm's OpenAPI plugin."""
    if not isinstance(obj, dict) or not isinstance(obj.get(listing), list):
        return False
    meta = obj.get("meta")
    return isinstance(meta, dict) and ("Slurm" in meta or "plugin" in meta or "slurm" in meta)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):  # v0.0.40+: {"set": true, "infinite": false, "number": 64}
        if value.get("set") is False or value.get("infinite"):
            return ""
        return _text(value.get("number"))
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    return str(value)


def json_records(obj: dict[str, Any]) -> list[dict[str, str]]:
    """One ``scontrol show node`` record per node object (fields it does not know are left out; a node
    that is not an object becomes an empty record, which the reader refuses with its index)."""
    out: list[dict[str, str]] = []
    for node in obj["nodes"]:
        if not isinstance(node, dict):
            out.append({})
            continue
        rec = {key: _text(node[field]) for field, key in _FIELDS.items() if field in node}
        state = node.get("state")
        words = [state] if isinstance(state, str) else list(state or []) if isinstance(state, list) else []
        words = [str(w).upper() for w in words if w]
        flags = [str(f).upper() for f in node.get("state_flags") or [] if f]
        if words or flags:
            rec["State"] = "+".join((words or ["UNKNOWN"]) + [f for f in flags if f not in words])
        partitions = node.get("partitions")
        if isinstance(partitions, list):
            rec["Partitions"] = ",".join(str(p) for p in partitions)
        out.append(rec)
    return out
