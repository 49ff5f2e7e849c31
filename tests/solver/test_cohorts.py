"""Kueue's hierarchical cohort arithmetic (``solver/cohorts.py``): subtree quotas, what each node keeps,
usage passed up beyond it, and the room a queue has — checked by hand on a small tree, and on random trees
against a brute force: the room is the largest whole number of GPUs that breaks no rule."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from placer.solver.cohorts import CohortTree
from placer.solver.jobs.queues import CohortNode


def _tree() -> CohortTree:
    # org (4 of its own) <- vision (lends at most 6, borrows at most 2) <- queues a (8, lends 5) and b (4)
    #                    <- queue c (8)
    nodes = [
        CohortNode(name="org", nominal_gpus=4),
        CohortNode(name="vision", parent="org", lending_gpus=6, borrowing_gpus=2),
    ]
    return CohortTree.of_nodes(
        {"a": ("vision", 8, 5), "b": ("vision", 4, None), "c": ("org", 8, None)}, nodes
    )


def test_subtree_quotas_and_what_each_node_keeps() -> None:
    t = _tree()
    assert t.queue_kept == {"a": 3, "b": 0, "c": 0}  # a keeps 8 - 5
    assert t.subtree["vision"] == 5 + 4  # its children's quotas less what they keep
    assert t.kept["vision"] == 9 - 6  # it lends at most 6 of its 9
    assert t.subtree["org"] == 4 + (9 - 3) + 8


def test_usage_passes_up_only_beyond_what_is_kept() -> None:
    t = _tree()
    use = t.usage({"a": 5, "b": 1, "c": 0})
    assert use["vision"] == (5 - 3) + 1  # a's 3 are its own
    assert use["org"] == max(0, 3 - 3) + 0  # vision keeps 3


def test_room_of_a_queue_follows_every_rule_on_its_way_up() -> None:
    t = _tree()
    # Idle: a's 3 kept, then vision may use its 9 - 3 = 6 beyond its own 3 plus borrow 2 ... and org's
    # root rule: 18 in all. a may add 3 (kept) + 3 (vision keeps) + (6 + 2) = 14 by vision's rule.
    assert t.room("a", {}) == 14
    assert t.room("c", {}) == 18  # only the root's rule
    assert t.room("c", {"a": 14}) == 18 - (14 - 3 - 3)
    assert t.over({"a": 15}) == ["vision"]


@st.composite
def trees(draw: st.DrawFn) -> CohortTree:
    names = ["r", "x", "y"]
    nodes = [CohortNode(name="r", nominal_gpus=draw(st.integers(0, 4)))]
    for n in names[1:]:
        nodes.append(
            CohortNode(
                name=n,
                parent=draw(st.sampled_from([m.name for m in nodes])),
                nominal_gpus=draw(st.integers(0, 3)),
                lending_gpus=draw(st.none() | st.integers(0, 6)),
                borrowing_gpus=draw(st.none() | st.integers(0, 3)),
            )
        )
    queues = {
        q: (draw(st.sampled_from(names)), draw(st.integers(0, 5)), draw(st.none() | st.integers(0, 5)))
        for q in ("q1", "q2", "q3")
    }
    queues = {q: (c, n, None if lend is None else min(lend, n)) for q, (c, n, lend) in queues.items()}
    return CohortTree.of_nodes(queues, nodes)


@given(
    trees(),
    st.dictionaries(st.sampled_from(["q1", "q2", "q3"]), st.integers(0, 6)),
    st.sampled_from(["q1", "q2", "q3"]),
)
def test_room_is_the_most_a_queue_may_add(tree: CohortTree, held: dict[str, int], queue: str) -> None:
    path = set(tree.path(queue))
    if any(c in path for c in tree.over(held)):
        assert tree.room(queue, held) < 0  # a rule on its way is broken already: nothing fits
        return
    room = tree.room(queue, held)

    def fits(extra: int) -> bool:
        after = {**held, queue: held.get(queue, 0) + extra}
        return not any(c in path for c in tree.over(after))

    most = max(k for k in range(0, 40) if fits(k))  # the rules only tighten as the queue adds more
    assert fits(0) and most == min(int(room + 1e-9), 39)


def test_a_tree_of_cores_or_pods_reads_those_quotas_and_the_queues_that_state_theirs() -> None:
    # The same tree for cores: org has 16 of its own, vision lends at most 12 and borrows at most 4; queue
    # a states 32 cores and keeps 8, b states none (outside the cores' tree: its own budget only), c 16.
    # For pods, only c states a quota.
    from placer.solver.jobs.queues import QueueConfig

    tree = [
        {"name": "vision", "parent": "org", "lending_cpu_cores": 12.0, "borrowing_cpu_cores": 4.0},
        {"name": "org", "parent": None, "nominal_cpu_cores": 16.0, "nominal_pods": 10},
    ]

    def queue(name: str, cohort: str, **own: object) -> QueueConfig:
        chain = tree if cohort == "vision" else tree[1:]
        c = {"name": cohort, "max_total_gpus": 0, "tree": chain, **own}
        return QueueConfig.model_validate({"queue": name, "config": {"cohort": c}})

    queues = {
        "a": queue("a", "vision", nominal_cpu_cores=32.0, guaranteed_cpu_cores=8.0),
        "b": queue("b", "vision"),
        "c": queue("c", "org", nominal_cpu_cores=16.0, nominal_pods=4),
    }
    cpu = CohortTree.of(queues, "cpu")
    assert cpu is not None and sorted(cpu.queues) == ["a", "c"]
    assert cpu.queue_kept == {"a": 8, "c": 0}
    assert cpu.subtree["vision"] == 32 - 8
    assert cpu.kept["vision"] == 24 - 12
    assert cpu.subtree["org"] == 16 + (24 - 12) + 16
    # a: its 8 kept, vision's 12 kept, then vision's rule: 24 - 12 + 4 beyond what it keeps.
    assert cpu.room("a", {}) == 8 + 12 + 16
    pods = CohortTree.of(queues, "pods")
    assert pods is not None and list(pods.queues) == ["c"] and pods.room("c", {}) == 10 + 4
    assert CohortTree.of(queues, "memory") is None  # no queue states a memory quota in the tree
    assert sorted(CohortTree.of(queues).queues) == ["a", "b", "c"]  # GPUs: every queue of the tree
