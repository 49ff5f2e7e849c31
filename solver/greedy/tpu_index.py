"""Which pod a TPU replica takes, without scanning every pod for every replica.

Greedy puts a TPU replica on the pod that is cheapest, then fullest (fewest free chips: best fit), then
first by name, among the pods where a slice of its shape is free. Scanning all pods per replica made 5,000
replicas on 1,000 pods take minutes (issue "Exact at scale", ``benchmarks/scaled_bench.py``). Here each
TPU demand keeps a heap of its pods keyed by exactly that order, with the pod's version when the key was
taken: a pod whose chips changed since (placement, eviction, rollback) is re-pushed with its new key, and a
pod where no slice fits is dropped until its chips change again, since whether a slice fits depends only
on which chips are used. The answer is the scan's answer, in time that follows the pods that changed.

>>> h = PodHeap([(0, 10, "a", 0, 0), (0, 4, "b", 1, 0)], cursor=0)
>>> h.best(lambda pidx: True, versions={})
1
>>> h.best(lambda pidx: pidx != 1, versions={})  # pod 1 has no fitting slice now: dropped
0
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

__all__ = ["PodHeap"]

Entry = tuple[int, int, str, int, int]  # price, free chips, pod name, pod index, version


class PodHeap:
    """The pods one TPU demand may use, ordered by (price, free chips, name) as they were at their last
    version; stale entries are skipped lazily."""

    def __init__(self, entries: list[Entry], cursor: int):
        self.heap: list[Entry] = list(entries)
        heapq.heapify(self.heap)
        #: How far into the state's list of changed pods this heap has caught up.
        self.cursor = cursor

    def refresh(self, changed: list[int], entry_of: Callable[[int], Entry | None]) -> None:
        """Re-push every pod changed since the last call (``changed`` only grows) with its current key."""
        for pidx in changed[self.cursor :]:
            e = entry_of(pidx)
            if e is not None:
                heapq.heappush(self.heap, e)
        self.cursor = len(changed)

    def best(self, fits: Callable[[int], bool], versions: dict[int, int]) -> int | None:
        """The first pod in order, at its current version, where ``fits`` holds; None when none does.
        Entries of older versions are dropped (a newer one was pushed when the pod changed), and so are
        pods that do not fit (until they change)."""
        heap = self.heap
        while heap:
            pidx, version = heap[0][3], heap[0][4]
            if version != versions.get(pidx, 0):
                heapq.heappop(heap)
                continue
            if fits(pidx):
                return pidx
            heapq.heappop(heap)
        return None
