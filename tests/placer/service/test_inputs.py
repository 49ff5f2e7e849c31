"""A placement body's inputs read as ``placer place`` reads its files (``placer/service/inputs.py``)."""

from __future__ import annotations

import json

import pytest

from placer.service.bodies import PlacementInputs
from placer.service.errors import ApiError
from placer.service.inputs import inputs_of, placement_inputs
from placer.service.limits import Limits
from placer.topology.load import load_cluster
from tests.solver.jobs.test_kueue import NODES, RUNNING, _research_pod, _with_local_queue


def test_running_pods_of_a_shared_kueue_cluster_queue_are_in_its_queue() -> None:
    # The body's queue_config is Kueue's List with team-a-cq shared by ml/team-a and research/team-b: the
    # stored cluster's running ml/llm-train (ml/team-a) and the body's research pod both count in team-a-cq.
    body = PlacementInputs.model_validate(
        {"jobs": [_research_pod()], "queue_config": _with_local_queue("research", "team-b")}
    )
    cluster = load_cluster(NODES, pods=RUNNING)
    ins = placement_inputs(body, cluster, Limits())
    assert ins.cluster.running_job("ml/llm-train").queue == "team-a-cq"
    (result,) = ins.jobs
    assert result.job.queue == "team-a-cq"
    assert set(ins.queues) == {"team-a-cq"}


def _slurm_body(**extra: object) -> dict[str, object]:
    from pathlib import Path

    slurm = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
    squeue = json.loads((slurm / "squeue-22.05-options.json").read_text())
    cluster = json.loads((slurm / "sinfo-22.05-options.json").read_text())
    return {"cluster": cluster, "jobs": [squeue], "running": squeue, **extra}


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ({"running": {}}, "running"),  # neither envelopes nor what Slurm prints
        ({"slurm_partitions": "PartitionName=gpu PriorityTier=high\n"}, "slurm_partitions"),
        ({"slurm_preempt_mode": "requeue"}, "slurm_preempt_mode"),  # without slurm_qos
        (
            {"slurm_qos": "Name|Preempt|PreemptMode\nnormal||cluster\n", "slurm_qos_limits": "x"},
            "slurm_qos_limits",
        ),
    ],
)
def test_slurm_fields_that_cannot_be_read_are_a_422_naming_them(extra: dict[str, object], path: str) -> None:
    with pytest.raises(ApiError) as e:
        inputs_of(_slurm_body(**extra))
    assert e.value.status == 422 and e.value.errors[0]["path"].startswith(path)


def test_slurms_running_jobs_replace_the_anonymous_ones_and_its_pending_jobs_are_read() -> None:
    ins = inputs_of(_slurm_body())
    running = {rj.labels.get("slurm_job_name") for rj in ins.cluster.running_jobs()}
    assert running == {"a"}  # job a by its Slurm id, not an anonymous allocation of gpu01
    assert {r.id for r in ins.jobs} == {"2", "3", "4", "5", "6"}


def test_a_kueue_job_may_name_the_sites_own_rack_label_given_as_topology_labels() -> None:
    # The body's topology_labels is placer place's --topology-labels: the kubectl node list's racks and
    # the Kueue Job's required topology both read example.com/rack; without it the Job is refused.
    from placer.service.bodies import PlacementRequest
    from placer.solver.engine import place
    from tests.topology.test_importers_kubernetes_levels import RACKS, _nodes, _site_job

    job = _site_job({"kueue.x-k8s.io/podset-required-topology": "example.com/rack"})
    body = {
        "cluster": _nodes("example.com/rack"),
        "jobs": [job],
        "topology_labels": {"example.com/rack": "rack"},
    }
    ins = inputs_of(body)
    assert [n.rack for n in ins.cluster.nodes] == list(RACKS.values())
    [r] = ins.jobs
    assert r.ok and r.job is not None and r.job.placement.topology_scope == "rack"
    [p] = place(ins.valid_jobs, ins.cluster).placements
    assert len({RACKS[rep.node] for rep in p.replicas}) == 1
    assert inputs_of({**body, "topology_labels": None}).rejected_ids == ["ml/t"]
    with pytest.raises(ValueError):  # a level placer does not have: the body is refused (422 over HTTP)
        PlacementRequest.model_validate({**body, "topology_labels": {"example.com/rack": "planet"}})
