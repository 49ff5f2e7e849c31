"""``placer place --output slurm``: the scontrol commands that apply a decision to held Slurm jobs
(``placer/cli/slurm_apply.py``). The live test (``tests/topology/test_importers_slurm_live.py``) runs
such a script on a real Slurm; these check each rule on hand-made decisions."""

from __future__ import annotations

import shlex

from placer.cli.slurm_apply import slurm_script
from placer.solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import Job


def _placed(job: str, *nodes: str) -> JobPlacement:
    return JobPlacement(job=job, replicas=[ReplicaPlacement(node=n, gpus=[0]) for n in nodes])


def _commands(text: str) -> list[list[str]]:
    return [shlex.split(line) for line in text.splitlines() if line and not line.startswith("#")]


def test_a_placed_job_is_pinned_to_every_node_then_released_only_if_that_worked() -> None:
    d = Decision(placements=[_placed("12", "gpu01", "gpu02")])
    text, skipped = slurm_script(d, [Job(id="12", source_format="slurm")], set())
    assert skipped == []
    cmds = _commands(text)
    assert ["set", "-u"] in cmds
    update = next(c for c in cmds if c[:2] == ["scontrol", "update"])
    assert update == [
        "scontrol",
        "update",
        "JobId=12",
        "NumNodes=2",
        "NodeList=gpu01,gpu02",
        "&&",
        "scontrol",
        "release",
        "12",
    ]


def test_an_eviction_signals_waits_then_requeues_held_before_any_release() -> None:
    d = Decision(
        placements=[_placed("5", "gpu01")],
        preemptions=[
            Eviction(job="2", for_=["5"], grace_period_s=45),
            Eviction(job="3", for_=["5"], grace_period_s=0),
        ],
    )
    text, _ = slurm_script(d, [Job(id="5", source_format="slurm")], {"2", "3"})
    cmds = _commands(text)
    heads = [" ".join(c[:2]) for c in cmds]
    assert cmds[heads.index("scancel --signal=TERM")] == ["scancel", "--signal=TERM", "--full", "2"]
    assert ["sleep", "45"] in cmds and ["scontrol", "requeuehold", "2"] in cmds
    assert ["scontrol", "requeuehold", "3"] in cmds and [
        "scancel",
        "--signal=TERM",
        "--full",
        "3",
    ] not in cmds
    assert heads.index("scontrol requeuehold") < heads.index("scontrol update")  # room first, then the job


def test_what_is_not_slurms_is_named_not_applied() -> None:
    d = Decision(
        placements=[_placed("ojs-1", "gpu01"), _placed("7", "bad node")],
        preemptions=[Eviction(job="99", for_=["7"])],
    )
    jobs = [Job(id="ojs-1", source_format="ojs"), Job(id="7", source_format="slurm")]
    text, skipped = slurm_script(d, jobs, {"2"})
    assert [c for c in _commands(text) if c[0] != "set"] == []
    assert skipped == [
        "99: to evict, but it is not a running Slurm job; not requeued",
        "ojs-1: placed, but it is not a pending Slurm job (ojs); not applied",
        "7: node name 'bad node' cannot be in a Slurm NodeList; not applied",
    ]
