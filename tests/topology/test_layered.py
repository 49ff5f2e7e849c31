"""A Layered snapshot is the dict the same changes make: keys, values, order, length; old ones never move."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.topology.layered import MIN_FOLD, Layered

#: (op, key, value): "set" or "del" of one of few keys, so replacing, deleting and re-adding all happen.
_OPS = st.lists(
    st.lists(st.tuples(st.sampled_from(["set", "del"]), st.integers(0, 90), st.integers()), max_size=40),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.integers(0, 90), st.integers(), max_size=60), _OPS)
def test_each_snapshot_is_the_dict_the_same_changes_make(start: dict[int, int], rounds) -> None:
    ref = dict(start)
    snap = Layered(start)
    kept: list[tuple[Layered[int, int], dict[int, int]]] = [(snap, dict(ref))]
    for ops in rounds:
        e = snap.edit()
        for op, k, v in ops:
            if op == "set":
                e[k] = v
                ref[k] = v
            elif k in ref:
                del e[k]
                del ref[k]
            else:
                assert k not in e
            assert (k in e) == (k in ref) and e.get(k, "none") == ref.get(k, "none")
        snap = e.done()
        kept.append((snap, dict(ref)))
    for s, want in kept:  # every snapshot still reads as it did when it was made
        assert list(s) == list(want)  # iteration order, as a dict's
        assert list(s.values()) == list(want.values()) and list(s.items()) == list(want.items())
        assert len(s) == len(want)
        assert s == want
        assert all(s.get(k) == want.get(k) and (k in s) == (k in want) for k in range(91))


def test_many_changes_fold_into_a_table_of_their_own() -> None:
    snap = Layered({i: i for i in range(10)})
    e = snap.edit()
    for i in range(10, 10 + MIN_FOLD + 1):
        e[i] = i
    folded = e.done()
    assert folded._top == {} and folded._gone == frozenset() and len(folded._base) == MIN_FOLD + 11
    few = folded.edit()
    few[0] = -1
    kept = few.done()
    assert kept._base is folded._base and kept._top == {0: -1}  # a few changes share the table


def test_a_missing_key_is_a_key_error_and_pop_gives_the_default() -> None:
    e = Layered({"a": 1}).edit()
    del e["a"]
    try:
        del e["a"]
    except KeyError:
        pass
    else:
        raise AssertionError("deleting a deleted key must raise KeyError")
    assert e.pop("a", "none") == "none" and e.pop("b") is None
    snap = e.done()
    try:
        snap["a"]
    except KeyError:
        pass
    else:
        raise AssertionError("reading a deleted key must raise KeyError")


def test_a_snapshot_pickles_as_its_contents() -> None:
    e = Layered({"a": 1, "b": 2}).edit()
    del e["a"]
    e["c"] = 3
    back = pickle.loads(pickle.dumps(e.done()))
    assert list(back.items()) == [("b", 2), ("c", 3)]
