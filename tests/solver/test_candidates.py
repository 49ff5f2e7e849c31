"""The node arrays' cached answers (``solver/candidates.py``): what is kept, and the cap that keeps a
long-lived session or stored cluster from growing without bound."""

from __future__ import annotations

import pytest

import placer.solver.candidates as candidates


def test_static_answers_are_capped_and_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(candidates, "MAX_STATIC_ANSWERS", 3)
    a = candidates.Answers()
    for k in range(3):
        a[("mask", k)] = k
    a["__anti__"] = "dynamic"  # answers that read free amounts do not count
    b = a.refreshed()  # shares the static answers
    b[("mask", 3)] = 3  # the fourth: the three before are dropped, for every holder
    assert dict(a.static) == {("mask", 3): 3} and a.static is b.static
    a[("mask", 3)] = 33  # replacing a kept answer drops nothing
    assert dict(b.static) == {("mask", 3): 33}
    assert a["__anti__"] == "dynamic"
