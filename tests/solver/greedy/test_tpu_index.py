"""The TPU pod heap answers what a scan of every pod answers: the cheapest, then fullest, then first-named
pod where a slice fits — under random placements, evictions and rollbacks (pods changing in any order)."""

from __future__ import annotations

import random

import pytest

from placer.solver.greedy.tpu_index import PodHeap


@pytest.mark.parametrize("seed", range(20))
def test_heap_matches_a_scan_under_random_changes(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    price = [rng.choice([0, 0, 5, 9]) for _ in range(n)]
    name = [f"pod-{rng.randrange(1000):03d}-{i}" for i in range(n)]
    free = [rng.randint(0, 64) for _ in range(n)]
    version = {i: 0 for i in range(n)}
    changes: list[int] = []
    # Whether a slice fits depends only on the pod's chips, i.e. on its version: drawn once per version.
    fit_table: dict[tuple[int, int], bool] = {}

    def fits(i: int) -> bool:
        key = (i, version[i])
        if key not in fit_table:
            fit_table[key] = free[i] >= 8 and rng.random() < 0.7
        return fit_table[key]

    def entry(i: int) -> tuple[int, int, str, int, int]:
        return (price[i], free[i], name[i], i, version[i])

    heap = PodHeap([entry(i) for i in range(n)], cursor=0)
    for _ in range(200):
        if rng.random() < 0.5:
            i = rng.randrange(n)  # a placement, eviction or rollback changed pod i's chips
            free[i] = max(0, min(64, free[i] + rng.choice([-16, -8, -8, 8, 16])))
            version[i] += 1
            changes.append(i)
            continue
        heap.refresh(changes, entry)
        got = heap.best(fits, version)
        scan = [i for i in range(n) if fits(i)]
        want = min(scan, key=lambda i: (price[i], free[i], name[i])) if scan else None
        assert got == want
