"""FGD's measure and the session's target in force (``solver/objective/fragmentation.py``).

The measure is checked against a plain-Python reading of its definition (Weng et al., ATC '23, as the
module states it), not against another vectorized form; the target in force against the rule its
docstring gives (kept for known shapes until a sixteenth more has been seen, made again for a shape heavy
enough to be among the kept ones).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.solver.objective.fragmentation import (
    Learned,
    Targets,
    drift,
    fragmentation,
    fragmentation_after_share,
)


def _by_definition(cpu: float, gpus: list[int], access: list[bool], t: Targets) -> float:
    """The expected fragment of one node: per shape, every free milli when the shape cannot run there,
    else the free milli of the GPUs too full for it; weighted by the shapes' probabilities."""
    total = sum(gpus)
    out = 0.0
    for m in range(t.size):
        level, num = int(t.milli[m]), int(t.num[m])
        fitting = [g for g in gpus if g >= level]
        runs = access[m] and num > 0 and cpu + 1e-9 >= t.cpu[m] and len(fitting) >= num
        out += float(t.p[m]) * (sum(g for g in gpus if g < level) if runs else total)
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int]:
    shapes = draw(st.integers(1, 6))
    width = draw(st.sampled_from([1, 2, 4, 8]))
    k = draw(st.integers(1, 5))
    milli = st.sampled_from([0, 100, 250, 500, 750, 1000])
    w = np.array([draw(st.integers(1, 9)) for _ in range(shapes)], dtype=np.float64)
    t = Targets(
        p=w / w.sum(),
        cpu=np.array([draw(st.integers(0, 16)) for _ in range(shapes)], dtype=np.float64),
        milli=np.array([draw(st.sampled_from([0, 250, 500, 1000])) for _ in range(shapes)]),
        num=np.array([draw(st.sampled_from([0, 1, 2, 4])) for _ in range(shapes)]),
        access=np.ones((k, shapes), dtype=bool),
    )
    cpu = np.array([draw(st.integers(0, 32)) for _ in range(k)], dtype=np.float64)
    gpu = np.array([[draw(milli) for _ in range(width)] for _ in range(k)], dtype=np.int64)
    access = np.array([[draw(st.booleans()) for _ in range(shapes)] for _ in range(k)])
    share = draw(st.sampled_from([100, 250, 500]))
    return cpu, gpu, access, t, share


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_the_measure_is_its_definition(case: tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int]) -> None:
    cpu, gpu, access, t, _ = case
    got = fragmentation(cpu, gpu, access, t)
    want = [_by_definition(cpu[i], gpu[i].tolist(), access[i].tolist(), t) for i in range(len(cpu))]
    assert np.allclose(got, want)


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_a_share_taken_from_each_gpu_is_the_measure_of_that_state(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int],
) -> None:
    cpu, gpu, access, t, share = case
    got = fragmentation_after_share(cpu, gpu, share, access, t)
    for i in range(len(cpu)):
        for g in range(gpu.shape[1]):
            if gpu[i, g] < share:
                continue  # the share does not fit there; the caller never reads it
            after = gpu[i].tolist()
            after[g] -= share
            assert np.isclose(got[i, g], _by_definition(cpu[i], after, access[i].tolist(), t))


def _batch(*shapes: tuple[float, int, int], replicas: float = 1.0) -> tuple[dict, dict]:  # type: ignore[type-arg]
    mask = np.ones(2, dtype=bool)
    key = np.packbits(mask).tobytes()
    return {(*s, key): replicas for s in shapes}, {key: mask}


def _made(learned: Learned, batch: tuple[dict, dict]) -> tuple[Targets, Learned]:  # type: ignore[type-arg]
    from placer.solver.objective.fragmentation import target_workload

    target, reaffirmed = learned.target_for(
        batch, lambda: target_workload([], {}, 2, learned=learned, batch=batch)
    )
    return target, learned.seen([], {}, batch=batch, target=target, reaffirmed=reaffirmed)


def test_the_target_in_force_stays_for_known_shapes_until_a_sixteenth_more_is_seen() -> None:
    learned = Learned({}, {})
    first, learned = _made(learned, _batch((4.0, 1000, 1), replicas=90.0))
    _, learned = _made(learned, _batch((1.0, 500, 1), replicas=10.0))  # a known-size share: 10 %
    assert learned.total == 100.0
    first = learned.target
    assert first is not None and first.size == 2
    # The 4-CPU shape again: the target in force stands while fewer than 100 / 16 = 6.25 more (and fewer
    # than REFRESH_MIN = 16) were seen since; at 16 one is due.
    for k in range(16):
        target, learned = _made(learned, _batch((4.0, 1000, 1)))
        assert target is first, k
    # Due: the profile is now 106 : 10 against 90 : 10 when it was made; the share's probability went
    # from 10/100 to 10/116, 1.4 points moved, within DRIFT (2 points): the target is re-affirmed, so
    # every measure cached against it stays, and it counts as made now.
    assert Learned.DRIFT == 0.02
    target, learned = _made(learned, _batch((4.0, 1000, 1)))
    assert target is first and learned.since == 0.0
    # Due again after 16 more: with the 17th, the share is at 10/134, 2.5 points from 10 %: a new target
    for _ in range(17):
        target, learned = _made(learned, _batch((4.0, 1000, 1)))
    assert target is not first
    assert drift(first, target) > Learned.DRIFT
    assert sorted(target.p.tolist()) == pytest.approx([10 / 134, 124 / 134], rel=0.02)


def test_a_new_shape_makes_a_new_target_only_when_heavy_enough_to_be_kept() -> None:
    learned = Learned({}, {})
    # 40 shapes seen: the target keeps the 32 heaviest, so its floor is the 32nd weight.
    shapes = [(float(c), 1000, 1) for c in range(1, 41)]
    batch = ({}, {})  # type: ignore[var-annotated]
    for i, s in enumerate(shapes):
        b = _batch(s, replicas=float(100 - i))
        batch[0].update(b[0])
        batch[1].update(b[1])
    first, learned = _made(learned, batch)
    assert first.size == 32 and first.floor == 100 - 31
    light, heavy = _batch((99.0, 1000, 1), replicas=1.0), _batch((98.0, 1000, 1), replicas=500.0)
    assert learned.in_force(light) is first  # one replica would not be among the kept shapes
    assert learned.in_force(heavy) is None  # 500 would


def test_a_shape_seen_r_replicas_ago_weighs_half_per_half_life() -> None:
    # Weights decay by 0.5 ** (replicas / HALF_LIFE) per batch, whatever way they are stored.
    learned = Learned({}, {})
    a, b = _batch((4.0, 1000, 1), replicas=10.0), _batch((1.0, 500, 1), replicas=1.0)
    learned = learned.seen([], {}, batch=a)
    for _ in range(3000):
        learned = learned.seen([], {}, batch=b)
    (wa,) = [w for k, w in learned.weights.items() if k[:3] == (4.0, 1000, 1)]
    (wb,) = [w for k, w in learned.weights.items() if k[:3] == (1.0, 500, 1)]
    h = Learned.HALF_LIFE
    assert wa == pytest.approx(10.0 * 0.5 ** (3000 / h), rel=1e-9)
    assert wb == pytest.approx(sum(0.5 ** (i / h) for i in range(3000)), rel=1e-9)
    assert learned.total == 3010.0


def test_a_shape_decayed_to_nothing_is_forgotten_with_its_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Learned, "HALF_LIFE", 1)  # one replica halves everything seen before
    learned = Learned({}, {}).seen([], {}, batch=_batch((4.0, 1000, 1)))
    other = np.array([True, False])
    key = np.packbits(other).tobytes()
    for _ in range(40):  # 2 ** -40 < 1e-6: the first shape is forgotten
        learned = learned.seen([], {}, batch=({(1.0, 500, 1, key): 1.0}, {key: other}))
    assert [k[:3] for k in learned.weights] == [(1.0, 500, 1)]
    assert [k[:3] for k in learned.raw] == [(1.0, 500, 1)] and list(learned.masks) == [key]
