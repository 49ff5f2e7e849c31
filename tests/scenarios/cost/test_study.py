"""The study as a whole: the shipped study file, designs as node counts, determinism for a seed, every
decision checked, the per-design table, and the plots."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from placer.scenarios.cost import Design, Pool, Study, load_study, runs, table
from placer.scenarios.cost.plots import frontier, plot_cost_per_useful_hour, plot_frontier, plot_lost_work
from placer.scenarios.inputs import prepare
from placer.scenarios.load import ScenarioError, load_scenario

STUDY = Path(__file__).resolve().parents[3] / "scenarios" / "library" / "cost" / "study.yaml"


@pytest.fixture(scope="module")
def study() -> Study:
    return load_study(STUDY)


def _classes(design: Design, study: Study) -> dict[str, int]:
    """Nodes per capacity class of ``design`` as the simulator builds it (every one a DGX H100)."""
    w = load_scenario(STUDY.parent / study.workload)
    cluster = prepare(w.model_copy(update={"cluster": design.cluster_spec()}), STUDY.parent).cluster
    out: dict[str, int] = {}
    for n in cluster.nodes:
        assert n.gpu_type == "nvidia-h100" and n.gpu_count == 8
        out[n.capacity_class] = out.get(n.capacity_class, 0) + 1
    return out


def test_the_shipped_designs_have_the_nodes_they_say(study: Study) -> None:
    designs = {d.name: d for d in study.designs}
    assert 3 <= len(designs) <= 6
    assert _classes(designs["on-demand"], study) == {"on-demand": 32}
    assert _classes(designs["reserved"], study) == {"reserved": 32}
    assert _classes(designs["mixed-25-50-25"], study) == {"reserved": 8, "on-demand": 16, "spot": 8}
    assert _classes(designs["reserved-base-spot-burst"], study) == {"reserved": 20, "spot": 16}
    auto = designs["reserved-base-autoscaled"]
    assert _classes(auto, study) == {"reserved": 20} and auto.autoscaling is not None
    assert [(g.max, g.provision, g.scale_down_after) for g in auto.autoscaling.groups] == [(16, 600, 600)]
    assert study.deadlines["spot"].stretch == 2 and study.deadlines["reserved"].slack == 3600


def test_pool_shares_round_to_whole_nodes() -> None:
    assert Pool(nodes=7, spot=0.5, reserved=0.5).counts() == {"reserved": 4, "on-demand": 0, "spot": 3}
    assert Pool(nodes=3, spot=0.2, reserved=0.2).counts() == {"reserved": 1, "on-demand": 2, "spot": 0}
    assert sum(Pool(nodes=101, spot=0.37, reserved=0.41).counts().values()) == 101


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"name": "x", "pools": [{"nodes": 4, "spot": 0.6, "reserved": 0.6}]}, "at most 1"),
        ({"name": "x", "pools": [{"nodes": 4}, {"nodes": 2}]}, "prefix"),
        ({"name": "x"}, "exactly one of pools or cluster"),
        ({"name": "x", "pools": [{"nodes": 4, "options": {"capacity_class": "spot"}}]}, "through the pool"),
    ],
)
def test_bad_designs_are_refused(doc: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Design.model_validate(doc)


def test_a_design_may_be_any_scenario_cluster_block() -> None:
    d = Design.model_validate(
        {
            "name": "layout",
            "cluster": {
                "layout": {
                    "pools": [
                        {"shape": "dgx-h100", "capacity_class": "reserved", "nodes": 2},
                        {"shape": "dgx-h100", "capacity_class": "spot", "nodes": 1},
                    ]
                }
            },
        }
    )
    (run,) = runs([d], STUDY.parent / "workload.yaml", horizon="30m")
    assert run.bill["capacity_class"].value_counts().to_dict() == {"reserved": 2, "spot": 1}


def test_a_bad_study_file_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "study.yaml"
    bad.write_text(
        "name: x\nworkload: w.yaml\ndeadlines: {urgent: 1h}\ndesigns: [{name: a, pools: [{nodes: 1}]}]\n"
    )
    with pytest.raises(ScenarioError) as e:
        load_study(bad)
    assert e.value.issues[0].path == "deadlines"


def test_same_seed_same_study_other_seed_other_study(study: Study) -> None:
    def once(seed: int) -> pd.DataFrame:
        done = study.run(STUDY.parent, seeds=[seed], horizon="2h")
        return table(done, per_seed=True).drop(columns=["wall_s"])

    a, b, c = once(1), once(1), once(2)
    pd.testing.assert_frame_equal(a, b)
    assert not a["useful_gpu_h"].reset_index(drop=True).equals(c["useful_gpu_h"].reset_index(drop=True))


def test_every_decision_of_the_shipped_study_is_checked(study: Study) -> None:
    done = study.run(STUDY.parent, seeds=[0], horizon="4h", verify=True)
    assert len(done) == len(study.designs)
    for run in done:
        meta = run.result.meta
        assert meta["decisions"] > 0 and meta["verified"] == meta["decisions"]
    spot = {r.design.name: r for r in done}["reserved-base-spot-burst"]
    assert spot.reclaims > 0


def test_the_design_table_pools_the_seeds(study: Study) -> None:
    done = study.run(STUDY.parent, seeds=[0, 1], horizon="4h")
    per_seed = table(done, per_seed=True)
    assert (per_seed["deadlines_due"] > 0).all()
    summary = table(done)
    assert list(summary.index) == [d.name for d in study.designs]
    assert (summary["seeds"] == 2).all()
    for name, g in per_seed.groupby(level="design"):
        # shares over all judged jobs of both seeds, not the mean of the two shares
        pooled = g["deadlines_met"].sum() / g["deadlines_due"].sum()
        assert summary.loc[name, "deadlines_met_share"] == pytest.approx(pooled)
        assert summary.loc[name, "cost_usd"] == pytest.approx(g["cost_usd"].mean())
        # reserved capacity is paid all day, used or not: the same in every seed
        assert g["cost_reserved_usd"].nunique() == 1
        assert g["cost_reserved_usd"].iloc[0] == pytest.approx(
            summary.loc[name, "reserved_nodes"] * 8 * 7.80 * 4
        )


def test_frontier_and_plots(study: Study) -> None:
    import matplotlib

    matplotlib.use("Agg")
    t = pd.DataFrame(
        {"cost_usd": [100.0, 80.0, 120.0, 90.0], "deadlines_met_share": [0.9, 0.5, 0.95, 0.9]},
        index=["a", "b", "c", "d"],
    )
    assert frontier(t) == ["b", "d", "c"]  # a costs more than d for the same share
    done = study.run(STUDY.parent, seeds=[0], horizon="1h")
    summary, per_seed = table(done), table(done, per_seed=True)
    for ax in (
        plot_frontier(summary, per_seed),
        plot_cost_per_useful_hour(summary, per_seed),
        plot_lost_work(summary),
    ):
        assert ax.get_title()
    matplotlib.pyplot.close("all")
