"""Kubernetes workloads read as gangs: a batch/v1 ``Job``, a JobSet and a Kueue ``Workload`` are each one
placer job whose task groups are their pod sets — admitted whole, as Kueue admits them.

Why beside the pod reader: these are what operators submit (a Kueue user's unit is the Workload, not the
pod), and each is a list of pod templates with counts, which is exactly a placer job's task groups.

* ``Job`` (batch/v1): one group of ``parallelism`` replicas (default 1; at most ``completions`` when
  that is smaller) of ``spec.template``.
* ``JobSet`` (jobset.x-k8s.io/v1alpha2): one group per ``replicatedJobs[i]``, named by it, of ``replicas``
  x the child Job's ``parallelism`` replicas.
* ``Workload`` (kueue.x-k8s.io/v1beta1 and v1beta2): one group per ``podSets[i]``, ``count`` replicas of
  its ``template``; ``queueName``, ``priorityClassName`` and ``priority`` of the spec.
* ``LeaderWorkerSet`` (leaderworkerset.x-k8s.io/v1): one job per group (``spec.replicas`` of them,
  ``<name>-<i>`` as LWS names the group's leader pod), each a group ``leader`` of one pod of
  ``leaderTemplate`` (``workerTemplate`` without one) and a group ``worker`` of ``size - 1`` pods of
  ``workerTemplate``: a group is placed whole, as Kueue admits it. With exclusive placement
  (``leaderworkerset.sigs.k8s.io/exclusive-topology: <node label>`` on the LWS), a group is one task group
  ``group`` of its ``size`` pods (the leader first), read as a JobSet child Job with exclusive placement
  is (below): alone in a rack, block or zone, or as one replica on a node it owns whole. Its leader
  template must place like its worker template (resources, node rules); subgroup exclusive placement is
  refused.

A pod template's ``preemptionPolicy: Never`` makes the job a non-preempting one (``may_preempt``), as
for a pod (:mod:`.kubernetes_pods`); with several pod sets, one such template is enough.

Kueue topology-aware scheduling: a pod template annotated ``kueue.x-k8s.io/podset-required-topology`` (or a
podSet's ``topologyRequest.required``) with a node label placer knows as a level keeps the gang in one
domain of it (``topology_scope``): ``kubernetes.io/hostname`` -> node,
``cloud.google.com/gce-topology-subblock`` -> rack, ``cloud.google.com/gce-topology-block`` -> block,
``topology.kubernetes.io/zone`` -> zone (the importer maps the same labels, ``docs/importers.md``), and the
site's own labels the caller maps (``levels``: ``--topology-labels``, as the node importer reads them).
Another label is refused (``unsupported``, the annotation's path): placer would not know which nodes share
it.
placer's scope is the job's: a required level on any pod set keeps the whole job in one such domain
(Kueue scopes each pod set on its own, so placer is stricter when only some pod sets ask). A
``preferred`` topology is what placer does anyway for an unscoped gang (smallest rack, then block, then
zone that holds it), so it is recorded in metadata. Pod templates of one job must agree on tolerations,
node selector, affinity and anti-affinity unless they differ only in required node rules (kept per group);
other differences are refused. A child Job of a JobSet runs ``parallelism`` pods, at most
``completions``, as a Job does.

Kueue's topology slices, partial admission and runtime caps are read by :mod:`.kubernetes_kueue`.
JobSet exclusive placement (``alpha.jobset.sigs.k8s.io/exclusive-topology: <node label>``, on the JobSet
or on a replicated Job's template, as xpk writes it): each child Job in a domain of the label of its own,
which no other child Job's pods share (JobSet's pod webhook gives the first pod of each child Job a
required pod affinity to its own Job and a required anti-affinity to every other). On a label placer
knows as a rack, block or zone, the replicated Job's group is read in exclusive slices
(:class:`~placer.solver.jobs.model.Slices` with ``exclusive``), one per child Job, of its pod count; on
``kubernetes.io/hostname``, each child Job is one replica holding its pods' resources on a node it owns
whole (``exclusive``); on ``cloud.google.com/gke-nodepool``, for a child Job that is one multi-host TPU
slice (GKE's multislice JobSet), as it is: a GKE TPU slice is one node pool, taken whole by one replica.
Another label is refused (``unsupported``, naming ``--topology-labels``), and so are
the ``node-selector`` strategy (nodes labelled per child Job beforehand) and Kueue slices on the same
pod set. placer keeps *everything* else out of such a domain, where JobSet keeps out other child Jobs'
pods only: stricter, never looser.

A suspended Job (``spec.suspend: true``, as Kueue creates them) is still a job to place; one with active
pods, or a Workload with ``status.admission``, is running work, and a Workload with ``spec.active: false``
is one Kueue will not admit (all ``conflict``).

>>> job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"},
...        "spec": {"parallelism": 4, "template": {"spec": {"containers": [{"name": "c",
...                 "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}
>>> [r] = read_workload(job, "", "j.json")
>>> r.id, r.job.tasks[0].count, r.job.total_gpus
('ml/train', 4, 32)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import ValidationError

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.formats.kubernetes_kueue import (
    LEVELS,
    MAX_EXEC_TIME,
    MIN_PARALLELISM,
    PREFERRED_TOPOLOGY,
    REQUEST_FIELDS,
    REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    SLICE_TOPOLOGY,
    max_runtime,
    partial_group,
    slice_request,
    sliced_group,
    unknown_level,
)
from placer.solver.jobs.formats.kubernetes_pods import (
    as_map,
    preempts,
    scheduling_gates,
    template_group,
)
from placer.solver.jobs.formats.kubernetes_priority import (
    QUEUE_LABEL,
    WORKLOAD_CLASS_LABEL,
    Classes,
    resolve,
)
from placer.solver.jobs.model import Job, Placement, PriorityClass, ReadResult, TaskGroup
from placer.topology.importers._common import child_str
from placer.topology.importers.kubernetes import L_NODEPOOL, host_ports, priority_class_for

__all__ = [
    "EXCLUSIVE_ANNOTATIONS",
    "EXCLUSIVE_TOPOLOGY",
    "KINDS",
    "LEVELS",
    "LWS_EXCLUSIVE_TOPOLOGY",
    "LWS_GROUP",
    "MAX_EXEC_TIME",
    "MIN_PARALLELISM",
    "REQUIRED_TOPOLOGY",
    "SLICE_SIZE",
    "SLICE_TOPOLOGY",
    "read_workload",
]

#: Workload kinds this module reads.
KINDS = frozenset({"Job", "JobSet", "Workload", "LeaderWorkerSet"})
#: LeaderWorkerSet exclusive placement (``leaderworkerset.sigs.k8s.io/exclusive-topology: <node label>``
#: on the LWS): each group in a domain of the label of its own, which no other group's pods share (LWS's
#: pod webhook gives each leader a required pod affinity to its group and a required anti-affinity to
#: every other group; the workers follow the leader's domain). Read as JobSet's is, the group one
#: exclusive slice of its pods (module docstring).
LWS_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
#: Exclusive placement of a group's subgroups (``subGroupPolicy``), each in a domain of its own: refused.
LWS_EXCLUSIVE_ANNOTATIONS = ("leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology",)
#: JobSet exclusive placement (jobset's ``alpha.jobset.sigs.k8s.io/exclusive-topology``, on the JobSet or
#: on a replicated Job's template): each child Job in a topology domain of its own, read as exclusive
#: slices (module docstring).
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
#: JobSet's ``node-selector`` strategy (nodes labelled per child Job beforehand, by jobset's script):
#: refused, the labels it relies on are not placer's to make.
EXCLUSIVE_ANNOTATIONS = ("alpha.jobset.sigs.k8s.io/node-selector",)


def _count(value: Any, default: int, path: str, errors: list[Issue]) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100_000:
        errors.append(issue("range", path, "an integer from 0 to 100000"))
        return default
    return value


class _PodSet(NamedTuple):
    """One pod set of a workload, as read before its template is."""

    name: str
    pods: int
    template: Any
    #: Where the pod template is (``spec.template``, ``spec.podSets[0].template``...).
    where: str
    #: An annotation read from another field (a Workload's ``topologyRequest``) -> that field's path.
    paths: dict[str, str]
    #: Kueue partial admission's least count as given, and where (a Job's ``job-min-parallelism``, a
    #: podSet's ``minCount``), or None.
    least: tuple[Any, str] | None = None
    #: JobSet exclusive placement: the topology label as given and where, and the pods of one child Job.
    exclusive: tuple[Any, str, int] | None = None


def _running_at_once(job_spec: dict[str, Any], where: str, errors: list[Issue]) -> int:
    """The pods a batch/v1 Job spec runs at once: ``parallelism`` (default 1), at most ``completions``
    when that is smaller. ``where``: the path of the Job's ``spec``."""
    parallelism = _count(job_spec.get("parallelism"), 1, f"{where}.parallelism", errors)
    completions = job_spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool) and 0 < completions < parallelism:
        return completions
    return parallelism


def _pod_sets(raw: dict[str, Any], kind: str, base: str, errors: list[Issue]) -> list[_PodSet]:
    """The pod sets of a Job (one), a JobSet (one per replicated Job) or a Workload (its podSets)."""
    spec = as_map(raw.get("spec"))
    at = f"{base}." if base else ""
    own = as_map(as_map(raw.get("metadata")).get("annotations"))
    whole = (
        (own[EXCLUSIVE_TOPOLOGY], f"{at}metadata.annotations.{EXCLUSIVE_TOPOLOGY}")
        if EXCLUSIVE_TOPOLOGY in own
        else None
    )
    if kind == "Job":
        annotations = as_map(as_map(raw.get("metadata")).get("annotations"))
        least = None
        if MIN_PARALLELISM in annotations:
            least = (annotations[MIN_PARALLELISM], f"{at}metadata.annotations.{MIN_PARALLELISM}")
        count = _running_at_once(spec, f"{at}spec", errors)
        return [_PodSet("default", count, spec.get("template"), f"{at}spec.template", {}, least)]
    if kind == "LeaderWorkerSet":
        where = f"{at}spec.leaderWorkerTemplate"
        lwt = as_map(spec.get("leaderWorkerTemplate"))
        size = _count(lwt.get("size"), 1, f"{where}.size", errors)
        if size < 1:
            errors.append(issue("range", f"{where}.size", "a group has at least its leader: 1 or more"))
            return []
        # The leader runs the leader template, or the worker template when it has none (LWS's rule).
        leader = "leaderTemplate" if lwt.get("leaderTemplate") is not None else "workerTemplate"
        out = [_PodSet("leader", 1, lwt.get(leader), f"{where}.{leader}", {})]
        if size > 1:
            out.append(_PodSet("worker", size - 1, lwt.get("workerTemplate"), f"{where}.workerTemplate", {}))
        return out
    if kind == "JobSet":
        out = []
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            where = f"{at}spec.replicatedJobs[{i}]"
            rj = as_map(rj)
            job_spec = as_map(as_map(rj.get("template")).get("spec"))
            replicas = _count(rj.get("replicas"), 1, f"{where}.replicas", errors)
            # A child Job runs as a batch/v1 Job does.
            per_job = _running_at_once(job_spec, f"{where}.template.spec", errors)
            tmeta = as_map(as_map(rj.get("template")).get("metadata"))
            _exclusive(tmeta, f"{where}.template", errors)
            notes = as_map(tmeta.get("annotations"))
            key = (
                (notes[EXCLUSIVE_TOPOLOGY], f"{where}.template.metadata.annotations.{EXCLUSIVE_TOPOLOGY}")
                if EXCLUSIVE_TOPOLOGY in notes
                else whole
            )
            name = child_str(rj, "name", "") or f"job{i}"
            out.append(
                _PodSet(
                    name,
                    replicas * per_job,
                    job_spec.get("template"),
                    f"{where}.template.spec.template",
                    {},
                    exclusive=None if key is None else (*key, per_job),
                )
            )
        return out
    out = []
    for i, ps in enumerate(spec.get("podSets") or []):
        where = f"{at}spec.podSets[{i}]"
        ps = as_map(ps)
        name = child_str(ps, "name", "") or f"set{i}"
        template = as_map(ps.get("template"))
        request = as_map(ps.get("topologyRequest"))
        paths: dict[str, str] = {}
        asked = {field: v for field, v in request.items() if field in REQUEST_FIELDS and v is not None}
        if asked:
            # The podSet's own topology request (Kueue copies the annotations there): read as the annotations,
            # problems named at the request's fields.
            tmeta = as_map(template.get("metadata"))
            annotations = dict(as_map(tmeta.get("annotations")))
            for field, value in asked.items():
                annotations[REQUEST_FIELDS[field]] = value if isinstance(value, str) else str(value)
                paths[REQUEST_FIELDS[field]] = f"{where}.topologyRequest.{field}"
            template = {**template, "metadata": {**tmeta, "annotations": annotations}}
        count = _count(ps.get("count"), 1, f"{where}.count", errors)
        least = (ps["minCount"], f"{where}.minCount") if ps.get("minCount") is not None else None
        out.append(_PodSet(name, count, template, f"{where}.template", paths, least))
    return out


def _exclusive(
    meta: dict[str, Any],
    base: str,
    errors: list[Issue],
    keys: tuple[str, ...] = EXCLUSIVE_ANNOTATIONS,
    owner: str = "JobSet",
) -> None:
    """Refuse the exclusive placement placer does not read (:data:`EXCLUSIVE_ANNOTATIONS`, JobSet's
    ``node-selector`` strategy; :data:`LWS_EXCLUSIVE_ANNOTATIONS`) named in ``meta``'s annotations."""
    annotations = as_map(meta.get("annotations"))
    at = f"{base}." if base else ""
    for key in keys:
        if key not in annotations:
            continue
        if owner == "JobSet":
            why = (
                f"JobSet's node-selector strategy ({str(annotations[key])[:80]!r}: nodes labelled per child "
                f"Job beforehand) is not represented by placer; {EXCLUSIVE_TOPOLOGY} alone is"
            )
        else:
            why = (
                f"{owner} exclusive placement of subgroups ({str(annotations[key])[:80]!r}: each subgroup "
                f"in a domain of its own) is not represented; {LWS_EXCLUSIVE_TOPOLOGY} (each group) is"
            )
        errors.append(issue("unsupported", f"{at}metadata.annotations.{key}", why))


def _alone(
    group: TaskGroup,
    alone: tuple[Any, str, int],
    sliced: bool,
    known: Mapping[str, str],
    errors: list[Issue],
    pods: int | None = None,
) -> TaskGroup | None:
    """A replicated Job's group with JobSet exclusive placement (``alone``: the topology label, where it
    was read, the pods of one child Job): in exclusive slices of a child Job each on a rack, block or
    zone label; on the hostname label, one replica per child Job owning its node; None (and the reason
    in ``errors``) for another label, or with Kueue slices on the same pod set.

    On GKE's node pool label, for a multi-host TPU slice (``pods``: the pod set's pods, which
    :func:`~placer.solver.jobs.formats.kubernetes_pods.template_group` made whole slices of), as xpk and
    GKE's multislice JobSets write it: a GKE TPU slice is one node pool (the importer's fixed slice of its
    hosts), which one replica takes whole and nothing else shares, so a child Job that is one slice is
    already alone in its node pool, and the group stands as it is. A child Job of another size is refused."""
    label, at, per_job = alone
    tpu = group.tpu
    if label == L_NODEPOOL and tpu is not None and tpu.topology is not None and pods is not None:
        if group.count * per_job == pods:
            return group
        errors.append(
            issue(
                "unsupported",
                at,
                f"a child Job of {per_job} pods is not one TPU slice of {'x'.join(map(str, tpu.topology))}: "
                "a GKE TPU slice is one node pool, which holds one child Job",
            )
        )
        return None
    level = known.get(label) if isinstance(label, str) else None
    if level is None:
        errors.append(issue("unsupported", at, unknown_level(label, known)))
        return None
    if sliced:
        why = "JobSet exclusive placement and Kueue slices on one pod set are not represented together"
        errors.append(issue("unsupported", at, why))
        return None
    out = sliced_group(group, level, per_job, at, errors)
    if out is None:
        return None
    if level == "node":  # one replica per child Job (sliced_group): its node owned whole
        return out.model_copy(update={"exclusive": True})
    assert out.slices is not None
    return out.model_copy(update={"slices": out.slices.model_copy(update={"exclusive": True})})


#: The one task group a LeaderWorkerSet group with exclusive placement is read as (:func:`_lws_alone`).
LWS_GROUP = "group"


def _lws_alone(
    groups: list[TaskGroup],
    alone: tuple[Any, str],
    sliced: bool,
    known: Mapping[str, str],
    errors: list[Issue],
) -> list[TaskGroup]:
    """A LeaderWorkerSet group with exclusive placement (``alone``: the topology label and where it was
    read) as one task group :data:`LWS_GROUP` of all its pods (the leader first, then the workers by index),
    read as JobSet's exclusive placement reads a child Job (:func:`_alone`): one slice alone in its rack,
    block or zone, or one replica holding every pod on a node it owns whole. Why one group: a slice is a
    group's, and the leader and its workers share one domain, which two exclusive groups would each keep
    to themselves. So the leader's pods and the workers' must be placed alike (resources, node rules:
    a leader template that differs only in its command, image or labels is read); otherwise, or with
    Kueue slices, it is refused at the annotation (``groups`` returned as they are)."""
    label, at = alone
    size = sum(g.count for g in groups)
    one = groups[0].model_copy(update={"name": LWS_GROUP, "count": size})
    if any(g.model_copy(update={"name": LWS_GROUP, "count": size}) != one for g in groups[1:]):
        why = (
            "exclusive placement of a group whose leader template asks for other resources or nodes than "
            "its worker template is not represented (placer keeps a group alone in its domain as one "
            "task group of alike pods)"
        )
        errors.append(issue("unsupported", at, why))
        return groups
    out = _alone(one, (label, at, size), sliced, known, errors)
    return groups if out is None else [out]


def _running(raw: dict[str, Any], kind: str, base: str) -> Issue | None:
    status = as_map(raw.get("status"))
    at = f"{base}." if base else ""
    if kind == "Workload" and status.get("admission"):
        return issue(
            "conflict", f"{at}status.admission", "already admitted: running work, not a job to place"
        )
    if kind == "Workload" and as_map(raw.get("spec")).get("active") is False:
        return issue(
            "conflict", f"{at}spec.active", "deactivated: Kueue admits no inactive Workload, nor does placer"
        )
    if kind == "Job" and (status.get("active") or status.get("succeeded")):
        return issue("conflict", f"{at}status", "the Job has active or finished pods: not a job to place")
    if kind == "LeaderWorkerSet" and status.get("replicas"):
        return issue(
            "conflict",
            f"{at}status.replicas",
            "the LeaderWorkerSet has created its groups: running work (read its pods with --pods)",
        )
    return None


def read_workload(
    raw: Any,
    base: str,
    source: str,
    levels: Mapping[str, str] | None = None,
    classes: Classes | None = None,
) -> list[ReadResult]:
    """One Job, JobSet or Workload as one result (module docstring); never raises for bad input.
    ``levels``: the site's own node labels read as levels (``ReadOptions.topology_levels``), beside
    :data:`LEVELS`; ``classes``: the priority classes listed beside it (:mod:`~placer.solver.jobs.
    formats.kubernetes_priority`)."""
    classes = classes or Classes()
    known = {**LEVELS, **(levels or {})}
    errors: list[Issue] = []
    warnings: list[Issue] = []
    meta = as_map(raw.get("metadata")) if isinstance(raw, dict) else {}
    kind = raw.get("kind") if isinstance(raw, dict) and isinstance(raw.get("kind"), str) else None
    name = meta.get("name")
    namespace = (
        meta.get("namespace")
        if isinstance(meta.get("namespace"), str) and meta.get("namespace")
        else "default"
    )
    at = f"{base}." if base else ""
    if not isinstance(name, str) or not name or kind not in KINDS:
        rid = f"{source}#{base or 0}"
        err = issue("required", f"{at}metadata.name", f"a {kind} needs a name")
        return [ReadResult(id=rid, ok=False, errors=[err], source=source, path=base)]
    rid = f"{namespace}/{name}"
    running = _running(raw, str(kind), base)
    if running is not None:
        return [ReadResult(id=rid, ok=False, errors=[running], source=source, path=base)]
    if kind == "JobSet":
        _exclusive(meta, base, errors)
    groups_of_lws = 1
    lws_alone: tuple[Any, str] | None = None  # LWS exclusive placement: the label as given, and where
    if kind == "LeaderWorkerSet":
        _exclusive(meta, base, errors, LWS_EXCLUSIVE_ANNOTATIONS, "LeaderWorkerSet")
        own = as_map(meta.get("annotations"))
        if LWS_EXCLUSIVE_TOPOLOGY in own:
            lws_alone = (own[LWS_EXCLUSIVE_TOPOLOGY], f"{at}metadata.annotations.{LWS_EXCLUSIVE_TOPOLOGY}")
        groups_of_lws = _count(as_map(raw.get("spec")).get("replicas"), 1, f"{at}spec.replicas", errors)
        if groups_of_lws == 0:
            errors.append(issue("range", f"{at}spec.replicas", "0 groups: nothing to place"))
    sets = _pod_sets(raw, str(kind), base, errors)
    if not sets and not errors:
        errors.append(issue("required", f"{at}spec", f"a {kind} needs at least one pod template"))
    groups: list[TaskGroup] = []
    placements: list[Placement] = []
    scopes: set[str] = set()
    priority: int | None = None  # the highest of the pod sets' (their priority, or their class's value)
    pclass = None
    may_preempt = True  # a pod set whose template says preemptionPolicy: Never keeps the whole gang waiting
    gates: list[str] = []  # the scheduling gates of any pod template: its pods are gated, the gang waits
    preferred: dict[str, str] = {}
    slices: dict[str, dict[str, object]] = {}  # pod sets read as slices: their request, for the metadata
    ranged = 0  # pod sets read with a partial-admission range (placer ranges one per job)
    held: dict[str, str] = {}  # labels of the host ports the pod templates hold
    exclusive: dict[str, str] = {}  # pod sets read in exclusive slices: their topology label
    any_sliced = False  # a pod set read in Kueue slices
    for set_name, count, template, where, paths, least, alone in sets:
        template = as_map(template)
        tmeta = as_map(template.get("metadata"))
        tspec = template.get("spec")
        if not isinstance(tspec, dict):
            errors.append(issue("required", f"{where}.spec", "a pod template needs a spec"))
            continue
        annotations = as_map(tmeta.get("annotations"))

        def path(key: str, where: str = where, paths: dict[str, str] = paths) -> str:
            return paths.get(key, f"{where}.metadata.annotations.{key}")

        sliced = slice_request(annotations, count, path, known, errors)
        any_sliced = any_sliced or sliced is not None
        required = annotations.get(REQUIRED_TOPOLOGY)
        if required is not None:
            level = known.get(required) if isinstance(required, str) else None
            if level is None:
                errors.append(issue("unsupported", path(REQUIRED_TOPOLOGY), unknown_level(required, known)))
            else:
                scopes.add(level)
        if isinstance(annotations.get(PREFERRED_TOPOLOGY), str):
            preferred[set_name] = annotations[PREFERRED_TOPOLOGY]
        group, placement = template_group(tspec, where, source, set_name, max(count, 1), errors, warnings)
        held.update(host_ports(tspec)[0])
        if tspec.get("runtimeClassName"):
            # The RuntimeClass admission plugin adds the class's node selector and tolerations when a pod
            # is created: a pod read from the API server has them, a template does not yet.
            warnings.append(
                issue(
                    "unsupported",
                    f"{where}.spec.runtimeClassName",
                    "a RuntimeClass may add a node selector and tolerations to the pods when they are "
                    "created; placer does not read RuntimeClasses, so the template is placed without them",
                )
            )
        pc, prio, by_class = resolve(tspec, {}, classes, f"{where}.spec", errors, warnings)
        may_preempt = preempts(tspec, where, errors, by_class) and may_preempt
        gates.extend(g for g in scheduling_gates(tspec, where, errors) if g not in gates)
        if count == 0:
            continue  # an empty pod set holds nothing
        if placement.affinity_required:
            errors.append(
                issue(
                    "unsupported",
                    f"{where}.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                    "required pod affinity in a pod template is not represented (each pod would have to "
                    "join the running ones, or the first of them); pods read one by one keep it",
                )
            )
        if group is not None and sliced is not None:
            group = sliced_group(group, *sliced, path(SLICE_SIZE), errors)
            slices[set_name] = {"topology": annotations[SLICE_TOPOLOGY], "size": sliced[1], "pods": count}
        if group is not None and alone is not None:
            group = _alone(group, alone, sliced is not None, known, errors, pods=count)
            exclusive[set_name] = str(alone[0])
        if group is not None and least is not None:
            ranged += 1
            group = partial_group(group, *least, sliced is not None, ranged, errors)
        if group is not None:
            groups.append(group)
            placements.append(placement)
            priority, pclass = max(priority, prio) if priority is not None else prio, pclass or pc
    spec = as_map(raw.get("spec")) if isinstance(raw, dict) else {}
    duration = max_runtime(kind, spec, meta, at, errors)
    labels = {str(k): v for k, v in as_map(meta.get("labels")).items() if isinstance(v, str)}
    labels.update(held)  # the host ports its pods hold (each pod set's placement keeps off them too)
    if kind == "Workload":
        pclass, priority = _workload_priority(
            spec, classes, f"{at}spec", errors, warnings, (pclass, priority)
        )
    elif QUEUE_LABEL in labels and WORKLOAD_CLASS_LABEL in labels:  # Kueue: the label's class, not the pods'
        pclass, priority, _ = resolve(
            {}, labels, classes, f"{at}spec", errors, warnings, label_at=f"{at}metadata.labels"
        )
    if len(scopes) > 1:
        errors.append(
            issue("unsupported", f"{at}spec", f"pod sets ask for different topology levels: {sorted(scopes)}")
        )
    placement = _merged(placements, groups, f"{at}spec", errors)
    if lws_alone is not None and groups and not errors:
        groups = _lws_alone(groups, lws_alone, any_sliced, known, errors)
        exclusive[LWS_GROUP] = str(lws_alone[0])
    if errors or not groups:
        if not errors:
            errors.append(issue("range", f"{at}spec", "every pod set has a count of 0: nothing to place"))
        return [ReadResult(id=rid, ok=False, errors=errors, warnings=warnings, source=source, path=base)]
    queue = spec.get("queueName") if kind == "Workload" else labels.get(QUEUE_LABEL)
    try:
        job = Job(
            id=rid,
            name=name,
            type=f"kubernetes.{str(kind).lower()}",
            source_format=f"kubernetes-{str(kind).lower()}",
            queue=queue if isinstance(queue, str) else None,
            priority_class=PriorityClass(priority_class_for(pclass)),
            priority=priority or 0,
            may_preempt=may_preempt,
            gates=gates,
            duration_s=duration,
            tasks=groups,
            placement=placement.model_copy(update={"topology_scope": next(iter(scopes), None)}),
            labels=labels,
            metadata={
                "kubernetes": {
                    "namespace": namespace,
                    "kind": kind,
                    "preferred_topology": preferred,
                    **({"slices": slices} if slices else {}),
                    **({"exclusive_topology": exclusive} if exclusive else {}),
                }
            },
            envelope=raw,
        )
    except ValidationError as e:
        errs = [issue("range", f"{at}spec", str(err["msg"])[:300]) for err in e.errors()]
        return [ReadResult(id=rid, ok=False, errors=errs, warnings=warnings, source=source, path=base)]
    if kind == "LeaderWorkerSet":  # each group its own gang, named as LWS names its leader pod
        return [
            ReadResult(
                id=f"{rid}-{i}",
                ok=True,
                job=job.model_copy(update={"id": f"{rid}-{i}", "name": f"{name}-{i}"}),
                warnings=warnings,
                source=source,
                path=base,
            )
            for i in range(groups_of_lws)
        ]
    return [ReadResult(id=rid, ok=True, job=job, warnings=warnings, source=source, path=base)]


#: A Workload's ``spec.priorityClassSource`` when its class is Kueue's own.
_WORKLOAD_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"


def _workload_priority(
    spec: dict[str, Any],
    classes: Classes,
    at: str,
    errors: list[Issue],
    warnings: list[Issue],
    pods: tuple[str | None, int | None],
) -> tuple[str | None, int | None]:
    """A Kueue Workload's class name and priority: ``spec.priority`` as Kueue wrote it; without it, the
    value of ``spec.priorityClassName`` of the kind ``spec.priorityClassSource`` names (a
    ``WorkloadPriorityClass``, or a ``PriorityClass`` by default); without a class, the pod sets'."""
    name = child_str(spec, "priorityClassName", None)
    given = spec.get("priority")
    if isinstance(given, int) and not isinstance(given, bool):
        return name or pods[0], given
    if name is None:
        return pods
    if spec.get("priorityClassSource") == _WORKLOAD_SOURCE:
        r = resolve({}, {WORKLOAD_CLASS_LABEL: name}, classes, at, errors, warnings, label_at=at)
    else:
        r = resolve({"priorityClassName": name}, {}, classes, at, errors, warnings)
    return r.name, r.value


def _merged(
    placements: list[Placement], groups: list[TaskGroup], path: str, errors: list[Issue]
) -> Placement:
    """One job-level placement for the pod sets: equal ones as they are; ones that differ only in required
    node rules keep those rules on their groups (``TaskGroup.required``); any other difference is refused."""
    if not placements:
        return Placement()
    first = placements[0]
    if all(p == first for p in placements):
        return first
    bare = [p.model_copy(update={"required": [], "node_selector": {}}) for p in placements]
    if any(b != bare[0] for b in bare):
        errors.append(
            issue(
                "unsupported",
                path,
                "pod templates differ in tolerations, anti-affinity or preferred rules; a job has one set",
            )
        )
        return first
    for k, (g, p) in enumerate(zip(groups, placements, strict=True)):
        groups[k] = g.model_copy(update={"required": [*g.required, *p.required]})
    return bare[0]
