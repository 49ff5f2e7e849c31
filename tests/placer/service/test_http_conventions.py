"""HTTP conventions (issue "Kubernetes-native", item 5): RFC 9457 problem details for every error,
``/readyz``, metrics labelled by route for FastAPI's own pages, settings from the environment."""

from __future__ import annotations

import argparse
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
