"""The JSON Schema of the inventory format, as committed in ``docs/schemas/inventory.schema.json``.

Why generated: the pydantic model in :mod:`placer.topology.inventory` is the single definition; the committed
schema file is regenerated from it (``python -m placer.topology.schema > docs/schemas/inventory.schema.json``)
and a test fails when the two drift apart.

>>> import json
>>> json.loads(inventory_schema_text())["title"]
'Inventory'
"""

from __future__ import annotations

import json

from placer.topology.inventory import Inventory

__all__ = ["inventory_schema_text"]


def inventory_schema_text() -> str:
    """The schema as stable text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(Inventory.model_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover - the regeneration command
    print(inventory_schema_text(), end="")
