"""``placer cluster FILE [--format auto|inventory|ojs-workers|kubernetes|slurm|jgf] [--pods FILE] [--json]``.

Reads a cluster description in any supported format (placer inventory, OJS worker advertisements,
``kubectl get nodes -o json``, ``scontrol show node``, Flux JGF), builds the cluster graph and prints its
summary: nodes, GPUs by type (free/total), NVLink domains, TPU chips. With ``--json``: one JSON object
(``placer.topology.views.summary``: ``nodes``, ``gpus``, ``free_gpus``, ``nvlink_domains``, ``tpu_chips``,
``free_tpu_chips``, ...) plus ``format`` and ``source``.

Exit 0 on success, 1 when the file was read but cannot be turned into a cluster (one line on stderr:
``file: item: problem``, several problems separated by ``;``), 2 when the file cannot be opened.
``topology`` (networkx, pandas) is imported inside :func:`run` so ``placer --help`` stays fast.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="placer"); sub = p.add_subparsers()
>>> add_parser(sub)
>>> a = p.parse_args(["cluster", "nodes.json", "--format", "kubernetes", "--json"])
>>> (a.file, a.format, a.pods, a.json)
('nodes.json', 'kubernetes', None, True)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["FORMAT_CHOICES", "MAX_PRINTED", "add_parser", "run"]

#: Formats ``--format`` accepts (``placer.topology.load.FORMATS`` plus ``auto``; repeated here to keep the
#: topology import out of ``placer --help``).
FORMAT_CHOICES = ("auto", "inventory", "ojs-workers", "kubernetes", "slurm", "jgf")
#: Most problems printed before "... and N more".
MAX_PRINTED = 20


def add_parser(sub: Any) -> None:
    """Register ``placer cluster`` on an ``argparse`` subparsers object."""
    p = sub.add_parser(
        "cluster",
        help="summarize a cluster description (inventory, Kubernetes, Slurm, Flux JGF, OJS workers)",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="input format (default: detect)")
    p.add_argument(
        "--pods", metavar="FILE", help="kubectl get pods -A -o json: what already runs (Kubernetes)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Load, build and summarize; the exit code says what went wrong (see the module docstring)."""
    from placer.topology.errors import TopologyError
    from placer.topology.inputs import source_name
    from placer.topology.load import detect_cluster_format, load_cluster, read_text
    from placer.topology.views import summary, summary_text

    try:
        fmt = args.format
        if fmt == "auto":
            fmt = detect_cluster_format(read_text(args.file), source=source_name(args.file))
        cluster = load_cluster(args.file, fmt, pods=args.pods)
    except OSError as e:
        print(f"placer cluster: cannot open {e.filename or args.file}: {e.strerror or e}", file=sys.stderr)
        return 2
    except TopologyError as e:
        shown = "; ".join(str(p) for p in e.problems[:MAX_PRINTED])
        more = len(e.problems) - MAX_PRINTED
        print(
            f"placer cluster: {shown}" + (f"; ... and {more} more problems" if more > 0 else ""),
            file=sys.stderr,
        )
        return 1
    if args.json:
        out = {"source": source_name(args.file), "format": fmt, **summary(cluster)}
        print(json.dumps(out, sort_keys=True))
    else:
        print(summary_text(cluster))
    return 0
