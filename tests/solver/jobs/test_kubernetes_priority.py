"""Priority classes listed beside the jobs: what a pod's ``priorityClassName`` and a Kueue job's
``kueue.x-k8s.io/priority-class`` label are worth.

Shapes as the tools write them: ``PriorityClass`` as ``kubectl create priorityclass high-priority
--value=1000`` makes it (``scheduling.k8s.io/v1``: ``value``, ``globalDefault``, ``preemptionPolicy``),
Kueue's ``WorkloadPriorityClass`` as its "Setup WorkloadPriorityClass" page writes it
(``kueue.x-k8s.io/v1beta1``, ``value``, ``description``), a Kueue Job labelled with its queue and its
workload class, and the ``List`` of ``kubectl get priorityclasses,workloadpriorityclasses,jobs -o json``.
Expected values are the API server's and Kueue's rules (``docs/kubernetes.md``), not what the reader
happened to compute. Placements run through both engines and the checker (the ``solve`` fixture)."""

from __future__ import annotations

import copy
from typing import Any

from placer.solver.jobs.formats.kubernetes import is_pod_document, read
from placer.solver.jobs.model import Job, ReadResult
from placer.topology import cluster_of, dgx_h100


def _pclass(name: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": f"{name} pods",
        **extra,
    }


def _wpc(name: str, value: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": "Sample priority",
    }


def _pod(name: str, gpus: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "containers": [
                {
                    "name": "train",
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
            **spec,
        },
    }


def _kueue_job(name: str, labels: dict[str, str], **pod_spec: Any) -> dict[str, Any]:
    """A batch/v1 Job as Kueue's "Run a Kubernetes Job" page writes it (suspended, queue label)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ml", "labels": labels},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "suspend": True,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "dummy-job",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
                        }
                    ],
                    "restartPolicy": "Never",
                    **pod_spec,
                }
            },
        },
    }


def _read(*items: dict[str, Any]) -> dict[str, ReadResult]:
    doc = {"apiVersion": "v1", "kind": "List", "items": list(items)}
    assert is_pod_document(doc)
    return {r.id: r for r in read(doc, source="list.json", options=None)}


def _job(r: ReadResult) -> Job:
    assert r.ok and r.job is not None, r.errors
    return r.job


def test_a_pod_without_priority_takes_its_listed_class_value_and_preemption_policy() -> None:
    got = _read(
        _pclass("team-a", 1000),
        _pclass("batch-low", -10, preemptionPolicy="Never"),
        _pod("a", priorityClassName="team-a"),
        _pod("b", priorityClassName="batch-low"),
    )
    assert sorted(got) == ["ml/a", "ml/b"]  # the classes are not jobs
    a, b = _job(got["ml/a"]), _job(got["ml/b"])
    assert (a.priority, a.may_preempt) == (1000, True)
    # The admission plugin copies a class's preemptionPolicy: Never into the pod.
    assert (b.priority, b.may_preempt) == (-10, False)
    assert not got["ml/a"].warnings


def test_a_pod_priority_written_by_the_api_server_stands_and_its_own_policy_wins() -> None:
    got = _read(
        _pclass("batch-low", -10, preemptionPolicy="Never"),
        _pod("c", priorityClassName="batch-low", priority=-10, preemptionPolicy="PreemptLowerPriority"),
    )
    assert (_job(got["ml/c"]).priority, _job(got["ml/c"]).may_preempt) == (-10, True)


def test_a_pod_without_a_class_gets_the_smallest_global_default() -> None:
    got = _read(
        _pclass("default-priority", 1000, globalDefault=True),
        _pclass("other-default", 500, globalDefault=True),
        _pclass("team-a", 7),
        _pod("d"),
    )
    assert _job(got["ml/d"]).priority == 500


def test_system_classes_need_no_listing() -> None:
    got = _read(_pod("e", priorityClassName="system-node-critical"))
    assert _job(got["ml/e"]).priority == 2_000_001_000
    assert not got["ml/e"].warnings


def test_a_class_missing_from_a_list_that_has_classes_is_a_reference_error() -> None:
    got = _read(_pclass("team-a", 1000), _pod("f", priorityClassName="nightly"))
    r = got["ml/f"]
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [("reference", "items[1].spec.priorityClassName")]
    assert "nightly" in r.errors[0].message


def test_without_class_objects_the_value_is_unknown_and_said_so() -> None:
    got = _read(_pod("g", priorityClassName="team-a"))
    r = got["ml/g"]
    assert _job(r).priority == 0
    assert [(w.code, w.path) for w in r.warnings] == [("unknown", "items[0].spec.priorityClassName")]


def test_a_malformed_class_is_refused_by_path_and_not_used() -> None:
    got = _read(
        _pclass("team-a", "high"),
        _pclass("team-b", 2_000_000_000),  # above what the API server lets a user class have
        _pod("h", priorityClassName="team-a"),
    )
    bad = got["PriorityClass/team-a"]
    assert [(e.code, e.path) for e in bad.errors] == [("type", "items[0].value")]
    assert [(e.code, e.path) for e in got["PriorityClass/team-b"].errors] == [("range", "items[1].value")]
    # The pod's class is listed but unusable: refused, never read as some other priority.
    assert [e.code for e in got["ml/h"].errors] == ["reference"]


def test_a_preemption_policy_that_is_not_a_string_is_refused_by_path() -> None:
    """Found by the hostile-input fuzzer: an object as ``preemptionPolicy`` raised a TypeError (an
    unhashable value looked up among the policies) instead of a structured error."""
    got = _read(_pclass("team-a", 10, preemptionPolicy={"kind": None}), _pod("h", priorityClassName="team-a"))
    assert [(e.code, e.path) for e in got["PriorityClass/team-a"].errors] == [
        ("enum", "items[0].preemptionPolicy")
    ]


def test_the_api_servers_typed_class_list_is_read_too() -> None:
    typed = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClassList",
        "items": [{"metadata": {"name": "team-a"}, "value": 42}],
    }
    assert _job(_read(typed, _pod("i", priorityClassName="team-a"))["ml/i"]).priority == 42


# -- Kueue ------------------------------------------------------------------------------------------------

QUEUE = {"kueue.x-k8s.io/queue-name": "user-queue"}


def test_a_kueue_job_takes_its_workload_priority_class_not_its_pods() -> None:
    labels = {**QUEUE, "kueue.x-k8s.io/priority-class": "sample-priority"}
    got = _read(
        _wpc("sample-priority", 10000),
        _pclass("team-a", 1000),
        _kueue_job("sample-job", labels, priorityClassName="team-a"),
    )
    assert _job(got["ml/sample-job"]).priority == 10000


def test_without_a_queue_kueue_manages_nothing_and_the_pods_class_counts() -> None:
    labels = {"kueue.x-k8s.io/priority-class": "sample-priority"}
    got = _read(
        _wpc("sample-priority", 10000),
        _pclass("team-a", 1000),
        _kueue_job("j", labels, priorityClassName="team-a"),
    )
    assert _job(got["ml/j"]).priority == 1000


def test_a_kueue_job_naming_a_workload_class_not_listed_is_refused() -> None:
    labels = {**QUEUE, "kueue.x-k8s.io/priority-class": "urgent"}
    got = _read(_wpc("sample-priority", 10000), _kueue_job("k", labels))
    r = got["ml/k"]
    assert [(e.code, e.path) for e in r.errors] == [
        ("reference", "items[1].metadata.labels.kueue.x-k8s.io/priority-class")
    ]


def test_a_kueue_plain_pod_takes_its_workload_class() -> None:
    pod = _pod("p")
    pod["metadata"]["labels"] = {**QUEUE, "kueue.x-k8s.io/priority-class": "sample-priority"}
    assert _job(_read(_wpc("sample-priority", 300), pod)["ml/p"]).priority == 300


def test_a_workload_without_priority_takes_the_class_of_its_source() -> None:
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {
            "queueName": "user-queue",
            "priorityClassName": "sample-priority",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "podSets": [{"name": "main", "count": 1, "template": _kueue_job("x", {})["spec"]["template"]}],
        },
    }
    assert _job(_read(_wpc("sample-priority", 777), wl)["ml/w"]).priority == 777
    pods_source = copy.deepcopy(wl)
    pods_source["spec"]["priorityClassSource"] = "scheduling.k8s.io/priorityclass"
    assert _job(_read(_pclass("sample-priority", 5), pods_source)["ml/w"]).priority == 5


# -- what it changes in a decision ----------------------------------------------------------------------


def test_the_listed_value_decides_who_gets_the_last_gpus(solve: Any) -> None:
    """Two 8-GPU pods, one idle DGX: the one whose class is worth more runs. Both class names read as
    on-demand, so only the listed values tell them apart; without them the tie goes by id (``ml/a-pod``)."""
    a, z = _pod("a-pod", 8, priorityClassName="team-b"), _pod("z-pod", 8, priorityClassName="team-a")
    got = _read(_pclass("team-a", 1000), _pclass("team-b", 10), a, z)
    d = solve([got["ml/a-pod"], got["ml/z-pod"]], cluster_of(dgx_h100(1)))
    assert [p.job for p in d.placements] == ["ml/z-pod"]
    unlisted = _read(a, z)
    d = solve([unlisted["ml/a-pod"], unlisted["ml/z-pod"]], cluster_of(dgx_h100(1)))
    assert [p.job for p in d.placements] == ["ml/a-pod"]
