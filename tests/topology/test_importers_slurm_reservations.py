"""``scontrol show reservation`` read as placer reservations (``topology/importers/slurm_reservations.py``,
through ``placer.solver.reservations.load_reservations``). The fixture is what a live Slurm 22.05 printed
for ``scontrol create reservation reservationname=maint nodes=gpu03 starttime=now duration=120
users=root`` (``tests/topology/live_slurm.py``, ``start_options``); variations of it check the rest."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from placer.solver.jobs import JobValidationError
from placer.solver.reservations import load_reservations
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_reservations import is_show_reservation_text, slurm_reservations

TEXT = (Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "show-reservation-22.05.txt").read_text()


def test_a_reservation_holds_its_nodes_whole_from_its_start_to_its_end() -> None:
    assert is_show_reservation_text(TEXT)
    [r] = load_reservations(TEXT, source="resv.txt")
    assert r.id == "maint" and r.nodes == ["gpu03"] and r.gpus == {}
    # StartTime=2026-11-27T17:36:24 in the controller's zone (this host's), 2 hours long.
    assert r.start == datetime(2026, 11, 27, 17, 36, 24).astimezone()
    assert r.end - r.start == timedelta(hours=2)


def test_none_in_the_system_is_no_reservation() -> None:
    assert load_reservations("No reservations in the system\n", source="resv.txt") == []


def test_several_records_and_a_hostlist() -> None:
    two = TEXT + TEXT.replace("maint", "train").replace("Nodes=gpu03", "Nodes=gpu[01-02]")
    out = slurm_reservations(two, source="resv.txt")
    assert [(r["id"], r["nodes"]) for r in out] == [("maint", ["gpu03"]), ("train", ["gpu01", "gpu02"])]


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (("Flags=SPEC_NODES", "Flags=SPEC_NODES,FLEX"), "Flags"),
        (("Flags=SPEC_NODES", "Flags=MAGNETIC"), "Flags"),
        (("Nodes=gpu03", "Nodes=(null)"), "Nodes"),
        (("StartTime=2026-11-27T17:36:24", "StartTime=soon"), "StartTime"),
    ],
)
def test_what_placer_cannot_represent_is_refused_naming_the_key(change: tuple[str, str], key: str) -> None:
    with pytest.raises(TopologyError) as e:
        slurm_reservations(TEXT.replace(*change), source="resv.txt")
    assert [p.message.split("=", 1)[0] for p in e.value.problems] == [key]
    with pytest.raises(JobValidationError) as v:  # through the reservations file: a structured error
        load_reservations(TEXT.replace(*change), source="resv.txt")
    assert [i.code for i in v.value.issues] == ["unsupported"]


def test_a_reservation_of_some_cores_is_refused_when_the_nodes_cores_are_known() -> None:
    # CoreCnt=2: all of gpu03 if it has 2 cores (as in the live run), some of it if it has 8.
    assert slurm_reservations(TEXT, source="resv.txt", cores_of=lambda n: 2)
    with pytest.raises(TopologyError, match="CoreCnt"):
        slurm_reservations(TEXT, source="resv.txt", cores_of=lambda n: 8)
