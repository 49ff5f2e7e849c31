"""Preferred-affinity scores (``solver/objective/preferences.py``): per node, the weights of the preferred
rules its labels satisfy, times ``Policy.preferred_affinity`` — compared with that sum taken node by node."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.solver.candidates import NodeArrays
from placer.solver.demand import expand
from placer.solver.jobs.model import Job, LabelRule, Placement
from placer.solver.objective.preferences import preference_scores
from placer.solver.policy import Policy
from placer.solver.rules import holds
from placer.solver.snapshot import Snapshot
from placer.topology import cluster_of, cpu_nodes

_VALUES = ("a", "b", "c")

_RULE = st.builds(
    LabelRule,
    key=st.sampled_from(("zone", "pool")),
    operator=st.sampled_from(("In", "NotIn")),
    values=st.lists(st.sampled_from(_VALUES), min_size=1, max_size=2),
    weight=st.one_of(st.none(), st.integers(min_value=-5, max_value=100)),
)


@settings(max_examples=100, deadline=None)
@given(
    labels=st.lists(
        st.dictionaries(st.sampled_from(("zone", "pool")), st.sampled_from(_VALUES), max_size=2),
        min_size=1,
        max_size=6,
    ),
    rules=st.lists(_RULE, min_size=1, max_size=4),
)
def test_preferred_weights_summed_per_node(labels: list[dict[str, str]], rules: list[LabelRule]) -> None:
    (spec,) = cpu_nodes(1).nodes
    nodes = [spec.model_copy(update={"name": f"n{k}", "labels": lab}) for k, lab in enumerate(labels)]
    snap = Snapshot.of(cluster_of(cpu_nodes(1).model_copy(update={"nodes": nodes})))
    plan = expand(Job(id="j", placement=Placement(preferred=rules)), 0, max_node_gpus=0)
    policy = Policy()
    got = preference_scores(plan, plan.units[0], NodeArrays.of(snap, {"zone", "pool"}), policy)
    weight = [max(0, 1 if r.weight is None else r.weight) for r in rules]
    expected = [
        policy.preferred_affinity * sum(w for r, w in zip(rules, weight, strict=True) if holds(r, lab))
        for lab in labels
    ]
    assert got.tolist() == expected
