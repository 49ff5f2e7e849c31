"""What a pending Slurm job asks beside resources (``solver/jobs/formats/slurm.py``), read from what a
live Slurm 22.05 printed (``tests/topology/live_slurm.py``, ``start_options``; ``--exclusive``,
``--begin=2030-01-01T00:00:00``, ``--reservation=maint``, ``--contiguous``, all held with ``-H``), in both
forms: ``squeue --json`` and ``scontrol show job -d``. Variations of the same objects check the values that
live run did not print (``--exclusive=user``, ``--oversubscribe``, licenses, ``--prefer``)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs import read_text
from placer.solver.jobs.model import AffinityOperator, LabelRule
from placer.solver.policy import Policy
from placer.solver.reservations import load_reservations
from placer.topology import build_cluster
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
SQUEUE = REAL / "squeue-22.05-options.json"
SHOW_JOB = REAL / "show-job-d-22.05-options.txt"
#: The job ids Slurm gave the jobs of ``start_options`` (squeue --json's ``name`` -> ``job_id``).
IDS = {j["name"]: str(j["job_id"]) for j in json.loads(SQUEUE.read_text())["jobs"]}


def _doc() -> dict[str, Any]:
    return json.loads(SQUEUE.read_text())  # type: ignore[no-any-return]


def _read(doc: dict[str, Any]) -> dict[str, Any]:
    return {r.id: r for r in read_text(json.dumps(doc), source="squeue.json")}


def _job(name: str, **changes: Any) -> Any:
    """The result of pending job ``name`` with its squeue object changed by ``changes``."""
    doc = _doc()
    raw = next(j for j in doc["jobs"] if j["name"] == name)
    raw.update(copy.deepcopy(changes))
    return _read(doc)[IDS[name]]


@pytest.mark.parametrize("path", [SQUEUE, SHOW_JOB], ids=["squeue-json", "show-job-d"])
def test_both_forms_give_the_same_asks(path: Path) -> None:
    read = {r.id: r for r in read_text(path.read_text(), source=path.name)}
    excl, later, resv, plain = (read[IDS[n]].job for n in ("excl", "later", "resv", "plain-a100"))
    assert excl.placement.exclusive_nodes and not plain.placement.exclusive_nodes  # shared "none" / NO
    # --begin: eligible time 2030-01-01T00:00:00 in the controller's zone, later than the submit time.
    assert later.not_before == datetime(2030, 1, 1).astimezone().astimezone(UTC)
    assert excl.not_before is None and plain.not_before is None  # held without --begin: eligible time 0
    assert resv.reservation is not None and resv.reservation.id == "maint" and plain.reservation is None
    contig = read[IDS["contig"]]
    assert not contig.ok and [(e.code, e.path.rsplit(".", 1)[-1]) for e in contig.errors] == [
        ("unsupported", "contiguous")
    ]


def test_an_eligible_time_no_later_than_the_submit_time_is_no_wait() -> None:
    # A job without --begin: Slurm sets its eligible time to its submit time (squeue-22.05.json's job f).
    submitted = _doc()["jobs"][1]["submit_time"]
    assert _job("plain-a100", eligible_time=submitted, submit_time=submitted).job.not_before is None
    begins = _job("plain-a100", eligible_time=submitted + 3600, submit_time=submitted).job
    assert begins.not_before == datetime.fromtimestamp(submitted + 3600, UTC)


@pytest.mark.parametrize("word", ["user", "mcs"])
def test_exclusive_to_a_user_keeps_the_nodes_whole_and_says_so(word: str) -> None:
    r = _job("plain-a100", shared=word)
    assert r.ok and r.job.placement.exclusive_nodes
    assert [(w.code, w.path.rsplit(".", 1)[-1]) for w in r.warnings] == [("unsupported", "shared")]


def test_newer_slurms_exclusive_flags_read_as_22_05s_shared() -> None:
    assert _job("plain-a100", shared=None, exclusive=["true"]).job.placement.exclusive_nodes
    default = _job("plain-a100", shared=None, exclusive=["false"])
    assert not default.job.placement.exclusive_nodes and default.warnings == []  # nothing asked


def test_oversubscribe_places_as_usual_with_a_warning() -> None:
    r = _job("plain-a100", shared="shared")
    assert r.ok and not r.job.placement.exclusive_nodes and r.warnings[0].code == "unsupported"


def test_an_unknown_shared_value_is_refused_naming_the_field() -> None:
    r = _job("plain-a100", shared="sometimes")
    assert not r.ok and [(e.code, e.path.rsplit(".", 1)[-1]) for e in r.errors] == [("enum", "shared")]


def test_licenses_are_read_as_seats_by_name() -> None:
    # squeue --json prints what -L asked as Slurm took it: "matlab:2,ansys" (a count left out is 1).
    assert _job("plain-a100", licenses="matlab:2,ansys").job.licenses == {"matlab": 2, "ansys": 1}
    assert _job("plain-a100", licenses="fluent@db*3").job.licenses == {"fluent@db": 3}
    assert _job("plain-a100", licenses=None).job.licenses == {}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("matlab|ansys", "unsupported"),
        ("matlab:0", "range"),
        ("matlab:two", "malformed"),
        ("a,a:2", "malformed"),
        (5, "type"),
        (["matlab"], "type"),
    ],
)
def test_licenses_placer_cannot_take_are_refused_not_ignored(text: object, code: str) -> None:
    r = _job("plain-a100", licenses=text)
    assert not r.ok and [(e.code, e.path.rsplit(".", 1)[-1]) for e in r.errors] == [(code, "licenses")]


@pytest.mark.parametrize(("per_node", "per_cpu"), [(None, None), (0, None), (0, 0)])
def test_a_job_with_every_nodes_whole_memory_takes_whole_nodes_and_says_so(
    per_node: object, per_cpu: object
) -> None:
    # --mem=0 (and no --mem without DefMemPerCPU): Slurm 22.05's squeue --json prints neither
    # memory_per_node nor memory_per_cpu (its tres_req_str says mem=<the node's RealMemory>), scontrol show
    # job MinMemoryNode=0; the job gets every node's whole memory, so where memory is consumable nothing
    # else fits beside it.
    r = _job("plain-a100", memory_per_node=per_node, memory_per_cpu=per_cpu)
    assert r.ok and r.job.placement.exclusive_nodes
    assert [(w.code, w.path.rsplit(".", 1)[-1]) for w in r.warnings] == [("unsupported", "memory_per_node")]
    asked = _job("plain-a100", memory_per_node=1024, memory_per_cpu=None)
    assert not asked.job.placement.exclusive_nodes and asked.job.tasks[0].memory_gb == 1.0


def test_prefer_is_a_preference_per_feature() -> None:
    job = _job("plain-a100", prefer="ib&nvme").job
    assert job.placement.preferred == [
        LabelRule(key="ib", operator=AffinityOperator.EXISTS, weight=1),
        LabelRule(key="nvme", operator=AffinityOperator.EXISTS, weight=1),
    ]
    r = _job("plain-a100", prefer="ib|nvme")  # an alternative is read past: a preference never blocks
    assert r.ok and r.job.placement.preferred == [] and r.warnings[0].code == "unsupported"


def test_on_the_captured_cluster_both_engines_place_them_where_slurm_ran_them() -> None:
    # Released in the live run, Slurm started excl on gpu02 (gpu01 runs job a) and resv on gpu03 (maint).
    cluster = build_cluster(
        inventory_from_input(json.loads((REAL / "sinfo-22.05-options.json").read_text()), source="sinfo")
    )
    cluster = with_slurm_jobs(cluster, squeue_running(_doc(), source="squeue.json"))
    reservations = load_reservations(
        (REAL / "show-reservation-22.05.txt").read_text(), source="resv.txt", cluster=cluster
    )
    items = list(_read(_doc()).values())
    now = reservations[0].start  # the reservation is held from its start
    for engine in ("greedy", "cpsat"):
        d = place(items, cluster, Policy(engine=engine), now=now, reservations=reservations)
        jobs = [r.job for r in items if r.ok and r.job is not None]
        refused = [r.id for r in items if not r.ok]  # contig
        violations = check(d, jobs, cluster, now=now, reservations=reservations, rejected_ids=refused)
        assert violations == [], engine
        where = {p.job: sorted({r.node for r in p.replicas}) for p in d.placements}
        assert where == {IDS["excl"]: ["gpu02"], IDS["resv"]: ["gpu03"]}, engine
        waiting = {p.job: p.reasons[0].code for p in d.pending}
        assert waiting == {IDS["later"]: "NOT_BEFORE", IDS["plain-a100"]: "INSUFFICIENT_CAPACITY"}, engine


#: Held jobs of another live Slurm 22.05 run (the nodes of ``start_options``: 2 CPUs each, ``TmpDisk`` 0):
#: ``--mem-per-gpu=1000M`` with 2 GPUs, ``--cpus-per-gpu=2`` with 2 GPUs, ``--tmp=100M``, ``-N 1-2`` and
#: ``--mincpus=2``. Released in that run, Slurm gave the first 2000M of memory and the last 2 CPUs (and
#: 200M: 100M per CPU), kept the second pending (4 CPUs on 2-CPU nodes) and the third (BadConstraints:
#: no node has temporary disk).
PER_GPU = {
    "squeue-json": REAL / "squeue-22.05-per-gpu.json",
    "show-job-d": REAL / "show-job-d-22.05-per-gpu.txt",
}


@pytest.mark.parametrize("form", sorted(PER_GPU))
def test_per_gpu_and_per_node_minimums_are_what_slurm_allocates(form: str) -> None:
    path = PER_GPU[form]
    names = {j["name"]: str(j["job_id"]) for j in json.loads(PER_GPU["squeue-json"].read_text())["jobs"]}
    read = {r.id: r for r in read_text(path.read_text(), source=path.name)}
    [mem] = read[names["mempergpu"]].job.tasks
    assert mem.memory_gb * 1024 == pytest.approx(2000) and mem.cpu_cores == 1  # 1000 MB x 2 GPUs
    [cpus] = read[names["cpuspergpu"]].job.tasks
    assert cpus.cpu_cores == 4  # 2 per GPU x 2 GPUs, though squeue says cpus 1 while it is pending
    [tmp] = read[names["tmp"]].job.tasks
    assert tmp.storage_gb * 1024 == pytest.approx(100)
    [least] = read[names["mincpus"]].job.tasks
    assert least.cpu_cores == 2 and least.memory_gb * 1024 == pytest.approx(200)  # 100 MB per CPU
    [ranged] = read[names["range"]].job.tasks
    assert ranged.count == 1  # -N 1-2: the fewest nodes Slurm may give it


def test_on_2_cpu_nodes_without_disk_placer_never_starts_what_slurm_never_starts() -> None:
    doc = json.loads(PER_GPU["squeue-json"].read_text())
    names = {j["name"]: str(j["job_id"]) for j in doc["jobs"]}
    cluster = build_cluster(
        inventory_from_input(json.loads((REAL / "sinfo-22.05-options.json").read_text()), source="sinfo")
    )
    cluster = with_slurm_jobs(cluster, squeue_running(doc, source="squeue.json"))
    items = [
        r
        for r in read_text(json.dumps(doc), source="squeue.json")
        if r.id in {names["cpuspergpu"], names["tmp"]}
    ]
    for engine in ("greedy", "cpsat"):
        d = place(items, cluster, Policy(engine=engine, plan=False))
        assert d.placements == [] and {p.reasons[0].code for p in d.pending} == {"UNSATISFIABLE"}, engine
        assert check(d, [r.job for r in items], cluster) == [], engine


def _partitions(text: str) -> Any:
    from placer.topology.importers.slurm_partitions import parse_slurm_partitions

    return parse_slurm_partitions(text, source="partitions.txt")


def test_a_job_runs_only_in_partitions_that_start_it() -> None:
    from placer.solver.jobs.formats.slurm import with_partition_tiers

    # plain-a100 asks partition gpu; give it two partitions, one that is DOWN.
    doc = _doc()
    raw = next(j for j in doc["jobs"] if j["name"] == "plain-a100")
    raw["partition"] = "maint,gpu"
    table = _partitions(
        "PartitionName=maint Nodes=gpu03 State=DOWN PriorityTier=9\nPartitionName=gpu Nodes=gpu[01-03]\n"
    )
    [r] = [x for x in with_partition_tiers(list(_read(doc).values()), table) if x.id == IDS["plain-a100"]]
    assert r.ok and r.job.priority == 1  # the tier of gpu, the partition left
    assert r.job.placement.required[0] == LabelRule(key="partition/gpu", operator=AffinityOperator.EXISTS)
    assert [(w.code, "PartitionDown" in w.message) for w in r.warnings] == [("limit", True)]
    both_down = _partitions("PartitionName=maint State=DOWN\nPartitionName=gpu State=INACTIVE\n")
    [r] = [x for x in with_partition_tiers(list(_read(doc).values()), both_down) if x.id == IDS["plain-a100"]]
    assert not r.ok and r.errors[-1].code == "limit" and r.errors[-1].message.count("PartitionDown") == 2


def test_an_exclusive_partition_gives_its_jobs_whole_nodes() -> None:
    from placer.solver.jobs.formats.slurm import with_partition_tiers

    table = _partitions("PartitionName=gpu Nodes=gpu[01-03] OverSubscribe=EXCLUSIVE\n")
    read = {r.id: r for r in with_partition_tiers(list(_read(_doc()).values()), table)}
    assert read[IDS["plain-a100"]].job.placement.exclusive_nodes


def test_a_partition_qos_is_named_not_silently_dropped() -> None:
    from placer.solver.jobs.formats.slurm import with_partition_tiers

    # scontrol show partition prints QoS=N/A for none (as the captured fixture does); a partition with a
    # QOS holds its jobs to that QOS's limits, which placer does not read: each job of it says so.
    assert _partitions((REAL / "show-partition-22.05.txt").read_text())["gpu"].qos is None
    table = _partitions("PartitionName=gpu Nodes=gpu[01-03] QoS=part-limits\n")
    assert table["gpu"].qos == "part-limits"
    read = {r.id: r for r in with_partition_tiers(list(_read(_doc()).values()), table)}
    r = read[IDS["plain-a100"]]
    assert r.ok and [(w.code, "part-limits" in w.message) for w in r.warnings] == [("unsupported", True)]


def test_a_node_range_is_placed_on_as_many_nodes_as_fit_up_to_its_maximum() -> None:
    # -N 1-3 with one H100 per node (squeue --json: node_count 1, max_nodes 3; scontrol NumNodes=1-3). Slurm
    # gives as many nodes as it can now up to the maximum (seen on 22.05: -N 2-3 released on three idle
    # nodes ran on all three). The captured cluster's H100 hosts are gpu01 and gpu02 (gpu03 has A100s): two.
    r = _job("plain-a100", node_count=1, max_nodes=3, tres_per_node="gres:gpu:h100:1")
    (group,) = r.job.tasks
    assert (group.count, group.count_range.min, group.count_range.max, group.one_per_node) == (1, 1, 3, True)
    cluster = build_cluster(
        inventory_from_input(json.loads((REAL / "sinfo-22.05-options.json").read_text()), source="sinfo")
    )
    cluster = with_slurm_jobs(cluster, squeue_running(_doc(), source="squeue.json"))
    for engine in ("greedy", "cpsat"):
        d = place([r], cluster, Policy(engine=engine, plan=False))
        assert check(d, [r.job], cluster) == [], engine
        (p,) = d.placements
        assert sorted(rep.node for rep in p.replicas) == ["gpu01", "gpu02"], engine
    fixed = _job("plain-a100", node_count=2, max_nodes=2).job.tasks[0]
    assert fixed.count == 2 and fixed.count_range is None
    text = SHOW_JOB.read_text().replace("NumNodes=1 ", "NumNodes=1-3 ")  # 22.05 prints 1 for -N 1
    read = [x.job for x in read_text(text, source="show-job.txt") if x.ok and x.job is not None]
    ranged = [j.tasks[0].count_range for j in read if j.tasks[0].count_range is not None]
    assert ranged and all((c.min, c.max) == (1, 3) for c in ranged)
