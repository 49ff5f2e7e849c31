"""The checker's TPU rule (13): pod, generation, chips, contiguity with wraparound, whole hosts, cubes.

Facts used (topology catalog, Cloud TPU docs): a v5e pod is a 16x16 mesh that wraps on both full
16-chip axes; a 4x4 v5e mesh does not wrap (partial axes); v5e hosts are 2x2 chip blocks.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import product

from placer.solver.checks import check
from placer.solver.jobs.model import Job, TaskGroup, TpuDemand
from placer.topology import Cluster, Inventory, TpuPodSpec, cluster_of, dgx_h100, tpu_pod
from tests.solver.check_helpers import decision, place, rep, rules

NOW = datetime(2025, 1, 1, tzinfo=UTC)
C = cluster_of(tpu_pod("v5e"), tpu_pod("v5e", shape=(4, 4), name="small"), dgx_h100(2))


def box(xs: range | list[int], ys: range | list[int]) -> list[list[int]]:
    return [[x, y] for x, y in product(xs, ys)]


def tpu_job(job_id: str = "t", topology: tuple[int, ...] | None = (2, 4), **kw: object) -> Job:
    demand = TpuDemand(type=kw.pop("type", "v5e"), topology=topology, chips=kw.pop("chips", None))  # type: ignore[arg-type]
    return Job(id=job_id, tasks=[TaskGroup(tpu=demand)], **kw)  # type: ignore[arg-type]


def tpu_rep(chips: list[list[int]], pod: str = "v5e-pod") -> object:
    return rep(f"{pod}/host-0", tpu_pod=pod, tpu_chips=chips)


def run(chips: list[list[int]], job: Job | None = None, pod: str = "v5e-pod", cluster: Cluster = C) -> list:
    job = job or tpu_job()
    return rules(check(decision(place(job.id, tpu_rep(chips, pod))), [job], cluster, now=NOW))  # type: ignore[arg-type]


def test_contiguous_2x4_in_both_orientations() -> None:
    assert run(box(range(2), range(4))) == []
    assert run(box(range(4), range(2))) == []


def test_2x4_not_contiguous() -> None:
    # whole hosts (2x2 blocks at columns 0-1 and 4-5) but a gap on the y axis
    assert run(box(range(2), [0, 1, 4, 5])) == [("tpu-contiguity", "t", "v5e-pod")]


def test_2x4_wrapping_a_full_v5e_pod_is_fine() -> None:
    assert C.tpu_pod("v5e-pod").wrap == (True, True)
    assert run(box([14, 15, 0, 1], range(2))) == []


def test_2x4_wrapping_a_4x4_v5e_mesh_is_a_violation() -> None:
    assert C.tpu_pod("small").wrap == (False, False)  # partial axes do not wrap
    assert run(box([3, 0], range(4)), pod="small") == [("tpu-contiguity", "t", "small")]
    assert run(box([2, 3], range(4)), pod="small") == []


def test_slice_must_consist_of_whole_hosts() -> None:
    # a 2x2 (one host's worth) straddling two 2x2 hosts: a box, but two partial hosts
    two_by_two = tpu_job(topology=(2, 2))
    assert run(box([1, 2], range(2)), two_by_two) == [("tpu-hosts", "t", "v5e-pod")]
    assert run(box([2, 3], range(2)), two_by_two) == []


def test_sub_host_slice_inside_one_host() -> None:
    assert run(box([0], [0, 1]), tpu_job(topology=(1, 2))) == []


def test_chip_count_only_still_needs_a_box() -> None:
    eight = tpu_job(topology=None, chips=8)
    assert run(box(range(2), range(4)), eight) == []
    assert run(box(range(2), range(2)), eight) == [("tpu-chip-count", "t", "v5e-pod")]


def test_wrong_chip_count_for_topology() -> None:
    vs = run(box(range(2), range(4))[:7])
    assert ("tpu-chip-count", "t", "v5e-pod") in vs


def test_chip_held_by_running_job() -> None:
    busy = C.allocate(
        {"job": "r", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": box(range(2), range(2))}]}
    )
    assert run(box(range(2), range(4)), cluster=busy) == [("tpu-double-booked", "t", "v5e-pod")] * 4
    assert run(box(range(2), range(4, 8)), cluster=busy) == []


def test_two_placements_on_one_chip() -> None:
    a, b = tpu_job("a"), tpu_job("b")
    d = decision(
        place("a", tpu_rep(box(range(2), range(4)))), place("b", tpu_rep(box(range(2), range(2, 6))))
    )
    vs = rules(check(d, [a, b], C, now=NOW))
    assert vs == [("tpu-double-booked", "b", "v5e-pod")] * 4  # chips (0..1, 2..3) are a's


def test_generation_must_match() -> None:
    assert run(box(range(2), range(4)), tpu_job(type="v4")) == [("tpu-pod", "t", "v5e-pod")]


def test_chip_outside_the_mesh_and_listed_twice() -> None:
    vs = run([[0, 0], [0, 0], [16, 0]], tpu_job(topology=None, chips=3))
    assert vs.count(("tpu-chip", "t", "v5e-pod")) == 2


def test_unknown_and_unusable_pod() -> None:
    assert run(box(range(2), range(4)), pod="ghost") == [("tpu-pod", "t", "ghost")]
    down = cluster_of(Inventory(tpu_pods=[TpuPodSpec(name="p", type="v5e", shape=[16, 16], ready=False)]))
    assert run(box(range(2), range(4)), pod="p", cluster=down) == [("tpu-pod", "t", "p")]


def test_tpu_job_on_a_gpu_node() -> None:
    d = decision(place("t", rep("dgx-h100-1")))
    assert rules(check(d, [tpu_job()], C, now=NOW)) == [("accelerator", "t", "dgx-h100-1")]


def test_fixed_slice_is_taken_whole() -> None:
    fixed = cluster_of(tpu_pod("v5e", shape=(4, 4), name="fx", fixed_slice=True))
    whole = tpu_job(topology=(4, 4))
    assert run(box(range(4), range(4)), whole, pod="fx", cluster=fixed) == []
    assert ("tpu-contiguity", "t", "fx") in run(box(range(2), range(4)), pod="fx", cluster=fixed)


def test_3d_v4_slice_inside_one_cube_never_wraps() -> None:
    # A 4x4x4 v4 pod is one cube: a 2x2x2 slice lies inside it without its wrap links (z = 3 and 0 touch
    # only through them), and a gap is no box at all.
    c = cluster_of(tpu_pod("v4", shape=(4, 4, 4)))
    assert c.tpu_pod("v4-pod").wrap == (True, True, True)
    job = tpu_job(topology=(2, 2, 2), type="v4")
    inside = [[x, y, z] for x, y, z in product(range(2), range(2), [1, 2])]
    assert run(inside, job, pod="v4-pod", cluster=c) == []
    wrapped = [[x, y, z] for x, y, z in product(range(2), range(2), [3, 0])]
    assert run(wrapped, job, pod="v4-pod", cluster=c) == [("tpu-cubes", "t", "v4-pod")]
    gap = [[x, y, z] for x, y, z in product(range(2), range(2), [0, 2])]
    assert run(gap, job, pod="v4-pod", cluster=c) == [("tpu-contiguity", "t", "v4-pod")]


def test_v5p_slices_of_a_cube_or_more_are_whole_cubes() -> None:
    # Two 4x4x4 cubes along x (x 0-3 and 4-7). A 4x4x4 slice at x 2-5 is a box of whole hosts, but uses
    # half of each cube; at x 0-3 it is one whole cube. A 2x2x2 slice at x 3-4 crosses the cubes' boundary.
    c = cluster_of(tpu_pod("v5p", shape=(8, 4, 4), name="p"))
    cube = tpu_job(topology=(4, 4, 4), type="v5p")
    straddling = [[x, y, z] for x, y, z in product(range(2, 6), range(4), range(4))]
    assert run(straddling, cube, pod="p", cluster=c) == [("tpu-cubes", "t", "p")]
    aligned = [[x, y, z] for x, y, z in product(range(4), range(4), range(4))]
    assert run(aligned, cube, pod="p", cluster=c) == []
    small = tpu_job(topology=(2, 2, 2), type="v5p")
    across = [[x, y, z] for x, y, z in product([4, 5], range(2), range(2))]
    assert run(across, small, pod="p", cluster=c) == []  # x 4-5: inside the second cube
    across = [[x, y, z] for x, y, z in product([3, 4], range(2), range(2))]
    assert ("tpu-cubes", "t", "p") in run(across, small, pod="p", cluster=c)
