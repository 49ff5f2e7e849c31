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

__all__ = ["is_slurm_json", "is_slurm_output", "json_records"]

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
    ``nodes`` list.

    >>> is_slurm_json({"meta": {"Slurm": {}}, "nodes": []}), is_slurm_json({"nodes": []})
    (True, False)
    """
    return is_slurm_output(obj, "nodes")


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
