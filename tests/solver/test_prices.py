"""Prices and decision cost (issue 5): costs worked out by hand from solver/data/prices.json
(H100 on-demand 12.29, spot 4.90 $/GPU-h; v5e on-demand 1.20 $/chip-h; CPU on-demand 0.045 $/core-h)."""

from __future__ import annotations

import pytest

from placer.solver.engine import place
from placer.solver.jobs.errors import JobValidationError
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup, TpuDemand
from placer.solver.policy import Policy
from placer.solver.prices import PriceCatalog, load_prices
from placer.topology import capacity_pool, cluster_of, cpu_nodes, dgx_h100, tpu_pod
from tests.solver.conftest import NOW, assert_valid, nodes_of


def _gpu(job_id: str, n: int, cls: str = "on-demand") -> Job:
    return Job(id=job_id, priority_class=cls, tasks=[TaskGroup(gpu=GpuDemand(count=n))])


def test_gpu_share_of_a_catalog_priced_node(engine: str) -> None:
    c = cluster_of(dgx_h100(1))
    d = place([_gpu("j", 4)], c, Policy(engine=engine), now=NOW)
    assert_valid(d, [_gpu("j", 4)], c)
    assert d.placements[0].cost_per_hour == pytest.approx(4 * 12.29)
    assert d.stats.cost_per_hour == pytest.approx(49.16)


def test_node_price_from_the_inventory_wins(engine: str) -> None:
    c = cluster_of(capacity_pool(on_demand=1, prices={"on-demand": 100.0}))
    d = place([_gpu("j", 2)], c, Policy(engine=engine), now=NOW)
    assert d.placements[0].cost_per_hour == pytest.approx(100.0 * 2 / 8)


def test_cpu_and_tpu_replicas(engine: str) -> None:
    c = cluster_of(cpu_nodes(1), tpu_pod("v5e", shape=(4, 4)))
    jobs = [
        Job(id="cpu", tasks=[TaskGroup(cpu_cores=16)]),
        Job(id="tpu", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(2, 4)))]),
    ]
    d = place(jobs, c, Policy(engine=engine), now=NOW)
    assert_valid(d, jobs, c)
    cost = {p.job: p.cost_per_hour for p in d.placements}
    assert cost["cpu"] == pytest.approx(16 * 0.045)  # 16 cores of a CPU node priced per core
    assert cost["tpu"] == pytest.approx(8 * 1.20)  # a 2x4 slice: 8 chips


def test_user_prices_override_the_defaults(engine: str) -> None:
    prices = load_prices('{"gpu": {"nvidia-h100": {"on-demand": 10.0}}}')
    assert prices.gpu_hour("nvidia-h100", "spot") == 4.90  # untouched entries keep their default
    d = place([_gpu("j", 4)], cluster_of(dgx_h100(1)), Policy(engine=engine), now=NOW, prices=prices)
    assert d.placements[0].cost_per_hour == pytest.approx(40.0)


def test_spot_work_is_steered_to_spot_capacity(engine: str) -> None:
    c = cluster_of(capacity_pool(on_demand=1, spot=1))
    jobs = [_gpu("sweep", 4, cls="spot"), _gpu("svc", 4)]
    d = place(jobs, c, Policy(engine=engine), now=NOW)
    assert_valid(d, jobs, c)
    assert nodes_of(d, "sweep") == ["pool-spot"]
    assert d.placement_of("sweep").cost_per_hour == pytest.approx(4 * 4.90)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        '{"gpu": {"nvidia-h100": {"on-demand": -1}}}',
        '{"gpu": {"nvidia-h100": {"monthly": 3}}}',
        '{"gpu": {"nvidia-h100": {"on-demand": "cheap"}}}',
        '{"gpus": {}}',
    ],
)
def test_bad_price_files_name_the_field(text: str) -> None:
    with pytest.raises(JobValidationError) as e:
        load_prices(text)
    assert e.value.issues and all(i.path for i in e.value.issues)


def test_default_catalog_has_every_catalog_gpu_type() -> None:
    from placer.topology import gpu_types

    cat = PriceCatalog.default()
    missing = [t for t in gpu_types() if t not in cat.gpu]
    assert missing == []
