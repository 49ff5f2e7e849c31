"""HTTP conventions (issue "Kubernetes-native", item 5): RFC 9457 problem details for every error,
``/readyz``, metrics labelled by route for FastAPI's own pages, settings from the environment."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from typing import Any

import pytest

from placer.cli import serve


@pytest.fixture
def client() -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from placer.service.app import ServiceConfig, create_app

    with TestClient(
        create_app(ServiceConfig()), base_url="http://127.0.0.1", raise_server_exceptions=False
    ) as c:
        yield c


def test_errors_are_problem_details_that_keep_placers_shape(client: Any) -> None:
    r = client.get("/v1/clusters/nope")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    body = r.json()
    # RFC 9457 §3.1 members, and placer's own "error" member for existing clients.
    assert body["type"] == "urn:placer:problem:unknown_cluster" and body["title"] == "Not Found"
    assert body["status"] == 404 and body["instance"] == "/v1/clusters/nope" and "nope" in body["detail"]
    assert body["error"]["code"] == "unknown_cluster"
    # Refusals before any route (the guard) have the same shape.
    r = client.get("/v1/clusters", headers={"host": "evil.example"})
    assert r.headers["content-type"] == "application/problem+json" and r.json()["status"] == 421


def test_the_openapi_document_says_errors_are_problem_json(client: Any) -> None:
    doc = client.get("/openapi.json").json()
    answer = doc["paths"]["/v1/placements"]["post"]["responses"]["422"]["content"]
    assert list(answer) == ["application/problem+json"]


def test_readyz_answers_once_started(client: Any) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json()["status"] == "ready"


def test_framework_pages_are_counted_by_their_route(client: Any) -> None:
    client.get("/openapi.json")
    client.get("/docs")
    text = client.get("/metrics").text
    assert 'route="/openapi.json"' in text and 'route="/docs"' in text


def test_serve_flags_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACER_PORT", "9123")
    monkeypatch.setenv("PLACER_ALLOW_HOST", "placer.internal,placer")
    monkeypatch.setenv("PLACER_NO_ACCESS_LOG", "1")
    parser = argparse.ArgumentParser()
    serve.add_parser(parser.add_subparsers())
    args = parser.parse_args(["serve"])
    assert (args.port, args.allow_host, args.no_access_log) == (9123, ["placer.internal", "placer"], True)
    assert parser.parse_args(["serve", "--port", "9000"]).port == 9000  # the command line wins
    monkeypatch.setenv("PLACER_PORT", "99999")
    parser = argparse.ArgumentParser()
    serve.add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["serve"])


def test_docs_pages_need_no_network(client: Any) -> None:
    # Air-gapped clusters: /docs and /redoc load their scripts from the service itself, never a CDN.
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        refs = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert refs and all(r.startswith("/") for r in refs), (page, refs)
        for ref in refs:
            if ref.endswith((".js", ".css")):
                r = client.get(ref)
                assert r.status_code == 200 and len(r.content) > 10_000, ref  # the real bundle, not a stub
    assert "https://" not in client.get("/docs").text and "https://" not in client.get("/redoc").text


def test_every_request_example_of_the_schema_succeeds(client: Any) -> None:
    doc = client.get("/openapi.json").json()
    examples = [
        (method, path, example["value"])
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        for example in (op.get("requestBody") or {})
        .get("content", {})
        .get("application/json", {})
        .get("examples", {})
        .values()
    ]
    assert len(examples) >= 4
    for method, path, value in sorted(examples, key=lambda e: (e[0] != "put", e[1])):  # store, then use
        r = client.request(method.upper(), path.replace("{cluster_id}", "example"), json=value)
        assert r.status_code in (200, 201), (method, path, r.text[:300])


def test_an_error_names_the_body_field_not_a_cli_flag(client: Any) -> None:
    r = client.post("/v1/placements", json={"cluster": {"foo": 1}, "jobs": []})
    assert r.status_code == 422
    text = r.text
    assert "cluster_format" in text and "--format" not in text
