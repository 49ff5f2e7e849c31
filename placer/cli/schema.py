"""``placer schema NAME``: print the JSON Schema of one of placer's input/output documents (job,
inventory, queue-config, decision, reservations, prices). Schemas use field aliases (``by_alias=True``), so
the decision's eviction shows ``for``, the name backends read, rather than the Python attribute ``for_``."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["OUTPUTS", "SCHEMAS", "add_parser", "run", "schema"]

#: Schema name -> "module:Class" of the pydantic model it comes from.
SCHEMAS: dict[str, str] = {
    "job": "placer.solver.jobs.model:Job",
    "inventory": "placer.topology.inventory:Inventory",
    "queue-config": "placer.solver.jobs.queues:QueueConfig",
    "limits": "placer.solver.jobs.options:ReadLimits",
    "decision": "placer.solver.decision:Decision",
    "reservations": "list:placer.solver.reservations:Reservation",
    "prices": "placer.solver.prices:PriceCatalog",
    "scenario": "placer.scenarios.spec:ScenarioSpec",
    "sweep": "placer.scenarios.sweep.spec:SweepSpec",
}


#: Documents placer writes rather than reads.
OUTPUTS = frozenset({"decision"})


def add_parser(sub: Any) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of a placer document")
    p.add_argument("name", choices=sorted(SCHEMAS))
    p.set_defaults(run=run)


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of document ``name`` (see :data:`SCHEMAS`)."""
    import importlib

    target = SCHEMAS[name]
    is_list = target.startswith("list:")
    module, cls = target.removeprefix("list:").split(":")
    model = getattr(importlib.import_module(module), cls)
    out: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    if is_list:  # a file of several documents (reservations): a JSON array of them
        from pydantic import TypeAdapter

        out.update(TypeAdapter(list[model]).json_schema(by_alias=True))  # type: ignore[valid-type]
    else:
        # Output documents are described as placer writes them (every field present); inputs as placer
        # reads them (fields with defaults optional).
        mode = "serialization" if name in OUTPUTS else "validation"
        out.update(model.model_json_schema(by_alias=True, mode=mode))
    return out


def run(args: argparse.Namespace) -> int:
    print(json.dumps(schema(args.name), indent=2, sort_keys=True))
    return 0
