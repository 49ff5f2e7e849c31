"""The running jobs nothing may evict today, sorted by priority rank: what the what-if hints probe.

Why its own module: a :class:`~placer.solver.session.Session` keeps one between decisions (sorting a
fill's thousands of running jobs for every decision with a waiting job was most of its time), and the
pieces a session keeps must not import the engine that uses them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from placer.solver.preempt import is_preemptible, rank
from placer.topology import Cluster, RunningJob

__all__ = ["Shielded"]


class Shielded:
    """Running jobs that nothing may evict today (not preemptible, not reserved, not evicted by this
    decision), sorted by priority rank once, so each waiting job's lower-priority ones are a prefix
    (a fill keeps thousands of running jobs; ranking them again per waiting job was most of greedy's
    time there)."""

    #: Changes a pool may hold unapplied before it applies them (each one costs a copy of the lists).
    LAZY = 64

    def __init__(self, cluster: Cluster, evicted: set[str]) -> None:
        pool = sorted(
            (_key(rj), rj) for rj in cluster.running_jobs() if rj.job not in evicted and _shielded(rj)
        )
        self._keys = [k for k, _ in pool]
        self._ranks = [k[0] for k in self._keys]
        self._jobs = [rj for _, rj in pool]
        #: Unapplied: the pool this one moved forward from, the jobs that started and ended, and how many
        #: such steps separate it from a pool with its lists built.
        self._parent: Shielded | None = None
        self._delta: tuple[list[RunningJob], list[RunningJob]] = ([], [])
        self._depth = 0

    def advanced(self, started: Iterable[RunningJob], ended: Iterable[RunningJob]) -> Shielded:
        """The pool after ``started`` jobs began and ``ended`` ones stopped (a :class:`~placer.solver.
        session.Session` keeps one). Lazy: a session commits after every decision but reads the pool
        only when a job waits, so the changes are kept and applied (by bisection, not re-sorting) when
        it is read, or after :attr:`LAZY` of them."""
        out = Shielded.__new__(Shielded)
        out._keys, out._ranks, out._jobs = [], [], []
        out._parent, out._delta, out._depth = self, (list(started), list(ended)), self._depth + 1
        if out._depth >= self.LAZY:
            out._build()
        return out

    def _build(self) -> None:
        """Apply the unapplied changes: copy the nearest built pool's lists, then each step in order."""
        steps: list[tuple[list[RunningJob], list[RunningJob]]] = []
        node: Shielded = self
        while node._parent is not None:
            steps.append(node._delta)
            node = node._parent
        keys, ranks, jobs = list(node._keys), list(node._ranks), list(node._jobs)
        for started, ended in reversed(steps):
            for rj in ended:
                if _shielded(rj):
                    i = bisect_left(keys, _key(rj))
                    if i < len(keys) and keys[i] == _key(rj):
                        del keys[i], ranks[i], jobs[i]
            for rj in started:
                if _shielded(rj):
                    i = bisect_left(keys, _key(rj))
                    keys.insert(i, _key(rj))
                    ranks.insert(i, _key(rj)[0])
                    jobs.insert(i, rj)
        self._keys, self._ranks, self._jobs = keys, ranks, jobs
        self._parent, self._delta, self._depth = None, ([], []), 0

    def below(self, limit: int) -> list[RunningJob]:
        """Those of priority rank below ``limit``.

        >>> from placer.topology import cluster_of, dgx_h100
        >>> Shielded(cluster_of(dgx_h100(1)), set()).below(10**9)
        []
        """
        if self._parent is not None:
            self._build()
        return self._jobs[: bisect_left(self._ranks, limit)]


def _key(rj: RunningJob) -> tuple[int, str]:
    return (rank(rj.priority_class, rj.priority), rj.job)


def _shielded(rj: RunningJob) -> bool:
    return rj.priority_class != "reserved" and not is_preemptible(rj)
