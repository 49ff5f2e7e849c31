"""solver/objective/cost.py: the engines price replicas with the one pricing function of solver/prices.py, in
integer
money units, so that what greedy and CP-SAT count is what the Decision and the checker count."""

from __future__ import annotations

import pytest

from placer.solver.demand import Need
from placer.solver.objective.cost import Pricing
from placer.solver.prices import PriceCatalog, load_prices, node_share_units
from placer.solver.snapshot import Snapshot
from placer.topology import capacity_pool, cluster_of, cpu_nodes, dgx_h100, pcie_inference

NEEDS = [Need(gpus=1), Need(gpus=3, cpu=12), Need(milli=250), Need(cpu=7), Need(cpu=0.5, mem=4), Need()]


def _mixed():  # type: ignore[no-untyped-def]
    return cluster_of(
        dgx_h100(2),
        capacity_pool(name="pool", spot=1, reserved=1, prices={"reserved": 70.0}),
        pcie_inference(2, capacity_class="spot"),
        cpu_nodes(2, cpu_cores=96),
    )


@pytest.mark.parametrize("need", NEEDS)
def test_per_node_arrays_equal_the_one_pricing_function(need: Need) -> None:
    prices = load_prices('{"gpu": {"nvidia-l4": {"spot": 0.3333}}, "cpu_core": {"on-demand": 0.0417}}')
    snap = Snapshot.of(_mixed())
    pricing = Pricing(snap, prices)
    expected = [node_share_units(v.node, need.gpus, need.milli or None, need.cpu, prices) for v in snap.nodes]
    assert pricing.node_costs(need).tolist() == expected
    assert [pricing.on_node(v.idx, need) for v in snap.nodes] == expected


def test_hand_worked_units() -> None:
    # Hundredths of a cent per hour: an H100 on-demand GPU is $12.29 -> 122,900; a reserved pool node
    # priced $70/h for 8 GPUs gives 3 GPUs $26.25; a quarter of an L4 spot GPU (0.32) is $0.08.
    snap = Snapshot.of(_mixed())
    pricing = Pricing(snap, PriceCatalog.default())
    by_name = {v.name: v.idx for v in snap.nodes}
    assert pricing.on_node(by_name["dgx-h100-1"], Need(gpus=1)) == 122_900
    assert pricing.on_node(by_name["pool-reserved"], Need(gpus=3)) == 262_500
    l4 = next(v.idx for v in snap.nodes if v.node.gpu_type == "nvidia-l4")
    assert pricing.on_node(l4, Need(milli=250)) == 800
    # CPU-only work on a 96-core CPU node: 7 cores x $0.045.
    assert pricing.on_node(by_name["cpu-1"], Need(cpu=7)) == 3_150
