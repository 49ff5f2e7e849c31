"""Shared plumbing for the importers: collecting problems, checking values, naming GPU types.

Why one module: every importer reads untrusted, loosely typed documents and must report *all* that is
wrong with one, each problem naming the file, the item and what is wrong (``Problem(source, item,
message)``), and must never let a ``KeyError``/``TypeError`` escape. The :class:`Problems` collector and the
small typed getters here are that discipline in one place, so each importer only says what it expects.

Units (the same for every importer): CPU in cores; memory and storage in GB where **1 GB = 2**30 bytes**
(what ``free -g``, ``nvidia-smi`` and Slurm's "MB" actually count), so Kubernetes ``1871Gi`` is 1871 GB.

>>> p = Problems("nodes.json")
>>> p.int_value({"count": "8"}, "count", "items[0] (n1)")
>>> str(p.error())
"nodes.json: items[0] (n1): 'count' must be an integer, got '8'"
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from placer.topology.catalog import canonical_gpu_type, gpu_info, parse_gpu_product
from placer.topology.errors import Problem, TopologyError
from placer.topology.inventory import RunningJob

T = TypeVar("T", bound=BaseModel)
D = TypeVar("D")

#: Most problems reported for one document; beyond that the rest are summarized in one line.
MAX_PROBLEMS = 50
#: Bytes in one inventory GB (see the module docstring).
GB = 2**30
#: GPU type used when a source says a node has GPUs but not which (documented in docs/importers.md).
UNKNOWN_GPU = "unknown-gpu"
#: The type of an AMD GPU whose product no label names (an ``amd-`` type: NVIDIA jobs stay off it).
UNKNOWN_AMD_GPU = "amd-unknown-gpu"


def child_map(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a JSON object, else an empty one: a manifest's optional section (``metadata``,
    ``spec``, ``status``) read without a check at each use.

    >>> child_map({"spec": {"a": 1}}, "spec"), child_map({"spec": [1]}, "spec"), child_map({}, "spec")
    ({'a': 1}, {}, {})
    """
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def child_list(obj: Mapping[str, Any], key: str) -> list[Any]:
    """``obj[key]`` when it is a JSON array, else an empty one.

    >>> child_list({"items": [1, 2]}, "items"), child_list({"items": "x"}, "items")
    ([1, 2], [])
    """
    value = obj.get(key)
    return value if isinstance(value, list) else []


def child_str(obj: Mapping[str, Any], key: str, default: D) -> str | D:
    """``obj[key]`` when it is a string, else ``default``.

    >>> child_str({"name": "a"}, "name", None), child_str({"name": 3}, "name", "#0")
    ('a', '#0')
    """
    value = obj.get(key)
    return value if isinstance(value, str) else default


def read_text(path: str) -> tuple[str, str]:
    """``(source name, text)`` of the document at ``path`` (a file, or ``-`` for stdin): ``OSError`` when
    it cannot be opened, ``TopologyError`` naming the source when it is not UTF-8 text."""
    from placer.topology.inputs import read_input, source_name

    source = source_name(path)
    try:
        return source, read_input(path).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise TopologyError([Problem(source, "document", f"not UTF-8 text: {e}")]) from None


def whole_number(text: str | None) -> int | None:
    """``text`` as a whole number when it is one in ASCII digits (what Slurm and ``sacctmgr`` print), else
    None: ``str.isdigit`` also takes ``²``, which ``int`` refuses.

    >>> whole_number("42"), whole_number("²"), whole_number("-1"), whole_number("")
    (42, None, None, None)
    """
    return int(text) if text and text.isascii() and text.isdigit() else None


def counting_against(job: RunningJob, groups: list[str]) -> RunningJob:
    """``job`` counting against ``groups`` too (group limits: a Slurm QOS's, a partition QOS's, an
    association's), each group once: a running job listed twice in a group would count twice.

    >>> rj = RunningJob(job="r", replicas=[{"node": "n", "gpus": [0]}], limit_groups=["qos/a"])
    >>> counting_against(rj, ["qos/a", "assoc/ml"]).limit_groups
    ['qos/a', 'assoc/ml']
    """
    new = [g for g in dict.fromkeys(groups) if g not in job.limit_groups]
    return job.model_copy(update={"limit_groups": [*job.limit_groups, *new]}) if new else job


def short(value: Any, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters so a huge bad value cannot flood a message.

    >>> short("x" * 100, 10)
    "'xxxxxxxx…"
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Problems:
    """Collects the problems of one document; :meth:`check` raises them all as one ``TopologyError``.

    >>> p = Problems("a.txt")
    >>> p.add("record 1 (NodeName=g1)", "CPUTot 'x' is not a number")
    >>> p.check()
    Traceback (most recent call last):
    ...
    placer.topology.errors.TopologyError: a.txt: record 1 (NodeName=g1): CPUTot 'x' is not a number
    """

    def __init__(self, source: str):
        self.source = source or "<input>"
        self.items: list[Problem] = []
        self._dropped = 0

    def add(self, item: str, message: str) -> None:
        """Record one problem (``item`` says where, ``message`` says what is wrong)."""
        if len(self.items) >= MAX_PROBLEMS:
            self._dropped += 1
            return
        self.items.append(Problem(source=self.source, item=item or "document", message=message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def error(self) -> TopologyError:
        """The collected problems as one error (call only when there are some)."""
        problems = list(self.items)
        if self._dropped:
            problems.append(Problem(self.source, "document", f"... and {self._dropped} more problems"))
        return TopologyError(problems)

    def check(self) -> None:
        """Raise the collected problems, if any."""
        if self.items:
            raise self.error()

    # -- typed getters: return None (and record a problem) when the value has the wrong type --------

    def mapping(self, obj: Mapping[str, Any], key: str, item: str, *, required: bool = False) -> dict | None:
        """``obj[key]`` as a dict (None when absent)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.add(item, f"{key!r} is missing")
            return None
        if not isinstance(value, dict):
            self.add(item, f"{key!r} must be an object, got {short(value)}")
            return None
        return value

    def string(self, obj: Mapping[str, Any], key: str, item: str, *, required: bool = False) -> str | None:
        """``obj[key]`` as a non-empty string (None when absent)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.add(item, f"{key!r} is missing")
            return None
        if not isinstance(value, str) or not value.strip():
            self.add(item, f"{key!r} must be a non-empty string, got {short(value)}")
            return None
        return value.strip()

    def int_value(
        self, obj: Mapping[str, Any], key: str, item: str, *, required: bool = False, minimum: int = 0
    ) -> int | None:
        """``obj[key]`` as an integer >= ``minimum`` (JSON ``8`` or ``8.0``; never ``"8"`` or ``true``)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.add(item, f"{key!r} is missing")
            return None
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(item, f"{key!r} must be an integer, got {short(value)}")
            return None
        if value < minimum:
            self.add(item, f"{key!r} must be >= {minimum}, got {value}")
            return None
        return value

    def number(
        self, obj: Mapping[str, Any], key: str, item: str, *, required: bool = False, positive: bool = False
    ) -> float | None:
        """``obj[key]`` as a finite number >= 0 (> 0 when ``positive``)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.add(item, f"{key!r} is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self.add(item, f"{key!r} must be a number, got {short(value)}")
            return None
        if value < 0 or (positive and value == 0):
            self.add(item, f"{key!r} must be {'> 0' if positive else '>= 0'}, got {value}")
            return None
        return float(value)

    def string_list(self, obj: Mapping[str, Any], key: str, item: str) -> list[str]:
        """``obj[key]`` as a list of strings (empty when absent)."""
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.add(item, f"{key!r} must be a list of strings, got {short(value)}")
            return []
        return list(value)

    def string_map(self, obj: Mapping[str, Any], key: str, item: str) -> dict[str, str]:
        """``obj[key]`` as a string-to-string map; numbers and booleans become strings (``true``)."""
        value = obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(item, f"{key!r} must be an object of strings, got {short(value)}")
            return {}
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, bool):
                out[str(k)] = "true" if v else "false"
            elif isinstance(v, str) or (isinstance(v, int | float) and math.isfinite(v)):
                out[str(k)] = str(v)
            else:
                self.add(item, f"{key}.{k} must be a string, got {short(v)}")
        return out

    def model(self, cls: type[T], data: dict[str, Any], item: str) -> T | None:
        """Validate ``data`` as ``cls``; each pydantic error becomes a problem naming the field."""
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            for err in e.errors():
                where = ".".join(str(x) for x in err["loc"])
                self.add(item, f"{where + ': ' if where else ''}{err['msg']}")
            return None


def gpu_type(name: str) -> str:
    """The catalog's canonical id for a GPU product string (``NVIDIA-H100-80GB-HBM3`` -> ``nvidia-h100``),
    or the string as given when the catalog does not know it, so an exotic GPU is still imported.

    >>> gpu_type("NVIDIA-H100-80GB-HBM3"), gpu_type("acme-x1"), gpu_type("  ") == UNKNOWN_GPU
    ('nvidia-h100', 'acme-x1', True)
    """
    name = name.strip()
    if not name:
        return UNKNOWN_GPU
    try:
        found = canonical_gpu_type(name)
    except Exception:  # a catalog bug must not turn a bad name into a traceback
        found = None
    return found or name


#: How far below a nominal VRAM size a measured one may be and still mean that size: NVML (and so GPU
#: Feature Discovery's ``nvidia.com/gpu.memory``) reports usable memory, a little under the size on the box
#: (an 80 GB H100 reports 81,559 MiB = 79.6 GiB, a 24 GB L4 22.5 GiB).
MEASURED_VRAM_SLACK = 0.10


def gpu_fields(name: str, measured_memory_gb: float | None = None) -> dict[str, Any]:
    """``type``, and the ``memory_gb`` / ``interconnect`` that a GPU product string and a measurement say.

    Why importers call this and not :func:`gpu_type` alone: the product string carries facts that the
    canonical type loses (``NVIDIA-A100-PCIE-40GB`` is a 40 GB PCIe card, not the catalog's default 80 GB
    NVLink A100), and a measured VRAM is slightly under the marketed size that jobs ask for
    (``ext_ml_gpu_memory_gb: 80``). A measurement within :data:`MEASURED_VRAM_SLACK` below a size the
    catalog (or the product string) knows for this GPU is taken as that size; any other measurement is
    kept as measured. Keys the source does not say are left out, so the catalog fills them at build time.

    >>> gpu_fields("NVIDIA-A100-PCIE-40GB")
    {'type': 'nvidia-a100', 'memory_gb': 40.0, 'interconnect': 'pcie'}
    >>> gpu_fields("NVIDIA-H100-80GB-HBM3", measured_memory_gb=81559 / 1024)
    {'type': 'nvidia-h100', 'memory_gb': 80.0}
    >>> gpu_fields("NVIDIA-H100-NVL", measured_memory_gb=95830 / 1024)["memory_gb"]  # not a catalog size
    93.584
    >>> gpu_fields("acme-x1", measured_memory_gb=32.0)
    {'type': 'acme-x1', 'memory_gb': 32.0}
    """
    product = parse_gpu_product(name) if name.strip() else None
    if product is None:
        out: dict[str, Any] = {"type": gpu_type(name)}
        if measured_memory_gb is not None:
            out["memory_gb"] = round(measured_memory_gb, 3)
        return out
    out = {"type": product.type}
    sizes = (
        (product.memory_gb,) if product.memory_gb is not None else gpu_info(product.type).memory_options_gb
    )
    if measured_memory_gb is not None:
        nominal = [s for s in sizes if s * (1 - MEASURED_VRAM_SLACK) <= measured_memory_gb <= s * 1.01]
        out["memory_gb"] = min(nominal) if nominal else round(measured_memory_gb, 3)
    elif product.memory_gb is not None:
        out["memory_gb"] = product.memory_gb
    if product.form == "pcie":
        out["interconnect"] = "pcie"
    return out


def join_item(prefix: str, index: int, name: str | None) -> str:
    """How importers name an item: ``items[3] (gpu-node-7)``.

    >>> join_item("items", 3, "gpu-node-7")
    'items[3] (gpu-node-7)'
    >>> join_item("workers", 0, None)
    'workers[0]'
    """
    return f"{prefix}[{index}]" + (f" ({name})" if name else "")
