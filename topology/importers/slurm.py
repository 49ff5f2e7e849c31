"""Slurm ``scontrol show node`` text -> :class:`~placer.topology.inventory.Inventory`.

Why: Slurm is the other half of the GPU world, and ``scontrol show node`` (or ``scontrol -o show node``,
one line per node) is the one description every Slurm site can produce. Mapping rules (also in
``docs/importers.md``):

* Records start at ``NodeName=``; each is ``Key=Value`` pairs separated by blanks. Only ``Reason``, ``OS``,
  ``Comment`` and ``Extra`` values may contain blanks: ``Reason`` (free text, printed at the end of its
  line) runs to the end of the line or to a ``Comment=``/``Extra=`` after it, the others until the next
  known ``Key=`` or the end of the line. Any other
  stray text is a problem, not ignored.
* ``CPUTot`` -> cores: Slurm's CPUs are hardware threads when ``CPUTot`` is ``Boards x Sockets x
  CoresPerSocket x ThreadsPerCore`` (then ``ThreadsPerCore`` of them make a core, label
  ``slurm_cpus_per_core``), cores otherwise; allocated CPUs become the cores that hold them, rounded up
  (Slurm allocates whole cores). ``RealMemory``/``TmpDisk`` (MB, i.e. MiB) -> GB of 2**30 bytes.
* ``Gres`` -> GPUs: ``gpu:h100:8(S:0-1)``, ``gpu:8`` (type unknown: ``unknown-gpu``), ``gpu:h100``
  (count 1); non-GPU gres (``shard``, ``mps``, ``nic``...) are labels ``gres/<name>`` (their count) and
  the node's ``extra`` ``gres/<name>``, which the jobs placed there count down (rule 21; not on a node
  split by GPU type, below); what ``GresUsed``/``AllocTRES`` say is in use is held. A node listing
  several GPU types (``gpu:a100:4(S:0),gpu:t4:2``) becomes one node per type, ``<node>:<type>``, each
  with a share of the cores and memory (:mod:`~placer.topology.importers.slurm_mixed`).
* ``State`` (``IDLE``, ``MIXED``, ``ALLOCATED``, ``DOWN*``, ``IDLE+DRAIN``, ...): see :func:`parse_state`.
* ``Partitions`` -> labels ``partition`` (the first), ``partitions`` (all, comma-separated) and
  ``partition/<name>: "true"`` for each (what a Slurm job's partition is matched against);
  ``ActiveFeatures`` (else ``AvailableFeatures``) -> properties; ``Arch`` -> label ``arch``; the raw state
  -> label ``slurm_state``.
* What is allocated on the node becomes one synthetic running job ``slurm-alloc-<node>``: cores, memory
  and GPUs from ``AllocTRES`` (``cpu=32,mem=256G,gres/gpu=4``), else ``CPUAlloc``/``AllocMem``/``GresUsed``.
  Its GPU indices are the ``IDX`` list of ``GresUsed`` (``gpu:h100:4(IDX:0-3)``) when given, else the
  lowest indices. ``scontrol show node`` does not say which jobs these are, so the allocation is
  ``on-demand``, priority 0, preemptibility unknown.
* ``Sockets``/``CoresPerSocket``/``ThreadsPerCore`` -> the inner tree: ``socket`` vertices each holding
  one pooled ``core`` vertex of size ``CoresPerSocket`` (``core0-55``, property ``threads``); GPUs hang
  under the sockets of their ``(S:..)`` list, split evenly in index order (Slurm does not print the exact
  split), or under the node when no list is given.

>>> inv = parse_slurm("NodeName=g01 CPUTot=64 RealMemory=515072 Gres=gpu:h100:8(S:0-1) State=IDLE",
...                   source="nodes.txt")
>>> n = inv.nodes[0]
>>> (n.name, n.cpu_cores, n.memory_gb, n.gpus.type, n.gpus.count, n.ready, n.schedulable)
('g01', 64.0, 503.0, 'nvidia-h100', 8, True, True)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from placer.topology.importers._common import GB, UNKNOWN_GPU, Problems, gpu_fields, short, whole_number
from placer.topology.importers.slurm_json import PROBLEM_KEY, is_slurm_json, json_records, sinfo_records
from placer.topology.importers.slurm_mixed import UNTYPED, Part, parts_of, split_replica
from placer.topology.inventory import InnerVertex, Inventory, NodeSpec, RunningJob

__all__ = [
    "CPUS_PER_CORE",
    "FORMAT",
    "KNOWN_KEYS",
    "NEUTRAL",
    "NOT_READY",
    "NOT_SCHEDULABLE",
    "SPACE_KEYS",
    "Gres",
    "cores_holding",
    "cpus_per_core",
    "fewest_cpus_per_core",
    "node_cpus_per_core",
    "parse_gres",
    "parse_index_list",
    "parse_memory_mb",
    "parse_slurm",
    "parse_state",
    "split_records",
]

FORMAT = "slurm"

#: Keys whose values may contain blanks.
SPACE_KEYS = frozenset({"Reason", "OS", "Comment", "Extra"})
#: Keys ``scontrol show node`` prints (Slurm 20.11 - 24.x); a blank followed by one of these ends a
#: blank-containing value.
_KNOWN_KEYS_TEXT = """
    NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUTot CPULoad AvailableFeatures ActiveFeatures Gres
    GresDrain GresUsed NodeAddr NodeHostName Port Version OS RealMemory AllocMem FreeMem Sockets Boards
    State ThreadsPerCore TmpDisk Weight Owner MCS_label Partitions BootTime SlurmdStartTime LastBusyTime
    ResumeAfterTime CfgTRES AllocTRES CapWatts CurrentWatts AveWatts ExtSensorsJoules ExtSensorsWatts
    ExtSensorsTemp Reason Comment Extra MemSpecLimit CoreSpecCount CPUSpecList Features NextState
    Topology InstanceId InstanceType LowestJoules ConsumedJoules Reservation TRESWeights"""
KNOWN_KEYS = frozenset(_KNOWN_KEYS_TEXT.split())
_PAIR = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)=(.*)$", re.S)
_NULL = {"", "(null)", "N/A", "none", "None"}

#: State words that make a node not ready (down, unreachable or powered off).
NOT_READY = frozenset(
    {
        "DOWN",
        "UNKNOWN",
        "FUTURE",
        "ERROR",
        "NOT_RESPONDING",
        "NO_RESPOND",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "POWER_DOWN",
        "POWERING_UP",
        "POWER_UP",
        "REBOOT_ISSUED",
        "INVALID_REG",
    }
)
#: State words that make a node take no new work.
NOT_SCHEDULABLE = frozenset(
    {
        "DOWN",
        "UNKNOWN",
        "FUTURE",
        "ERROR",
        "NOT_RESPONDING",
        "NO_RESPOND",
        "DRAIN",
        "DRAINING",
        "DRAINED",
        "FAIL",
        "FAILING",
        "MAINTENANCE",
        "MAINT",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "INVALID_REG",
        "BLOCKED",
        "POWER_DOWN",
        "POWERING_DOWN",
    }
)
#: State words with no effect on readiness or schedulability.
NEUTRAL = frozenset(
    {
        "IDLE",
        "MIXED",
        "MIX",
        "ALLOCATED",
        "ALLOC",
        "COMPLETING",
        "COMP",
        "CLOUD",
        "RESERVED",
        "RESV",
        "PLANNED",
        "PLND",
        "DYNAMIC_FUTURE",
        "DYNAMIC_NORM",
        "PERFCTRS",
        "NPC",
        "RESUME",
        "UNDRAIN",
    }
)
#: sinfo-style suffixes: ``*`` not responding, ``~`` powered off, ``#`` powering up, ``%`` powering down,
#: ``!`` power down pending, ``$`` maintenance, ``@`` reboot pending, ``^`` reboot issued, ``-`` planned.
_SUFFIX_WORDS = {
    "*": "NOT_RESPONDING",
    "~": "POWERED_DOWN",
    "#": "POWERING_UP",
    "%": "POWERING_DOWN",
    "!": "POWER_DOWN",
    "$": "MAINTENANCE",
    "@": "REBOOT_REQUESTED",
    "^": "REBOOT_ISSUED",
    "-": "PLANNED",
}


@dataclass(frozen=True)
class Gres:
    """One generic resource of a ``Gres``/``GresUsed`` list: ``gpu:h100:8(S:0-1)``."""

    name: str
    type: str | None
    count: int
    sockets: tuple[int, ...] = ()
    indices: tuple[int, ...] | None = None


def parse_state(text: str) -> tuple[bool, bool, list[str]]:
    """``(ready, schedulable, unknown words)`` of a Slurm node state.

    DOWN and the other unreachable states: neither ready nor schedulable. DRAIN (and FAIL, MAINTENANCE,
    REBOOT_REQUESTED...): ready (running work continues) but not schedulable. POWERED_DOWN cloud nodes:
    not ready, but schedulable (Slurm powers them up for a job).

    >>> parse_state("IDLE"), parse_state("DOWN*+DRAIN"), parse_state("MIXED+DRAIN")
    ((True, True, []), (False, False, []), (True, False, []))
    >>> parse_state("IDLE+CLOUD+POWERED_DOWN"), parse_state("IDLE+SHINY")
    ((False, True, []), (True, True, ['SHINY']))
    """
    ready = schedulable = True
    unknown: list[str] = []
    for raw in text.upper().split("+"):
        word = raw.strip()
        words = []
        while word and word[-1] in _SUFFIX_WORDS:
            words.append(_SUFFIX_WORDS[word[-1]])
            word = word[:-1]
        words.append(word)
        for w in words:
            if w in NOT_READY:
                ready = False
            if w in NOT_SCHEDULABLE:
                schedulable = False
            if w not in NOT_READY | NOT_SCHEDULABLE | NEUTRAL:
                unknown.append(w or raw)
    return ready, schedulable, unknown


def parse_index_list(text: str) -> tuple[int, ...] | None:
    """A Slurm index list ``0-3,6`` -> ``(0, 1, 2, 3, 6)``; None when malformed.

    >>> parse_index_list("0-1"), parse_index_list("0,2-3"), parse_index_list("x")
    ((0, 1), (0, 2, 3), None)
    """
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]{1,5})(?:-([0-9]{1,5}))?\s*", part)
        if not m:
            return None
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo or hi - lo > 4096:
            return None
        out.extend(range(lo, hi + 1))
    return tuple(out)


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


_GRES = re.compile(r"^([A-Za-z][\w.-]*)(?::([^:()]+))?(?::([^:()]+))?(?:\(([^)]*)\))?$")
_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_gres(text: str) -> list[Gres]:
    """A ``Gres``/``GresUsed`` value -> its entries; ``ValueError`` naming the bad entry.

    >>> [(g.name, g.type, g.count, g.sockets) for g in parse_gres("gpu:a100:4(S:0),gpu:t4:2")]
    [('gpu', 'a100', 4, (0,)), ('gpu', 't4', 2, ())]
    >>> parse_gres("gpu:h100:4(IDX:0-3)")[0].indices, parse_gres("gpu:8")[0].count, parse_gres("(null)")
    ((0, 1, 2, 3), 8, [])
    """
    text = text.strip()
    if text in _NULL:
        return []
    out: list[Gres] = []
    for entry in _split_top(text):
        m = _GRES.match(entry)
        if not m:
            raise ValueError(f"gres entry {entry!r} is not name[:type][:count][(S:..)]")
        name, typ, count_text, extra = m[1], m[2], m[3], m[4]
        if count_text is None and typ is not None and re.fullmatch(r"[0-9]+[KMGT]?", typ):
            typ, count_text = None, typ
        count = 1
        if count_text is not None:
            cm = re.fullmatch(r"([0-9]{1,12})([KMGT]?)", count_text)
            if not cm:
                raise ValueError(f"gres entry {entry!r}: count {count_text!r} is not a number")
            count = int(cm[1]) * _SCALE[cm[2]]
        sockets: tuple[int, ...] = ()
        indices: tuple[int, ...] | None = None
        if extra is not None:
            key, _, value = extra.partition(":")
            if key == "S":
                parsed = parse_index_list(value)
                if parsed is None:
                    raise ValueError(f"gres entry {entry!r}: socket list {value!r} is malformed")
                sockets = parsed
            elif key == "IDX":
                if value.strip() not in _NULL:
                    indices = parse_index_list(value)
                    if indices is None:
                        raise ValueError(f"gres entry {entry!r}: index list {value!r} is malformed")
            else:
                raise ValueError(f"gres entry {entry!r}: unknown qualifier {extra!r}")
        out.append(Gres(name, typ, count, sockets, indices))
    return out


def parse_memory_mb(text: str) -> float:
    """A Slurm memory amount (``256G``, ``515072M``, ``1T``; no suffix means MB) in MB.

    >>> parse_memory_mb("256G"), parse_memory_mb("1024")
    (262144.0, 1024.0)
    """
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([KMGTP]?)", text.strip())
    if not m:
        raise ValueError(f"memory {text!r} is not like 256G")
    factor = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}[m[2]]
    return float(m[1]) * factor


def split_records(text: str, problems: Problems) -> list[tuple[int, dict[str, str]]]:
    """The text's node records, each as ``(line number, {key: value})``.

    >>> split_records("NodeName=a State=IDLE\\n\\nNodeName=b Reason=Not responding [root]", Problems("x"))
    [(1, {'NodeName': 'a', 'State': 'IDLE'}), (3, {'NodeName': 'b', 'Reason': 'Not responding [root]'})]
    """
    records: list[tuple[int, dict[str, str]]] = []
    current: dict[str, str] | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        key: str | None = None
        for token in tokens:
            m = _PAIR.match(token)
            starts = m is not None and (key not in SPACE_KEYS or m[1] in KNOWN_KEYS)
            if starts and m is not None:
                key = m[1]
                if key == "NodeName":
                    current = {}
                    records.append((lineno, current))
                if current is None:
                    problems.add(f"line {lineno}", f"{key}= before the first NodeName=")
                    return records
                if key in current:
                    problems.add(f"line {lineno}", f"{key} is given twice in one node record")
                if key == "Reason":
                    # Slurm prints Reason at the end of its line (alone in the multi-line form, last in -o,
                    # at most Comment= or Extra= after it): free text, `Port=` or `State=` inside included.
                    rest = line.split("Reason=", 1)[1]
                    cut = re.search(r"\s(?:Comment|Extra)=", rest)
                    current[key] = (rest[: cut.start()] if cut else rest).strip()
                    if cut is None:
                        break
                    tail = rest[cut.start() :].split()
                    _more(tail, current, lineno, problems)
                    break
                current[key] = m[2]
            elif key in SPACE_KEYS and current is not None:
                current[key] += " " + token
            else:
                problems.add(f"line {lineno}", f"unexpected text {short(token)} (expected Key=Value)")
                return records
    return records


def _more(tokens: list[str], current: dict[str, str], lineno: int, problems: Problems) -> None:
    """``Comment=`` / ``Extra=`` after a Reason on the same line (blank-containing values)."""
    key: str | None = None
    for token in tokens:
        m = _PAIR.match(token)
        if m is not None and m[1] in ("Comment", "Extra"):
            key = m[1]
            if key in current:
                problems.add(f"line {lineno}", f"{key} is given twice in one node record")
            current[key] = m[2]
        elif key is not None:
            current[key] += " " + token


def parse_slurm(text: Any, *, source: str) -> Inventory:
    """``scontrol show node`` output -> Inventory; :class:`~placer.topology.errors.TopologyError` naming each
    bad
    record (``record 5 (NodeName=g01)``) otherwise.

    >>> parse_slurm("NodeName=g01 CPUTot=x", source="n.txt")
    Traceback (most recent call last):
    ...
    placer.topology.errors.TopologyError: n.txt: record 1 (NodeName=g01): CPUTot 'x' is not a whole number
    """
    problems = Problems(source)
    if isinstance(text, dict) and is_slurm_json(text):
        if isinstance(text.get("sinfo"), list):  # sinfo --json, Slurm 23.11 and later
            grouped = sinfo_records(text)
            if not grouped:
                problems.add("sinfo", "the node list is empty")
                problems.check()
            items = [item for item, _ in grouped]
            return _inventory(
                [(k, rec) for k, (_, rec) in enumerate(grouped, 1)],
                problems,
                source,
                lambda n, _: items[n - 1],
            )
        records = list(enumerate(json_records(text), start=1))
        if not records:
            problems.add("nodes", "the node list is empty")
            problems.check()
        return _inventory(records, problems, source, item_of=_json_item)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            problems.add("document", "is not UTF-8 text")
            problems.check()
    if not isinstance(text, str):
        problems.add("document", f"expected scontrol show node text, got {short(text)}")
        problems.check()
    records = split_records(text, problems)
    problems.check()
    if not records:
        problems.add("document", "no NodeName= records (is this `scontrol show node` output?)")
        problems.check()
    return _inventory(records, problems, source)


def _record_item(number: int, name: str) -> str:
    return f"record {number} (NodeName={name})"


def _json_item(number: int, name: str) -> str:
    return f"nodes[{number - 1}] ({name})"


def _inventory(
    records: list[tuple[int, dict[str, str]]],
    problems: Problems,
    source: str,
    item_of: Any = _record_item,
) -> Inventory:
    """The inventory of the node records (text or JSON alike)."""
    nodes: list[NodeSpec] = []
    running: list[RunningJob] = []
    seen: set[str] = set()
    for number, (_, record) in enumerate(records, start=1):
        name = record.get("NodeName", "").strip()
        item = item_of(number, name)
        if PROBLEM_KEY in record:  # what a JSON form said that no record can hold (slurm_json.py)
            problems.add(item, record[PROBLEM_KEY])
            continue
        if not name:
            problems.add(item, "NodeName is empty")
            continue
        if name in seen:
            problems.add(item, f"node {name!r} appears twice")
            continue
        seen.add(name)
        result = _node(record, name, item, problems)
        for node, job in result or []:
            nodes.append(node)
            if job is not None:
                running.append(job)
    problems.check()
    inv = problems.model(
        Inventory,
        {"nodes": nodes, "running": running, "metadata": {"format": FORMAT, "source": source}},
        "document",
    )
    problems.check()
    assert inv is not None
    return inv


def _int(record: dict[str, str], key: str, item: str, problems: Problems, default: int = 0) -> int:
    text = record.get(key, "").strip()
    if text in _NULL:
        return default
    if not (text.isascii() and text.isdigit()) or len(text) > 15:
        problems.add(item, f"{key} {text!r} is not a whole number")
        return default
    return int(text)


def cpus_per_core(cpus: int, sockets: int, cores_per_socket: int, threads: int) -> int:
    """How many of Slurm's CPUs make one core of a node: ``ThreadsPerCore`` when ``CPUTot`` counts
    hardware threads (``Sockets x CoresPerSocket x ThreadsPerCore``; ``Sockets`` is the node's total),
    else 1 (``CPUTot`` counts cores; Slurm then allocates a core as one CPU).

    >>> cpus_per_core(224, 2, 56, 2), cpus_per_core(112, 2, 56, 2), cpus_per_core(64, 0, 0, 1)
    (2, 1, 1)
    """
    if threads > 1 and sockets > 0 and cores_per_socket > 0 and cpus == sockets * cores_per_socket * threads:
        return threads
    return 1


#: Node label: how many Slurm CPUs make one core (only where more than one, :func:`cpus_per_core`).
CPUS_PER_CORE = "slurm_cpus_per_core"


def node_cpus_per_core(labels: Mapping[str, str]) -> int:
    """A node's :data:`CPUS_PER_CORE` label (1 without it)."""
    value = labels.get(CPUS_PER_CORE, "1")
    return whole_number(value) or 1


def cores_holding(cpus: float, cpus_per_core: int) -> float:
    """The whole cores that hold ``cpus`` of Slurm's CPUs, ``cpus_per_core`` of them to a core (Slurm's
    ``CR_Core`` allocates whole cores): ``cpus`` itself where a CPU is a core.

    >>> cores_holding(3, 2), cores_holding(4, 2), cores_holding(3, 1)
    (2.0, 2.0, 3)
    """
    return cpus if cpus_per_core <= 1 else float(math.ceil(cpus / cpus_per_core - 1e-9))


def fewest_cpus_per_core(nodes: Iterable[Any]) -> int:
    """The smallest :func:`node_cpus_per_core` of ``nodes`` (anything with ``labels``; 1 for none): what a
    pending Slurm job's CPUs are divided by to count cores (never fewer cores than Slurm would give)."""
    return min((node_cpus_per_core(n.labels) for n in nodes), default=1)


def _node(
    record: dict[str, str], name: str, item: str, problems: Problems
) -> list[tuple[NodeSpec, RunningJob | None]] | None:
    before = len(problems.items)
    cpus = _int(record, "CPUTot", item, problems)
    memory_mb = _int(record, "RealMemory", item, problems)
    tmp_mb = _int(record, "TmpDisk", item, problems)
    sockets = _int(record, "Sockets", item, problems, default=0)
    cores_per_socket = _int(record, "CoresPerSocket", item, problems, default=0)
    threads = _int(record, "ThreadsPerCore", item, problems, default=1)
    state_text = record.get("State", "").strip()
    ready, schedulable, unknown = parse_state(state_text) if state_text else (True, True, [])
    if unknown:
        problems.add(item, f"State {state_text!r}: unknown state {', '.join(unknown)}")
    try:
        gres = parse_gres(record.get("Gres", ""))
    except ValueError as e:
        problems.add(item, f"Gres: {e}")
        gres = []
    try:
        used = parse_gres(record.get("GresUsed", ""))
    except ValueError as e:
        problems.add(item, f"GresUsed: {e}")
        used = []
    labels: dict[str, str] = {}
    extra: dict[str, float] = {}
    gpu_entries = [g for g in gres if g.name == "gpu"]
    for g in gres:
        if g.name != "gpu":
            key = f"gres/{g.name}"
            labels[key] = str(int(labels.get(key, "0")) + g.count)
            if g.count > 0:
                extra[key] = extra.get(key, 0.0) + g.count
    mixed = len({g.type for g in gpu_entries if g.count}) > 1
    if len(problems.items) > before:
        return None

    per_core = cpus_per_core(cpus, sockets, cores_per_socket, threads)
    if per_core > 1:
        labels[CPUS_PER_CORE] = str(per_core)
    gpu_count = sum(g.count for g in gpu_entries)
    first = next((g for g in gpu_entries if g.count), gpu_entries[0] if gpu_entries else None)
    gpu_facts = gpu_fields(first.type) if first is not None and first.type else {"type": UNKNOWN_GPU}
    gpu_name = gpu_facts["type"]
    partitions = [p for p in record.get("Partitions", "").split(",") if p.strip() not in _NULL]
    if partitions:
        labels["partition"] = partitions[0]
        labels["partitions"] = ",".join(partitions)
        labels.update({f"partition/{p.strip()}": "true" for p in partitions})  # what a job's partition reads
    if record.get("Arch", "").strip() not in _NULL:
        labels["arch"] = record["Arch"].strip()
    if state_text:
        labels["slurm_state"] = state_text
    for key, label in (("Reason", "slurm_reason"), ("Comment", "slurm_comment"), ("Extra", "slurm_extra")):
        value = record.get(key, "").strip()
        if value not in _NULL:
            labels[label] = value[:256]
    features = record.get("ActiveFeatures")
    if features is None or features.strip() in _NULL:
        features = record.get("AvailableFeatures", "")
    properties = [f.strip() for f in features.split(",") if f.strip() not in _NULL]
    data: dict[str, Any] = {
        "name": name,
        "cpu_cores": cpus // per_core,
        "memory_gb": memory_mb / 1024,
        "storage_gb": tmp_mb / 1024,
        "labels": labels,
        "properties": properties,
        "ready": ready,
        "schedulable": schedulable,
        "inner": _inner(sockets, cores_per_socket, threads, gpu_entries, gpu_name),
    }
    if extra and not mixed:  # a node split by GPU type (mixed) keeps them as labels only
        data["extra"] = extra
    if gpu_count:
        data["gpus"] = {**gpu_facts, "count": gpu_count}
    node = problems.model(NodeSpec, data, item)
    if node is None:
        return None
    tres = _alloc_tres(record, item, problems)
    job = None if tres is None else _allocation(record, tres, node, used, per_core, item, problems)
    if tres is None or len(problems.items) > before:
        return None
    if mixed:
        return _parts(data, node, job, gpu_entries, used, tres, threads, item, problems)
    return [(node, job)]


def _parts(
    data: dict[str, Any],
    node: NodeSpec,
    job: RunningJob | None,
    entries: list[Gres],
    used: list[Gres],
    tres: dict[str, str],
    threads: int,
    item: str,
    problems: Problems,
) -> list[tuple[NodeSpec, RunningJob | None]] | None:
    """A node with several GPU types as one node per type (:mod:`~placer.topology.importers.slurm_mixed`),
    what is allocated on it split over them. Which GPUs of each type are in use must be known: from
    ``GresUsed`` indices (``-d``, the JSON forms) or per-type counts in ``AllocTRES``. A part's inner tree
    holds its GPUs only: its cores are a share of the node's, not whole sockets."""
    entries = [g for g in entries if g.count]  # a type listed with no GPUs makes no part
    parts = parts_of(
        node.name,
        [(g.type, g.count) for g in entries],
        cores=int(node.cpu_cores),
        memory_gb=node.memory_gb,
        storage_gb=node.storage_gb or 0.0,
    )
    busy: list[int] = []
    if job is not None and job.replicas[0].gpus:
        found = _busy_by_type(job, parts, used, tres, item, problems)
        if found is None:
            return None
        busy = found
    out: list[tuple[NodeSpec, RunningJob | None]] = []
    for part in parts:
        mine = [g for g in entries if (g.type or UNTYPED) == part.gres_type]
        facts = gpu_fields(mine[0].type) if mine[0].type else {"type": UNKNOWN_GPU}
        spec = problems.model(
            NodeSpec,
            {
                **data,
                "name": part.name,
                "cpu_cores": part.cores,
                "memory_gb": part.memory_gb,
                "storage_gb": part.storage_gb,
                "labels": {**data["labels"], **part.labels},
                "inner": _inner(0, 0, threads, mine, facts["type"]),
                "gpus": {**facts, "count": len(part.gpus)},
            },
            item,
        )
        if spec is None:
            return None
        out.append((spec, None))
    if job is not None:
        r = job.replicas[0]
        split = split_replica(busy, r.cpu_cores, r.memory_gb, parts)
        assert not isinstance(split, int)  # busy indices come from the parts
        replicas = [{"node": n, "gpus": g, "cpu_cores": c, "memory_gb": m} for n, g, c, m in split]
        rj = problems.model(RunningJob, {**job.model_dump(), "replicas": replicas}, item)
        if rj is None:
            return None
        out[0] = (out[0][0], rj)
    return out


def _busy_by_type(
    job: RunningJob,
    parts: list[Part],
    used: list[Gres],
    tres: dict[str, str],
    item: str,
    problems: Problems,
) -> list[int] | None:
    """The node's GPU indices in use, each known to be of its part's type."""
    count = len(job.replicas[0].gpus)
    listed = [i for g in used if g.name == "gpu" and g.indices is not None for i in g.indices]
    if len(set(listed)) == count and all(g.indices is not None for g in used if g.name == "gpu" and g.count):
        for g in used:
            if g.name != "gpu" or not g.indices:
                continue
            part = next((p for p in parts if p.gres_type == (g.type or UNTYPED)), None)
            if part is None or not set(g.indices) <= set(part.gpus):
                shown = ",".join(map(str, g.indices))
                problems.add(
                    item, f"GresUsed {g.type}:{g.count}(IDX:{shown}) is not among the node's {g.type} GPUs"
                )
                return None
        return sorted(set(listed))
    per_type = {
        k.removeprefix("gres/gpu:"): n
        for k, v in tres.items()
        if k.startswith("gres/gpu:") and (n := whole_number(v)) is not None
    }
    if (
        per_type
        and sum(per_type.values()) == count
        and all(any(p.gres_type == t and n <= len(p.gpus) for p in parts) for t, n in per_type.items())
    ):
        return sorted(i for p in parts for i in p.gpus[: per_type.get(p.gres_type, 0)])
    problems.add(
        item,
        "GPU usage per type unknown: the node has several GPU types and which of them are in use is not "
        "printed (GresUsed without IDX); give `scontrol show node -d`, `sinfo --json` or "
        "`scontrol show node --json`",
    )
    return None


def _inner(sockets: int, per_socket: int, threads: int, gpus: list[Gres], model: str) -> list[InnerVertex]:
    """Sockets with their cores, GPUs under their sockets (see the module docstring)."""
    if sockets <= 0 or sockets > 64 or per_socket > 4096:
        sockets, per_socket = 0, 0
    # One pooled core vertex per socket (size = cores), as Flux pools identical resources: 10,000 nodes of
    # 112 cores stay 20,000 vertices, not 1.1 million.
    socket_children: list[list[InnerVertex]] = [
        [
            InnerVertex(
                type="core",
                name=f"core{s * per_socket}-{(s + 1) * per_socket - 1}",
                size=per_socket,
                properties={"threads": str(threads)},
            )
        ]
        if per_socket
        else []
        for s in range(sockets)
    ]
    loose: list[InnerVertex] = []
    index = 0
    for g in gpus:
        targets = [s for s in g.sockets if s < sockets]
        for k in range(g.count):
            vertex = InnerVertex(type="gpu", name=f"gpu{index}", properties={"model": model})
            index += 1
            if targets:
                # Even split in index order: the first count/len(targets) GPUs on the first socket, ...
                socket = targets[min(k * len(targets) // g.count, len(targets) - 1)]
                socket_children[socket].append(vertex)
            else:
                loose.append(vertex)
    tree = [
        InnerVertex(type="socket", name=f"socket{s}", children=kids) for s, kids in enumerate(socket_children)
    ]
    return tree + loose


def _alloc_tres(record: dict[str, str], item: str, problems: Problems) -> dict[str, str] | None:
    """``AllocTRES`` as key -> value (empty when not printed); None, with a problem, when malformed."""
    tres: dict[str, str] = {}
    alloc_text = record.get("AllocTRES", "").strip()
    if alloc_text not in _NULL:
        for part in alloc_text.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                problems.add(item, f"AllocTRES entry {part!r} is not key=value")
                return None
            tres[key.strip()] = value.strip()
    return tres


def _allocation(
    record: dict[str, str],
    tres: dict[str, str],
    node: NodeSpec,
    used: list[Gres],
    per_core: int,
    item: str,
    problems: Problems,
) -> RunningJob | None:
    cpus: float = _int(record, "CPUAlloc", item, problems)
    memory_mb: float = _int(record, "AllocMem", item, problems)
    # Plain `scontrol show node` prints GPU usage only when gres/gpu is an accounted TRES
    # (AccountingStorageTRES; CfgTRES then lists it). Without it, a node with work on it may hold any of its
    # GPUs: reading them as free double-books them.
    unknown = (
        node.gpus is not None
        and node.gpus.count > 0
        and "GresUsed" not in record
        and "gres/gpu" not in record.get("CfgTRES", "")
    )
    if unknown and (cpus or memory_mb):
        problems.add(
            item,
            "GPU usage unknown: the node runs work and neither GresUsed nor a gres/gpu TRES is printed "
            "(plain `scontrol show node` without gres/gpu accounting); give `scontrol show node -d`, "
            "`sinfo --json` or `scontrol show node --json`",
        )
        return None
    used_gpus = [g for g in used if g.name == "gpu"]
    gpus = sum(g.count for g in used_gpus)
    try:
        if "cpu" in tres:
            cpus = float(tres["cpu"])
        if "mem" in tres:
            memory_mb = parse_memory_mb(tres["mem"])
        if "gres/gpu" in tres:
            gpus = int(tres["gres/gpu"])
        elif any(k.startswith("gres/gpu:") for k in tres):
            gpus = sum(int(v) for k, v in tres.items() if k.startswith("gres/gpu:"))
    except ValueError as e:
        problems.add(item, f"AllocTRES {record['AllocTRES'].strip()!r}: {e}")
        return None
    total = node.gpus.count if node.gpus else 0
    if gpus > total:
        problems.add(item, f"{gpus} GPUs are allocated but the node has {total}")
        return None
    if cpus > node.cpu_cores * per_core:
        problems.add(item, f"{cpus:g} CPUs are allocated but CPUTot is {node.cpu_cores * per_core:g}")
        return None
    cpus = cores_holding(cpus, per_core)
    indices = sorted({i for g in used_gpus for i in (g.indices or ())})
    if len(indices) != gpus or any(i >= total for i in indices):
        indices = list(range(gpus))  # no usable IDX list: the lowest indices
    held: dict[str, float] = {}  # other generic resources in use: GresUsed, else AllocTRES gres/<name>
    for g in used:
        if g.name != "gpu" and g.count > 0 and f"gres/{g.name}" in node.extra:
            held[f"gres/{g.name}"] = held.get(f"gres/{g.name}", 0.0) + g.count
    if not held:
        for k, v in tres.items():
            name = k.split(":", 1)[0]
            if name.startswith("gres/") and name != "gres/gpu" and name in node.extra and ":" not in k:
                amount = whole_number(v)
                if amount:
                    held[name] = held.get(name, 0.0) + amount
    if not (cpus or memory_mb or gpus or held):
        return None
    replica: dict[str, Any] = {"node": node.name, "gpus": indices, "cpu_cores": cpus}
    replica["memory_gb"] = memory_mb * 2**20 / GB
    if held:
        replica["extra"] = held
    data = {"job": f"slurm-alloc-{node.name}", "labels": {"slurm_node": node.name}, "replicas": [replica]}
    return problems.model(RunningJob, data, item)
