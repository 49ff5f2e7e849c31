"""The batch placer as an HTTP service (``placer serve``; ``docs/service.md``).

One module per role: :mod:`~solver.service.app` (the ASGI app factory, error handlers, metrics
middleware), :mod:`~solver.service.routes` (the endpoints), :mod:`~solver.service.bodies` (request
models and strict body parsing), :mod:`~solver.service.answers` (response models),
:mod:`~solver.service.inputs` (bodies to engine inputs, through the CLI's readers),
:mod:`~solver.service.matching` (resource-aware FETCH), :mod:`~solver.service.state` (stateful mode and
its SQLite file), :mod:`~solver.service.limits`, :mod:`~solver.service.pool` (the solver threads),
:mod:`~solver.service.metrics` (Prometheus).

The web dependencies (FastAPI, uvicorn, prometheus-client) are the optional extra ``placer[service]``;
nothing outside this package imports them, so ``placer place`` works without them.
"""
