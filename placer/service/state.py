"""Stateful mode: clusters kept by id, changed by deltas, persisted to SQLite before any 2xx answer.

Why: a 10,000-node cluster is tens of megabytes of JSON; a backend that places every few seconds should
send it once (``PUT /v1/clusters/{id}``), then only what changed (``PATCH``: a node went down or came
back, nodes joined or left, a job started or finished, the licence seats changed), and place against it
by id.

Model. A cluster is a :class:`~placer.topology.Cluster` snapshot (immutable) and a version that grows by one
with every accepted PUT or PATCH. Changes are applied in order, all or none (:func:`apply_changes` is
pure: it returns a new snapshot or raises :class:`ChangeError`), so a placement running on the previous
snapshot is never disturbed.

Durability. Before a mutation is acknowledged it is committed to SQLite (``synchronous=FULL``): the base
snapshot as placer's own inventory JSON (:meth:`Cluster.to_inventory`), and each PATCH's changes, already
*normalized* (a started job is stored as the :class:`~placer.topology.RunningJob` its envelope was read into,
so
replaying never re-reads a document under other rules). On start the store rebuilds every cluster from
its base and replays its changes; every ``compact_after`` versions the base is rewritten and the log
cleared. Without a file the same code runs on an in-memory database (nothing survives a restart).

Concurrency. Mutations of one cluster are serialized by a per-cluster lock; mutations of different
clusters and all reads run in parallel (reads take the current snapshot object, which never changes).

Speed. Each version keeps the solver's prepared pieces for its snapshot (:class:`~placer.solver.prepared.
Prepared`: the snapshot view, node arrays, static candidate answers), and a PATCH that starts and
ends jobs and marks nodes down or up moves them forward by what it changed (as a
:class:`~placer.solver.session.Session` does), so a placement on a big stored cluster costs what the
batch needs, not a rebuild of the whole cluster. The pieces are one caller's at a time
(:attr:`Stored.prepared_lock`): a placement that finds them busy places without them, as ``place()``
alone would, with the same decision.

>>> from placer.topology import cluster_of, dgx_h100
>>> store = ClusterStore()
>>> s, created = store.put("c1", cluster_of(dgx_h100(2)))
>>> (s.version, created)
(1, True)
>>> s = store.patch("c1", [{"op": "node_down", "node": "dgx-h100-1"}])
>>> (s.version, [n.name for n in s.cluster.nodes if not n.usable])
(2, ['dgx-h100-1'])
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from placer.solver.prepared import Prepared, appended, flipped, shrunk
from placer.topology import Cluster, RunningJob, TopologyError
from placer.topology.availability import with_availability
from placer.topology.build import build_cluster
from placer.topology.inventory import Inventory
from placer.topology.membership import with_nodes_added, without_nodes

__all__ = [
    "COMPACT_AFTER",
    "ChangeError",
    "ClusterStore",
    "Stored",
    "apply_changes",
    "normalize_change",
    "set_availability",
]

#: Versions between two rewrites of a cluster's base snapshot (the change log is replayed on start).
COMPACT_AFTER = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS clusters (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    base_version INTEGER NOT NULL,
    base TEXT NOT NULL,
    source TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    changes TEXT NOT NULL,
    PRIMARY KEY (id, version)
);
"""


@dataclass(frozen=True)
class Stored:
    """One stored cluster at one version."""

    id: str
    version: int
    cluster: Cluster
    updated_at: datetime
    #: The solver's prepared pieces for ``cluster`` (module docstring), used under ``prepared_lock``.
    prepared: Prepared = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    prepared_lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.prepared is None:
            object.__setattr__(self, "prepared", Prepared(self.cluster))

    def after(self, version: int, cluster: Cluster, when: datetime) -> Stored:
        """The next version, ``cluster``: its prepared pieces moved forward from these (:meth:`_moved`)
        when these are free; else fresh ones (built on first use)."""
        if self.prepared_lock.acquire(blocking=False):
            try:
                prepared = self._moved(cluster)
            finally:
                self.prepared_lock.release()
            if prepared is not None:
                return Stored(self.id, version, cluster, when, prepared)
        return Stored(self.id, version, cluster, when)

    def _moved(self, cluster: Cluster) -> Prepared | None:
        """These pieces moved forward to ``cluster``, or None when they must start afresh. Job changes keep
        the structure (nodes and their facts); nodes going down or up change it in those nodes only
        (``flipped`` names them, whatever jobs changed beside); nodes joining or leaving, with nothing else
        changed, move the pieces by them; anything else starts them afresh."""
        before = self.cluster
        names = [] if cluster.structure is before.structure else flipped(before, cluster, jobs=True)
        if names is not None:
            old, new = before.state.jobs, cluster.state.jobs
            started = [cluster.running_job(j) for j in new if j not in old]
            ended = [before.running_job(j) for j in old if j not in new]
            return self.prepared.advanced(cluster, started, ended, flipped=names)
        if appended(before, cluster):
            return self.prepared.joined(cluster)
        left = shrunk(before, cluster)
        return None if left is None else self.prepared.left(cluster, left)


class ChangeError(Exception):
    """A PATCH that cannot be applied: ``invalid`` (the change itself is wrong: an unknown node) or
    ``conflict`` (it contradicts the current state: a job already running, GPUs already held)."""

    def __init__(self, kind: Literal["invalid", "conflict"], errors: list[dict[str, str]]):
        super().__init__("; ".join(f"{e['path']}: {e['message']}" for e in errors))
        self.kind = kind
        self.errors = errors


def _error(code: str, path: str, message: str) -> dict[str, str]:
    return {"code": code, "path": path, "message": message}


# ---------------------------------------------------------------------------------------------------
# Changes (pure)
# ---------------------------------------------------------------------------------------------------


def normalize_change(change: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A change as it is applied and stored: a started job's item read into a RunningJob (its envelope
    through the job readers, as ``placer place --running``). ``ChangeError`` when the item is invalid.

    >>> normalize_change({"op": "job_finished", "job": "r1"}, "changes[0]")
    {'op': 'job_finished', 'job': 'r1'}
    """
    if change["op"] == "nodes_added":  # as JSON, so the log replays it through the same validation
        inventory = Inventory.model_validate(change["inventory"])
        return {"op": "nodes_added", "inventory": inventory.model_dump(mode="json", exclude_defaults=True)}
    if change["op"] != "job_started":
        return dict(change)
    from placer.solver.jobs import JobValidationError
    from placer.solver.running import running_from_envelopes

    try:
        (rj,) = running_from_envelopes([change["job"]], f"{path}.job")
    except JobValidationError as e:
        raise ChangeError(
            "invalid",
            [_error(i.code, i.path.replace(f"{path}.job[0]", f"{path}.job"), i.message) for i in e.issues],
        ) from None
    return {"op": "job_started", "running": rj.model_dump(mode="json")}


def apply_changes(cluster: Cluster, changes: Sequence[Mapping[str, Any]]) -> Cluster:
    """``cluster`` after ``changes`` (normalized), in order; ``ChangeError`` naming ``changes[i]``.

    Consecutive node changes are applied with one rebuild of the structure (node state is part of the
    structure; job changes only touch allocations)."""
    nodes: dict[str, tuple[bool, int]] = {}
    for i, change in enumerate(changes):
        op = change["op"]
        if op in ("node_down", "node_up"):
            nodes[change["node"]] = (op == "node_up", i)
            continue
        if nodes:
            cluster, nodes = set_availability(cluster, nodes), {}
        if op == "job_started":
            rj = RunningJob.model_validate(change["running"])
            if rj.job in cluster.state.jobs:
                raise ChangeError(
                    "conflict", [_error("duplicate", f"changes[{i}].job", f"{rj.job!r} is running")]
                )
            try:
                cluster = cluster.allocate(rj)
            except TopologyError as e:
                raise ChangeError(
                    "conflict", [_error("conflict", f"changes[{i}].job", p.message) for p in e.problems]
                ) from None
        elif op == "job_finished":
            if change["job"] not in cluster.state.jobs:
                raise ChangeError(
                    "conflict", [_error("conflict", f"changes[{i}].job", f"{change['job']!r} is not running")]
                )
            cluster = cluster.release(change["job"])
        elif op == "nodes_added":
            cluster = _added(
                cluster, Inventory.model_validate(change["inventory"]), f"changes[{i}].inventory"
            )
        elif op == "node_removed":
            _known(cluster, [(i, change["node"])])
            cluster = without_nodes(cluster, [change["node"]])
        elif op == "licenses":  # the pool's seats replaced: nodes, jobs and prepared pieces stand
            cluster = cluster.with_licenses(change["licenses"])
        else:  # pragma: no cover - the body model admits only the seven ops
            raise ChangeError("invalid", [_error("enum", f"changes[{i}].op", f"unknown op {op!r}")])
    return set_availability(cluster, nodes) if nodes else cluster


def set_availability(cluster: Cluster, wanted: Mapping[str, tuple[bool, int]]) -> Cluster:
    """``cluster`` with nodes or TPU pods marked up (ready and schedulable) or down (not ready);
    ``wanted`` maps a name to (up, index of its change). An unknown name is a ``ChangeError`` naming
    ``changes[i].node`` (:func:`placer.topology.availability.with_availability` does the work)."""
    _known(cluster, [(i, n) for n, (_, i) in wanted.items()])
    return with_availability(cluster, {n: up for n, (up, _) in wanted.items()})


def _known(cluster: Cluster, named: Sequence[tuple[int, str]]) -> None:
    """``ChangeError`` naming ``changes[i].node`` for each (i, name) that is no node or TPU pod of
    ``cluster``."""
    pods = cluster.structure.pods
    unknown = [(i, n) for i, n in named if not cluster.has_node(n) and n not in pods]
    if unknown:
        raise ChangeError(
            "invalid",
            [
                _error("enum", f"changes[{i}].node", f"no node or TPU pod {n!r} in the cluster")
                for i, n in unknown
            ],
        )


def _added(cluster: Cluster, inventory: Inventory, path: str) -> Cluster:
    """``cluster`` with ``inventory``'s nodes and pods joined. Its own problems (a GPU type the catalog
    does not know, a job that does not fit) are ``invalid``, named where the change has them; a name the
    cluster already has is a ``conflict``."""
    named = (("nodes", [n.name for n in inventory.nodes]), ("tpu_pods", [p.name for p in inventory.tpu_pods]))
    taken = [
        (f"{path}.{kind}[{k}].name", name)
        for kind, names in named
        for k, name in enumerate(names)
        if cluster.has_node(name) or name in cluster.structure.pods
    ]
    if taken:
        raise ChangeError(
            "conflict", [_error("duplicate", p, f"{n!r} is already in the cluster") for p, n in taken]
        )
    try:
        build_cluster(inventory, source=path)  # alone first: problems named as the change numbers them
        return with_nodes_added(cluster, inventory)
    except TopologyError as e:
        raise ChangeError(
            "invalid", [_error("invalid", _item_path(path, p.item), p.message) for p in e.problems]
        ) from None


def _item_path(path: str, item: str) -> str:
    """A topology problem's item (``nodes[1] (gpu-7)``, ``running[0] (j).replicas[0]``) as a path under
    ``path``: the names in parentheses dropped (the message names what is wrong).

    >>> _item_path("changes[2].inventory", "running[0] (j).replicas[0]")
    'changes[2].inventory.running[0].replicas[0]'
    """
    bare = re.sub(r" \([^)]*\)", "", item)
    return f"{path}.{bare}" if bare else path


# ---------------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------------


def _inventory_json(cluster: Cluster) -> str:
    return json.dumps(cluster.to_inventory().model_dump(mode="json", exclude_defaults=True))


def _now() -> datetime:
    return datetime.now(UTC)


class ClusterStore:
    """Clusters by id, in memory and in SQLite (``path``; ``None``: in memory only)."""

    def __init__(self, path: str | None = None, *, compact_after: int = COMPACT_AFTER):
        self.path = path
        self.compact_after = compact_after
        self._db = sqlite3.connect(path or ":memory:", check_same_thread=False, isolation_level=None)
        if path:
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._db_lock = threading.Lock()
        self._clusters: dict[str, Stored] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._load()

    # -- reading --------------------------------------------------------------------------------------

    def get(self, cluster_id: str) -> Stored | None:
        """The cluster's current version, or None."""
        return self._clusters.get(cluster_id)

    def ids(self) -> list[str]:
        """Every stored id, sorted."""
        return sorted(self._clusters)

    def __len__(self) -> int:
        return len(self._clusters)

    # -- writing --------------------------------------------------------------------------------------

    def put(
        self, cluster_id: str, cluster: Cluster, *, before_commit: Callable[[Stored], object] | None = None
    ) -> tuple[Stored, bool]:
        """Store (or replace) a snapshot; returns it and whether it is new. ``before_commit`` sees the
        new version first (the route renders its answer there): if it raises, nothing is stored."""
        with self._lock(cluster_id):
            old = self._clusters.get(cluster_id)
            stored = Stored(cluster_id, (old.version + 1) if old else 1, cluster, _now())
            text = _inventory_json(cluster)  # everything that may fail happens before the commit
            if before_commit is not None:
                before_commit(stored)
            with self._transaction() as db:
                db.execute("DELETE FROM changes WHERE id = ?", (cluster_id,))
                db.execute(
                    "INSERT OR REPLACE INTO clusters VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        cluster_id,
                        stored.version,
                        stored.version,
                        text,
                        cluster.source,
                        stored.updated_at.isoformat(),
                    ),
                )
            self._clusters[cluster_id] = stored
            return stored, old is None

    def patch(
        self,
        cluster_id: str,
        changes: Sequence[Mapping[str, Any]],
        *,
        if_version: int | None = None,
        before_commit: Callable[[Stored], object] | None = None,
    ) -> Stored:
        """Apply normalized changes, all or none. ``KeyError`` for an unknown id, ``ChangeError`` when
        a change is invalid or conflicts (also when ``if_version`` is not the current version).
        ``before_commit`` as for :meth:`put`: the version is committed only once it has returned."""
        with self._lock(cluster_id):
            old = self._clusters.get(cluster_id)
            if old is None:
                raise KeyError(cluster_id)
            if if_version is not None and if_version != old.version:
                raise ChangeError(
                    "conflict",
                    [
                        _error(
                            "conflict",
                            "if_version",
                            f"the cluster is at version {old.version}, not {if_version}",
                        )
                    ],
                )
            cluster = apply_changes(old.cluster, changes)
            stored = old.after(old.version + 1, cluster, _now())
            logged = json.dumps(list(changes))
            if before_commit is not None:
                before_commit(stored)
            with self._transaction() as db:
                (base_version,) = db.execute(
                    "SELECT base_version FROM clusters WHERE id = ?", (cluster_id,)
                ).fetchone()
                if stored.version - base_version >= self.compact_after:
                    # The whole snapshot is written only here (every compact_after versions): a PATCH
                    # costs its changes, not the cluster's size. A failure rolls the transaction back.
                    text = _inventory_json(cluster)
                    db.execute("DELETE FROM changes WHERE id = ?", (cluster_id,))
                    db.execute(
                        "UPDATE clusters SET version = ?, base_version = ?, base = ?, updated_at = ? "
                        "WHERE id = ?",
                        (
                            stored.version,
                            stored.version,
                            text,
                            stored.updated_at.isoformat(),
                            cluster_id,
                        ),
                    )
                else:
                    db.execute(
                        "INSERT INTO changes VALUES (?, ?, ?)",
                        (cluster_id, stored.version, logged),
                    )
                    db.execute(
                        "UPDATE clusters SET version = ?, updated_at = ? WHERE id = ?",
                        (stored.version, stored.updated_at.isoformat(), cluster_id),
                    )
            self._clusters[cluster_id] = stored
            return stored

    def delete(self, cluster_id: str) -> bool:
        """Forget a cluster; False when there was none."""
        with self._lock(cluster_id):
            if cluster_id not in self._clusters:
                return False
            with self._transaction() as db:
                db.execute("DELETE FROM changes WHERE id = ?", (cluster_id,))
                db.execute("DELETE FROM clusters WHERE id = ?", (cluster_id,))
            del self._clusters[cluster_id]
            return True

    def close(self) -> None:
        with self._db_lock:
            self._db.close()

    # -- internals ------------------------------------------------------------------------------------

    @contextmanager
    def _lock(self, cluster_id: str) -> Iterator[None]:
        with self._locks_lock:
            lock = self._locks.setdefault(cluster_id, threading.Lock())
        with lock:
            yield

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._db_lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _load(self) -> None:
        """Rebuild every stored cluster: its base, then its logged changes in version order. A cluster
        that cannot be rebuilt stops the start (acknowledged state must not be dropped silently)."""
        with self._db_lock:
            rows = self._db.execute(
                "SELECT id, version, base_version, base, source, updated_at FROM clusters"
            ).fetchall()
            logs = self._db.execute(
                "SELECT id, version, changes FROM changes ORDER BY id, version"
            ).fetchall()
        by_id: dict[str, list[tuple[int, str]]] = {}
        for cid, version, text in logs:
            by_id.setdefault(cid, []).append((version, text))
        for cid, version, base_version, base, source, updated in rows:
            try:
                cluster = build_cluster(Inventory.model_validate(json.loads(base)), source=source)
                for v, text in by_id.get(cid, []):
                    if v > base_version:
                        cluster = apply_changes(cluster, json.loads(text))
            except (TopologyError, ChangeError, ValueError) as e:
                raise RuntimeError(
                    f"stored cluster {cid!r} (version {version}) cannot be rebuilt: {e}"
                ) from e
            self._clusters[cid] = Stored(cid, version, cluster, datetime.fromisoformat(updated))
