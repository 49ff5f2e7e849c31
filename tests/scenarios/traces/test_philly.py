"""Philly extract -> jobs with submit times, durations and gangs; bad rows -> structured errors."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise

import pytest

from placer.scenarios.traces import traces_dir
from placer.scenarios.traces.philly import parse_philly
from placer.scenarios.traces.table import TraceError

TEXT = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,66.0,16,1056.0,11cb48
2017-10-09 06:13:03,2951.0,1,2951.0,6214e9
2017-10-09 06:13:03,10.5,12,126.0,6214e9
2017-10-09 08:00:00,100.0,4,400.0,6c71a0
"""


def test_jobs_in_submit_order_with_durations() -> None:
    jobs = parse_philly(TEXT, "philly.csv")
    # Sorted by submit time, then file line: lines 3 and 4 tie at 06:13:03.
    assert [j.id for j in jobs] == ["philly-3", "philly-4", "philly-2", "philly-5"]
    assert jobs[0].submit_time == datetime(2017, 10, 9, 6, 13, 3, tzinfo=UTC)
    assert [j.duration_s for j in jobs] == [2951.0, 10.5, 66.0, 100.0]
    assert [j.queue for j in jobs] == ["6214e9", "6214e9", "11cb48", "6c71a0"]


def test_gangs_split_into_equal_parts_of_at_most_a_node() -> None:
    by = {j.id: j.tasks[0] for j in parse_philly(TEXT, "philly.csv")}
    sixteen, twelve, four, one = by["philly-2"], by["philly-4"], by["philly-5"], by["philly-3"]
    assert (sixteen.count, sixteen.gpu.count, sixteen.one_per_node) == (2, 8, True)  # 16 = 2 x 8
    assert (twelve.count, twelve.gpu.count, twelve.one_per_node) == (2, 6, True)  # 12 = 2 x 6
    assert (four.count, four.gpu.count, four.one_per_node) == (1, 4, False)
    assert (one.count, one.gpu.count) == (1, 1)


def test_cpu_memory_and_type_choices() -> None:
    jobs = parse_philly(TEXT, "philly.csv", gpu_type="nvidia-v100", cpu_per_gpu=2, memory_gb_per_gpu=10)
    t = {j.id: j.tasks[0] for j in jobs}["philly-2"]
    assert (t.cpu_cores, t.memory_gb, t.gpu.types) == (16.0, 80.0, ["nvidia-v100"])  # per 8-GPU replica
    default = parse_philly(TEXT, "philly.csv")[0].tasks[0]
    assert (default.cpu_cores, default.memory_gb, default.gpu.types) == (4.0, 32.0, [])


def test_limit_keeps_the_earliest() -> None:
    assert [j.id for j in parse_philly(TEXT, "p.csv", limit=2)] == ["philly-3", "philly-4"]


def test_bad_rows_name_line_and_column() -> None:
    text = "timestamp,duration,num_gpus\nsoon,1,1\n2017-10-09 06:13:03,-4,1\n2017-10-09 06:13:03,4,0\n"
    with pytest.raises(TraceError) as e:
        parse_philly(text, "p.csv")
    assert [(p.line, p.column) for p in e.value.problems] == [
        (2, "timestamp"),
        (3, "duration"),
        (4, "num_gpus"),
    ]
    with pytest.raises(TraceError) as e:
        parse_philly("timestamp,num_gpus\n2017-10-09 06:13:03,1\n", "p.csv")
    assert [(p.line, p.column) for p in e.value.problems] == [(1, "duration")]


def test_real_philly_slice() -> None:
    path = traces_dir() / "philly" / "philly.csv"
    if not path.is_file():
        pytest.skip(f"Philly trace not found at {path}; set PLACER_SHARED to the shared/ folder")
    lines = path.read_text().splitlines()[:300]
    jobs = parse_philly("\n".join(lines) + "\n", "philly slice")
    assert len(jobs) == 299
    assert all(a.submit_time <= b.submit_time for a, b in pairwise(jobs))
    assert all(j.duration_s is not None and j.total_gpus >= 1 for j in jobs)
