"""Derived node labels: the keys the job model's placement rules test
(``placer.solver.jobs.model.Placement``).

Why derived labels: a job says ``gpu_type In [nvidia-h100]`` or ``zone In [us-central1-a]`` whatever
importer described the node. The topology computes these keys from the node's facts so every source of
nodes answers the same rules.

Precedence, lowest first: user labels, Flux properties (``<prop>: "true"``), derived labels. A user label
can never override a derived key — a node cannot claim ``gpu_type: nvidia-h100`` while carrying L4s.

>>> derived_labels(name="n1", zone="us-central1-a", region=None, rack="r1", block=None,
...     gpu_type="nvidia-l4", gpu_count=4, gpu_memory_gb=24.0, compute_capability="8.9",
...     interconnect="pcie", capacity_class="spot", rank=None)["region"]
'us-central1'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["DERIVED_KEYS", "HOST_LABEL", "derived_labels", "merge_labels", "number_label", "region_of_zone"]

#: A node that is one part of a host holds the host's name here (a Slurm node of several GPU types is one
#: placer node per type, :mod:`placer.topology.importers.slurm_mixed`); its ``hostname`` label is then the
#: host's, so hostlists (``-w``, Flux, SSS) and anti-affinity by host see the parts as the one host.
HOST_LABEL = "slurm_node"

#: Keys the topology derives; user labels with these keys are shadowed.
DERIVED_KEYS = (
    "hostname",
    "gpu_type",
    "gpu_count",
    "gpu_memory_gb",
    "compute_capability",
    "gpu_interconnect",
    "accelerator",
    "zone",
    "region",
    "rack",
    "block",
    "capacity_class",
    "rank",
)

_GCP_ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")
_AWS_ZONE = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-[0-9]+)[a-z]$")


def region_of_zone(zone: str | None) -> str | None:
    """The region a cloud zone name implies (GCP ``us-central1-a``, AWS ``us-east-1a``), else ``None``.

    >>> region_of_zone("us-east-1a"), region_of_zone("europe-west4-b"), region_of_zone("rack-room-2")
    ('us-east-1', 'europe-west4', None)
    """
    if not zone:
        return None
    for pattern in (_GCP_ZONE, _AWS_ZONE):
        m = pattern.match(zone)
        if m:
            return m.group(1)
    return None


def number_label(value: float) -> str:
    """Label text of a number: integers without ``.0`` (``80``), others as Python prints them.

    >>> number_label(80.0), number_label(186), number_label(0.5)
    ('80', '186', '0.5')
    """
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def derived_labels(
    *,
    name: str,
    zone: str | None,
    region: str | None,
    rack: str | None,
    block: str | None,
    gpu_type: str | None,
    gpu_count: int,
    gpu_memory_gb: float | None,
    compute_capability: str | None,
    interconnect: str | None,
    capacity_class: str,
    rank: int | None,
    accelerator: str | None = None,
) -> dict[str, str]:
    """The derived labels of a node; keys whose value is unknown are left out (``Exists`` rules then fail).

    >>> sorted(derived_labels(name="c1", zone=None, region=None, rack=None, block=None, gpu_type=None,
    ...     gpu_count=0, gpu_memory_gb=None, compute_capability=None, interconnect=None,
    ...     capacity_class="on-demand", rank=None).items())
    [('accelerator', 'cpu'), ('capacity_class', 'on-demand'), ('gpu_count', '0'), ('hostname', 'c1')]
    """
    out: dict[str, str] = {"hostname": name, "gpu_count": str(gpu_count), "capacity_class": capacity_class}
    out["accelerator"] = accelerator or ("gpu" if gpu_count > 0 else "cpu")
    if gpu_count > 0 and gpu_type:
        out["gpu_type"] = gpu_type
        if gpu_memory_gb is not None:
            out["gpu_memory_gb"] = number_label(gpu_memory_gb)
        if compute_capability:
            out["compute_capability"] = compute_capability
        if interconnect:
            out["gpu_interconnect"] = interconnect
    region = region or region_of_zone(zone)
    for key, value in (("zone", zone), ("region", region), ("rack", rack), ("block", block)):
        if value:
            out[key] = value
    if rank is not None:
        out["rank"] = str(rank)
    return out


def merge_labels(
    user: Mapping[str, str], properties: Iterable[str], derived: Mapping[str, str]
) -> dict[str, str]:
    """User labels, then properties as ``"true"``, then derived labels (which win).

    >>> merge_labels({"gpu_type": "fake", "team": "a"}, ["ib"], {"gpu_type": "nvidia-h100"})
    {'gpu_type': 'nvidia-h100', 'team': 'a', 'ib': 'true'}
    """
    out = dict(user)
    for prop in properties:
        out[prop] = "true"
    out.update(derived)
    return out
