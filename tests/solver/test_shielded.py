"""The pool of running jobs nothing may evict, moved forward start by start and end by end (lazily), is
the pool built afresh from the cluster those starts and ends leave (``solver/shielded.py``)."""

from __future__ import annotations

import random

from placer.solver.preempt import rank
from placer.solver.shielded import Shielded
from placer.topology import cluster_of, dgx_h100

#: Ranks to read the pool below: none, spot only, up to on-demand, every class (from the ranking itself,
#: not its scale).
LIMITS = (0, rank("on-demand", 0), rank("reserved", 0), rank("reserved", 10) + 1)


def test_a_pool_moved_forward_is_the_pool_built_afresh() -> None:
    rng = random.Random(7)
    cluster = cluster_of(dgx_h100(4))
    pool = Shielded(cluster, set())
    classes = ["spot", "on-demand", "reserved"]
    for k in range(3 * Shielded.LAZY + 5):  # past the lazy limit more than once
        running = [rj.job for rj in cluster.running_jobs()]
        if running and (len(running) >= 24 or rng.random() < 0.3):
            gone = cluster.running_job(rng.choice(running))
            cluster = cluster.release(gone.job)
            pool = pool.advanced([], [gone])
        else:
            job = {
                "job": f"j{k}",
                "priority_class": rng.choice(classes),
                "priority": rng.randint(0, 5),
                "preemptible": rng.choice([None, True, False]),
                "replicas": [{"node": f"dgx-h100-{rng.randint(1, 4)}", "gpus": [], "cpu_cores": 1}],
            }
            cluster = cluster.allocate(job)
            pool = pool.advanced([cluster.running_job(f"j{k}")], [])
        if k % 7 == 0:  # read now and then, as a session does when a job waits
            for limit in LIMITS:
                assert [rj.job for rj in pool.below(limit)] == [
                    rj.job for rj in Shielded(cluster, set()).below(limit)
                ]
    fresh = Shielded(cluster, set())
    top = LIMITS[-1]
    assert fresh.below(top), "the walk must leave some shielded jobs, or the comparison proves nothing"
    assert [rj.job for rj in pool.below(top)] == [rj.job for rj in fresh.below(top)]
