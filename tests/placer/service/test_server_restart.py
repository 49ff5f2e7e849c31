"""Stateful mode across restarts of the real server: whatever was acknowledged (2xx) survives a SIGKILL.

SIGKILL, not SIGTERM: the process gets no chance to flush anything, so only what was committed to the
SQLite file before the answer can come back.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from tests.placer.service.conftest import H100, NOW, Server, checked, example_body, without_timings


def _state(srv: Server) -> dict[str, Any]:
    with srv.client() as c:
        views = {cid: c.get(f"/v1/clusters/{cid}", params={"inventory": "true"}).json() for cid in ("a", "b")}
        body = {"jobs": example_body()["jobs"], "now": NOW, "policy": {"engine": "greedy"}}
        decision = c.post("/v1/clusters/a/placements", json=body).json()
    for v in views.values():
        v.pop("updated_at")
    return {"views": views, "decision": without_timings(decision)}


def test_a_restart_loses_nothing_that_was_acknowledged(tmp_path: Path) -> None:
    state = tmp_path / "placer.db"
    srv = Server(tmp_path, "--state", str(state)).start()
    try:
        with srv.client() as c:
            assert c.put("/v1/clusters/a", json={"cluster": H100.read_text()}).status_code == 201
            assert c.put("/v1/clusters/b", json={"cluster": H100.read_text()}).status_code == 201
            started = {
                "id": "s1",
                "ext_ml_gpu_count": 4,
                "node": "dgx-r4-1",
                "gpus": [4, 5, 6, 7],
                "started_at": NOW,
            }
            steps = [
                [{"op": "node_down", "node": "dgx-r3-2"}],
                [{"op": "job_started", "job": started}, {"op": "job_finished", "job": "chat-inference"}],
                [{"op": "node_down", "node": "l4-spot-3"}, {"op": "node_up", "node": "dgx-r3-2"}],
                [{"op": "node_down", "node": "dgx-r1-4"}],
            ]
            for k, changes in enumerate(steps):
                r = c.patch("/v1/clusters/a", json={"changes": changes})
                assert r.status_code == 200 and r.json()["version"] == k + 2, r.text
            # A refused change is not state: it must not come back either.
            assert (
                c.patch("/v1/clusters/a", json={"changes": [{"op": "job_finished", "job": "zz"}]}).status_code
                == 409
            )
            assert c.delete("/v1/clusters/b").status_code == 204
            assert c.put("/v1/clusters/b", json={"cluster": H100.read_text()}).status_code == 201
        before = _state(srv)
        assert before["views"]["a"]["version"] == 5 and before["views"]["b"]["version"] == 1
        assert before["views"]["a"]["unavailable"] == ["dgx-r1-4", "l4-spot-3"]
        assert before["views"]["a"]["running"] == ["finetune-small", "pretrain-7b", "s1"]
        assert srv.stop(signal.SIGKILL) == -signal.SIGKILL

        srv = Server(tmp_path, "--state", str(state)).start()
        after = _state(srv)
        assert after == before
        from placer.topology.build import build_cluster
        from placer.topology.inventory import Inventory

        body = {"jobs": example_body()["jobs"], "now": NOW, "policy": {"engine": "greedy"}}
        checked(
            after["decision"], body, build_cluster(Inventory.model_validate(after["views"]["a"]["inventory"]))
        )
        with srv.client() as c:  # the log continues where it stopped
            r = c.patch("/v1/clusters/a", json={"changes": [{"op": "job_finished", "job": "s1"}]})
            assert r.status_code == 200 and r.json()["version"] == 6
    finally:
        srv.stop()
