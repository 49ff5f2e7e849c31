"""``placer schema {job,inventory,queue-config,decision}``: print a JSON Schema of placer's input/output
documents. Schemas use field aliases (``by_alias=True``), so the decision's eviction shows ``for``, the
name backends read, rather than the Python attribute ``for_``."""

from __future__ import annotations

import argparse
import json
from typing import Any

#: Schema name -> "module:Class" of the pydantic model it comes from.
SCHEMAS: dict[str, str] = {
    "job": "solver.jobs.model:Job",
    "inventory": "topology.inventory:Inventory",
    "queue-config": "solver.jobs.queues:QueueConfig",
    "decision": "solver.decision:Decision",
}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of a placer document")
    p.add_argument("name", choices=sorted(SCHEMAS))
    p.set_defaults(run=run)


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of document ``name`` (see :data:`SCHEMAS`)."""
    import importlib

    module, cls = SCHEMAS[name].split(":")
    model = getattr(importlib.import_module(module), cls)
    out: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    out.update(model.model_json_schema(by_alias=True))
    return out


def run(args: argparse.Namespace) -> int:
    print(json.dumps(schema(args.name), indent=2, sort_keys=True))
    return 0
