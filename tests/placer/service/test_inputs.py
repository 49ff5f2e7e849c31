"""A placement body's inputs read as ``placer place`` reads its files (``placer/service/inputs.py``)."""

from __future__ import annotations

from placer.service.bodies import PlacementInputs
from placer.service.inputs import placement_inputs
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
