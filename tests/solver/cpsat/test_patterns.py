"""Packing patterns (``solver/cpsat/patterns.py``): maximal patterns by hand, and a bounded search."""

from __future__ import annotations

from placer.solver.cpsat.classes import NodeClass
from placer.solver.cpsat.patterns import DFS_MAX_VISITS, ItemType, fits, patterns_for
from tests.support import alarm_after


def node(cpu: float, gpus: int = 0) -> NodeClass:
    return NodeClass(
        idx=0,
        members=[0],
        gpus=gpus,
        cpu=cpu,
        mem=1e9,
        storage=1e9,
        shm=1e9,
        milli=(),
        cap_gpus=gpus,
        scopes={},
    )


def cpu_item(cores: float) -> ItemType:
    return ItemType(gpus=0, milli=0, cpu=cores, mem=0, storage=0, shm=0)


def test_maximal_patterns_of_two_sizes_by_hand() -> None:
    # 10 cores, items of 4 and 3 cores: the maximal fills are (4,4) 8, (4,3,3) 10, (3,3,3) 9
    # — as counts of (4-core, 3-core): (2, 0), (1, 2), (0, 3).
    types = [cpu_item(4), cpu_item(3)]
    got = patterns_for(node(10), types, [0, 1], [], limit=50)
    assert sorted(dict(p).get(0, 0) for p in got) == [0, 1, 2]
    assert {tuple(dict(p).get(i, 0) for i in (0, 1)) for p in got} == {(2, 0), (1, 2), (0, 3)}
    assert all(fits(node(10), types, dict(p)) for p in got)


def test_the_search_stops_at_its_visit_bound_and_says_so() -> None:
    # Ten item types of 1-10 cores on a 2,000-core node: the tree of counts is astronomically large and
    # the maximal patterns are far more than the limit allows; the search must stop by itself.
    types = [cpu_item(k) for k in range(1, 11)]
    complete = [True]
    with alarm_after(60, "the pattern search did not stop at its visit bound"):  # a hang guard only
        got = patterns_for(node(2000), types, list(range(10)), [], limit=10_000, complete=complete)
    assert complete == [False]
    assert 0 < len(got) <= DFS_MAX_VISITS
