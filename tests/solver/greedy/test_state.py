"""Greedy's scratch state (``solver/greedy/state.py``): :meth:`State.pick` gives the GPUs :meth:`State.take`
takes, changing nothing (the express lane picks on a state it drops)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.solver.demand import expand
from placer.solver.greedy.state import State
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.prepared import Prepared
from placer.topology import cluster_of, pcie_inference


@settings(max_examples=60, deadline=None)
@given(
    held=st.lists(st.tuples(st.integers(0, 3), st.sampled_from([None, 100, 300, 500, 900])), max_size=4),
    count=st.integers(0, 3),
    share=st.sampled_from([None, 100, 250, 600]),
    node=st.integers(0, 1),
)
def test_pick_gives_what_take_takes_and_changes_nothing(
    held: list[tuple[int, int | None]], count: int, share: int | None, node: int
) -> None:
    cluster = cluster_of(pcie_inference(2))
    running = [
        {"job": f"r{k}", "replicas": [{"node": "l4-1", "gpus": [g], "gpu_milli": m}]}
        for k, (g, m) in enumerate(dict(held).items())  # one running job per GPU at most
    ]
    if running:
        cluster = cluster.with_allocations(running)
    gpu = GpuDemand(count=1, share_milli=share) if share else GpuDemand(count=count) if count else None
    plan = expand(Job(id="j", tasks=[TaskGroup(cpu_cores=1, gpu=gpu)]), 0, max_node_gpus=4)
    (unit,) = plan.units
    arrays = Prepared(cluster).arrays(())
    state = State.of(arrays)
    before = (state.gpus.copy(), state.milli.copy(), dict(state.free_idx), list(state.log))
    try:
        picked = state.pick(node, unit)
    except ValueError:
        picked = None
    assert (state.gpus == before[0]).all() and (state.milli == before[1]).all()
    assert state.free_idx == before[2] and state.log == before[3]
    if picked is None or (unit.need.gpus and len(picked[0]) < unit.need.gpus):
        return  # does not fit there: take is not asked
    assert state.take(node, unit) == picked
    free = list(arrays.snap.nodes[node].free_gpus)
    if unit.need.gpus:  # the lowest whole free GPUs
        assert picked == (tuple(free[: unit.need.gpus]), None)
    elif unit.need.milli:  # the best fit: least free milli that holds the share, lowest index first
        milli = list(arrays.snap.nodes[node].milli_free)
        fit = [g for g in range(len(milli)) if milli[g] >= unit.need.milli]
        assert picked == ((min(fit, key=lambda g: (milli[g], g)),), unit.need.milli)
    else:
        assert picked == ((), None)
