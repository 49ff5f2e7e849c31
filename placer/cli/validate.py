"""``placer validate FILE... [--format auto|ojs|flux|sss|kubernetes] [--queue-config FILE] [--limits FILE]
[--topology-labels LABEL=LEVEL,...|@FILE] [--json]``.

Prints, per job, the normalized job or its errors. With ``--json``: one JSON object per job per line, with
``id``, ``ok``, ``errors`` (each ``code``, ``path``, ``message``), ``warnings``, ``source`` and ``job``.
Exit 0 when every job is valid, 1 when any is invalid (malformed content included, and a queue config or
limits file that is itself invalid), 2 for a usage error or a file that cannot be opened.

``--limits FILE`` sets the administrative bounds and lists of :class:`placer.solver.jobs.options.ReadLimits`
(upper bounds per job, selector deny-list, URI schemes and prefixes, model allow-list, SSS default
``awarenessPolicy``); ``placer place`` takes the same option. ``--topology-labels`` names the site's node
labels a Kueue job may ask for (``podset-required-topology``, slices), as ``placer place`` reads them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from placer.cli.printable import printable

__all__ = ["add_parser", "result_json", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="read and validate job files in any supported format")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--format", default="auto", choices=["auto", "ojs", "flux", "sss", "kubernetes"])
    p.add_argument(
        "--queue-config", metavar="FILE", help="OJS §10 queue configuration (ml_defaults/ml_limits)"
    )
    from placer.cli.inputs import add_limits_argument, add_topology_labels_argument

    add_limits_argument(p)
    add_topology_labels_argument(p)
    p.add_argument("--json", action="store_true", help="one JSON object per job per line")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from placer.cli.inputs import InputError, read_options_arg, topology_labels_arg
    from placer.solver.jobs.load import check_batch, read_file

    try:
        options = read_options_arg(args.queue_config, args.limits, topology_labels_arg(args.topology_labels))
    except InputError as e:
        print(f"placer validate: {e.message}", file=sys.stderr)
        return 2 if e.kind == "usage" else 1

    results = []
    for path in args.files:
        try:
            results.extend(read_file(path, fmt=args.format, options=options))
        except OSError as e:
            print(f"placer validate: cannot open {path}: {e.strerror or e}", file=sys.stderr)
            return 2
    results = check_batch(results)

    for r in results:
        if args.json:
            print(json.dumps(result_json(r), sort_keys=True))
        else:
            print(_human(r))
    return 0 if all(r.ok for r in results) else 1


def result_json(r: Any) -> dict[str, Any]:
    """One read result as ``--json`` prints it (and the HTTP service answers it): ``id``, ``ok``,
    ``source``, ``errors`` and ``warnings`` (each ``code``, ``path``, ``message``), the normalized ``job``.

    >>> from placer.solver.jobs import read_object
    >>> out = result_json(read_object({"id": "a", "ext_ml_gpu_count": -1})[0])
    >>> out["ok"], [(e["code"], e["path"]) for e in out["errors"]]
    (False, [('range', 'ext_ml_gpu_count')])
    """
    return {
        "id": r.id,
        "ok": r.ok,
        "source": r.source,
        "errors": [i.model_dump() for i in r.errors],
        "warnings": [i.model_dump() for i in r.warnings],
        # by_alias: the printed job must validate against ``placer schema job``, which uses the aliases
        # (a Flux resource's ``with``, not the Python attribute ``with_``).
        "job": None if r.job is None else r.job.model_dump(mode="json", by_alias=True, exclude={"envelope"}),
    }


def _human(r: Any) -> str:
    lines = []
    if r.ok and r.job is not None:
        j = r.job
        lines.append(f"OK    {r.id}  ({j.source_format}, from {r.source})")
        body = j.model_dump(
            mode="json", by_alias=True, exclude_defaults=True, exclude={"envelope", "id", "source_format"}
        )
        for line in json.dumps(body, indent=2, sort_keys=True).splitlines():
            lines.append("      " + line)
    else:
        lines.append(f"ERROR {r.id}  (from {r.source})")
        lines.extend(f"      {i.path}: {i.message} [{i.code}]" for i in r.errors)
    lines.extend(f"      warning: {i.path}: {i.message} [{i.code}]" for i in r.warnings)
    return "\n".join(
        printable(line) for line in lines
    )  # each line built whole: an id's own newline is escaped
