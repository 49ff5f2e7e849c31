"""The real server over HTTP: every endpoint, every error status, the CLI's decisions, concurrency, metrics.

The server is ``placer serve`` in a subprocess (``conftest.Server``) with small limits (2,000,000-byte
bodies, 60 jobs, 2,000 nodes, a 2 s time-limit cap) so that each limit is reached cheaply. Every decision
the server returns is re-checked by the independent checker (``conftest.checked``), and every answer is
validated against the server's own OpenAPI document. The restart suite is ``test_server_restart.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from placer.cli import main
from tests.placer.service.conftest import (
    EXAMPLES,
    H100,
    JOB_FILES,
    NOW,
    REPO,
    Server,
    checked,
    example_body,
    without_timings,
)
from tests.topology.test_importers_ojs import SPEC_V03_AD

#: The content type every request body must name (``service/guard.py``).
JSON_TYPE = {"content-type": "application/json"}


def conforms(doc: dict[str, Any], answer: httpx.Response, path: str, method: str = "post") -> None:
    """Fail unless the answer's body matches the schema the OpenAPI document gives for its status."""
    media = answer.headers["content-type"].split(";")[0]  # application/json, or problem+json for errors
    content = doc["paths"][path][method]["responses"][str(answer.status_code)]["content"][media]
    jsonschema.validate(answer.json(), {**content["schema"], "components": doc["components"]})


@pytest.fixture(scope="module")
def openapi(server: Server) -> dict[str, Any]:
    with server.client() as c:
        return c.get("/openapi.json").json()  # type: ignore[no-any-return]


def cli_decision(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    rc = main(
        ["place", "--cluster", str(H100), "--jobs", *map(str, JOB_FILES), "--now", NOW, *args, "--json"]
    )
    assert rc == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------------
# Health, documents
# ---------------------------------------------------------------------------------------------------


def test_health_openapi_and_docs(http: httpx.Client, openapi: dict[str, Any]) -> None:
    r = http.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["workers"] == 2
    conforms(openapi, r, "/healthz", "get")
    assert set(openapi["paths"]) == {
        "/healthz",
        "/readyz",
        "/metrics",
        "/v1/placements",
        "/v1/jobs:validate",
        "/v1/match",
        "/v1/clusters",
        "/v1/clusters/{cluster_id}",
        "/v1/clusters/{cluster_id}/placements",
    }
    body = openapi["paths"]["/v1/placements"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/PlacementRequest"}
    request = openapi["components"]["schemas"]["PlacementRequest"]
    assert set(request["required"]) == {"cluster", "jobs"}
    assert {"running", "policy", "time_limit_s", "now", "queue_config", "reservations", "prices"} <= set(
        request["properties"]
    )
    docs = http.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


# ---------------------------------------------------------------------------------------------------
# Placements: the CLI's decision
# ---------------------------------------------------------------------------------------------------


def test_example_batch_gets_exactly_the_cli_decision(
    http: httpx.Client, openapi: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    body = example_body(policy={"engine": "greedy"}, time_limit_s=2)
    r = http.post("/v1/placements", json=body)
    assert r.status_code == 200, r.text
    conforms(openapi, r, "/v1/placements")
    expected = cli_decision(capsys, "--engine", "greedy", "--time-limit", "2")
    assert without_timings(r.json()) == without_timings(expected)
    decision = checked(r.json(), body)
    # The example's facts (README): 8 of 10 jobs start now; the TPU job has no TPU to run on, so it is
    # rejected (OJS ML §3.3).
    assert len(decision.placements) == 8 and {p.job for p in decision.pending} == {"finetune-train"}
    assert [r.job for r in decision.rejected] == ["t5-xxl-tpu"]


def test_every_optional_input_gives_the_cli_decision(
    http: httpx.Client, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    running = [
        {
            "id": "hold-1",
            "queue": "gpu-training",
            "ext_ml_gpu_type": "nvidia-h100",
            "ext_ml_gpu_count": 4,
            "ext_ml_priority_class": "spot",
            "node": "dgx-r4-3",
            "gpus": [0, 1, 2, 3],
            "started_at": "2025-12-31T23:00:00Z",
        }
    ]
    queues = [{"queue": "gpu-training", "config": {"ml_limits": {"max_total_gpus": 20}}}]
    reservations = [{"id": "nightly", "nodes": ["dgx-r4-4"]}]
    prices = {"gpu": {"nvidia-h100": {"spot": 2.5}}, "budgets": {"tenants": {"acme": 120.0}}}
    files = {}
    for name, value in (
        ("running", running),
        ("queues", queues),
        ("reservations", reservations),
        ("prices", prices),
    ):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(value))
    expected = cli_decision(
        capsys,
        "--engine",
        "greedy",
        "--no-plan",
        "--seed",
        "7",
        "--running",
        str(files["running"]),
        "--queue-config",
        str(files["queues"]),
        "--reservations",
        str(files["reservations"]),
        "--prices",
        str(files["prices"]),
    )
    body = example_body(
        policy={"engine": "greedy", "plan": False, "seed": 7},
        running=running,
        queue_config=queues,
        reservations=reservations,
        prices=prices,
    )
    r = http.post("/v1/placements", json=body)
    assert r.status_code == 200, r.text
    assert without_timings(r.json()) == without_timings(expected)
    decision = checked(r.json(), body)
    # The inputs mattered: the queue budget keeps a gpu-training job waiting, nobody uses the reserved node.
    assert any(reason.code == "QUEUE_BUDGET" for p in decision.pending for reason in p.reasons)
    assert all(rep.node != "dgx-r4-4" for p in decision.placements for rep in p.replicas)


SLURM = REPO / "tests" / "fixtures" / "slurm"


def _slurm_cli_and_http(
    http: httpx.Client,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, Path],
    tables: dict[str, Path],
    now: str,
) -> tuple[dict[str, Any], dict[str, Any], httpx.Response]:
    """``placer place`` (greedy) on Slurm's ``cluster`` and ``squeue`` files (running and pending jobs)
    with ``tables`` (body field -> file: the flag is the field with ``-``; ``reservations`` as is), and the
    same as a ``POST /v1/placements`` body; asserts both decisions are equal. Returns the CLI's decision,
    the body (its ``running`` the parsed squeue) and the response."""
    args = ["--cluster", files["cluster"], "--running", files["squeue"], "--jobs", files["squeue"]]
    for field, path in tables.items():
        args += ["--" + field.replace("_", "-"), path]
    rc = main(["place", *map(str, args), "--now", now, "--engine", "greedy", "--json"])
    assert rc == 0
    expected = json.loads(capsys.readouterr().out)
    squeue = json.loads(files["squeue"].read_text())
    body = {
        "cluster": json.loads(files["cluster"].read_text()),
        "running": squeue,
        "jobs": [squeue],
        **{field: path.read_text() for field, path in tables.items()},
        "now": now,
        "policy": {"engine": "greedy"},
    }
    r = http.post("/v1/placements", json=body)
    assert r.status_code == 200, r.text
    assert without_timings(r.json()) == without_timings(expected)
    return expected, body, r


def test_slurms_own_output_gives_the_cli_decision(
    http: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a live Slurm 22.05 printed (tests/topology/live_slurm.py, start_options): the cluster, its
    # running and held jobs in one squeue --json, its reservation and partitions as Slurm's text.
    files = {
        "cluster": SLURM / "sinfo-22.05-options.json",
        "squeue": SLURM / "squeue-22.05-options.json",
        "reservations": SLURM / "show-reservation-22.05.txt",
        "partitions": SLURM / "show-partition-22.05.txt",
    }
    now = "2026-11-27T17:40:00Z"  # the reservation is held (from 17:36:24 for two hours)
    tables = {"reservations": files["reservations"], "slurm_partitions": files["partitions"]}
    expected, body, r = _slurm_cli_and_http(http, capsys, files, tables, now)
    squeue = body["running"]
    decision = checked(r.json(), body)
    # The tables mattered: the jobs rank by partition gpu's tier (10), the --reservation job runs in maint.
    where = {p.job: p.replicas[0].node for p in decision.placements}
    names = {str(j["job_id"]): j["name"] for j in squeue["jobs"]}
    assert {names[j]: n for j, n in where.items()} == {"excl": "gpu02", "resv": "gpu03"}
    # A combination the CLI refuses is refused, naming the field: the QOS table twice (--slurm-qos holds
    # jobs to its limits already).
    table = "Name|Preempt|PreemptMode\nnormal||cluster\n"
    both = {**body, "slurm_qos": table, "slurm_qos_limits": table}
    refused = http.post("/v1/placements", json=both)
    assert refused.status_code == 422 and refused.json()["error"]["errors"][0]["path"] == "slurm_qos_limits"
    # Stateful: the cluster stored with Slurm's running jobs (under the partitions), then the pending jobs
    # placed on it, give the same decision.
    stored = {k: body[k] for k in ("cluster", "running", "slurm_partitions")}
    assert http.put("/v1/clusters/slurm-live", json=stored).status_code == 201
    again = {k: body[k] for k in ("jobs", "reservations", "slurm_partitions", "now", "policy")}
    r = http.post("/v1/clusters/slurm-live/placements", json=again)
    assert r.status_code == 200, r.text
    assert without_timings(r.json()) == without_timings(expected)
    assert http.delete("/v1/clusters/slurm-live").status_code == 204


def test_slurms_licences_give_the_cli_decision(
    http: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    # A live Slurm 22.05 with Licenses=matlab:4,ansys:2 (tests/topology/live_slurm.py, start_licenses): job
    # a holds 3 matlab seats, p (matlab:2,ansys) waits for them, q (ansys:2) may start.
    files = {
        "cluster": SLURM / "sinfo-22.05-licenses.json",
        "squeue": SLURM / "squeue-22.05-licenses.json",
        "licenses": SLURM / "show-licenses-22.05.txt",
    }
    now = "2026-11-29T03:00:00Z"  # after the capture: job a runs, without a time limit
    expected, body, r = _slurm_cli_and_http(http, capsys, files, {"slurm_licenses": files["licenses"]}, now)
    squeue = body["running"]
    names = {str(j["job_id"]): j["name"] for j in squeue["jobs"]}
    assert [names[p["job"]] for p in r.json()["placements"]] == ["q"]
    assert [(names[p["job"]], p["reasons"][0]["code"]) for p in r.json()["pending"]] == [("p", "LICENSES")]
    # A table that cannot be read is a 422 naming the field.
    bad = http.post("/v1/placements", json={**body, "slurm_licenses": "LicenseName=matlab Used=1\n"})
    assert bad.status_code == 422 and bad.json()["error"]["errors"][0]["path"].startswith("slurm_licenses")
    # Stored with its licences, the cluster gives the same decision.
    stored = {k: body[k] for k in ("cluster", "running", "slurm_licenses")}
    assert http.put("/v1/clusters/slurm-licenses", json=stored).status_code == 201
    r = http.post(
        "/v1/clusters/slurm-licenses/placements", json={k: body[k] for k in ("jobs", "now", "policy")}
    )
    assert r.status_code == 200, r.text
    assert without_timings(r.json()) == without_timings(expected)
    # The licence server grew (matlab 5, ansys 3): a PATCH sets the seats, and both pending jobs start.
    grown = {"op": "licenses", "licenses": {"matlab": 5, "ansys": 3}}
    patched = http.patch("/v1/clusters/slurm-licenses", json={"changes": [grown]})
    assert patched.status_code == 200, patched.text
    r = http.post(
        "/v1/clusters/slurm-licenses/placements", json={k: body[k] for k in ("jobs", "now", "policy")}
    )
    assert sorted(names[p["job"]] for p in r.json()["placements"]) == ["p", "q"]
    # Seats are the cluster's: nodes that join with some are refused, naming them, not dropped.
    joining = {"nodes": [{"name": "extra", "cpu_cores": 8, "memory_gb": 32}], "licenses": {"matlab": 1}}
    refused = http.patch(
        "/v1/clusters/slurm-licenses", json={"changes": [{"op": "nodes_added", "inventory": joining}]}
    )
    assert refused.status_code == 422
    assert refused.json()["error"]["errors"][0]["path"] == "changes[0].inventory.licenses"
    assert http.delete("/v1/clusters/slurm-licenses").status_code == 204


def test_default_engine_answers_within_the_capped_time_limit(http: httpx.Client) -> None:
    body = example_body(time_limit_s=100)
    r = http.post("/v1/placements", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["X-Placer-Time-Limit"] == "2"  # the server's cap, not the 100 s asked for
    assert r.json()["stats"]["wall_s"] <= 2 + 0.5  # docs/solver.md: the limit plus the documented overhead
    checked(r.json(), body)


# ---------------------------------------------------------------------------------------------------
# Validation and matching
# ---------------------------------------------------------------------------------------------------


def test_validate_answers_200_for_valid_jobs_and_422_with_each_jobs_errors(
    http: httpx.Client, openapi: dict[str, Any]
) -> None:
    ok = http.post("/v1/jobs:validate", json={"jobs": example_body()["jobs"]})
    assert ok.status_code == 200 and ok.json()["valid"] is True and len(ok.json()["jobs"]) == 10
    conforms(openapi, ok, "/v1/jobs:validate")
    # jobs use the field aliases of ``placer schema job``: a Flux resource's ``with``, never ``with_``
    [mpi] = [j["job"] for j in ok.json()["jobs"] if j["id"] == "mpi-train"]
    assert '"with"' in json.dumps(mpi) and '"with_"' not in json.dumps(mpi)
    # OJS ML resources §10.2: a job over its queue's ml_limits MUST be rejected with 422.
    queues = {"queue": "gpu-inference", "config": {"ml_limits": {"max_gpu_count": 4}}}
    jobs = [
        {"id": "fine", "queue": "gpu-inference", "ext_ml_gpu_count": 2},
        [
            {"id": "greedy", "queue": "gpu-inference", "ext_ml_gpu_count": 8},
            {"id": "negative", "ext_ml_gpu_count": -1},
        ],
    ]
    bad = http.post("/v1/jobs:validate", json={"jobs": jobs, "queue_config": queues})
    assert bad.status_code == 422
    conforms(openapi, bad, "/v1/jobs:validate")
    err = bad.json()["error"]
    assert err["code"] == "invalid_jobs" and err["message"].startswith("2 of 3 jobs")
    by_job = {e["job"]: (e["code"], e["path"]) for e in err["errors"]}
    # Reader errors and guard errors (limits) alike locate the envelope in its document.
    assert by_job == {
        "greedy": ("limit", "jobs[1][0].ext_ml_gpu_count"),
        "negative": ("range", "jobs[1][1].ext_ml_gpu_count"),
    }
    assert [(j["id"], j["ok"]) for j in bad.json()["jobs"]] == [
        ("fine", True),
        ("greedy", False),
        ("negative", False),
    ]
    # A queue configuration that is itself wrong names its field.
    conf = http.post(
        "/v1/jobs:validate",
        json={"jobs": [], "queue_config": {"queue": "q", "config": {"ml_limits": {"max_gpu_count": "4"}}}},
    )
    assert conf.status_code == 422 and conf.json()["error"]["code"] == "invalid_queue_config"
    assert conf.json()["error"]["errors"][0]["path"] == "queue_config.config.ml_limits.max_gpu_count"


#: The v0.3.0 §11 worker advertisement, verbatim, plus the FETCH request's queues and count (v0.1.0 §6.1).
SPEC_WORKER = {**SPEC_V03_AD, "queues": ["ml-training", "default"], "count": 2}


def test_match_returns_the_jobs_the_worker_may_run_best_first(
    http: httpx.Client, openapi: dict[str, Any]
) -> None:
    def job(jid: str, **attrs: Any) -> dict[str, Any]:
        return {"id": jid, "type": "ml.train", "queue": "ml-training", **attrs}

    jobs = [
        job("plain", ext_ml_gpu_count=4),
        job("urgent", ext_ml_gpu_count=4, ext_ml_priority_class="reserved"),
        job("local-model", ext_ml_gpu_count=4, ext_ml_model_id="llama-3.1-70b"),  # §11.3 model locality
        job("h100-only", ext_ml_gpu_type="nvidia-h100", ext_ml_gpu_count=1),  # §11.1 GPU type
        job("too-many", ext_ml_gpu_count=16),  # §11.1 GPU count
        job("hopper-cc", ext_ml_gpu_count=1, ext_ml_gpu_compute_capability="9.0"),  # §11.1 compute capability
        job("west", ext_ml_gpu_count=1, ext_ml_node_selector={"region": "us-west-2"}),  # §11.1 node selector
        job(
            "tpu", ext_ml_accelerator="tpu", ext_ml_tpu_type="v5e", ext_ml_tpu_topology="2x2"
        ),  # §11.1 TPU type
        {"id": "elsewhere", "queue": "gpu-inference", "ext_ml_gpu_count": 1},  # the worker does not fetch it
        job("broken", ext_ml_gpu_count=-1),
    ]
    r = http.post("/v1/match", json={"worker": SPEC_WORKER, "jobs": jobs, "now": NOW})
    assert r.status_code == 200, r.text
    conforms(openapi, r, "/v1/match")
    out = r.json()
    # Model locality first (a preference, §11.3), then priority class (§6.2.4), then id.
    assert [m["job"] for m in out["matches"]] == ["local-model", "urgent", "plain"]
    assert out["matches"][0]["preference"] > 0 == out["matches"][1]["preference"]
    # Two 4-GPU jobs fill the 8-GPU worker: FETCH count 2 dispatches the best two.
    assert [d["job"] for d in out["dispatch"]] == ["local-model", "urgent"]
    reasons = {u["job"]: u["reasons"][0] for u in out["unmatched"]}
    assert set(reasons) == {"h100-only", "too-many", "hopper-cc", "west", "tpu", "elsewhere"}
    assert reasons["h100-only"]["details"]["eliminated"] == {"gpu_type": 1}
    assert reasons["hopper-cc"]["details"]["eliminated"] == {"compute_capability": 1}
    assert reasons["west"]["details"]["eliminated"] == {"rules": 1}
    assert reasons["elsewhere"]["code"] == "OTHER_QUEUE"
    assert [x["job"] for x in out["rejected"]] == ["broken"]
    # Where each match would run on the worker passes the independent checker, alone and as dispatched.
    from placer.service.matching import worker_cluster
    from placer.solver.checks import check
    from placer.solver.decision import Decision, JobPlacement
    from placer.solver.jobs import read_object

    worker, read = worker_cluster(SPEC_WORKER), {r.id: r.job for r in read_object(jobs)}
    placed = {m["job"]: JobPlacement(job=m["job"], replicas=m["replicas"]) for m in out["matches"]}
    for name, placement in placed.items():
        assert check(Decision(placements=[placement]), [read[name]], worker) == []
    together = Decision(
        placements=[JobPlacement(job=d["job"], replicas=d["replicas"]) for d in out["dispatch"]]
    )
    assert check(together, [read[d["job"]] for d in out["dispatch"]], worker) == []


def test_match_reads_the_v01_label_form_and_refuses_a_worker_it_cannot_read(http: httpx.Client) -> None:
    worker = {"worker_id": "w3", "labels": ["gpu:nvidia-t4", "gpu_count:2", "spot:true"]}
    jobs = [
        {"id": "t4", "meta": {"resources": {"gpu": {"count": 2, "type": "nvidia-t4"}}}},
        {"id": "four", "ext_ml_gpu_count": 4},
    ]
    r = http.post("/v1/match", json={"worker": worker, "jobs": jobs})
    assert (
        r.status_code == 200
        and [m["job"] for m in r.json()["matches"]] == ["t4"]
        and r.json()["dispatch"] is None
    )
    bad = http.post("/v1/match", json={"worker": {"worker_id": "w", "labels": ["gpu_count:x"]}, "jobs": []})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_worker"
    bad = http.post("/v1/match", json={"worker": {"worker_id": "w", "count": 0}, "jobs": []})
    assert bad.status_code == 422 and bad.json()["error"]["errors"][0]["path"] == "worker.count"


# ---------------------------------------------------------------------------------------------------
# Client mistakes: every status, structured, never a traceback
# ---------------------------------------------------------------------------------------------------

SMALL = {"nodes": [{"name": "n1", "cpu_cores": 8, "gpus": {"type": "nvidia-l4", "count": 2}}]}

#: (method, path, body (dict: JSON; bytes: raw), status, error code, path of the first problem or None)
MISTAKES: list[tuple[str, str, Any, int, str, str | None]] = [
    ("POST", "/v1/placements", b'{"cluster": ', 400, "malformed", None),
    ("POST", "/v1/placements", b'{"cluster": {}, "cluster": {}, "jobs": []}', 400, "malformed", None),
    ("POST", "/v1/placements", b'{"cluster": {}, "jobs": [], "time_limit_s": NaN}', 400, "malformed", None),
    ("POST", "/v1/placements", b"\xff\xfe", 400, "malformed", None),
    ("POST", "/v1/placements", b"", 400, "malformed", None),
    ("POST", "/v1/placements", [SMALL], 400, "invalid_body", None),
    ("POST", "/v1/placements", {"jobs": []}, 400, "invalid_body", "cluster"),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "time_limit": 2},
        400,
        "invalid_body",
        "time_limit",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "time_limit_s": "2"},
        400,
        "invalid_body",
        "time_limit_s",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "time_limit_s": 0},
        400,
        "invalid_body",
        "time_limit_s",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "now": "2026-01-01"},
        400,
        "invalid_body",
        "now",
    ),
    ("POST", "/v1/placements", {"cluster": SMALL, "jobs": [7]}, 400, "invalid_body", "jobs[0]"),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "policy": {"workers": 64}},
        400,
        "invalid_body",
        "policy.workers",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": {"nodes": [{"name": "a", "cpu_cores": -1}]}, "jobs": []},
        422,
        "invalid_cluster",
        "cluster.nodes[0] (a)",
    ),
    ("POST", "/v1/placements", {"cluster": "nodes: [", "jobs": []}, 422, "invalid_cluster", "cluster"),
    ("POST", "/v1/placements", {"cluster": {"hello": 1}, "jobs": []}, 422, "invalid_cluster", "cluster"),
    ("POST", "/v1/placements", {"cluster": SMALL, "jobs": ["<not xml"]}, 422, "invalid_jobs", "jobs[0]"),
    (
        "POST",
        "/v1/placements",
        {
            "cluster": SMALL,
            "jobs": [],
            "running": [{"id": "r", "ext_ml_gpu_count": 1, "node": "n1", "gpus": [5]}],
        },
        422,
        "invalid_running",
        "running[0] (r).replicas[0]",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "running": [{"id": "r", "node": "n1", "gpus": ["0"]}]},
        422,
        "invalid_running",
        "running[0].gpus[0]",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "reservations": [{"id": "r"}]},
        422,
        "invalid_reservations",
        "reservations[0]",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "prices": {"gpu": {"nvidia-l4": {"spot": -1}}}},
        422,
        "invalid_prices",
        "prices.gpu.nvidia-l4.spot",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": {"nodes": [{"name": "n", "count": 1000000}]}, "jobs": []},
        413,
        "too_large",
        "cluster",
    ),
    (  # a Flux R idset: 30,000 nodes from 150 bytes (the importer caps expansion at 100,000)
        "POST",
        "/v1/placements",
        {
            "cluster": {
                "version": 1,
                "execution": {"R_lite": [{"rank": "0-29999", "children": {"core": "0-3"}}]},
            },
            "jobs": [],
        },
        413,
        "too_large",
        "cluster",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [{"id": f"j{i}"} for i in range(61)]},
        413,
        "too_large",
        "jobs",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [[{"id": f"j{i}"} for i in range(61)]]},
        413,
        "too_large",
        "jobs",
    ),
    (
        "POST",
        "/v1/placements",
        {"cluster": SMALL, "jobs": [], "pad": "x" * 2_000_000},
        413,
        "too_large",
        "body",
    ),
    ("POST", "/v1/jobs:validate", {"jobs": {"id": "a"}}, 400, "invalid_body", "jobs"),
    ("POST", "/v1/match", {"worker": {}, "jobs": []}, 422, "invalid_worker", "worker.worker_id"),
    ("POST", "/v1/match", {"jobs": []}, 400, "invalid_body", "worker"),
    ("GET", "/v1/clusters/nope", None, 404, "unknown_cluster", None),
    (
        "PATCH",
        "/v1/clusters/nope",
        {"changes": [{"op": "node_down", "node": "x"}]},
        404,
        "unknown_cluster",
        None,
    ),
    ("DELETE", "/v1/clusters/nope", None, 404, "unknown_cluster", None),
    ("POST", "/v1/clusters/nope/placements", {"jobs": []}, 404, "unknown_cluster", None),
    ("PUT", "/v1/clusters/bad%20id!", {"cluster": SMALL}, 400, "invalid_id", "id"),
    ("PUT", "/v1/clusters/..%2Fetc", {"cluster": SMALL}, 404, "not_found", None),
    ("GET", "/v1/clusters/x?inventory=maybe", None, 400, "invalid_request", "query.inventory"),
    ("GET", "/v2/nothing", None, 404, "not_found", None),
    ("DELETE", "/v1/placements", None, 405, "method_not_allowed", None),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "code", "where"), MISTAKES, ids=lambda v: None)
def test_client_mistakes_are_structured_errors(
    http: httpx.Client, method: str, path: str, body: Any, status: int, code: str, where: str | None
) -> None:
    content = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
    r = http.request(method, path, content=content, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text[:500]
    err = r.json()["error"]
    assert (err["status"], err["code"]) == (status, code)
    assert err["message"] and "Traceback" not in r.text
    if where is not None:
        assert err["errors"] and err["errors"][0]["path"] == where, err["errors"]


def test_a_chunked_body_over_the_limit_is_refused_while_streaming(http: httpx.Client) -> None:
    sent = 0

    def chunks() -> Any:
        nonlocal sent
        yield b'{"cluster": {}, "jobs": [], "pad": "'
        for _ in range(100):  # 6.4 MB if the server read it all
            sent += 1
            yield b"x" * 64_000
        yield b'"}'

    r = http.post("/v1/placements", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in r.request.headers
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"


# ---------------------------------------------------------------------------------------------------
# Stateful mode
# ---------------------------------------------------------------------------------------------------


def test_stateful_mode_put_patch_get_place_delete(http: httpx.Client, openapi: dict[str, Any]) -> None:
    put = http.put("/v1/clusters/h100", json={"cluster": H100.read_text()})
    assert put.status_code == 201 and put.headers["location"] == "/v1/clusters/h100"
    conforms(openapi, put, "/v1/clusters/{cluster_id}", "put")
    assert put.json()["version"] == 1 and put.json()["running"] == [
        "chat-inference",
        "finetune-small",
        "pretrain-7b",
    ]
    again = http.put("/v1/clusters/h100", json={"cluster": H100.read_text()})
    assert again.status_code == 200 and again.json()["version"] == 2
    assert "h100" in http.get("/v1/clusters").json()["clusters"]

    # Placing by id gives what placing the same cluster in the body gives.
    jobs = {"jobs": example_body()["jobs"], "now": NOW, "policy": {"engine": "greedy"}}
    by_id = http.post("/v1/clusters/h100/placements", json=jobs)
    inline = http.post("/v1/placements", json={**jobs, "cluster": H100.read_text()})
    assert by_id.status_code == 200 and by_id.headers["X-Placer-Cluster-Version"] == "2"
    assert without_timings(by_id.json()) == without_timings(inline.json())
    checked(inline.json(), {**jobs, "cluster": H100.read_text()})

    # Deltas: a whole DGX goes down, a job starts on 8 GPUs of another, a running job finishes.
    started = {
        "id": "new-8",
        "ext_ml_gpu_count": 8,
        "node": "dgx-r3-1",
        "gpus": list(range(8)),
        "started_at": NOW,
    }
    changes = [
        {"op": "node_down", "node": "dgx-r2-2"},
        {"op": "job_started", "job": started},
        {"op": "job_finished", "job": "pretrain-7b"},
    ]
    patched = http.patch("/v1/clusters/h100", json={"changes": changes, "if_version": 2})
    assert patched.status_code == 200, patched.text
    conforms(openapi, patched, "/v1/clusters/{cluster_id}", "patch")
    view = patched.json()
    assert view["version"] == 3 and view["unavailable"] == ["dgx-r2-2"]
    assert view["running"] == ["chat-inference", "finetune-small", "new-8"]
    # 128 H100s: 8 on the down node and 8 under new-8 are not free; pretrain-7b's 16 came back.
    before = put.json()["summary"]["free_gpus"]["nvidia-h100"]
    assert view["summary"]["free_gpus"]["nvidia-h100"] == before - 8 - 8 + 16

    stored = http.get("/v1/clusters/h100", params={"inventory": "true"})
    assert stored.status_code == 200 and stored.json()["version"] == 3
    from placer.topology.build import build_cluster
    from placer.topology.inventory import Inventory

    cluster = build_cluster(Inventory.model_validate(stored.json()["inventory"]))
    placed = http.post("/v1/clusters/h100/placements", json=jobs)
    decision = checked(placed.json(), jobs, cluster)
    used = {(rep.node, g) for p in decision.placements for rep in p.replicas for g in rep.gpus}
    assert not any(node == "dgx-r2-2" for node, _ in used)
    assert not any(node == "dgx-r3-1" for node, _ in used)  # all 8 GPUs are new-8's

    # All or nothing: a conflict leaves version 3 as it was.
    stale = http.patch(
        "/v1/clusters/h100", json={"changes": [{"op": "job_finished", "job": "new-8"}], "if_version": 2}
    )
    assert stale.status_code == 409 and stale.json()["error"]["errors"][0]["path"] == "if_version"
    clash = http.patch(
        "/v1/clusters/h100",
        json={
            "changes": [
                {"op": "node_up", "node": "dgx-r2-2"},
                {"op": "job_started", "job": {**started, "id": "other"}},
            ]
        },
    )
    assert clash.status_code == 409 and clash.json()["error"]["errors"][0]["path"] == "changes[1].job"
    unknown = http.patch("/v1/clusters/h100", json={"changes": [{"op": "node_down", "node": "dgx-r9-9"}]})
    assert unknown.status_code == 422 and unknown.json()["error"]["code"] == "invalid_change"
    invalid = http.patch(
        "/v1/clusters/h100",
        json={
            "changes": [{"op": "job_started", "job": {"id": "x", "ext_ml_gpu_count": -1, "node": "dgx-r4-1"}}]
        },
    )
    assert (
        invalid.status_code == 422
        and invalid.json()["error"]["errors"][0]["path"] == "changes[0].job.ext_ml_gpu_count"
    )
    typo = http.patch("/v1/clusters/h100", json={"changes": [{"op": "node_sideways", "node": "dgx-r4-1"}]})
    assert typo.status_code == 400 and typo.json()["error"]["errors"][0]["path"] == "changes[0]"
    assert http.get("/v1/clusters/h100").json()["version"] == 3

    assert http.delete("/v1/clusters/h100").status_code == 204
    assert http.get("/v1/clusters/h100").status_code == 404


def test_nodes_join_and_leave_a_stored_cluster(http: httpx.Client, openapi: dict[str, Any]) -> None:
    # An autoscaler adds an L4 box, a job that only an L4 can run is placed there, then the box is
    # scaled down with a job on it; the server's limits hold for clusters grown by PATCH too.
    cpu = {"nodes": [{"name": "cpu-1", "cpu_cores": 32, "memory_gb": 128}]}
    assert http.put("/v1/clusters/grow", json={"cluster": cpu}).status_code == 201
    l4 = {"name": "l4-1", "cpu_cores": 32, "memory_gb": 128, "gpus": {"type": "nvidia-l4", "count": 4}}
    added = http.patch(
        "/v1/clusters/grow", json={"changes": [{"op": "nodes_added", "inventory": {"nodes": [l4]}}]}
    )
    assert added.status_code == 200, added.text
    conforms(openapi, added, "/v1/clusters/{cluster_id}", "patch")
    assert added.json()["summary"]["free_gpus"] == {"nvidia-l4": 4}
    jobs = {"jobs": [{"id": "l4-job", "ext_ml_gpu_count": 2, "ext_ml_gpu_type": "nvidia-l4"}], "now": NOW}
    placed = http.post("/v1/clusters/grow/placements", json=jobs)
    assert placed.status_code == 200, placed.text
    assert [r["node"] for r in placed.json()["placements"][0]["replicas"]] == ["l4-1"]
    started = {"id": "l4-job", "ext_ml_gpu_count": 2, "node": "l4-1", "gpus": [0, 1], "started_at": NOW}
    assert http.patch(
        "/v1/clusters/grow", json={"changes": [{"op": "job_started", "job": started}]}
    ).is_success
    removed = http.patch("/v1/clusters/grow", json={"changes": [{"op": "node_removed", "node": "l4-1"}]})
    assert removed.status_code == 200 and removed.json()["running"] == []  # l4-job went with its node
    assert removed.json()["summary"]["free_gpus"] == {}

    taken = http.patch(
        "/v1/clusters/grow",
        json={
            "changes": [{"op": "nodes_added", "inventory": {"nodes": [{"name": "cpu-1", "cpu_cores": 4}]}}]
        },
    )
    assert taken.status_code == 409
    assert taken.json()["error"]["errors"][0]["path"] == "changes[0].inventory.nodes[0].name"
    malformed = http.patch(
        "/v1/clusters/grow",
        json={
            "changes": [{"op": "nodes_added", "inventory": {"nodes": [{"name": "x", "cpu_cores": "many"}]}}]
        },
    )
    assert malformed.status_code == 400
    assert malformed.json()["error"]["errors"][0]["path"] == "changes[0].inventory.nodes[0].cpu_cores"
    # The module's server takes clusters of at most 2,000 nodes: one node stored, 2,000 more refused.
    big = {"nodes": [{"name": "many", "count": 2000, "cpu_cores": 4}]}
    too_many = http.patch("/v1/clusters/grow", json={"changes": [{"op": "nodes_added", "inventory": big}]})
    assert too_many.status_code == 413 and too_many.json()["error"]["errors"][0]["path"] == "cluster"
    assert http.get("/v1/clusters/grow").json()["version"] == 4  # the refused PATCHes changed nothing


def test_one_plain_job_on_a_stored_cluster_is_decided_as_place_decides_it(http: httpx.Client) -> None:
    # On a stored cluster a lone plain job takes the express lane (solver/express.py); the decision is the
    # one the stateless route, place() from scratch, gives for the same cluster: placed, and waiting.
    cluster = (EXAMPLES / "clusters" / "h100-training.yaml").read_text()
    assert http.put("/v1/clusters/lane", json={"cluster": cluster}).status_code == 201
    for job in (
        {"id": "one", "ext_ml_gpu_count": 2, "ext_ml_gpu_type": "nvidia-h100"},
        {"id": "share", "ext_ml_gpu_count": 1, "ext_ml_gpu_type": "nvidia-l4"},
        {"id": "huge", "ext_ml_gpu_count": 8, "ext_ml_gpu_type": "nvidia-l4"},  # no L4 box has 8: waits
    ):
        body = {"jobs": [job], "now": NOW, "policy": {"engine": "auto", "plan": False, "preemption": False}}
        stored = http.post("/v1/clusters/lane/placements", json=body)
        alone = http.post("/v1/placements", json={**body, "cluster": cluster})
        assert stored.status_code == alone.status_code == 200, (stored.text, alone.text)
        a, b = stored.json(), alone.json()
        for d in (a, b):
            for key in ("build_s", "solve_s", "wall_s"):
                d["stats"].pop(key)
        assert a == b


# ---------------------------------------------------------------------------------------------------
# Concurrency and metrics
# ---------------------------------------------------------------------------------------------------


def test_concurrent_requests_do_not_interfere(server: Server) -> None:
    mixed = (EXAMPLES / "clusters" / "mixed.yaml").read_text()
    bodies = [
        example_body(policy={"engine": "greedy"}),
        example_body(policy={"engine": "greedy", "plan": False}),
        example_body(policy={"engine": "greedy"}, now="2026-01-01T00:45:00Z"),
        {"cluster": mixed, "jobs": example_body()["jobs"], "now": NOW, "policy": {"engine": "greedy"}},
    ]
    with server.client() as c:
        alone = [c.post("/v1/placements", json=b).json() for b in bodies]
    auto = example_body(time_limit_s=1)
    work = [*bodies, auto] * 3  # 15 requests, more than the 2 solver threads: some wait in the queue

    def send(body: dict[str, Any]) -> httpx.Response:
        with server.client() as c:
            return c.post("/v1/placements", json=body)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(send, work))
        with server.client() as c:  # the event loop answers while the solver threads work
            assert c.get("/healthz", timeout=5).status_code == 200
    for body, answer in zip(work, answers, strict=True):
        assert answer.status_code == 200, answer.text[:300]
        checked(answer.json(), body)
        if body is not auto:
            assert without_timings(answer.json()) == without_timings(alone[bodies.index(body)])


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def test_metrics_count_requests_engines_gaps_and_jobs(http: httpx.Client) -> None:
    before = _samples(http.get("/metrics").text)
    body = example_body(policy={"engine": "greedy"})
    decision = http.post("/v1/placements", json=body).json()
    checked(decision, body)
    assert http.post("/v1/placements", content=b"{", headers=JSON_TYPE).status_code == 400
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    after = _samples(r.text)

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    route = 'route="/v1/placements"'
    assert delta(f'placer_http_requests_total{{method="POST",{route},status="200"}}') == 1
    assert delta(f'placer_http_requests_total{{method="POST",{route},status="400"}}') == 1
    assert delta(f"placer_http_request_duration_seconds_count{{{route}}}") == 2
    assert delta('placer_decisions_total{engine="greedy"}') == 1
    assert delta("placer_decision_wall_seconds_count") == 1
    assert delta("placer_decision_gap_count") == (decision["stats"]["gap"] is not None)
    assert delta('placer_jobs_total{outcome="placed"}') == len(decision["placements"])
    assert delta('placer_jobs_total{outcome="pending"}') == len(decision["pending"])
    assert "placer_clusters_stored" in after and "placer_http_requests_in_flight" in after


def test_the_cli_reference_example_places_the_shipped_batch(
    server: Server, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (REPO / "docs" / "cli.md").read_text()
    found = re.search(r"## HTTP service.*?```python\n(.*?)```", readme, re.S)
    assert found, "docs/cli.md lost its HTTP service example"
    monkeypatch.chdir(REPO)
    exec(compile(found.group(1).replace("http://127.0.0.1:8080", server.url), "README.md", "exec"), {})
    engine, _, jobs = capsys.readouterr().out.strip().partition(" ")
    assert engine in ("greedy", "cpsat") and "'train-llama-70b'" in jobs and "'t5-xxl-tpu'" not in jobs


def test_operator_limits_apply_to_every_request_and_bad_files_stop_the_server(tmp_path: Path) -> None:
    # placer serve --limits: a 4-GPU cap per job that no request can lift (a request has no field for it).
    (tmp_path / "limits.json").write_text(json.dumps({"max_gpus_per_job": 4}))
    srv = Server(tmp_path, "--limits", str(tmp_path / "limits.json")).start()
    try:
        with srv.client() as c:
            jobs = [{"id": "small", "ext_ml_gpu_count": 4}, {"id": "big", "ext_ml_gpu_count": 8}]
            answer = c.post("/v1/jobs:validate", json={"jobs": jobs})
            assert answer.status_code == 422
            assert [(j["id"], j["ok"]) for j in answer.json()["jobs"]] == [("small", True), ("big", False)]
            assert answer.json()["error"]["errors"][0]["code"] == "limit"
    finally:
        srv.stop()
    (tmp_path / "bad.json").write_text(json.dumps({"max_gpus_per_job": "four"}))
    code = "import sys; from placer.cli import main; sys.exit(main())"
    for path, rc, words in (
        (tmp_path / "bad.json", 1, "is invalid"),
        (tmp_path / "none.json", 2, "cannot open"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", code, "serve", "--port", "0", "--limits", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == rc and words in done.stderr
