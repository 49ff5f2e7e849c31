"""Deadlines met, counted on a hand-worked timeline: one DGX H100 (8 GPUs), 8-GPU jobs that run one at a
time, a 2-hour horizon; on-demand jobs are due 5 minutes after an immediate, unbroken run.

    a  submit 0       work 600   runs 0-600      due 900    met
    b  submit 60      work 600   runs 600-1200   due 960    missed (waited for a)
    c  submit 120     work 600   runs 1200-1800  due 1020   missed
    d  submit 1800    work 600   needs A100s     due 2700   missed (never runs: no A100 in the cluster)
    e  submit 6000    work 3600  runs 6000-      due 9900   not due (after the horizon, 7200)
    f  spot class     work 600   runs 1800-2400  -          none (no deadline for spot)
"""

from __future__ import annotations

import pandas as pd
import pytest

from placer.scenarios.cost import Deadline, Design, deadline_counts, judge, runs
from tests.scenarios.cost.conftest import job, workload

JOBS = (
    job("a", 8, 600),
    job("b", 8, 600, submit=60),
    job("c", 8, 600, submit=120),
    {**job("d", 8, 600, submit=1800), "ext_ml_gpu_type": "nvidia-a100"},
    job("e", 8, 3600, submit=6000),
    job("f", 8, 600, submit=180, ext_ml_priority_class="spot"),
)


def test_deadlines_met_on_a_hand_worked_timeline() -> None:
    (run,) = runs(
        [Design.of("one", 1)], workload(*JOBS), deadlines={"on-demand": "5m"}, reclaim=None, verify=True
    )
    verdict = dict(zip(run.judged["job"], run.judged["deadline"], strict=True))
    assert verdict == {"a": "met", "b": "missed", "c": "missed", "d": "missed", "e": "not due", "f": "none"}
    row = run.row()
    assert (row["deadlines_due"], row["deadlines_met"]) == (4, 1)
    assert row["deadlines_met_share"] == pytest.approx(0.25)
    assert (row["due_on_demand"], row["met_on_demand"], row["due_spot"]) == (4, 1, 0)


def test_a_second_node_meets_the_deadlines_the_first_missed() -> None:
    (run,) = runs([Design.of("two", 2)], workload(*JOBS), deadlines={"on-demand": "5m"}, reclaim=None)
    verdict = dict(zip(run.judged["job"], run.judged["deadline"], strict=True))
    # a and b start on arrival, one per node; c waits for a (until 600 s): done at 1200 > 1020.
    assert [verdict[j] for j in "abcd"] == ["met", "met", "missed", "missed"]


def test_stretch_and_slack_and_the_horizon_rule() -> None:
    jobs = pd.DataFrame(
        {
            "job": ["in-time", "late", "running", "waiting", "ran-before", "no-duration"],
            "priority_class": ["spot"] * 6,
            "submit_s": [0.0, 0.0, 1000.0, 0.0, 0.0, 0.0],
            # due: 0 + 2 x 1000 + 600 = 2600 for the first two
            "work_s": [1000.0, 1000.0, 1000.0, 1000.0, 1000.0, float("inf")],
            "completion_s": [2600.0, 2601.0, None, None, 100.0, None],
            "background": [False, False, False, False, True, False],
        }
    )
    judged = judge(jobs, {"spot": Deadline(stretch=2, slack=600)}, horizon_s=3600)
    # "running" is due at 1000 + 2600 = 3600: at the horizon, so not judged; "waiting" was due at 2600.
    assert list(judged["deadline"]) == ["met", "missed", "not due", "missed", "none", "none"]
    counts = deadline_counts(judged)
    assert counts.loc["total", "due"] == 3 and counts.loc["total", "met"] == 1


def test_a_deadline_is_a_slack_or_a_mapping() -> None:
    assert Deadline.model_validate("30m") == Deadline(slack=1800)
    assert Deadline.model_validate({"stretch": 3}).allowed_s(600) == 1800
    with pytest.raises(ValueError):
        Deadline.model_validate({"stretch": 0.5})


def test_deadlines_are_per_priority_class() -> None:
    with pytest.raises(ValueError, match="per priority class"):
        runs([Design.of("one", 1)], workload(*JOBS), deadlines={"ondemand": "5m"})
