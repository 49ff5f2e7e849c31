"""Slurm's associations (``sacctmgr show assoc tree -P``) as group limits
(``topology/importers/slurm_assoc.py``). The real files are what Slurm 22.05's ``sacctmgr`` printed for the
live test's accounts (``tests/topology/live_slurm.QOS``, ``VISION``): account ``vision``, under ``ml``,
holds 4 GPUs at most."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.solver.jobs import read_text
from placer.solver.jobs.formats.slurm import with_assoc_limits
from placer.topology import RunningJob
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_assoc import parse_slurm_assoc, read_assoc_file, with_assoc_groups

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
HEAD = "Cluster|Account|User|Partition|GrpJobs|GrpTRES|MaxJobs|MaxTRES"


def test_the_tree_as_slurm_prints_it() -> None:
    table = read_assoc_file(str(REAL / "sacctmgr-show-assoc-tree-22.05.txt"))
    assert {a: t.parent for a, t in table.accounts.items()} == {"root": None, "ml": "root", "vision": "ml"}
    assert sorted(table.users) == [("ml", "root", None), ("root", "root", None), ("vision", "root", None)]
    assert table.limits("vision", "root", "gpu") == [("assoc/vision", None, 4)]
    assert table.limits("ml", "root", "gpu") == []


def test_without_the_tree_an_account_limit_is_refused_naming_the_account() -> None:
    # vision's limit counts the jobs of the accounts under it, which the flat form does not say.
    with pytest.raises(TopologyError) as e:
        read_assoc_file(str(REAL / "sacctmgr-show-assoc-flat-22.05.txt"))
    assert "account vision" in str(e.value) and "sacctmgr show assoc tree -P" in str(e.value)


def test_a_parent_name_column_says_the_same_as_the_tree() -> None:
    text = (
        "Cluster|Account|User|Partition|ParentName|GrpJobs|GrpTRES|MaxJobs\n"
        "c|root||||||\nc|ml|||root||gres/gpu=12|\nc|vision|||ml|3|gres/gpu=4|\nc|vision|ana||||||\n"
    )
    table = parse_slurm_assoc(text, source="assoc.txt")
    assert table.limits("vision", "ana", None) == [("assoc/vision", 3, 4), ("assoc/ml", None, 12)]


def test_users_partitions_and_the_maxjobs_a_user_row_shows() -> None:
    # ana may run 2 jobs under vision (MaxJobs, as the user row shows it, inherited or not) and 1 GPU job
    # in partition debug; bob has no limit of his own. Every account above counts too.
    rows = [
        "c|root||||||",
        "c| vision|||||2|",
        "c|  vision|ana||1|gres/gpu=6|2|gres/gpu=8",
        "c|  vision|ana|debug||gres/gpu=1||",
        "c|  vision|bob|||||",
    ]
    table = parse_slurm_assoc("\n".join([HEAD, *rows]) + "\n", source="assoc.txt")
    assert table.limits("vision", "ana", "gpu") == [("assoc/vision/user/ana", 1, 6)]
    assert table.limits("vision", "ana", "debug") == [("assoc/vision/user/ana/partition/debug", None, 1)]
    assert table.limits("vision", "bob", None) == []
    # A per-job limit: ana's own; bob, with none of his own, takes none (vision sets none either).
    assert (
        table.per_job("vision", "ana", "gpu") == (8, None) and table.unmodelled("vision", "ana", "gpu") == ()
    )
    assert table.per_job("vision", "bob", None) == (None, None)
    with pytest.raises(TopologyError) as e:
        table.limits("vision", "carl", None, item="job 9")
    assert "job 9" in str(e.value) and "no association of user 'carl' under account 'vision'" in str(e.value)


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        (["a|root||||||", "b|root||||||"], "associations of several clusters (a, b)"),
        (["c|root|||ten|||"], "GrpJobs 'ten' is not a whole number"),
        (["c|root||||gres/gpu=x||"], "GrpTRES gres/gpu='x' is not a whole number"),
        (["c|root||||||", "c|root||||||"], "the account is given twice"),
    ],
)
def test_a_bad_table_is_refused_naming_what(rows: list[str], said: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_slurm_assoc("\n".join([HEAD, *rows]) + "\n", source="assoc.txt")
    assert said in str(e.value)


def test_pending_and_running_jobs_carry_their_associations_groups() -> None:
    table = read_assoc_file(str(REAL / "sacctmgr-show-assoc-tree-22.05.txt"))
    doc = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "jobs": [
            {
                "job_id": 9,
                "job_state": "PENDING",
                "user_name": "root",
                "account": "vision",
                "node_count": 1,
                "cpus": 1,
            },
            {
                "job_id": 10,
                "job_state": "PENDING",
                "user_name": "root",
                "account": "nlp",
                "node_count": 1,
                "cpus": 1,
            },
        ],
    }
    nine, ten = with_assoc_limits(read_text(json.dumps(doc), source="q.json"), table)
    assert [(lim.group, lim.max_running, lim.max_gpus) for lim in nine.job.limits] == [
        ("assoc/vision", None, 4)
    ]
    # An account with no association: Slurm would not run the job; it is rejected, naming the field.
    assert not ten.ok and [e.path for e in ten.errors] == ["jobs[1].account"]
    labels = {"slurm_user": "root", "slurm_account": "vision", "slurm_partition": "gpu"}
    rj = RunningJob(job="6", labels=labels, replicas=[{"node": "gpu04", "gpus": [0, 1]}])
    (ran,) = with_assoc_groups([rj], table, source="squeue.json")
    assert ran.limit_groups == ["assoc/vision"]


def test_a_job_asking_more_gpus_than_its_association_lets_one_job_have_is_rejected() -> None:
    # vision lets one job have 4 GPUs (MaxTRES, inherited by ana, who sets none) and 2 per node.
    rows = ["c|root|||||||", "c| vision||||||gres/gpu=4|gres/gpu=2", "c|  vision|ana|||||||"]
    table = parse_slurm_assoc("\n".join([HEAD + "|MaxTRESPerNode", *rows]) + "\n", source="assoc.txt")
    assert table.per_job("vision", "ana", None) == (4, 2)

    def job(job_id: int, nodes: int, gpus: int) -> dict:  # type: ignore[type-arg]
        return {
            "job_id": job_id,
            "job_state": "PENDING",
            "user_name": "ana",
            "account": "vision",
            "node_count": nodes,
            "cpus": nodes,
            "tres_per_node": f"gres:gpu:{gpus}",
        }

    doc = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "jobs": [job(1, 2, 2), job(2, 3, 2), job(3, 1, 3)],
    }
    fits, too_many, too_dense = with_assoc_limits(read_text(json.dumps(doc), source="q.json"), table)
    assert fits.ok
    assert not too_many.ok and "asks 6 GPUs" in too_many.errors[0].message
    assert "AssocMaxGRESPerJob" in too_many.errors[0].message and too_many.errors[0].code == "limit"
    assert not too_dense.ok and "3 GPUs per node" in too_dense.errors[0].message
