"""A running ``place()`` told to stop (``solver/cancel.py``) returns soon with a valid decision, instead of
spending its whole time limit; outside a cancellable block nothing changes. The time bound is generous
(a cancelled call must end far below its limit, not at a tuned figure): it asserts the mechanism, the
service's figures are in ``benchmarks/service_load.py``."""

from __future__ import annotations

import threading
import time

from placer.scenarios.synthetic import scenario_m
from placer.solver.cancel import Cancel, cancellable
from placer.solver.engine import place
from placer.solver.policy import Policy
from tests.solver.conftest import assert_valid

LIMIT_S = 20.0


def test_a_cancelled_placement_ends_long_before_its_limit_with_a_valid_decision() -> None:
    sc = scenario_m(0)
    jobs = list(sc.jobs)
    stop = Cancel()
    out: dict[str, object] = {}

    def run() -> None:
        with cancellable(stop):
            t0 = time.perf_counter()
            out["decision"] = place(jobs, sc.cluster, Policy(time_limit_s=LIMIT_S, seed=0), now=sc.now)
            out["wall"] = time.perf_counter() - t0

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(2.0)  # into the search: greedy's answer is in hand, CP-SAT/LNS at work
    stop.cancel()
    thread.join(LIMIT_S + 10)
    assert not thread.is_alive()
    assert out["wall"] < LIMIT_S / 2, out["wall"]  # type: ignore[operator]
    assert_valid(out["decision"], jobs, sc.cluster, now=sc.now)  # type: ignore[arg-type]
