"""TPU slices (OJS ML §3.3 ``ext_ml_tpu_type``/``ext_ml_tpu_topology``; placement-rules.md rule 13): a
contiguous box of the requested shape in a pod of the requested generation, chips nobody else holds.

The box test below is written from the rule, independently of ``placer.topology.tpu``: per axis the chips'
coordinates form one run of consecutive values (cyclically when the pod wraps on that axis), the runs'
lengths are the requested shape in some order, and the chip count is their product.
"""

from __future__ import annotations

from itertools import product

from placer.solver.decision import Decision
from placer.solver.jobs import read_text
from placer.solver.jobs.model import Job, TaskGroup, TpuDemand
from placer.topology import Cluster, cluster_of, dgx_h100, tpu_pod
from tests.solver.conftest import Solve, reason_codes


def tpu_job(
    job_id: str, shape: tuple[int, ...] | None = None, *, gen: str = "v5e", chips: int | None = None
) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(tpu=TpuDemand(type=gen, topology=shape, chips=chips))])


def run_length(values: set[int], size: int, wraps: bool) -> int | None:
    """Length of the run of consecutive values (mod ``size`` when ``wraps``), None when not one run."""
    n = len(values)
    starts = range(size) if wraps else range(size - n + 1)
    for s in starts:
        if {(s + i) % size for i in range(n)} == values:
            return n
    return None


def box_extents(decision: Decision, job: str, cluster: Cluster) -> tuple[str, tuple[int, ...]]:
    """(pod, sorted extents) of a placed single-replica TPU job; fails unless its chips form a box."""
    p = decision.placement_of(job)
    assert p is not None and len(p.replicas) == 1
    rep = p.replicas[0]
    assert rep.tpu_pod is not None
    pod = cluster.tpu_pod(rep.tpu_pod)
    chips = {tuple(c) for c in rep.tpu_chips}
    assert len(chips) == len(rep.tpu_chips), "a chip is listed twice"
    assert all(pod.contains(c) for c in chips)
    extents = []
    for axis, size in enumerate(pod.shape):
        length = run_length({c[axis] for c in chips}, size, pod.wrap[axis])
        assert length is not None, f"axis {axis} is not contiguous: {sorted(chips)}"
        extents.append(length)
    n = 1
    for e in extents:
        n *= e
    assert n == len(chips), "the chips do not fill their bounding box"
    return rep.tpu_pod, tuple(sorted(extents))


def test_2x4_slice_on_v5e_is_a_contiguous_box(solve: Solve) -> None:
    c = cluster_of(tpu_pod("v5e"))
    d = solve([tpu_job("t", (2, 4))], c)
    assert box_extents(d, "t", c) == ("v5e-pod", (2, 4))


def test_chip_count_without_topology_gets_an_offered_shape(solve: Solve) -> None:
    # 8 v5e chips: the squarest offered 2-D shape is 2x4 (solver/tpu_shapes.py, Google Cloud's v5e list).
    c = cluster_of(tpu_pod("v5e"))
    d = solve([tpu_job("t", chips=8)], c)
    assert box_extents(d, "t", c) == ("v5e-pod", (2, 4))


def test_ojs_tpu_document(solve: Solve) -> None:
    doc = '{"id": "o", "ext_ml_accelerator": "tpu", "ext_ml_tpu_type": "v5e", "ext_ml_tpu_topology": "4x4"}'
    c = cluster_of(tpu_pod("v5e"), dgx_h100(1))
    d = solve(read_text(doc), c)
    assert box_extents(d, "o", c) == ("v5e-pod", (4, 4))


def test_4x4_in_a_half_used_pod_avoids_the_used_half(solve: Solve) -> None:
    # Chips with x < 8 (128 of 256) run another job: the 4x4 slice must lie in x >= 8.
    used = [[x, y] for x, y in product(range(8), range(16))]
    c = cluster_of(tpu_pod("v5e")).with_allocations(
        [{"job": "half", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": used}]}]
    )
    d = solve([tpu_job("t", (4, 4))], c)
    assert box_extents(d, "t", c) == ("v5e-pod", (4, 4))
    chips = d.placement_of("t").replicas[0].tpu_chips  # type: ignore[union-attr]
    assert all(x >= 8 for x, _ in chips)


def test_two_slices_do_not_overlap(solve: Solve) -> None:
    c = cluster_of(tpu_pod("v5e", shape=(4, 4)))
    d = solve([tpu_job("a", (2, 4)), tpu_job("b", (2, 4))], c)
    a = {tuple(x) for x in d.placement_of("a").replicas[0].tpu_chips}  # type: ignore[union-attr]
    b = {tuple(x) for x in d.placement_of("b").replicas[0].tpu_chips}  # type: ignore[union-attr]
    assert len(a) == len(b) == 8 and not a & b


def test_no_free_slice_is_no_tpu_slice(solve: Solve) -> None:
    # A 4x4 pod with one chip busy: a 4x4 slice fits the empty pod, not the current one.
    c = cluster_of(tpu_pod("v5e", shape=(4, 4))).with_allocations(
        [{"job": "r", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": [[0, 0]]}]}]
    )
    d = solve([tpu_job("t", (4, 4))], c)
    assert d.placement_of("t") is None
    assert reason_codes(d, "t") == ["NO_TPU_SLICE"]
    assert "4x4" in d.pending[0].reasons[0].message


def _rejected_for_topology(d: Decision, job: str) -> str:
    """OJS ML §3.3: "Backends that cannot satisfy the topology requirement MUST reject the job": the job
    is in ``rejected`` (not pending) with the ``tpu_topology`` error; its message is returned."""
    [r] = [r for r in d.rejected if r.job == job]
    [e] = r.errors
    assert (e["code"], e["path"]) == ("tpu_topology", "ext_ml_tpu_topology")
    assert d.placement_of(job) is None and all(p.job != job for p in d.pending)
    return str(e["message"])


def test_wrong_generation_is_rejected(solve: Solve) -> None:
    d = solve([tpu_job("t", (2, 4), gen="v5p")], cluster_of(tpu_pod("v5e")))
    assert "v5p" in _rejected_for_topology(d, "t")


def test_slice_bigger_than_the_pod_is_rejected(solve: Solve) -> None:
    d = solve([tpu_job("t", (8, 8))], cluster_of(tpu_pod("v5e", shape=(4, 4))))
    assert "8x8" in _rejected_for_topology(d, "t")


def test_a_3x3_slice_no_pod_offers_is_rejected(solve: Solve) -> None:
    d = solve([tpu_job("t", (3, 3))], cluster_of(tpu_pod("v5e", shape=(16, 16))))
    _rejected_for_topology(d, "t")


def test_a_chip_count_only_job_that_cannot_fit_waits_unsatisfiable(solve: Solve) -> None:
    """Only a stated topology is rejected (§3.3); a chip count alone waits like any other job."""
    job = Job(id="t", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", chips=512))])
    d = solve([job], cluster_of(tpu_pod("v5e", shape=(16, 16))))
    assert reason_codes(d, "t") == ["UNSATISFIABLE"]


def test_tpu_job_never_on_gpu_nodes(solve: Solve) -> None:
    d = solve([tpu_job("t", (2, 4))], cluster_of(dgx_h100(2)))
    _rejected_for_topology(d, "t")


def test_3d_slice_on_v5p(solve: Solve) -> None:
    c = cluster_of(tpu_pod("v5p", shape=(4, 4, 4)))
    d = solve([tpu_job("t", (2, 2, 4), gen="v5p")], c)
    assert box_extents(d, "t", c) == ("v5p-pod", (2, 2, 4))
