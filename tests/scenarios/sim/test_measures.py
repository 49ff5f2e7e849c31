"""What a run reports: fragmentation on hand-built clusters, the metrics of a hand-worked timeline, the
files written, the optional progress bar and plots."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from placer.scenarios.sim import metrics
from placer.scenarios.sim.fragmentation import fragmentation
from placer.scenarios.sim.output import write
from placer.scenarios.sim.progress import bar
from placer.solver.jobs.model import DistributedStrategy, GpuDemand, Interconnect, Job, TaskGroup, TpuDemand
from placer.topology import cluster_of, dgx_h100, gb200_nvl72, tpu_pod
from tests.scenarios.sim.conftest import EVERY_600, HEADER, ONE_DGX, PROD, jobs_yaml, simulate_text, spot_job


def _gpu_job(n: int, *, types: tuple[str, ...] = (), nvlink: bool = False, split: bool = False) -> Job:
    ic = Interconnect.NVLINK if nvlink else Interconnect.ANY
    return Job(
        id=f"w{n}",
        distributed_strategy=DistributedStrategy.FSDP if split else None,
        tasks=[TaskGroup(gpu=GpuDemand(count=n, types=list(types), interconnect=ic))],
    )


def _busy(node: str, gpus: list[int]) -> dict:
    return {"job": f"busy-{node}", "replicas": [{"node": node, "gpus": gpus}]}


# -- fragmentation -------------------------------------------------------------------------------------


def test_free_gpus_a_waiting_job_cannot_use_are_stranded() -> None:
    # Node 1 has 3 free GPUs, node 2 all 8. A 4-GPU job fits node 2 only: node 1's 3 are stranded.
    c = cluster_of(dgx_h100(2)).allocate(_busy("dgx-h100-1", [0, 1, 2, 3, 4]))
    assert fragmentation(c, [_gpu_job(4)]).stranded_gpus == 3
    # A 1-GPU job could use them; with nobody waiting, idle GPUs are not fragmentation.
    assert fragmentation(c, [_gpu_job(4), _gpu_job(1)]).stranded_gpus == 0
    assert fragmentation(c, []).as_dict() == {
        "free_gpus": 11,
        "stranded_gpus": 0,
        "partial_nvlink_domains": 1,
        "stranded_nvlink_domains": 0,
        "stranded_nvlink_gpus": 0,
        "free_tpu_chips": 0,
        "stranded_tpu_chips": 0,
    }
    # A job that only takes A100s can use no H100: all 11 free GPUs are stranded.
    assert fragmentation(c, [_gpu_job(1, types=("nvidia-a100",))]).stranded_gpus == 11


def test_only_a_single_replica_job_is_split_over_nodes() -> None:
    # Two empty DGX (8 GPUs each). A 16-GPU FSDP job of one replica is split 2 x 8 (solver/demand.py), so
    # its pieces fit: nothing stranded. A gang of two 16-GPU replicas is not split (each replica needs 16
    # GPUs on one node), so all 16 free GPUs are stranded for it.
    c = cluster_of(dgx_h100(2))
    assert fragmentation(c, [_gpu_job(16, split=True)]).stranded_gpus == 0
    gang = Job(
        id="gang",
        distributed_strategy=DistributedStrategy.FSDP,
        tasks=[TaskGroup(count=2, gpu=GpuDemand(count=16))],
    )
    assert fragmentation(c, [gang]).stranded_gpus == 16


def test_a_split_nvlink_domain_is_stranded_for_nvlink_gangs() -> None:
    # One NVL72 rack (18 trays x 4 GPUs, one domain). All trays full but tray 1, which has 2 free GPUs.
    c = cluster_of(gb200_nvl72(1))
    full = [_busy(n.name, [0, 1, 2, 3]) for n in c.nodes[1:]] + [_busy(c.nodes[0].name, [0, 1])]
    c = c.with_allocations(full)
    f = fragmentation(c, [_gpu_job(8, nvlink=True, split=True)])
    # The gang needs 8 GPUs in one domain (2 free) and 4-GPU pieces per tray (2 free): both stranded.
    assert (f.free_gpus, f.stranded_gpus, f.stranded_nvlink_domains, f.stranded_nvlink_gpus) == (2, 2, 1, 2)
    assert f.partial_nvlink_domains == 1


def test_free_tpu_chips_without_a_free_slice_are_stranded() -> None:
    # A 4x4 v5e pod with its two middle columns taken: 8 free chips in two 4x1 columns, no free 2x2.
    c = cluster_of(tpu_pod("v5e", (4, 4), name="p"))
    c = c.allocate(
        {
            "job": "mid",
            "replicas": [{"tpu_pod": "p", "tpu_chips": [[x, y] for x in range(4) for y in (1, 2)]}],
        }
    )
    square = Job(id="sq", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(2, 2)))])
    f = fragmentation(c, [square])
    assert (f.free_tpu_chips, f.stranded_tpu_chips) == (8, 8)
    c2 = cluster_of(tpu_pod("v5e", (4, 4), name="p"))
    assert fragmentation(c2, [square]).stranded_tpu_chips == 0


# -- metrics of a hand-worked timeline ------------------------------------------------------------------


@pytest.fixture(scope="module")
def preempted() -> pd.DataFrame:
    # The periodic-checkpoint timeline of test_timelines: spot (8 GPUs, 3600 s) evicted at 1500 for prod
    # (8 GPUs, 1200 s, starts 1620 after the 120 s grace, ends 2820); spot kept 1200 s, resumes at 2820
    # and ends at 5220. One DGX H100 at $98.32/h, 2 h horizon.
    return simulate_text(HEADER + ONE_DGX + jobs_yaml(spot_job(**EVERY_600), PROD)).result


def test_metrics_of_the_preemption_timeline(preempted) -> None:  # type: ignore[no-untyped-def]
    r = preempted
    w = metrics.waits(r.jobs)
    # spot: waited 0 (first start at 0), completed 5220 after submission; prod waited 120, completed 1320.
    assert (w.loc["spot", "wait_p50_s"], w.loc["spot", "completion_p50_s"]) == (0.0, 5220.0)
    assert (w.loc["on-demand", "wait_p50_s"], w.loc["on-demand", "completion_p50_s"]) == (120.0, 1320.0)
    p = metrics.preemptions(r.jobs)
    assert p.loc["total", "preemptions"] == 1
    assert p.loc["total", "lost_gpu_h"] == pytest.approx(8 * 300 / 3600)
    # Held: spot 1620 + 2400 s, prod 1200 s, 8 GPUs each; capacity 8 GPUs x 2 h = 16 GPU-h.
    held = 8 * (1620 + 2400 + 1200) / 3600
    g = metrics.gpu_hours(r)
    assert g["held_gpu_h"] == pytest.approx(held) and g["allocation"] == pytest.approx(held / 16)
    useful = 8 * (3600 + 1200) / 3600
    assert g["useful_gpu_h"] == pytest.approx(useful)
    cost = metrics.cost(r)
    assert cost["cost_usd"] == pytest.approx(98.32 * (1620 + 2400 + 1200) / 3600)
    assert cost["cost_per_useful_gpu_h"] == pytest.approx(cost["cost_usd"] / useful)
    assert cost["fleet_cost_usd"] == pytest.approx(98.32 * 2)
    s = metrics.summary(r)
    assert (s["preemptions"], s["states"]) == (1, {"done": 2})
    text = metrics.summary_text(s)
    assert "evictions 1" in text and "2 done" in text and "on-demand" in text
    json.dumps(s, default=str)  # the summary is JSON-ready
    u = metrics.utilization(r)
    # Between 1500 and 1620 the GPUs are held by the evicted job (draining) and promised to prod.
    at = u.set_index(r.intervals["t_s"])
    assert at.loc[1500.0, "gpus_allocated"] == 8 and at.loc[1500.0, "gpus_busy"] == 0
    assert at.loc[1560.0, "utilization"] == 0.0 and at.loc[1680.0, "utilization"] == 1.0
    # Spot waits from its requeue at 1620 until prod ends at 2820: one waiting job per interval in between.
    waiting = metrics.pending_reasons(r).sum(axis=1).set_axis(r.intervals["t_s"])
    assert waiting.loc[1620.0:2760.0].tolist() == [1] * 20 and waiting.loc[:1560.0].sum() == 0


def test_tables_are_written_and_read_back(preempted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow  # noqa: F401  (the test extra installs it: parquet is tested for real)

    paths = write(preempted, tmp_path / "pq", fmt="parquet", summary={"name": "t"})
    assert sorted(p.name for p in paths) == sorted(
        [f"{t}.parquet" for t in ("events", "jobs", "attempts", "intervals", "reasons", "nodes")]
        + ["summary.json"]
    )
    back = pd.read_parquet(tmp_path / "pq" / "jobs.parquet")
    pd.testing.assert_frame_equal(back, preempted.jobs.reset_index(drop=True), check_dtype=False)
    write(preempted, tmp_path / "csv", fmt="csv")
    assert list(pd.read_csv(tmp_path / "csv" / "events.csv")["event"]) == list(preempted.events["event"])


def test_plots_are_written(preempted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from placer.scenarios.sim.plots import save_all

    paths = save_all(preempted, tmp_path)
    assert [p.name for p in paths] == ["gpus.png", "queue.png", "waits.png", "spend.png"]
    assert all(p.stat().st_size > 1000 for p in paths)


def _ax():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots()[1]


def test_the_gpu_plot_is_in_percent_of_usable_gpus(preempted) -> None:  # type: ignore[no-untyped-def]
    from placer.scenarios.sim.plots import plot_gpus

    ax = plot_gpus(preempted, _ax())
    assert ax.get_ylabel() == "% of usable GPUs" and ax.get_xlabel() == "time (UTC)"
    busy = next(line for line in ax.get_lines() if line.get_label().startswith("busy"))
    # One DGX: the spot job (8 GPUs) runs from 0, then prod: 100 % busy at some point, never above.
    assert max(busy.get_ydata()) == 100.0


def test_the_wait_plot_counts_jobs_still_waiting(preempted) -> None:  # type: ignore[no-untyped-def]
    from placer.scenarios.sim.plots import plot_waits

    r = copy.copy(preempted)
    r.jobs = preempted.jobs.copy()
    r.jobs.loc[r.jobs["priority_class"] == "on-demand", ["state", "wait_s"]] = ["pending", None]
    ax = plot_waits(r, _ax())
    labels = [line.get_label() for line in ax.get_lines()]
    spot = next(line for line in ax.get_lines() if line.get_label().startswith("spot"))
    prod = next(line for line in ax.get_lines() if line.get_label().startswith("on-demand"))
    assert max(spot.get_ydata()) == 100.0  # its one job started (after 0 s, drawn at 1 s on the log axis)
    assert max(prod.get_ydata()) == 0.0  # its one job still waits: the curve never rises
    assert any("1 still waiting at the horizon" in x for x in labels) and ax.get_xscale() == "log"


def test_the_spend_plot_adds_up_to_what_the_attempts_cost(preempted) -> None:  # type: ignore[no-untyped-def]
    from placer.scenarios.sim.plots import plot_spend

    ax = plot_spend(preempted, _ax())
    spend = ax.get_lines()[0].get_ydata()
    exact = metrics.cost(preempted)["cost_usd"]  # from the attempts' held seconds, not sampled
    one_interval = 98.32 * preempted.meta["interval_s"] / 3600
    assert abs(spend[-1] - exact) <= one_interval, (spend[-1], exact)
    (evictions,) = [a for a in ax.figure.axes if a is not ax]
    assert max(evictions.get_lines()[0].get_ydata()) == 1  # the spot job, once


def test_progress_bar_falls_back_silently(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    monkeypatch.setitem(sys.modules, "rich.progress", None)
    with bar(5) as b:
        b.update(5)
    assert capsys.readouterr() == ("", "")
