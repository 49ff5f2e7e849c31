"""Pending Kubernetes pods read as jobs (issue "Kubernetes-native", item 1): ``kubectl get pods -o json``
as kubectl prints it (``tests/fixtures/kubernetes/pending_pods.json``: a List of pods with the admission
defaults a real API server adds — the not-ready/unreachable NoExecute tolerations, schedulerName,
PodScheduled=False conditions)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from placer.solver.jobs import read_file, read_object
from placer.solver.jobs.formats.kubernetes_pods import HOSTNAME
from placer.solver.jobs.model import AffinityOperator, AllOf, AnyOf, LabelRule, PriorityClass, SpreadRule

PODS = Path(__file__).resolve().parents[2] / "fixtures" / "kubernetes" / "pending_pods.json"
#: A required pod (anti-)affinity term: pods labelled app=web, on the node.
ONE_WEB_PER_HOST = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "web"}}}


def _doc() -> dict[str, Any]:
    return json.loads(PODS.read_text())


def test_a_pod_list_is_detected_and_each_pending_pod_is_one_job() -> None:
    results = {r.id: r for r in read_file(PODS)}
    assert sorted(results) == [
        "ml/cpu-prep",
        "ml/done-0",
        "ml/h100-train",
        "ml/l4-infer",
        "ml/serve-0",
        "ml/serve-1",
    ]
    train = results["ml/h100-train"].job
    assert train is not None and train.source_format == "kubernetes-pod"
    [g] = train.tasks
    # requests.cpu 32, memory 256Gi (= 256 GB of 2^30 bytes), limits nvidia.com/gpu 8 (extended resources
    # are read from limits).
    assert (g.cpu_cores, g.memory_gb, g.gpus_per_replica) == (32, 256, 8)
    assert train.placement.node_selector == {"cloud.google.com/gke-nodepool": "a3-pool"}
    assert train.priority == 100000 and train.priority_class is PriorityClass.RESERVED  # "high-priority"
    assert train.queue == "team-a"  # kueue.x-k8s.io/queue-name
    # The API server's default NoExecute tolerations are kept as written.
    assert {t.key for t in train.placement.tolerations} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }


def test_node_affinity_and_pod_anti_affinity_become_rules() -> None:
    serve = next(r for r in read_file(PODS) if r.id == "ml/serve-0").job
    assert serve is not None
    assert serve.placement.required == [
        LabelRule(key="nvidia.com/gpu.product", operator=AffinityOperator.IN, values=["NVIDIA-GB200"]),
        # nvidia.com/gpu: NVIDIA's device plugin's resource, so no AMD GPU type.
        LabelRule(
            key="gpu_type",
            operator=AffinityOperator.NOT_IN,
            values=["amd-mi250", "amd-mi300x", "amd-unknown-gpu"],
        ),
    ]
    assert serve.placement.anti_affinity == [
        LabelRule(key="app", operator=AffinityOperator.IN, values=["serve"])
    ]
    assert serve.labels == {"app": "serve"}


def test_a_bound_pod_is_refused_naming_its_node_not_dropped() -> None:
    done = next(r for r in read_file(PODS) if r.id == "ml/done-0")
    assert not done.ok and [(e.code, e.path) for e in done.errors] == [("conflict", "items[5].spec.nodeName")]


def _with(spec_update: dict[str, Any]) -> Any:
    doc = _doc()
    pod = copy.deepcopy(doc["items"][0])
    pod["spec"].update(spec_update)
    return read_object(pod, source="pod.json")[0]


@pytest.mark.parametrize(
    ("update", "path"),
    [
        (
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOSTNAME}]
                    }
                }
            },
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
        ),
    ],
)
def test_what_placer_cannot_represent_is_refused_with_the_field_path(
    update: dict[str, Any], path: str
) -> None:
    r = _with(update)
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [("unsupported", path)]


def test_do_not_schedule_spread_constraints_are_read_as_spread_rules() -> None:
    # As a Deployment's pods carry it (the Kubernetes docs' example, with matchLabelKeys as they advise):
    # the selector ANDed with the pod's own value of each matchLabelKeys key and with its namespace (kube
    # counts the pods of the pod's namespace); the hostname read as the node's "hostname" label;
    # ScheduleAnyway read past with a warning.
    doc = _doc()
    pod = copy.deepcopy(doc["items"][0])
    pod["metadata"]["labels"] = {"app": "web", "pod-template-hash": "5d8f"}
    zone = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["pod-template-hash", "not-on-the-pod"],
        "minDomains": 3,
    }
    host = {
        "maxSkew": 2,
        "topologyKey": HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        "nodeAffinityPolicy": "Ignore",
        "nodeTaintsPolicy": "Honor",
    }
    soft = {**zone, "whenUnsatisfiable": "ScheduleAnyway"}
    pod["spec"]["topologySpreadConstraints"] = [zone, host, soft]
    [r] = read_object(pod, source="pod.json")
    assert r.ok and r.job is not None
    ns = r.job.tenant
    tenant = LabelRule(key="tenant", operator=AffinityOperator.IN, values=[ns])
    web = LabelRule(key="app", operator=AffinityOperator.IN, values=["web"])
    hashed = LabelRule(key="pod-template-hash", operator=AffinityOperator.IN, values=["5d8f"])
    anyapp = LabelRule(key="app", operator=AffinityOperator.EXISTS)
    assert r.job.placement.spread_required == [
        SpreadRule(
            key="topology.kubernetes.io/zone",
            max_skew=1,
            rule=AllOf(rules=[web, hashed, tenant]),
            min_domains=3,
        ),
        SpreadRule(
            key="hostname",
            max_skew=2,
            rule=AllOf(rules=[anyapp, tenant]),
            honor_node_rules=False,
            honor_taints=True,
        ),
    ]
    assert [(w.code, w.path) for w in r.warnings] == [("unsupported", "spec.topologySpreadConstraints")]


@pytest.mark.parametrize(
    ("update", "path"),
    [
        ({"topologySpreadConstraints": {"maxSkew": 1}}, "spec.topologySpreadConstraints"),
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": HOSTNAME,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": 7}},
                    }
                ]
            },
            "spec.topologySpreadConstraints[0].labelSelector.matchLabels",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": {"key": "pool"}}]
                        }
                    }
                }
            },
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions",
        ),
        ({"schedulingGates": {"name": "kueue.x-k8s.io/admission"}}, "spec.schedulingGates"),
        ({"affinity": ["nodeAffinity"]}, "spec.affinity"),
        ({"affinity": {"nodeAffinity": "pool-a"}}, "spec.affinity.nodeAffinity"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": {}}
                    }
                }
            },
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ONE_WEB_PER_HOST}
                }
            },
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {**ONE_WEB_PER_HOST, "labelSelector": ["app=web"]}
                        ]
                    }
                }
            },
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
        ),
    ],
)
def test_a_selector_or_list_of_the_wrong_type_is_an_error_not_read_as_matching_more(
    update: dict[str, Any], path: str
) -> None:
    # Read past, each would leave the pod with fewer rules than it asked for (a looser placement).
    r = _with(update)
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [("type", path)]


def test_an_empty_selector_selects_every_pod_and_empty_node_terms_match_no_node() -> None:
    # Kubernetes: an empty labelSelector ({}) selects every pod — a required anti-affinity term with one
    # keeps the pod off any node with a pod; a missing one selects none. An empty nodeSelectorTerm matches
    # no node, so a pod whose terms are all empty runs nowhere. Read as nothing, each would run it where
    # kube does not.
    every = {"topologyKey": HOSTNAME, "labelSelector": {}}
    r = _with({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [every]}}})
    assert r.ok and r.job is not None and r.job.placement.anti_affinity == [AllOf(rules=[])]
    none = {"topologyKey": HOSTNAME}
    r = _with({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [none]}}})
    assert r.ok and r.job is not None and r.job.placement.anti_affinity == []
    empty = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}
    r = _with({"affinity": {"nodeAffinity": empty}})
    assert r.ok and r.job is not None and AnyOf(rules=[]) in r.job.placement.required


def test_a_spread_constraint_without_a_selector_counts_no_pod_and_only_needs_the_key() -> None:
    # kube's nil labelSelector selects no pod: every domain counts 0 and the pod counts itself nowhere, so
    # the constraint only keeps it to nodes that have the key (a rule that never holds: an empty AnyOf).
    r = _with(
        {
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "x", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        }
    )
    assert r.ok and r.job is not None
    assert r.job.placement.spread_required == [SpreadRule(key="x", max_skew=1, rule=AnyOf(rules=[]))]


def test_a_do_not_schedule_constraint_in_a_gangs_pod_template_is_refused() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {"labels": {"app": "train"}},
                "spec": {
                    "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": HOSTNAME,
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": {"app": "train"}},
                        }
                    ],
                },
            },
        },
    }
    [r] = read_object(job, source="job.json")
    assert [(e.code, e.path) for e in r.errors] == [
        ("unsupported", "spec.template.spec.topologySpreadConstraints")
    ]


def test_required_pod_affinity_is_read_as_terms_on_node_labels() -> None:
    # Each term: its topology key (the hostname read as the node's derived "hostname" label) and its
    # selector as one rule (several requirements ANDed), with the namespaces it reads as a rule on the
    # jobs' tenant (a pod's namespace): its own namespace by default, the ones the term lists, or any for
    # an empty namespaceSelector. One that selects namespaces by label is refused, with its path.
    app = LabelRule(key="app", operator=AffinityOperator.IN, values=["cache"])
    gold = LabelRule(key="tier", operator=AffinityOperator.IN, values=["gold"])
    zone = {
        "labelSelector": {
            "matchLabels": {"app": "cache"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}],
        },
        "topologyKey": "topology.kubernetes.io/zone",
    }
    host = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME}
    listed = {**host, "namespaces": ["cache", "infra"]}
    anywhere = {**host, "namespaceSelector": {}}
    terms = [zone, host, listed, anywhere]
    r = _with({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}})
    assert r.ok, r.errors
    assert r.job is not None and r.job.tenant == "ml"  # the pod's namespace, as a running pod's
    [z, h, n, a] = r.job.placement.affinity_required
    assert [d.key for d in (z, h, n, a)] == [
        "topology.kubernetes.io/zone",
        "hostname",
        "hostname",
        "hostname",
    ]
    own = LabelRule(key="tenant", operator=AffinityOperator.IN, values=["ml"])
    assert z.rule == AllOf(rules=[app, gold, own])
    assert h.rule == AllOf(rules=[app, own])
    assert n.rule == AllOf(
        rules=[app, LabelRule(key="tenant", operator=AffinityOperator.IN, values=["cache", "infra"])]
    )
    assert a.rule == app
    at = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    selecting = {**host, "namespaceSelector": {"matchLabels": {"team": "ml"}}}
    r = _with({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [selecting]}}})
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [("unsupported", f"{at}.namespaceSelector")]


def test_match_and_mismatch_label_keys_narrow_a_term_by_the_pods_own_labels() -> None:
    # kube-scheduler ANDs the selector with key In [the pod's value] for each matchLabelKeys key and key
    # NotIn [it] for each mismatchLabelKeys key; a key the pod lacks is ignored. In a gang's pod template
    # (whose pods' labels are not the template's to read here) a podAffinity term with them is refused.
    doc = _doc()
    pod = copy.deepcopy(doc["items"][0])
    pod["metadata"]["labels"] = {"app": "web", "pod-template-hash": "5d8f", "tenant-id": "a"}
    term = {
        "labelSelector": {"matchLabels": {"app": "cache"}},
        "topologyKey": HOSTNAME,
        "matchLabelKeys": ["pod-template-hash", "absent"],
        "mismatchLabelKeys": ["tenant-id"],
    }
    pod["spec"]["affinity"] = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
    }
    [r] = read_object(pod, source="pod.json")
    assert r.ok and r.job is not None, r.errors
    cache = LabelRule(key="app", operator=AffinityOperator.IN, values=["cache"])
    hashed = LabelRule(key="pod-template-hash", operator=AffinityOperator.IN, values=["5d8f"])
    other = LabelRule(key="tenant-id", operator=AffinityOperator.NOT_IN, values=["a"])
    own = LabelRule(key="tenant", operator=AffinityOperator.IN, values=[r.job.tenant])
    [beside] = r.job.placement.affinity_required
    assert beside.rule == AllOf(rules=[cache, hashed, other, own])
    assert r.job.placement.anti_affinity == [AllOf(rules=[cache, hashed, other])]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "t", "namespace": "ml"},
        "spec": {
            "template": {
                "spec": {**pod["spec"], "affinity": {"podAffinity": pod["spec"]["affinity"]["podAffinity"]}}
            }
        },
    }
    [r] = read_object(job, source="job.json")
    assert (
        "unsupported",
        "spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys",
    ) in [(e.code, e.path) for e in r.errors]


def test_required_anti_affinity_on_a_zone_is_a_domain_rule() -> None:
    # A term on topology.kubernetes.io/zone keeps the pod out of the zone of matching pods
    # (Placement.anti_affinity_domains); one on the hostname stays a node rule; one naming no key is
    # refused with its path.
    zone = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "topology.kubernetes.io/zone"}
    host = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOSTNAME}
    r = _with(
        {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [zone, host]}}}
    )
    assert r.ok and r.job is not None
    [d] = r.job.placement.anti_affinity_domains
    assert d.key == "topology.kubernetes.io/zone" and d.rule == LabelRule(
        key="app", operator="In", values=["web"]
    )
    assert r.job.placement.anti_affinity == [LabelRule(key="app", operator="In", values=["db"])]
    keyless = {"labelSelector": {"matchLabels": {"app": "web"}}}
    r = _with(
        {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [keyless]}}}
    )
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [
        (
            "type",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        )
    ]


def test_required_terms_are_ored_and_their_expressions_anded() -> None:
    terms = [
        {
            "matchExpressions": [
                {"key": "a", "operator": "In", "values": ["1"]},
                {"key": "b", "operator": "Exists"},
            ]
        },
        {"matchExpressions": [{"key": "c", "operator": "Gt", "values": ["3"]}]},
    ]
    r = _with(
        {
            "nodeSelector": None,
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            },
        }
    )
    assert r.ok and r.job is not None
    [rule] = r.job.placement.required
    assert rule.kind == "any_of" and isinstance(rule.rules[0], AllOf) and len(rule.rules[0].rules) == 2


def test_another_schedulers_pod_is_read_with_a_warning() -> None:
    r = _with({"schedulerName": "volcano"})
    assert r.ok and [w.path for w in r.warnings] == ["spec.schedulerName"]


def test_preemption_policy_never_makes_a_job_that_does_not_preempt() -> None:
    # The API server copies the PriorityClass's preemptionPolicy into every pod: PreemptLowerPriority by
    # default (as in the fixture), Never for a non-preempting class.
    assert all(r.job.may_preempt for r in read_file(PODS) if r.ok and r.job is not None)
    never = _with({"preemptionPolicy": "Never", "priority": 1000})
    assert never.ok and never.job.may_preempt is False
    assert never.job.priority == 1000  # it keeps its priority: only evicting is given up


@pytest.mark.parametrize("value", ["Sometimes", ["Never"], 0])
def test_an_unknown_preemption_policy_is_refused_naming_the_field(value: object) -> None:
    r = _with({"preemptionPolicy": value})
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [("enum", "spec.preemptionPolicy")]


def test_a_workload_template_that_never_preempts_makes_the_gang_wait_rather_than_evict() -> None:
    from placer.solver.jobs.formats.kubernetes_workloads import read_workload

    def job(policy: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]
        }
        if policy is not None:
            spec["preemptionPolicy"] = policy
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"parallelism": 2, "template": {"spec": spec}},
        }

    assert [r.job.may_preempt for r in read_workload(job("Never"), "", "j.json")] == [False]
    assert [r.job.may_preempt for r in read_workload(job(None), "", "j.json")] == [True]
    [bad] = read_workload(job("never"), "", "j.json")  # the API's values are case-sensitive
    assert not bad.ok and [(e.code, e.path) for e in bad.errors] == [
        ("enum", "spec.template.spec.preemptionPolicy")
    ]


def test_scheduling_gates_are_read_and_a_nameless_one_is_refused() -> None:
    gated = _with({"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]})
    assert gated.ok and gated.job.gates == ["kueue.x-k8s.io/admission"]
    assert all(r.job.gates == [] for r in read_file(PODS) if r.ok and r.job is not None)
    bad = _with({"schedulingGates": [{}]})
    assert not bad.ok and [(e.code, e.path) for e in bad.errors] == [
        ("required", "spec.schedulingGates[0].name")
    ]


@pytest.mark.parametrize(
    ("update", "path"),
    [
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                    }
                ]
            },
            "spec.topologySpreadConstraints",
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "podAffinityTerm": {
                                    "labelSelector": {"matchLabels": {"a": "b"}},
                                    "topologyKey": "topology.kubernetes.io/zone",
                                },
                            }
                        ]
                    }
                }
            },
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
            ".topologyKey",
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "podAffinityTerm": {
                                    "labelSelector": {"matchLabels": {"a": "b", "c": "d"}},
                                    "topologyKey": HOSTNAME,
                                },
                            }
                        ]
                    }
                }
            },
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
            ".labelSelector",
        ),
        (
            {
                "affinity": {
                    "podAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 10,
                                "podAffinityTerm": {
                                    "labelSelector": {"matchLabels": {"a": "b"}},
                                    "topologyKey": "topology.kubernetes.io/zone",
                                },
                            }
                        ]
                    }
                }
            },
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
            ".topologyKey",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 20,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": "a", "operator": "In", "values": ["x"]},
                                        {"key": "b", "operator": "Exists"},
                                    ]
                                },
                            }
                        ]
                    }
                }
            },
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]",
        ),
    ],
)
def test_a_preference_kube_scheduler_only_scores_never_refuses_the_pod(
    update: dict[str, Any], path: str
) -> None:
    # What kube-scheduler only scores by never keeps a pod out: placer reads the pod without it and says so.
    r = _with(update)
    assert r.ok and [(w.code, w.path) for w in r.warnings] == [("unsupported", path)]


def test_preferred_pod_affinity_on_the_hostname_is_a_weighted_preference() -> None:
    # "Rather beside the cache's pods": the mirror of preferred anti-affinity, weighed by both engines.
    term = {
        "weight": 30,
        "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME},
    }
    r = _with({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}})
    assert r.ok and r.warnings == [] and r.job is not None
    [rule] = r.job.placement.affinity_preferred
    assert (rule.key, rule.operator, rule.values, rule.weight) == ("app", AffinityOperator.IN, ["cache"], 30)
    assert r.job.placement.anti_affinity_preferred == []


def test_preferred_pod_anti_affinity_on_the_hostname_is_a_weighted_preference() -> None:
    # The usual "spread my replicas" term (a Deployment's or LeaderWorkerSet's pods): weight 1-100, one
    # selector requirement, per node. Both engines weigh it (tests/solver/test_place_beside.py).
    term = {
        "weight": 80,
        "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["llama"]}]},
            "topologyKey": HOSTNAME,
        },
    }
    r = _with({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}})
    assert r.ok and r.warnings == [] and r.job is not None
    [rule] = r.job.placement.anti_affinity_preferred
    assert (rule.key, rule.operator, rule.values, rule.weight) == ("app", AffinityOperator.IN, ["llama"], 80)
    bad = _with(
        {
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{**term, "weight": 0}]
                }
            }
        }
    )
    assert not bad.ok and [(e.code, e.path) for e in bad.errors] == [
        ("range", "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight")
    ]


def _container_asking(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "containers": [{"name": "train", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "resources": resources}]
    }


@pytest.mark.parametrize(
    ("resources", "extra"),
    [
        # AWS's EFA device plugin: a multi-node training pod asks for its node's EFA interfaces.
        ({"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}, {"vpc.amazonaws.com/efa": 32}),
        # The GPU operator's mixed MIG strategy: a slice is its own resource, not nvidia.com/gpu.
        ({"limits": {"nvidia.com/mig-1g.10gb": "1"}}, {"nvidia.com/mig-1g.10gb": 1}),
        # Huge pages: a quantity in bytes (1Gi = 2^30); requests must equal limits, a request alone stands.
        ({"requests": {"cpu": "2", "hugepages-2Mi": "1Gi"}}, {"hugepages-2Mi": 2**30}),
        # An RDMA device plugin's shared device, asked in limits and requests alike: counted once.
        ({"limits": {"rdma/rdma_shared_device_a": "1"}, "requests": {"rdma/rdma_shared_device_a": "1"}},
         {"rdma/rdma_shared_device_a": 1}),
    ],
)  # fmt: skip
def test_extended_resources_and_huge_pages_are_read_as_counted_extra(
    resources: dict[str, Any], extra: dict[str, float]
) -> None:
    """kube-scheduler keeps a pod off nodes without enough of each extended resource free, and counts
    the pods on a node against its allocatable; placer reads them into the task group's ``extra``, which
    both engines and the checker count the same way (tests/solver/test_place_extended.py)."""
    r = _with(_container_asking(resources))
    assert r.ok and r.job is not None, r.errors
    assert r.job.tasks[0].extra == {**extra, "pods": 1}  # and one of its node's pod slots


@pytest.mark.parametrize(
    ("resources", "code", "path"),
    [
        ({"limits": {"storage": "1Gi"}}, "unsupported", "spec.containers[0].resources.limits.storage"),
        (
            {"limits": {"example.com/dongle": "1500m"}},
            "range",
            "spec.containers[0].resources.limits.example.com/dongle",
        ),
    ],
)
def test_a_resource_placer_does_not_account_or_a_fractional_extended_one_is_refused(
    resources: dict[str, Any], code: str, path: str
) -> None:
    """A name that is neither placer's own nor an extended resource nor huge pages is refused, not read
    past; an extended resource is a whole count (the API server refuses 1500m of one)."""
    r = _with(_container_asking(resources))
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [(code, path)]


def test_an_extended_resource_asked_as_zero_asks_for_nothing() -> None:
    r = _with(_container_asking({"limits": {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "0"}}))
    assert r.ok and r.job is not None and r.job.tasks[0].extra == {"pods": 1}


def test_a_job_template_asking_for_efa_asks_it_per_pod() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "nccl-test", "namespace": "ml"},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "spec": _container_asking({"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"}})
            },
        },
    }
    [r] = read_object(job, source="job.yaml")
    assert r.ok and r.job is not None
    [g] = r.job.tasks
    assert (g.count, g.extra) == (2, {"vpc.amazonaws.com/efa": 4, "pods": 1})


def test_an_amd_gpu_pod_runs_on_amd_gpus_only(solve: Any) -> None:
    """``amd.com/gpu`` is what AMD's device plugin advertises, on AMD nodes alone: an MI300X node, not the
    idle H100 node first in the cluster's order."""
    from placer.topology import Inventory, cluster_of, dgx_h100

    zone = {"topology.kubernetes.io/zone": "us-central1-a"}  # the fixture pod's node selector
    mi300x = Inventory.model_validate(
        {
            "nodes": [
                {
                    "name": "mi300x-1",
                    "cpu_cores": 192,
                    "memory_gb": 2048,
                    "labels": zone,
                    "gpus": {"type": "amd-mi300x", "count": 8},
                }
            ]
        }
    )
    cluster = cluster_of(dgx_h100(1, name="h100", labels=zone), mi300x)
    r = _with(_container_asking({"limits": {"amd.com/gpu": "2"}}))
    assert r.ok and r.job is not None
    d = solve([r], cluster)
    assert [rep.node for rep in d.placements[0].replicas] == ["mi300x-1"]
    nvidia = _with(_container_asking({"limits": {"nvidia.com/gpu": "2"}}))
    assert [rep.node for rep in solve([nvidia], cluster).placements[0].replicas] == [cluster.nodes[0].name]


def test_a_pod_asking_for_nvidia_and_amd_gpus_is_refused() -> None:
    r = _with(_container_asking({"limits": {"amd.com/gpu": "1", "nvidia.com/gpu": "1"}}))
    assert [(e.code, e.path) for e in r.errors] == [("conflict", "spec.containers")]


def test_a_host_port_is_a_label_and_a_rule_against_that_label() -> None:
    # NodePorts: the pod holds 8080/TCP on its node (a label other pods' rules see) and keeps off nodes
    # where a pod holds it (a required anti-affinity rule on that label). A hostNetwork pod holds every
    # container port; a port of 0 or none holds nothing.
    container = {"name": "web", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]}
    r = _with({"containers": [container]})
    assert r.ok and r.job is not None
    assert r.job.labels["placer.host-port/TCP-8080"] == ""
    assert [(x.key, x.operator) for x in r.job.placement.anti_affinity] == [
        ("placer.host-port/TCP-8080", AffinityOperator.EXISTS)
    ]
    host = _with(
        {
            "hostNetwork": True,
            "containers": [{"name": "dns", "ports": [{"containerPort": 53, "protocol": "UDP"}]}],
        }
    )
    assert host.ok and host.job is not None and "placer.host-port/UDP-53" in host.job.labels
    bad = _with({"containers": [{"name": "web", "ports": [{"containerPort": 80, "hostPort": 70000}]}]})
    assert not bad.ok and [(e.code, e.path) for e in bad.errors] == [
        ("range", "spec.containers[0].ports[0].hostPort")
    ]


def test_containers_or_ports_of_the_wrong_type_are_errors_not_tracebacks() -> None:
    # Found by the hostile-input fuzz: a LeaderWorkerSet template with ``containers: 1`` reached the
    # host-port reader, which iterated the number. Each gets an error naming the field.
    ports = _with({"containers": [{"name": "web", "ports": 5}]})
    assert not ports.ok and [(e.code, e.path) for e in ports.errors] == [("type", "spec.containers[0].ports")]
    template = {"size": 2, "workerTemplate": {"spec": {"containers": 1}}}
    meta = {"name": "vllm", "namespace": "serving"}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta}
    lws["spec"] = {"replicas": 2, "leaderWorkerTemplate": template}
    [r] = read_object(lws)
    assert not r.ok and r.job is None
    assert {e.path for e in r.errors} == {"spec.leaderWorkerTemplate.workerTemplate.spec.containers"}


def test_a_claimed_volume_is_read_with_a_warning_that_its_nodes_are_not_checked() -> None:
    # kube-scheduler's VolumeBinding/VolumeZone filters keep a pod to the nodes its claim's volume
    # reaches; placer does not read PersistentVolumes. The pod is read (most training pods mount a claim),
    # and the warning names each such volume rather than letting the constraint pass in silence.
    volumes = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "imagenet"}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "ckpt", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
    ]
    r = _with({"volumes": volumes})
    assert r.ok
    assert [(w.code, w.path) for w in r.warnings] == [
        ("unsupported", "spec.volumes[0].persistentVolumeClaim"),
        ("unsupported", "spec.volumes[2].ephemeral"),
    ]


def test_pod_level_resources_are_the_pod_s_cpu_and_memory_request() -> None:
    # KEP 2837 (pod-level resources, Kubernetes 1.32+): spec.resources states the pod's CPU and memory
    # for all its containers together; kube-scheduler fits that, not the containers' sum. GPUs stay the
    # containers' (pod-level resources cover CPU and memory only).
    container = {
        "name": "c",
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"nvidia.com/gpu": "1"}},
    }
    r = _with(
        {
            "containers": [container, {**container, "name": "d"}],
            "resources": {"requests": {"cpu": "6"}, "limits": {"memory": "32Gi"}},
        }
    )
    assert r.ok and r.job is not None
    (group,) = r.job.tasks
    assert (group.cpu_cores, group.memory_gb, group.gpus_per_replica) == (6.0, 32.0, 2)
