"""The endpoints. Each handler reads its body (bounded), then does all CPU work in the solver pool.

Why handlers take the raw request rather than a FastAPI body parameter: the body is parsed by the
project's strict JSON loader and validated by :func:`placer.service.bodies.parse_body` (400 naming each
field), inside the pool, so that parsing a 30 MB cluster never stalls the event loop. The OpenAPI
document still describes every body (``openapi_extra``, filled in by :mod:`placer.service.app`).

Statuses: 200/201/204 success; 400 the body is not JSON or not the request's shape; 404 unknown cluster
id or route; 409 a change conflicts with the stored state; 413 a size limit; 422 a document in the body
breaks a rule (cluster, running jobs, queue configuration, reservations, prices, job documents; for
``jobs:validate``, any invalid job); 503 the solver pool is full; 500 only for a bug.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from placer.service import answers
from placer.service.bodies import (
    EXAMPLES,
    ClusterPatch,
    ClusterPut,
    MatchRequest,
    NodesAdded,
    PlacementInputs,
    PlacementRequest,
    ValidateRequest,
    parse_body,
)
from placer.service.errors import PROBLEM_JSON, ApiError
from placer.service.inputs import (
    cluster_of,
    job_errors,
    placement_inputs,
    read_jobs,
    read_options,
    running_into,
)
from placer.service.limits import read_body
from placer.service.state import ChangeError, Stored, normalize_change
from placer.solver.decision import Decision

if TYPE_CHECKING:
    from placer.service.app import Service

__all__ = [
    "BODIES",
    "CLUSTER_ID",
    "cluster_placements",
    "delete_cluster",
    "get_cluster",
    "healthz",
    "list_clusters",
    "match",
    "metrics",
    "patch_cluster",
    "placements",
    "put_cluster",
    "router",
    "service",
    "validate",
]

router = APIRouter()

#: Cluster ids: short, URL-safe, no path tricks.
CLUSTER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Request body models; :func:`placer.service.app.create_app` puts their schemas in the OpenAPI document.
BODIES: tuple[type, ...] = (
    PlacementRequest,
    PlacementInputs,
    ValidateRequest,
    MatchRequest,
    ClusterPut,
    ClusterPatch,
)

_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": answers.ErrorResponse} for s in (400, 404, 409, 413, 422, 503)
}


def _body(model: type) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    content: dict[str, Any] = {"schema": schema}
    if model.__name__ in EXAMPLES:
        content["examples"] = {"example": {"summary": "a small batch", "value": EXAMPLES[model.__name__]}}
    return {"requestBody": {"required": True, "content": {"application/json": content}}}


def service(request: Request) -> Service:
    return request.app.state.service


def _check_id(cluster_id: str) -> None:
    if not CLUSTER_ID.fullmatch(cluster_id):
        raise ApiError(
            400,
            "invalid_id",
            "a cluster id is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
            [{"code": "format", "path": "id", "message": f"{cluster_id[:80]!r} is not a cluster id"}],
        )


#: Between a tenant and a cluster id in the store's key (a cluster id never holds it).
TENANT_SEP = "/"


def _key(request: Request, cluster_id: str) -> str:
    """The store key of ``cluster_id`` for the request's tenant (``service/guard.py``): tenants never see
    each other's clusters, whatever id they name."""
    tenant = getattr(request.state, "tenant", None)
    return cluster_id if tenant is None else f"{tenant}{TENANT_SEP}{cluster_id}"


def _public(key: str) -> str:
    return key.rsplit(TENANT_SEP, 1)[-1]


def _stored(svc: Service, cluster_id: str, request: Request) -> Stored:
    _check_id(cluster_id)
    stored = svc.store.get(_key(request, cluster_id))
    if stored is None:
        raise ApiError(404, "unknown_cluster", f"no cluster {cluster_id!r}; PUT it first")
    return stored


def _decision_response(svc: Service, decision: Decision, time_limit: float, **headers: str) -> JSONResponse:
    svc.metrics.observe_decision(decision)
    return JSONResponse(decision.to_json(), headers={"X-Placer-Time-Limit": f"{time_limit:g}", **headers})


# ---------------------------------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------------------------------


@router.get("/healthz", responses={200: {"model": answers.Health}})
async def healthz(request: Request) -> JSONResponse:
    """Liveness: answers while placements run (they run in the solver pool)."""
    svc = service(request)
    return JSONResponse(
        {
            "status": "ok",
            "clusters": len(svc.store),
            "busy": svc.pool.busy,
            "workers": svc.pool.workers,
            "cancelled": svc.pool.cancelled,
            "interrupted": svc.pool.interrupted,
        }
    )


@router.get("/readyz", responses={200: {"model": answers.Health}, 503: {"model": answers.ErrorResponse}})
async def readyz(request: Request) -> JSONResponse:
    """Readiness: 200 once the engine's imports are warm and the store answers; 503 ``not_ready`` before
    (a load balancer sends no placements to a server still starting)."""
    svc = service(request)
    if not getattr(request.app.state, "ready", False):
        raise ApiError(503, "not_ready", "the server is still starting", headers={"Retry-After": "1"})
    return JSONResponse(
        {"status": "ready", "clusters": len(svc.store), "busy": svc.pool.busy, "workers": svc.pool.workers}
    )


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
async def metrics(request: Request) -> Response:
    """Prometheus text exposition (``docs/service.md``, *Metrics*)."""
    from placer.service.metrics import CONTENT_TYPE

    svc = service(request)
    svc.metrics.clusters.set(len(svc.store))
    return Response(svc.metrics.render(), media_type=CONTENT_TYPE)


def _place(
    body: PlacementInputs, cluster: Any, svc: Service, stored: Stored | None = None
) -> tuple[Decision, float]:
    """``place()`` on the body's inputs; on a stored cluster with its version's prepared pieces when no
    other placement holds them (the same decision, sooner: ``placer/service/state.py``), and there a lone
    plain job in the express lane (``solver/express.py``: ``place()``'s decision, a fraction of the time)."""
    from placer.solver.engine import place

    ins = placement_inputs(body, cluster, svc.limits)

    def decide(prepared: Any = None) -> Decision:
        return place(
            ins.jobs,
            ins.cluster,
            ins.policy,
            now=ins.now,
            queues=ins.queues,
            reservations=ins.reservations,
            prices=ins.prices,
            prepared=prepared,
        )

    if stored is not None and ins.cluster is stored.cluster and stored.prepared_lock.acquire(blocking=False):
        try:
            quick = svc.express.decide(
                ins.jobs,
                stored.prepared,
                ins.policy,
                now=ins.now or datetime.now(UTC),
                queues=ins.queues,
                reservations=ins.reservations,
                prices=ins.prices,
            )
            decision = quick if quick is not None else decide(stored.prepared)
        finally:
            stored.prepared_lock.release()
    else:
        decision = decide()
    return decision, ins.policy.time_limit_s


@router.post(
    "/v1/placements", openapi_extra=_body(PlacementRequest), responses={200: {"model": Decision}, **_ERRORS}
)
async def placements(request: Request) -> JSONResponse:
    """Place a batch on the cluster in the body: the Decision JSON, as ``placer place --json``."""
    svc = service(request)
    raw = await read_body(request, svc.limits.max_body_bytes, svc.limits.body_timeout_s)

    def work() -> tuple[Decision, float]:
        body = parse_body(PlacementRequest, raw, svc.limits.max_body_bytes)
        return _place(body, cluster_of(body, svc.limits), svc)

    decision, limit = await svc.pool.run(work, client_gone=request.is_disconnected)
    return _decision_response(svc, decision, limit)


@router.post(
    "/v1/jobs:validate",
    openapi_extra=_body(ValidateRequest),
    responses={**_ERRORS, 200: {"model": answers.ValidateResponse}, 422: {"model": answers.ValidateFailure}},
)
async def validate(request: Request) -> JSONResponse:
    """The ``placer validate`` rules: 200 when every job is valid, 422 with each job's errors otherwise."""
    from placer.cli.validate import result_json

    svc = service(request)
    raw = await read_body(request, svc.limits.max_body_bytes, svc.limits.body_timeout_s)

    def work() -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        body = parse_body(ValidateRequest, raw, svc.limits.max_body_bytes)
        options = read_options(body.queue_config, svc.limits, body.topology_labels)
        results = read_jobs(body.jobs, options, svc.limits, fmt=body.format)
        return [result_json(r) for r in results], job_errors([r for r in results if not r.ok])

    results, problems = await svc.pool.run(work, client_gone=request.is_disconnected)
    bad = sum(1 for r in results if not r["ok"])
    if not bad:
        return JSONResponse({"valid": True, "jobs": results})
    err = ApiError(422, "invalid_jobs", f"{bad} of {len(results)} jobs break the specification", problems)
    return JSONResponse(
        {**err.body(request.url.path), "jobs": results}, status_code=422, media_type=PROBLEM_JSON
    )


@router.post(
    "/v1/match",
    openapi_extra=_body(MatchRequest),
    responses={200: {"model": answers.MatchResponse}, **_ERRORS},
)
async def match(request: Request) -> JSONResponse:
    """Resource-aware FETCH: the jobs this worker may run, best first (``placer.service.matching``)."""
    from placer.service.matching import match as match_jobs

    svc = service(request)
    raw = await read_body(request, svc.limits.max_body_bytes, svc.limits.body_timeout_s)

    def work() -> dict[str, Any]:
        body = parse_body(MatchRequest, raw, svc.limits.max_body_bytes)
        options = read_options(body.queue_config, svc.limits)
        jobs = read_jobs(body.jobs, options, svc.limits)
        return match_jobs(body.worker, jobs, queues=options.queues, now=body.now)

    return JSONResponse(await svc.pool.run(work, client_gone=request.is_disconnected))


# ---------------------------------------------------------------------------------------------------
# Stateful mode
# ---------------------------------------------------------------------------------------------------


def _rendered(stored: Stored) -> dict[str, Any]:
    """The answer to a write, rendered and proved to be JSON before the store commits the write: a write
    whose answer cannot be given is not made (no 500 after a commit)."""
    view = _view(stored)
    json.dumps(view, allow_nan=False)
    return view


def _view(stored: Stored, *, inventory: bool = False) -> dict[str, Any]:
    from placer.topology.views import summary

    c = stored.cluster
    out: dict[str, Any] = {
        "id": _public(stored.id),
        "version": stored.version,
        "updated_at": stored.updated_at.isoformat(),
        "summary": summary(c),
        "running": sorted(c.state.jobs),
        "unavailable": sorted(
            [n.name for n in c.nodes if not n.usable] + [p.name for p in c.tpu_pods() if not p.usable]
        ),
    }
    if inventory:
        out["inventory"] = c.to_inventory().model_dump(mode="json", exclude_defaults=True)
    return out


@router.get("/v1/clusters", responses={200: {"model": answers.ClusterList}})
async def list_clusters(request: Request) -> JSONResponse:
    """Ids of the stored clusters."""
    tenant = getattr(request.state, "tenant", None)
    ids = service(request).store.ids()
    mine = ids if tenant is None else [i for i in ids if i.startswith(f"{tenant}{TENANT_SEP}")]
    return JSONResponse({"clusters": sorted(_public(i) for i in mine)})


@router.put(
    "/v1/clusters/{cluster_id}",
    openapi_extra=_body(ClusterPut),
    responses={200: {"model": answers.ClusterView}, 201: {"model": answers.ClusterView}, **_ERRORS},
)
async def put_cluster(cluster_id: str, request: Request) -> JSONResponse:
    """Store a snapshot (201 new, 200 replaced), committed before the answer."""
    svc = service(request)
    _check_id(cluster_id)
    key = _key(request, cluster_id)
    raw = await read_body(request, svc.limits.max_body_bytes, svc.limits.body_timeout_s)

    def work() -> tuple[dict[str, Any], bool]:
        body = parse_body(ClusterPut, raw, svc.limits.max_body_bytes)
        cluster = running_into(cluster_of(body, svc.limits), body, svc.limits)
        if svc.store.get(key) is None and len(svc.store) >= svc.max_clusters:
            raise ApiError(
                507, "store_full", f"the server holds {svc.max_clusters} clusters; DELETE one first"
            )
        views: list[dict[str, Any]] = []
        _, created = svc.store.put(key, cluster, before_commit=lambda s: views.append(_rendered(s)))
        return views[0], created

    view, created = await svc.pool.run(work, client_gone=request.is_disconnected)
    headers = {"Location": f"/v1/clusters/{cluster_id}"}
    return JSONResponse(view, status_code=201 if created else 200, headers=headers)


@router.patch(
    "/v1/clusters/{cluster_id}",
    openapi_extra=_body(ClusterPatch),
    responses={200: {"model": answers.ClusterView}, **_ERRORS},
)
async def patch_cluster(cluster_id: str, request: Request) -> JSONResponse:
    """Apply changes in order, all or none (422 invalid change, 409 conflict), committed before the answer."""
    svc = service(request)
    _stored(svc, cluster_id, request)
    key = _key(request, cluster_id)
    raw = await read_body(request, svc.limits.max_body_bytes, svc.limits.body_timeout_s)

    def work() -> dict[str, Any]:
        body = parse_body(ClusterPatch, raw, svc.limits.max_body_bytes)
        svc.limits.check_count("changes", len(body.changes), svc.limits.max_running)
        joining = [c.inventory for c in body.changes if isinstance(c, NodesAdded)]
        if joining:  # a cluster grows no bigger by PATCHes than a PUT may send it (413)
            now = svc.store.get(key)
            size = 0 if now is None else len(now.cluster.nodes) + len(now.cluster.structure.pods)
            added = sum(sum(s.count for s in inv.nodes) + len(inv.tpu_pods) for inv in joining)
            svc.limits.check_count("cluster", size + added, svc.limits.max_nodes)
        try:
            changes = [normalize_change(c.model_dump(), f"changes[{i}]") for i, c in enumerate(body.changes)]
            views: list[dict[str, Any]] = []
            svc.store.patch(
                key,
                changes,
                if_version=body.if_version,
                before_commit=lambda s: views.append(_rendered(s)),
            )
        except ChangeError as e:
            status, code = (409, "conflict") if e.kind == "conflict" else (422, "invalid_change")
            raise ApiError(status, code, str(e)[:500], e.errors) from None
        except KeyError:
            raise ApiError(404, "unknown_cluster", f"no cluster {cluster_id!r}") from None
        return views[0]

    return JSONResponse(await svc.pool.run(work, client_gone=request.is_disconnected))


@router.get("/v1/clusters/{cluster_id}", responses={200: {"model": answers.ClusterView}, **_ERRORS})
async def get_cluster(cluster_id: str, request: Request, inventory: bool = False) -> JSONResponse:
    """The stored cluster's version and summary; with ``?inventory=true`` the snapshot itself."""
    svc = service(request)
    stored = _stored(svc, cluster_id, request)
    return JSONResponse(await asyncio.to_thread(_view, stored, inventory=inventory))


@router.delete("/v1/clusters/{cluster_id}", status_code=204, response_class=Response, responses=_ERRORS)
async def delete_cluster(cluster_id: str, request: Request) -> Response:
    """Forget a cluster (committed before the answer)."""
    svc = service(request)
    _stored(svc, cluster_id, request)
    if not await asyncio.to_thread(svc.store.delete, _key(request, cluster_id)):
        raise ApiError(404, "unknown_cluster", f"no cluster {cluster_id!r}")
    return Response(status_code=204)


@router.post(
    "/v1/clusters/{cluster_id}/placements",
    openapi_extra=_body(PlacementInputs),
    responses={200: {"model": Decision}, **_ERRORS},
)
async def cluster_placements(cluster_id: str, request: Request) -> JSONResponse:
    """Place a batch on a stored cluster (its current version; the answer names it in
    ``X-Placer-Cluster-Version``). Placing changes nothing: report started jobs with PATCH."""
    svc = service(request)
    stored = _stored(svc, cluster_id, request)
    raw = await read_body(request, svc.limits.max_body_bytes, svc.limits.body_timeout_s)

    def work() -> tuple[Decision, float]:
        body = parse_body(PlacementInputs, raw, svc.limits.max_body_bytes)
        return _place(body, stored.cluster, svc, stored)

    decision, limit = await svc.pool.run(work, client_gone=request.is_disconnected)
    return _decision_response(svc, decision, limit, **{"X-Placer-Cluster-Version": str(stored.version)})
