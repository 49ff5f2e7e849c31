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

    def __init__(self, cluster: Cluster, evicted: set[str]) -> None:
        pool = sorted(
            (_key(rj), rj) for rj in cluster.running_jobs() if rj.job not in evicted and _shielded(rj)
        )
        self._keys = [k for k, _ in pool]
        self._ranks = [k[0] for k in self._keys]
        self._jobs = [rj for _, rj in pool]

    def advanced(self, started: Iterable[RunningJob], ended: Iterable[RunningJob]) -> Shielded:
        """The pool after ``started`` jobs began and ``ended`` ones stopped (a :class:`~placer.solver.
        session.Session` keeps one): each is inserted or removed by bisection, not re-sorted."""
        out = Shielded.__new__(Shielded)
        out._keys, out._ranks, out._jobs = list(self._keys), list(self._ranks), list(self._jobs)
        for rj in ended:
            if _shielded(rj):
                i = bisect_left(out._keys, _key(rj))
                if i < len(out._keys) and out._keys[i] == _key(rj):
                    del out._keys[i], out._ranks[i], out._jobs[i]
        for rj in started:
            if _shielded(rj):
                i = bisect_left(out._keys, _key(rj))
                out._keys.insert(i, _key(rj))
                out._ranks.insert(i, _key(rj)[0])
                out._jobs.insert(i, rj)
        return out

    def below(self, limit: int) -> list[RunningJob]:
        """Those of priority rank below ``limit``.

        >>> from placer.topology import cluster_of, dgx_h100
        >>> Shielded(cluster_of(dgx_h100(1)), set()).below(10**9)
        []
        """
        return self._jobs[: bisect_left(self._ranks, limit)]


def _key(rj: RunningJob) -> tuple[int, str]:
    return (rank(rj.priority_class, rj.priority), rj.job)


def _shielded(rj: RunningJob) -> bool:
    return rj.priority_class != "reserved" and not is_preemptible(rj)
