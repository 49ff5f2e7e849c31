"""The accelerator catalog: facts about GPU and TPU types that inventories may leave out.

Why a catalog: a Kubernetes node says ``NVIDIA-H100-80GB-HBM3``, GKE says ``nvidia-h100-80gb``, Slurm says
``h100`` and a job says ``nvidia-h100`` (OJS ML resources §3.2). Placement must see one canonical id and
know the memory, compute capability and interconnect of each type even when the cluster description does
not state them. The facts live in ONE data table, ``topology/data/accelerators.json``, each entry with a
``sources`` note; this module only indexes and answers questions about it.

>>> canonical_gpu_type("NVIDIA-H100-80GB-HBM3")
'nvidia-h100'
>>> gpu_info("nvidia-a100").memory_gb, gpu_info("nvidia-a100").interconnect
(80.0, 'nvlink')
>>> tpu_info("v5e").pod_shape
(16, 16)
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

__all__ = [
    "GpuInfo",
    "GpuProduct",
    "TpuInfo",
    "canonical_gpu_type",
    "canonical_tpu_type",
    "format_shape",
    "gpu_info",
    "gpu_types",
    "is_offered_shape",
    "parse_gpu_product",
    "parse_shape",
    "slice_wraps",
    "tpu_accelerator_type",
    "tpu_generation_from_gke",
    "tpu_generations",
    "tpu_info",
]

_MEMORY_TOKEN = re.compile(r"^([0-9]+(?:\.[0-9]+)?)gb?$")
#: Tokens of product strings that say nothing about which GPU it is.
_NOISE_TOKENS = frozenset(
    {
        "nvidia",
        "tesla",
        "amd",
        "instinct",
        "gpu",
        "sxm",
        "sxm2",
        "sxm4",
        "sxm5",
        "pcie",
        "hbm2",
        "hbm2e",
        "hbm3",
        "hbm3e",
        "oam",
        "nvl",
        "mega",
        "gen",
        "datacenter",
        "data",
        "center",
    }
)


@dataclass(frozen=True)
class GpuInfo:
    """Catalog facts of one GPU type (see ``accelerators.json`` for sources)."""

    type: str
    vendor: str
    model: str
    memory_gb: float
    memory_options_gb: tuple[float, ...]
    compute_capability: str | None
    interconnect: str
    nvlink_domain_gpus: int | None
    aliases: tuple[str, ...]
    sources: str


@dataclass(frozen=True)
class GpuProduct:
    """What a product string says: the canonical type, and memory / form factor when the string has them."""

    type: str
    memory_gb: float | None = None
    form: str | None = None  # "sxm" | "pcie" | None


@dataclass(frozen=True)
class TpuInfo:
    """Catalog facts of one TPU generation.

    ``host_shape`` is the block of chips one host of a multi-host slice owns (2x2 for v5e/v6e, 2x2x1 for
    v4/v5p); ``cube_shape`` the 4x4x4 block a v4/v5p pod is built of (slices of 64 chips or more are whole
    cubes, smaller ones lie inside one); ``chips_per_host`` is 4 for every generation's multi-host slices,
    while v5e/v6e also sell 1- and 8-chip single-host machines (``chips_per_host_options``).
    """

    generation: str
    hbm_gb: float
    chips_per_host: int
    chips_per_host_options: tuple[int, ...]
    host_shape: tuple[int, ...]
    cube_shape: tuple[int, ...] | None  # v4/v5p: the 4x4x4 building block of the pod; None for 2-D pods
    pod_shape: tuple[int, ...]
    pod_chips: int
    dims: int
    tensorcores_per_chip: int
    slice_shapes: tuple[str, ...]
    wrap_rule: str
    gke_accelerators: tuple[str, ...]
    aliases: tuple[str, ...]
    sources: str


def _normalize(name: str) -> str:
    """Lower-case, spaces/underscores/slashes to '-', runs of '-' collapsed: the form aliases are keyed by."""
    return re.sub(r"-+", "-", re.sub(r"[\s_/:]+", "-", name.strip().lower())).strip("-")


@cache
def _data() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("data/accelerators.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _gpus() -> dict[str, GpuInfo]:
    out: dict[str, GpuInfo] = {}
    for type_, e in _data()["gpus"].items():
        out[type_] = GpuInfo(
            type=type_,
            vendor=e["vendor"],
            model=e["model"],
            memory_gb=float(e["memory_gb"]),
            memory_options_gb=tuple(float(m) for m in e["memory_options_gb"]),
            compute_capability=e["compute_capability"],
            interconnect=e["interconnect"],
            nvlink_domain_gpus=e.get("nvlink_domain_gpus"),
            aliases=tuple(e["aliases"]),
            sources=e["sources"],
        )
    return out


@cache
def _gpu_aliases() -> dict[str, tuple[str, float | None]]:
    """normalized alias -> (canonical type, memory the alias implies)."""
    out: dict[str, tuple[str, float | None]] = {}
    for type_, e in _data()["gpus"].items():
        out[_normalize(type_)] = (type_, None)
        mem = {_normalize(k): float(v) for k, v in e.get("alias_memory_gb", {}).items()}
        for alias in e["aliases"]:
            key = _normalize(alias)
            out[key] = (type_, mem.get(key))
    return out


@cache
def _gpu_model_tokens() -> dict[str, str]:
    """Bare model token (``h100``, ``mi300x``) -> canonical type, for the tolerant fallback."""
    return {type_.split("-", 1)[1]: type_ for type_ in _data()["gpus"]}


@cache
def _tpus() -> dict[str, TpuInfo]:
    out: dict[str, TpuInfo] = {}
    for gen, e in _data()["tpus"].items():
        out[gen] = TpuInfo(
            generation=gen,
            hbm_gb=float(e["hbm_gb"]),
            chips_per_host=e["chips_per_host"],
            chips_per_host_options=tuple(e["chips_per_host_options"]),
            host_shape=tuple(e["host_shape"]),
            cube_shape=tuple(e["cube_shape"]) if e.get("cube_shape") else None,
            pod_shape=tuple(e["pod_shape"]),
            pod_chips=e["pod_chips"],
            dims=len(e["pod_shape"]),
            tensorcores_per_chip=e["tensorcores_per_chip"],
            slice_shapes=tuple(e["slice_shapes"]),
            wrap_rule=e["wrap_rule"],
            gke_accelerators=tuple(e["gke_accelerators"]),
            aliases=tuple(e["aliases"]),
            sources=e["sources"],
        )
    return out


def gpu_types() -> tuple[str, ...]:
    """Every canonical GPU type of the catalog, sorted.

    >>> "nvidia-gb200" in gpu_types()
    True
    """
    return tuple(sorted(_gpus()))


def tpu_generations() -> tuple[str, ...]:
    """Every TPU generation of the catalog, sorted.

    >>> tpu_generations()
    ('v4', 'v5e', 'v5p', 'v6e')
    """
    return tuple(sorted(_tpus()))


def parse_gpu_product(name: str) -> GpuProduct | None:
    """Read a GPU product string of any common form: canonical id, GFD product, GKE accelerator, Slurm gres.

    Exact aliases are tried first; otherwise the string is split into tokens, vendor/packaging words are
    dropped and the first token that is a catalog model (``h100``, ``l40s``, ``mi300x``) decides. A token
    like ``80GB`` gives the memory, ``SXM*``/``PCIe`` the form factor. Unknown products give ``None`` — never
    a guess between similar names (``l40`` is not ``l40s``).

    >>> parse_gpu_product("NVIDIA-A100-SXM4-40GB")
    GpuProduct(type='nvidia-a100', memory_gb=40.0, form='sxm')
    >>> parse_gpu_product("nvidia-tesla-a100").memory_gb
    40.0
    >>> parse_gpu_product("NVIDIA-GeForce-RTX-4090") is None
    True
    """
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        return None
    norm = _normalize(name)
    tokens = [t for t in re.split(r"[-.]", norm) if t]
    memory: float | None = None
    form: str | None = None
    for tok in tokens:
        m = _MEMORY_TOKEN.match(tok)
        if m and memory is None:
            memory = float(m.group(1))
        if tok.startswith("sxm"):
            form = "sxm"
        elif tok == "pcie":
            form = "pcie"
    hit = _gpu_aliases().get(norm)
    if hit is not None:
        type_, alias_mem = hit
        return GpuProduct(type=type_, memory_gb=alias_mem if alias_mem is not None else memory, form=form)
    models = _gpu_model_tokens()
    for tok in tokens:
        if tok in _NOISE_TOKENS or _MEMORY_TOKEN.match(tok):
            continue
        if tok in models:
            return GpuProduct(type=models[tok], memory_gb=memory, form=form)
        # The first meaningful token is the model; a different one means an unknown product.
        return None
    return None


@lru_cache(maxsize=4096)
@functools.lru_cache(maxsize=4096)
def canonical_gpu_type(name: str) -> str | None:
    """The catalog id (``nvidia-h100``) for any common spelling of a GPU, or ``None`` when unknown.
    Cached: batches name a handful of spellings thousands of times (once per job as jobs are expanded).

    >>> [canonical_gpu_type(s) for s in ("Tesla-T4", "nvidia-tesla-t4", "H100", "nvidia-l4", "NVIDIA L40S")]
    ['nvidia-t4', 'nvidia-t4', 'nvidia-h100', 'nvidia-l4', 'nvidia-l40s']
    """
    product = parse_gpu_product(name)
    return product.type if product else None


def gpu_info(type_: str) -> GpuInfo:
    """Catalog facts of a GPU type given in any form :func:`canonical_gpu_type` accepts.

    Raises ``KeyError`` for an unknown type: callers that read untrusted input use
    :func:`canonical_gpu_type` first and report the problem themselves.

    >>> gpu_info("Tesla-T4").compute_capability
    '7.5'
    """
    canonical = canonical_gpu_type(type_)
    if canonical is None:
        raise KeyError(f"unknown GPU type {type_!r}; known: {', '.join(gpu_types())}")
    return _gpus()[canonical]


def canonical_tpu_type(name: str) -> str | None:
    """The TPU generation (``v5e``) for a generation name, alias, GKE accelerator label or Cloud TPU
    accelerator type (``v5litepod-16``, ``v4-32``); ``None`` when unknown.

    >>> [canonical_tpu_type(s) for s in ("v5e", "tpu-v5-lite-podslice", "v5litepod-16", "Trillium", "v4-32")]
    ['v5e', 'v5e', 'v5e', 'v6e', 'v4']
    """
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        return None
    norm = _normalize(name)
    gen = tpu_generation_from_gke(norm)
    if gen:
        return gen
    parsed = tpu_accelerator_type(norm)
    if parsed:
        return parsed[0]
    for g, info in _tpus().items():
        if norm == g or norm in {_normalize(a) for a in info.aliases}:
            return g
    return None


def tpu_generation_from_gke(label: str) -> str | None:
    """Map a GKE ``cloud.google.com/gke-tpu-accelerator`` label value to the TPU generation.

    >>> tpu_generation_from_gke("tpu-v5p-slice"), tpu_generation_from_gke("nvidia-l4")
    ('v5p', None)
    """
    if not isinstance(label, str):
        return None
    norm = _normalize(label)
    for g, info in _tpus().items():
        if norm in info.gke_accelerators:
            return g
    return None


def tpu_accelerator_type(name: str) -> tuple[str, int] | None:
    """Parse a Cloud TPU accelerator type (``v5litepod-16``, ``v4-32``, ``v5p-128``, ``v6e-8``) into
    (generation, chips). For v4 and v5p the number counts TensorCores, two per chip, so ``v4-32`` is 16 chips.

    >>> tpu_accelerator_type("v4-32"), tpu_accelerator_type("v5litepod-16")
    (('v4', 16), ('v5e', 16))
    """
    if not isinstance(name, str):
        return None
    m = re.fullmatch(r"(v4|v5p|v5e|v5litepod|v5lite|v6e)-([0-9]{1,6})", _normalize(name))
    if not m:
        return None
    gen = {"v5litepod": "v5e", "v5lite": "v5e"}.get(m.group(1), m.group(1))
    info = _tpus()[gen]
    n = int(m.group(2))
    if n == 0 or n % info.tensorcores_per_chip:
        return None
    return gen, n // info.tensorcores_per_chip


def tpu_info(generation: str) -> TpuInfo:
    """Catalog facts of a TPU generation given in any form :func:`canonical_tpu_type` accepts.

    >>> tpu_info("v5p").pod_chips, tpu_info("v4").dims
    (8960, 3)
    """
    gen = canonical_tpu_type(generation)
    if gen is None:
        raise KeyError(f"unknown TPU type {generation!r}; known: {', '.join(tpu_generations())}")
    return _tpus()[gen]


def parse_shape(text: str) -> tuple[int, ...] | None:
    """``"2x4"`` -> ``(2, 4)``; ``None`` for anything that is not 1-3 positive integers joined by ``x``.

    >>> parse_shape("4x4x8"), parse_shape("2 x 4"), parse_shape("0x4")
    ((4, 4, 8), (2, 4), None)
    """
    if not isinstance(text, str):
        return None
    m = re.fullmatch(
        r"\s*([0-9]{1,4})(?:\s*[x\u00d7]\s*([0-9]{1,4}))?(?:\s*[x\u00d7]\s*([0-9]{1,4}))?\s*", text.lower()
    )
    if not m:
        return None
    dims = tuple(int(g) for g in m.groups() if g is not None)
    return dims if all(d >= 1 for d in dims) else None


def format_shape(shape: tuple[int, ...] | list[int]) -> str:
    """``(2, 4)`` -> ``"2x4"``.

    >>> format_shape((16, 20, 28))
    '16x20x28'
    """
    return "x".join(str(d) for d in shape)


def is_offered_shape(generation: str, shape: tuple[int, ...]) -> bool:
    """Whether Google Cloud offers a slice of this shape (in any orientation) for the generation.

    v5e/v6e: the eight listed 2-D shapes. v4/v5p: 2x2x1, 2x2x2, 2x2x4, 2x4x4, or AxBxC with every
    dimension a multiple of 4; never larger than the pod.

    >>> is_offered_shape("v5e", (4, 2)), is_offered_shape("v5e", (2, 6)), is_offered_shape("v4", (4, 4, 8))
    (True, False, True)
    """
    info = tpu_info(generation)
    if len(shape) != info.dims or any(d < 1 for d in shape):
        return False
    if any(a > b for a, b in zip(sorted(shape), sorted(info.pod_shape), strict=True)):
        return False
    if info.dims == 2:
        listed = {tuple(sorted(parse_shape(s) or ())) for s in info.slice_shapes}
        return tuple(sorted(shape)) in listed
    small = {(1, 2, 2), (2, 2, 2), (2, 2, 4), (2, 4, 4)}
    return tuple(sorted(shape)) in small or all(d % 4 == 0 for d in shape)


def slice_wraps(
    generation: str, shape: tuple[int, ...], pod_shape: tuple[int, ...] | None = None
) -> tuple[bool, ...]:
    """Per axis, whether a slice of ``shape`` has wraparound (torus) links on that axis.

    v5e/v6e: an axis wraps only when the slice spans the pod's full length on it (16 in a full pod).
    v4/v5p: a slice with every dimension >= 4 (4x4x4 and larger) is a full torus; smaller ones never wrap.
    The same rule decides whether a whole pod mesh wraps (pass the pod shape as ``shape``).

    >>> slice_wraps("v5e", (8, 16)), slice_wraps("v4", (4, 4, 4)), slice_wraps("v4", (2, 2, 2))
    ((False, True), (True, True, True), (False, False, False))
    """
    info = tpu_info(generation)
    full = pod_shape or info.pod_shape
    if info.dims == 2:
        return tuple(d == f == 16 for d, f in zip(shape, full, strict=False))
    torus = all(d >= 4 for d in shape)
    return tuple(torus for _ in shape)
