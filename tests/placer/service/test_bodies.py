"""Request bodies: strict JSON, strict models, every problem named by its field."""

from __future__ import annotations

import json

import pytest

from placer.service.bodies import ClusterPatch, MatchRequest, PlacementInputs, PlacementRequest, parse_body
from placer.service.errors import MAX_ERRORS, ApiError


def problems(model: type, body: object) -> list[tuple[str, str]]:
    with pytest.raises(ApiError) as e:
        parse_body(model, json.dumps(body).encode())
    assert e.value.status == 400 and e.value.code == "invalid_body"
    return [(x["code"], x["path"]) for x in e.value.errors]


def test_a_full_placement_body_is_read() -> None:
    body = {
        "cluster": "nodes: []",
        "jobs": [{"id": "a"}, [{"id": "b"}], "<Job/>"],
        "running": [],
        "policy": {"engine": "cpsat", "seed": 3, "reproducible": True, "plan": False, "preemption": False},
        "time_limit_s": 1,
        "now": "2026-01-01T02:00:00+02:00",
        "queue_config": [{"queue": "q"}],
        "reservations": [],
        "prices": {},
        "cluster_format": "inventory",
        "pods": None,
    }
    req = parse_body(PlacementRequest, json.dumps(body).encode())
    assert req.policy.engine == "cpsat" and req.time_limit_s == 1.0 and req.now is not None
    assert req.now.isoformat() == "2026-01-01T02:00:00+02:00"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"cluster": {}, "jobs": [], "policy": {"seed": -1}}, [("range", "policy.seed")]),
        ({"cluster": {}, "jobs": [], "policy": {"plan": 1}}, [("type", "policy.plan")]),
        ({"cluster": {}, "jobs": [], "time_limit_s": True}, [("type", "time_limit_s")]),
        ({"cluster": {}, "jobs": [], "now": "2026-01-01T00:00:00"}, [("format", "now")]),
        ({"cluster": {}, "jobs": [], "now": 5}, [("type", "now")]),
        ({"cluster": {}, "jobs": [None]}, [("type", "jobs[0]")]),
        ({"cluster": {}, "jobs": [], "cluster_format": "yaml"}, [("enum", "cluster_format")]),
        (  # envelopes, squeue --json or scontrol text: each form that 5 is not is named
            {"cluster": {}, "jobs": [], "running": 5},
            [
                ("type", "running.list[dict[str,any]]"),
                ("type", "running.dict[str,any]"),
                ("type", "running.str"),
            ],
        ),
        ({"cluster": {}}, [("required", "jobs")]),
    ],
)
def test_each_field_breaking_the_model_is_named(
    body: dict[str, object], expected: list[tuple[str, str]]
) -> None:
    assert problems(PlacementRequest, body) == expected


def test_a_stored_cluster_placement_takes_no_cluster() -> None:
    assert problems(PlacementInputs, {"jobs": [], "cluster": {}}) == [("unknown", "cluster")]


def test_changes_are_tagged_by_op_and_paths_leave_the_tag_out() -> None:
    body = {
        "changes": [{"op": "node_down"}, {"op": "job_finished", "job": 3}, {"op": "reboot"}],
        "if_version": -1,
    }
    assert problems(ClusterPatch, body) == [
        ("required", "changes[0].node"),
        ("type", "changes[1].job"),
        ("enum", "changes[2]"),
        ("range", "if_version"),
    ]
    assert problems(ClusterPatch, {"changes": []}) == [("range", "changes")]


def test_the_worker_is_an_object() -> None:
    assert problems(MatchRequest, {"worker": ["w"], "jobs": []}) == [("type", "worker")]


@pytest.mark.parametrize(
    "raw", [b"", b"   ", b"{", b'{"a": 1, "a": 2}', b'{"a": Infinity}', b"\xc3\x28", b"[" * 100 + b"]" * 100]
)
def test_bodies_that_are_not_strict_json_are_malformed(raw: bytes) -> None:
    with pytest.raises(ApiError) as e:
        parse_body(PlacementRequest, raw)
    assert (e.value.status, e.value.code) == (400, "malformed")


def test_an_error_body_lists_at_most_max_errors_problems() -> None:
    err = ApiError(
        422,
        "invalid_cluster",
        "m",
        [{"code": "invalid", "path": f"p{i}", "message": "x"} for i in range(500)],
    )
    listed = err.body()["error"]["errors"]
    assert (
        len(listed) == MAX_ERRORS + 1 and listed[-1]["message"] == f"... and {500 - MAX_ERRORS} more problems"
    )
