"""The ASGI app: :func:`create_app` wires limits, the solver pool, the cluster store and the metrics.

Why a factory and no module-level app: everything an app holds (its pool, its store, its metrics
registry) belongs to that app, so tests and an embedding program can run several side by side and
nothing is shared between them. ``placer serve`` builds one and hands it to uvicorn.

Every error leaves as the one JSON shape of :mod:`placer.service.errors`: client mistakes with their
4xx status, unknown routes 404, wrong methods 405, and a bug 500 with ``{"code": "internal"}`` and no
traceback (the traceback goes to the server log).

>>> app = create_app(ServiceConfig(workers=1))
>>> sorted(p for p in app.openapi()["paths"] if p.startswith("/v1/clusters"))
['/v1/clusters', '/v1/clusters/{cluster_id}', '/v1/clusters/{cluster_id}/placements']
>>> app.state.service.close()
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from placer.service.errors import PROBLEM_JSON, ApiError
from placer.service.guard import GuardMiddleware
from placer.service.limits import Limits
from placer.service.metrics import Metrics
from placer.service.pool import SolverPool
from placer.service.routes import BODIES, router
from placer.service.state import ClusterStore
from placer.solver.express import Express

__all__ = [
    "ASGIApp",
    "ContainErrorsMiddleware",
    "Message",
    "MetricsMiddleware",
    "Scope",
    "Service",
    "ServiceConfig",
    "create_app",
]

log = logging.getLogger("placer.service")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


@dataclass(frozen=True)
class ServiceConfig:
    """How ``placer serve`` runs the service."""

    limits: Limits = field(default_factory=Limits)
    #: Placements computed at once (solver threads).
    workers: int = 2
    #: SQLite file of stateful mode; None keeps clusters in memory only.
    state_path: str | None = None
    #: Most clusters stateful mode holds (507 past it).
    max_clusters: int = 1000
    #: Host names requests may name besides the loopback ones (``--allow-host``; ``placer serve`` adds the
    #: address it listens on): DNS-rebinding defence (``service/guard.py``).
    allowed_hosts: tuple[str, ...] = ()
    #: Bearer token -> tenant (``--tokens``); None: no authentication, one tenant (loopback use).
    tokens: dict[str, str] | None = None
    #: Request body bytes held at once (``--max-bytes-in-flight``); beyond it 503 ``busy``.
    max_bytes_in_flight: int = 256 * 1024 * 1024


@dataclass
class Service:
    """What the routes share: one per app."""

    limits: Limits
    pool: SolverPool
    store: ClusterStore
    metrics: Metrics
    max_clusters: int
    #: The express lane for one plain job on a stored cluster (``solver/express.py``; shared by the
    #: clusters: a kind of job is judged per biggest node, its node facts kept in each cluster's pieces).
    express: Express = field(default_factory=Express)

    def close(self) -> None:
        self.pool.shutdown()
        self.store.close()


#: Paths FastAPI serves itself, labelled by their path in the metrics (not "unmatched").
FRAMEWORK_PATHS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


class MetricsMiddleware:
    """Counts every request by route template, method and status, and times it (pure ASGI, so it sees
    the status of every answer, errors included)."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.in_flight.dec()
            route = getattr(scope.get("route"), "path", None)
            if route is None:  # FastAPI's own pages (/openapi.json, /docs, /redoc) carry no route object
                path = scope["path"]
                route = (
                    path
                    if path in FRAMEWORK_PATHS
                    else DOCS_ASSETS
                    if path.startswith(DOCS_ASSETS)
                    else "unmatched"
                )
            self.metrics.observe_request(route, scope["method"], status, time.perf_counter() - start)


class ContainErrorsMiddleware:
    """An unexpected exception answered as a 500 problem *inside* the app.

    Why not only Starlette's ``Exception`` handler: that one runs in the outermost middleware, which sends
    the 500 and then re-raises, and uvicorn closes the connection on an exception — so a client's
    keep-alive connection was reset after every 500. Here the exception stops before it reaches uvicorn:
    the 500 is sent and logged, the connection stays open for the client's next request. (An exception
    after the answer began cannot be answered again; it still propagates.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception:
            if started:
                raise
            log.exception("internal error on %s %s", scope.get("method"), scope.get("path"))
            await JSONResponse(_internal().body(scope.get("path")), status_code=500, media_type=PROBLEM_JSON)(
                scope, receive, send
            )


def _error_response(e: ApiError, request: Request | None = None) -> JSONResponse:
    instance = None if request is None else request.url.path
    return JSONResponse(e.body(instance), status_code=e.status, headers=e.headers, media_type=PROBLEM_JSON)


async def _api_error(request: Request, e: Exception) -> JSONResponse:
    assert isinstance(e, ApiError)
    return _error_response(e, request)


async def _http_error(request: Request, e: Exception) -> JSONResponse:
    assert isinstance(e, StarletteHTTPException)
    codes = {404: "not_found", 405: "method_not_allowed"}
    return _error_response(
        ApiError(e.status_code, codes.get(e.status_code, "http_error"), str(e.detail)), request
    )


async def _validation_error(request: Request, e: Exception) -> JSONResponse:
    assert isinstance(e, RequestValidationError)
    problems = [
        {
            "code": "type",
            "path": ".".join(str(p) for p in err.get("loc", ())),
            "message": str(err.get("msg", "")),
        }
        for err in e.errors()
    ]
    return _error_response(
        ApiError(400, "invalid_request", "the request's parameters are invalid", problems), request
    )


def _internal() -> ApiError:
    """What a client is told about a bug: that it happened, not how (the log has the traceback)."""
    return ApiError(500, "internal", "internal error; the server log has the details")


async def _internal_error(request: Request, e: Exception) -> JSONResponse:
    log.exception("internal error on %s %s", request.method, request.url.path, exc_info=e)
    return _error_response(_internal(), request)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated document, with the request bodies' schemas (the handlers read raw bodies)."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in BODIES:
        body = model.model_json_schema(ref_template="#/components/schemas/{model}")  # type: ignore[attr-defined]
        for name, sub in body.pop("$defs", {}).items():
            components.setdefault(name, sub)
        components[model.__name__] = body
    for ops in schema.get("paths", {}).values():  # error answers are application/problem+json (RFC 9457)
        for op in ops.values():
            for status, answer in (op.get("responses") or {}).items():
                content = answer.get("content") or {}
                if status[:1] in ("4", "5") and "application/json" in content:
                    content[PROBLEM_JSON] = content.pop("application/json")
    app.openapi_schema = schema
    return schema


#: Where Swagger UI's and ReDoc's scripts are served from (the package ``fastapi-offline`` ships them).
DOCS_ASSETS = "/docs-assets"


def _offline_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` with their scripts served by the app itself.

    Why: FastAPI's default pages load Swagger UI and ReDoc from a CDN, so on an air-gapped GPU cluster
    they are blank. The assets come from the ``fastapi-offline`` package (MIT; Swagger UI and ReDoc are
    Apache-2.0 and MIT); without it installed the pages answer 404 rather than a blank page."""
    try:
        import fastapi_offline
    except ModuleNotFoundError:
        return
    from pathlib import Path

    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    app.mount(
        DOCS_ASSETS,
        StaticFiles(directory=Path(fastapi_offline.__file__).parent / "static"),
        name="docs-assets",
    )

    def page(path: str, render: Callable[..., HTMLResponse], **assets: str) -> None:
        @app.get(path, include_in_schema=False)
        async def html(request: Request) -> HTMLResponse:
            root = request.scope.get("root_path", "")
            urls = {key: f"{root}{DOCS_ASSETS}/{name}" for key, name in assets.items()}
            return render(openapi_url=f"{root}/openapi.json", title="placer API", **urls)

    page(
        "/docs",
        get_swagger_ui_html,
        swagger_js_url="swagger-ui-bundle.js",
        swagger_css_url="swagger-ui.css",
        swagger_favicon_url="favicon.png",
    )
    page(
        "/redoc",
        functools.partial(get_redoc_html, with_google_fonts=False),
        redoc_js_url="redoc.standalone.js",
        redoc_favicon_url="favicon.png",
    )


def _warm_up() -> None:
    """Import the engine, CP-SAT and the cluster views before the first request: their imports (OR-Tools,
    pandas) take most of a second, which the first client would otherwise wait for."""
    for module in (
        "placer.solver.engine",
        "placer.solver.cpsat.model",
        "placer.service.matching",
        "placer.topology.views",
    ):
        importlib.import_module(module)


def create_app(config: ServiceConfig | None = None) -> FastAPI:
    """A new app with its own pool, store and metrics; :meth:`Service.close` (or the app's shutdown)
    releases them."""
    config = config or ServiceConfig()
    svc = Service(
        limits=config.limits,
        pool=SolverPool(config.workers, config.limits.max_queued),
        store=ClusterStore(config.state_path),
        metrics=Metrics(),
        max_clusters=config.max_clusters,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(_warm_up)
        app.state.ready = True  # /readyz answers 200 from here on
        yield
        svc.close()

    app = FastAPI(
        title="placer",
        version="0.1.0",
        description="Placement engine for ML/AI jobs on GPU and TPU clusters (docs/service.md).",
        lifespan=lifespan,
        docs_url=None,  # served below from packaged assets, not from a CDN
        redoc_url=None,
    )
    _offline_docs(app)
    app.state.service = svc
    app.include_router(router)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _internal_error)
    app.add_middleware(ContainErrorsMiddleware)  # innermost: the metrics see its 500s
    app.add_middleware(MetricsMiddleware, metrics=svc.metrics)
    app.add_middleware(
        GuardMiddleware,
        allowed_hosts=config.allowed_hosts,
        tokens=config.tokens,
        max_bytes_in_flight=config.max_bytes_in_flight,
    )
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app
