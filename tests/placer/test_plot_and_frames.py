"""Decision frames and the decision picture (issue "Kubernetes-native", item 4): one row per replica,
one cell per GPU of the cluster, ``placer place --plot``."""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.cli import main
from placer.solver.engine import place
from placer.solver.jobs import read_files
from placer.solver.policy import Policy
from placer.topology.load import load_cluster

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "examples" / "clusters" / "h100-training.yaml"
JOBS = sorted((REPO / "examples" / "jobs").iterdir())


@pytest.fixture(scope="module")
def decided() -> tuple[object, object]:
    cluster = load_cluster(H100)
    return place(read_files(JOBS), cluster, Policy(engine="greedy")), cluster


def test_the_frame_has_one_row_per_replica(decided: tuple[object, object]) -> None:
    d, _ = decided
    frame = d.to_frame()  # type: ignore[attr-defined]
    assert len(frame) == sum(len(p.replicas) for p in d.placements)  # type: ignore[attr-defined]
    # The frame's GPU counts add up to the decision's GPUs.
    assert frame["gpu_count"].sum() == sum(len(r.gpus) for p in d.placements for r in p.replicas)  # type: ignore[attr-defined]
    assert len(d.pending_frame()) == len(d.pending)  # type: ignore[attr-defined]
    assert "<table" in d._repr_html_()  # type: ignore[attr-defined]


def test_the_picture_has_a_cell_per_gpu_and_colours_the_placed_ones(decided: tuple[object, object]) -> None:
    from placer.plot import decision as draw

    d, cluster = decided
    fig = draw(d, cluster)
    cells = fig.placer_cells
    assert cells["gpu"] == sum(n.gpu_count for n in cluster.nodes)  # type: ignore[attr-defined]
    assert cells["placed"] == sum(len(r.gpus) for p in d.placements for r in p.replicas)  # type: ignore[attr-defined]
    held = sum(len(r.gpus) for j in cluster.running_jobs() for r in j.replicas)  # type: ignore[attr-defined]
    assert cells["running"] == held


def test_place_writes_the_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d.png"
    assert (
        main(
            [
                "place",
                "--cluster",
                str(H100),
                "--jobs",
                *map(str, JOBS),
                "--engine",
                "greedy",
                "--plot",
                str(out),
            ]
        )
        == 0
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
