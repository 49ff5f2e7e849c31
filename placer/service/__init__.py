"""The batch placer as an HTTP service (``placer serve``; ``docs/service.md``).

One module per role: :mod:`~placer.service.app` (the ASGI app factory, error handlers, metrics
middleware), :mod:`~placer.service.routes` (the endpoints), :mod:`~placer.service.bodies` (request
models and strict body parsing), :mod:`~placer.service.answers` (response models),
:mod:`~placer.service.inputs` (bodies to engine inputs, through the CLI's readers),
:mod:`~placer.service.matching` (resource-aware FETCH), :mod:`~placer.service.state` (stateful mode and
its SQLite file), :mod:`~placer.service.limits`, :mod:`~placer.service.pool` (the solver threads),
:mod:`~placer.service.metrics` (Prometheus).

The web dependencies (FastAPI, uvicorn, prometheus-client) are the optional extra ``placer-engine[service]``;
nothing outside this package imports them, so ``placer place`` works without them.
"""

__all__ = []
