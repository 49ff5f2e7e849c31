"""Free TPU slices: counts worked out by hand for empty and half-used pods, orientation, wraparound,
host alignment and fixed slices."""

from __future__ import annotations

import pytest

from placer.topology import Cluster, TopologyError, cluster_of, count_free_slices, free_slices, tpu_pod


def _chips(x_range: range, y_range: range) -> list[list[int]]:
    return [[x, y] for x in x_range for y in y_range]


def _hold(cluster: Cluster, pod: str, chips: list[list[int]], job: str = "j") -> Cluster:
    return cluster.allocate({"job": job, "replicas": [{"tpu_pod": pod, "tpu_chips": chips}]})


def test_2x4_in_empty_v5e_pod() -> None:
    c = cluster_of(tpu_pod("v5e"))
    # 16x16 mesh, hosts are 2x2 blocks -> an 8x8 host grid; both axes are full length 16, so both wrap.
    # A 2x4 slice is 1x2 hosts.  Orientation 2x4: 8 x-origins * 8 y-origins (wrapping, every even y) = 64.
    # Orientation 4x2: 8 * 8 = 64 likewise.  Total 128.
    assert count_free_slices(c, "2x4") == 128
    slices = free_slices(c, "2x4")
    assert {s.shape for s in slices} == {(2, 4), (4, 2)}
    assert all(s.origin[0] % 2 == 0 and s.origin[1] % 2 == 0 for s in slices)  # host-aligned
    assert all(s.size == 8 and len(set(s.chips)) == 8 for s in slices)


def test_2x4_in_half_used_v5e_pod() -> None:
    c = _hold(cluster_of(tpu_pod("v5e")), "v5e-pod", _chips(range(8), range(16)))
    # Columns x = 0..7 (128 chips) are held; x = 8..15 free = host columns 4..7, all 8 host rows.
    # 2x4 (1 host wide in x, 2 in y): x-origins 4,5,6,7 (4) * y-origins 0..7 wrapping (8) = 32.
    # 4x2 (2 hosts wide in x, 1 in y): x-origins 4,5,6 (3; origin 7 would wrap onto held x=0) * 8 = 24.
    # Total 32 + 24 = 56.
    assert c.free_tpu_chips("v5e-pod") == 128
    assert count_free_slices(c, "2x4") == 56


def test_v5e_wraparound_across_the_edge() -> None:
    c = _hold(cluster_of(tpu_pod("v5e")), "v5e-pod", _chips(range(16), range(2, 14)))
    # Rows y = 2..13 held; free rows are 14, 15, 0, 1 = host rows 7 and 0, adjacent only through the wrap.
    # A 4x4 slice (2x2 hosts) must take host rows 7,0: 1 y-origin * 8 x-origins (x wraps too) = 8.
    slices = free_slices(c, "4x4")
    assert len(slices) == 8
    assert all(s.origin[1] == 14 and s.crosses_edge for s in slices)
    assert set(slices[0].chips) >= {(slices[0].origin[0], 15), (slices[0].origin[0], 0)}


def test_no_wrap_on_partial_v5e_mesh() -> None:
    c = _hold(cluster_of(tpu_pod("v5e", shape=(8, 8))), "v5e-pod", _chips(range(8), range(2, 6)))
    # An 8x8 mesh is not full length on either axis, so it does not wrap: free rows 6,7 and 0,1 are not
    # adjacent and no 4x4 fits (it needs 4 consecutive free rows).
    assert c.tpu_pod("v5e-pod").wrap == (False, False)
    assert count_free_slices(c, "4x4") == 0
    # 2x4 / 4x2: rows 0-1 and 6-7 each take a 4x2 band: x-origins 0,2,4 (3) per band * 2 bands = 6 (4x2);
    # 2x4 needs 4 free rows in y -> 0.  Total 6.
    assert count_free_slices(c, "2x4") == 6


def test_orientation_distinct_shapes_only() -> None:
    c = cluster_of(tpu_pod("v5e", shape=(4, 8)))
    # 4x8 mesh (no wrap), hosts 2x2 -> 2x4 host grid.
    # "4x4" = 2x2 hosts: x-origins 1 (0), y-origins 0,2,4 -> 3.
    assert count_free_slices(c, "4x4") == 3
    # "2x4" on the same mesh: 2x4 orientation: x 0,2 (2) * y 0,2,4 (3) = 6; 4x2: x 0 (1) * y 0,2,4,6 (4) = 4.
    assert count_free_slices(c, "2x4") == 10


def test_host_alignment() -> None:
    c = _hold(cluster_of(tpu_pod("v5e")), "v5e-pod", [[1, 1]])
    # One chip held kills its host: 64 hosts - 1 = 63 free 2x2 slices (unaligned 2x2 boxes are not slices)
    assert count_free_slices(c, "2x2") == 63
    assert count_free_slices(c, "1x1") == 255  # single-chip slices may use the held host's other chips


def test_v4_full_torus_and_small_slices() -> None:
    c = cluster_of(tpu_pod("v4", shape=(4, 4, 4)))
    pod = c.tpu_pod("v4-pod")
    assert pod.wrap == (True, True, True)  # 4x4x4 and larger: full torus
    whole = free_slices(c, "4x4x4")
    assert len(whole) == 1 and whole[0].wrap == (True, True, True)
    # A slice smaller than the cube lies inside it: 2x2x2 = 1x1x2 hosts (hosts are 2x2x1), x-origins 0,2
    # (2) * y 0,2 (2) * z-origins 0,1,2 (3) = 12 in the empty cube, none with wraparound.
    small = free_slices(c, "2x2x2")
    assert len(small) == 12 and all(s.wrap == (False, False, False) for s in small)
    # Hold z = 1 and 2 everywhere: free z-planes 3 and 0 touch only through the cube's wrap links, which a
    # sub-cube slice never uses, so no 2x2x2 fits.
    held = [[x, y, z] for x in range(4) for y in range(4) for z in (1, 2)]
    assert free_slices(_hold(c, "v4-pod", held), "2x2x2") == []


def test_v4_small_mesh_does_not_wrap() -> None:
    c = cluster_of(tpu_pod("v4", shape=(2, 2, 4)))
    assert c.tpu_pod("v4-pod").wrap == (False, False, False)
    # 2x2x2 in a 2x2x4 mesh without wrap: z-origins 0,1,2 (3); "2x2" pads to 2x2x1 -> 4 hosts
    assert count_free_slices(c, "2x2x2") == 3
    assert count_free_slices(c, "2x2") == 4


def test_v5p_16x16x24() -> None:
    c = cluster_of(tpu_pod("v5p", shape=(16, 16, 24)))
    # 4 x 4 x 6 = 96 cubes of 4x4x4; a 4x4x4 slice is one whole cube: 96
    assert count_free_slices(c, "4x4x4") == 96
    # 4x4x8 (two cubes) has 3 orientations, none spans a whole axis; cube-aligned origins on the torus:
    # (4,4,8): 4 * 4 * 6 = 96; (4,8,4): 4 * 4 * 6 = 96; (8,4,4): 96. 3 * 96 = 288
    assert count_free_slices(c, "4x4x8") == 288
    # 16x16x8 has 3 orientations. 16x16x8 spans x and y fully: 1 * 1 * 6 z-origins = 6;
    # 16x8x16: x 1 * y 4 * z 6 = 24; 8x16x16: 4 * 1 * 6 = 24. 6 + 24 + 24 = 54
    assert count_free_slices(c, "16x16x8") == 54
    # A sub-cube slice stays inside one cube: 2x4x4 (8 hosts) in orientation (2,4,4): x 2 per cube, y 1,
    # z 1 -> 2 per cube; (4,2,4): 2; (4,4,2): z-origins 0,1,2 per cube -> 3. 7 per cube * 96 = 672
    assert count_free_slices(c, "2x4x4") == 672


def test_v5p_slices_are_whole_cubes_never_straddling() -> None:
    c = cluster_of(tpu_pod("v5p", shape=(8, 4, 4), name="p"))  # two cubes side by side along x
    # Hold x = 0, 1 (in the first cube) and x = 6, 7 (in the second): x = 2..5 is a free 4x4x4 box, but it
    # straddles the two cubes, so no 4x4x4 slice fits.
    held = [[x, y, z] for x in (0, 1, 6, 7) for y in range(4) for z in range(4)]
    assert count_free_slices(_hold(c, "p", held), "4x4x4") == 0
    # Free the first cube: exactly one 4x4x4 (origin 0, 0, 0).
    held = [[x, y, z] for x in (6, 7) for y in range(4) for z in range(4)]
    [s] = free_slices(_hold(c, "p", held), "4x4x4")
    assert s.origin == (0, 0, 0)


def test_fixed_slice_offers_only_itself() -> None:
    c = cluster_of(tpu_pod("v5e", shape=(4, 4), fixed_slice=True, name="np"))
    assert count_free_slices(c, "4x4") == 1
    assert count_free_slices(c, "2x2") == 0
    held = _hold(c, "np", _chips(range(4), range(4)))
    assert count_free_slices(held, "4x4") == 0
    with pytest.raises(TopologyError, match="fixed slice: a job holds all 16 chips or none, not 8"):
        _hold(c, "np", _chips(range(2), range(4)))


def test_unusable_pod_offers_nothing() -> None:
    from placer.topology import Inventory, build_cluster

    inv = Inventory.model_validate(
        {"tpu_pods": [{"name": "p", "type": "v5e", "shape": [4, 4], "ready": False}]}
    )
    c = build_cluster(inv)
    assert count_free_slices(c, "2x2") == 0
    assert c.free_tpu_chips("p") == 0


def test_not_offered_shape_raises() -> None:
    c = cluster_of(tpu_pod("v5e"))
    with pytest.raises(ValueError, match="does not offer a 2x6 slice"):
        free_slices(c, "2x6")
    assert count_free_slices(c, "2x6", offered_only=False) > 0
    with pytest.raises(ValueError, match="not like"):
        free_slices(c, "2by4")
    with pytest.raises(ValueError, match="more dimensions"):
        free_slices(c, "2x2x2")


def test_chip_validation() -> None:
    c = cluster_of(tpu_pod("v5e", shape=(4, 4)), source="f.yaml")
    with pytest.raises(TopologyError) as exc:
        c.with_allocations(
            [
                {"job": "a", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": [[0, 0], [4, 0]]}]},
                {"job": "b", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": [[0, 0]]}]},
                {"job": "c", "replicas": [{"tpu_pod": "nope", "tpu_chips": [[0, 0]]}]},
            ]
        )
    assert [str(p) for p in exc.value.problems] == [
        "f.yaml: allocation[0] (a).replicas[0]: TPU pod 'v5e-pod': chip [4, 0] is outside the 4x4 mesh",
        "f.yaml: allocation[1] (b).replicas[0]: TPU pod 'v5e-pod': chip [0, 0] double-booked: "
        "already held by a",
        "f.yaml: allocation[2] (c).replicas[0]: unknown TPU pod 'nope'",
    ]


def test_release_frees_chips() -> None:
    c = _hold(cluster_of(tpu_pod("v5e", shape=(4, 4))), "v5e-pod", _chips(range(2), range(2)))
    assert c.free_tpu_chips("v5e-pod") == 12
    assert c.release("j").free_tpu_chips("v5e-pod") == 16


def test_deterministic_order() -> None:
    c = cluster_of(tpu_pod("v5e", shape=(4, 4)))
    assert [(s.origin, s.shape) for s in free_slices(c, "2x4")] == [
        ((0, 0), (2, 4)),
        ((0, 0), (4, 2)),
        ((0, 2), (4, 2)),
        ((2, 0), (2, 4)),
    ]
