"""OJS worker capability advertisements -> :class:`~placer.topology.inventory.Inventory`.

Why: an OJS backend knows its cluster only through what workers advertise. Three shapes exist in the
specs, and one document may mix them:

* **v0.3.0 §11** (``ojs-ml-resources-v0.3.0.md``): ``{"worker_id", "capabilities": {"accelerator",
  "gpu": {type, count, memory_gb, compute_capability, interconnect}, "cpu_cores", "memory_gb",
  "storage_gb", "shm_size_gb", "models_loaded", "runtimes", "labels": {...}}}``.
* **v0.1.0 §6 FETCH** (``ojs-ml-resources-v0.1.0.md``): ``{"worker_id", "queues", "count",
  "capabilities": {"gpu": {count, type, memory_gb}, "cpu": {"cores"}, "memory_gb"}}``.
* **v0.1.0 §2.3 labels**: ``{"worker_id", "labels": ["gpu:nvidia-a100", "gpu_count:4",
  "gpu_memory_gb:80", "cpu_cores:32", "memory_gb:256", "region:us-east-1", "spot:true"]}``.

A document is one advertisement, a list of them, or ``{"workers": [...]}``. Each worker is one node named
by its ``worker_id``. Mapping rules (also in ``docs/importers.md``):

* labels (dict form, or every ``key:value`` of the list form; a list entry without a colon is a tag with
  the empty value) are kept as node labels, because OJS node
  selectors and affinity rules match on them; ``region``/``zone``/``block``/``rack`` labels also fill
  the node's topology fields; ``spot: true`` (or ``capacity_class: spot|on-demand|reserved``) sets the
  capacity class;
* GPU type names go through the catalog (``placer.topology.catalog.canonical_gpu_type``) when it knows them;
* ``accelerator: fpga`` workers become CPU nodes with the property ``fpga`` (placer has no FPGA model);
* §11 defines no TPU fields; as a placer extension ``capabilities.tpu: {"type": "v5e", "topology":
  "2x4"}`` imports the worker as one fixed TPU slice;
* keys the specs do not define are listed in ``Inventory.metadata["ignored"]``, never silently dropped.

>>> inv = parse_ojs_workers({"worker_id": "w1", "labels": ["gpu:nvidia-t4", "gpu_count:2", "spot:true"]},
...                         source="w.json")
>>> n = inv.nodes[0]
>>> (n.name, n.gpus.count, n.capacity_class, n.labels["gpu"])
('w1', 2, 'spot', 'nvidia-t4')
"""

from __future__ import annotations

import math
import re
from typing import Any

from placer.topology.catalog import canonical_tpu_type, parse_shape
from placer.topology.importers._common import Problems, gpu_fields, join_item, short
from placer.topology.importers.text import parse_text
from placer.topology.inventory import Inventory, LoadedModel, NodeSpec, TpuPodSpec

__all__ = ["FORMAT", "parse_ojs_workers"]

FORMAT = "ojs-workers"

_AD_KEYS = {"worker_id", "capabilities", "labels", "queues", "count", "hostname", "heartbeat_at"}
_CAP_KEYS = {
    "accelerator",
    "gpu",
    "tpu",
    "cpu",
    "cpu_cores",
    "memory_gb",
    "storage_gb",
    "shm_size_gb",
    "models_loaded",
    "runtimes",
    "labels",
}
_GPU_KEYS = {"type", "count", "memory_gb", "compute_capability", "interconnect"}
_ACCELERATORS = {"gpu", "tpu", "fpga", "cpu"}
_CAPACITY = {"spot", "on-demand", "reserved"}
#: v0.1.0 §2.3 label keys with a meaning beyond "a label".
_LABEL_NUMBERS = {"gpu_count": int, "gpu_memory_gb": float, "cpu_cores": float, "memory_gb": float}


def parse_ojs_workers(obj_or_text: Any, *, source: str) -> Inventory:
    """Worker advertisements (object, list, ``{"workers": [...]}``, or their JSON/YAML text) -> Inventory.

    Raises :class:`~placer.topology.errors.TopologyError` listing every problem, each naming the worker.

    >>> parse_ojs_workers('[{"worker_id": "a"}, {"worker_id": "a"}]', source="w.json")
    Traceback (most recent call last):
    ...
    placer.topology.errors.TopologyError: w.json: workers[1] (a): worker_id 'a' is used twice
    """
    problems = Problems(source)
    obj = parse_text(obj_or_text, source=source) if isinstance(obj_or_text, str) else obj_or_text
    ads = _ads(obj, problems)
    nodes: list[NodeSpec] = []
    pods: list[TpuPodSpec] = []
    ignored: list[str] = []
    seen: set[str] = set()
    for index, ad in enumerate(ads):
        worker_id = ad.get("worker_id") if isinstance(ad, dict) else None
        item = join_item("workers", index, worker_id if isinstance(worker_id, str) else None)
        if not isinstance(ad, dict):
            problems.add(item, f"a worker advertisement must be an object, got {short(ad)}")
            continue
        name = problems.string(ad, "worker_id", item, required=True)
        if name is None:
            continue
        if name in seen:
            problems.add(item, f"worker_id {name!r} is used twice")
            continue
        seen.add(name)
        result = _worker(ad, name, item, problems, ignored)
        if isinstance(result, NodeSpec):
            nodes.append(result)
        elif isinstance(result, TpuPodSpec):
            pods.append(result)
    problems.check()
    metadata: dict[str, Any] = {"format": FORMAT, "source": source}
    if ignored:
        metadata["ignored"] = ignored
    inv = problems.model(Inventory, {"nodes": nodes, "tpu_pods": pods, "metadata": metadata}, "document")
    problems.check()
    assert inv is not None
    return inv


def _ads(obj: Any, problems: Problems) -> list[Any]:
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict) and "workers" in obj and "worker_id" not in obj:
        workers = obj["workers"]
        if not isinstance(workers, list):
            problems.add("workers", f"'workers' must be a list, got {short(workers)}")
            return []
        return workers
    if isinstance(obj, dict):
        return [obj]
    problems.add("document", f"expected an advertisement, a list or {{'workers': [...]}}, got {short(obj)}")
    return []


def _worker(
    ad: dict[str, Any], name: str, item: str, problems: Problems, ignored: list[str]
) -> NodeSpec | TpuPodSpec | None:
    ignored.extend(f"{item}: {k}" for k in ad if k not in _AD_KEYS)
    before = len(problems.items)
    node: dict[str, Any] = {"name": name}
    labels: dict[str, str] = {}
    caps = problems.mapping(ad, "capabilities", item) or {}
    ignored.extend(f"{item}: capabilities.{k}" for k in caps if k not in _CAP_KEYS)

    # Labels: the v0.1.0 list form at the top level, the v0.3.0 dict form under capabilities.
    raw_labels = ad.get("labels")
    if isinstance(raw_labels, list):
        labels.update(_label_list(raw_labels, item, problems, node))
    elif raw_labels is not None:
        labels.update(problems.string_map(ad, "labels", item))
    labels.update(problems.string_map(caps, "labels", item))

    accelerator = problems.string(caps, "accelerator", item)
    if accelerator is not None and accelerator not in _ACCELERATORS:
        problems.add(item, f"accelerator {accelerator!r} is not one of {sorted(_ACCELERATORS)}")

    gpu = problems.mapping(caps, "gpu", item)
    if gpu is not None:
        ignored.extend(f"{item}: capabilities.gpu.{k}" for k in gpu if k not in _GPU_KEYS)
        node["gpus"] = _gpus(gpu, item, problems)
    if accelerator == "gpu" and "gpus" not in node:
        problems.add(item, "accelerator is 'gpu' but the worker advertises no gpu (type and count)")
    if accelerator in ("cpu", "fpga", "tpu") and gpu is not None:
        problems.add(item, f"accelerator is {accelerator!r} but the worker advertises a gpu")
    if accelerator == "fpga":
        node["properties"] = ["fpga"]

    cpu = problems.mapping(caps, "cpu", item)
    cores = problems.number(caps, "cpu_cores", item)
    if cpu is not None:
        cores = problems.number(cpu, "cores", f"{item} cpu") if cores is None else cores
    for key, target in (("memory_gb", "memory_gb"), ("storage_gb", "storage_gb"), ("shm_size_gb", "shm_gb")):
        value = problems.number(caps, key, item)
        if value is not None:
            node[target] = value
    if cores is not None:
        node["cpu_cores"] = cores
    node["runtimes"] = problems.string_list(caps, "runtimes", item)
    node["models_loaded"] = _models(caps.get("models_loaded"), item, problems)

    for key in ("region", "zone", "block", "rack"):
        if key in labels:
            node[key] = labels[key]
    node["capacity_class"] = _capacity(labels, item, problems)
    node["labels"] = labels

    tpu = problems.mapping(caps, "tpu", item)
    if accelerator == "tpu" and tpu is None:
        problems.add(item, "accelerator is 'tpu' but capabilities.tpu {type, topology} is missing")
    if len(problems.items) > before:
        return None
    if tpu is not None:
        return _tpu(tpu, node, item, problems)
    return problems.model(NodeSpec, node, item)


def _label_list(raw: list[Any], item: str, problems: Problems, node: dict[str, Any]) -> dict[str, str]:
    """v0.1.0 §2.3 ``"key:value"`` labels; the well-known keys also fill the node's resources. A label
    without a colon (``"canary"``: the OJS worker-info schema's labels are any strings) is a tag, kept as
    the label ``canary`` with the empty value, which ``Exists`` rules match."""
    labels: dict[str, str] = {}
    for i, entry in enumerate(raw):
        if not isinstance(entry, str) or not entry.strip():
            problems.add(
                item, f"labels[{i}] must be a non-empty string ('key:value' or a tag), got {short(entry)}"
            )
            continue
        key, _, value = entry.partition(":")
        key, value = key.strip(), value.strip()
        if not key:
            problems.add(item, f"labels[{i}] {entry!r} has an empty key")
            continue
        if key in labels and labels[key] != value:
            problems.add(item, f"labels[{i}]: {key!r} is given twice ({labels[key]!r} and {value!r})")
            continue
        labels[key] = value
    gpu: dict[str, Any] = {}
    for key, kind in _LABEL_NUMBERS.items():
        if key not in labels:
            continue
        number = _number(labels[key], kind)
        if number is None:
            problems.add(item, f"label {key}:{labels[key]!r} is not a valid {kind.__name__} >= 0")
        elif key == "gpu_count":
            gpu["count"] = number
        elif key == "gpu_memory_gb":
            if number > 0:
                gpu["memory_gb"] = number
        else:
            node[key] = number
    if "gpu" in labels:
        gpu.update(gpu_fields(labels["gpu"], gpu.get("memory_gb")))
        gpu.setdefault("count", 1)  # §3.2: a GPU with no count means one
    elif gpu:
        problems.add(item, "labels give gpu_count/gpu_memory_gb but no 'gpu:<type>' label")
        return labels
    if gpu:
        node["gpus"] = gpu
    return labels


def _number(text: str, kind: type) -> float | int | None:
    try:
        value = int(text) if kind is int else float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


def _gpus(gpu: dict[str, Any], item: str, problems: Problems) -> dict[str, Any] | None:
    where = f"{item} gpu"
    out: dict[str, Any] = {}
    name = problems.string(gpu, "type", where, required=True)
    count = problems.int_value(gpu, "count", where, required=True)
    memory = problems.number(gpu, "memory_gb", where, positive=True)
    capability = problems.string(gpu, "compute_capability", where)
    interconnect = problems.string(gpu, "interconnect", where)
    if name is None or count is None:
        return None
    out = {**gpu_fields(name, memory), "count": count}
    if capability is not None:
        if not re.fullmatch(r"[0-9]+\.[0-9]+", capability):
            problems.add(where, f"compute_capability {capability!r} is not 'major.minor'")
        out["compute_capability"] = capability
    if interconnect is not None:
        if interconnect not in ("nvlink", "pcie"):
            problems.add(where, f"interconnect {interconnect!r} must be 'nvlink' or 'pcie' for a worker")
        out["interconnect"] = interconnect
    return out


def _models(raw: Any, item: str, problems: Problems) -> list[LoadedModel]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(item, f"models_loaded must be a list, got {short(raw)}")
        return []
    out: list[LoadedModel] = []
    for i, entry in enumerate(raw):
        where = f"{item} models_loaded[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("model_id"), str):
            problems.add(where, f"must be an object with a string model_id, got {short(entry)}")
            continue
        model = problems.model(LoadedModel, entry, where)
        if model is not None:
            out.append(model)
    return out


def _capacity(labels: dict[str, str], item: str, problems: Problems) -> str:
    if "capacity_class" in labels:
        value = labels["capacity_class"]
        if value not in _CAPACITY:
            problems.add(item, f"label capacity_class {value!r} is not one of {sorted(_CAPACITY)}")
            return "on-demand"
        return value
    spot = labels.get("spot")
    if spot is None:
        return "on-demand"
    if spot.lower() not in ("true", "false"):
        problems.add(item, f"label spot {spot!r} must be 'true' or 'false'")
        return "on-demand"
    return "spot" if spot.lower() == "true" else "on-demand"


def _tpu(tpu: dict[str, Any], node: dict[str, Any], item: str, problems: Problems) -> TpuPodSpec | None:
    where = f"{item} tpu"
    kind = problems.string(tpu, "type", where, required=True)
    topology = problems.string(tpu, "topology", where, required=True)
    if kind is None or topology is None:
        return None
    generation = canonical_tpu_type(kind)
    shape = parse_shape(topology)
    if generation is None:
        problems.add(where, f"TPU type {kind!r} is not a known TPU generation")
    if shape is None or len(shape) < 2:
        problems.add(where, f"topology {topology!r} is not like '2x4' or '4x4x4'")
    if generation is None or shape is None or len(shape) < 2:
        return None
    data = {
        "name": node["name"],
        "type": generation,
        "shape": list(shape),
        "zone": node.get("zone"),
        "region": node.get("region"),
        "fixed_slice": True,
        "labels": node.get("labels", {}),
        "capacity_class": node.get("capacity_class", "on-demand"),
        "cpu_cores_per_host": node.get("cpu_cores", 0),
        "memory_gb_per_host": node.get("memory_gb", 0),
    }
    return problems.model(TpuPodSpec, data, where)
