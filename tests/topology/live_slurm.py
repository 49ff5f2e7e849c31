"""A throw-away Slurm on this host, for tests: one ``slurmctld`` and five ``slurmd`` (several ``slurmd`` on
one host, each with its own port), fake GPUs as ``mknod`` character devices, jobs on them, a drained and a
down node; it captures what Slurm prints and stops every process it started, by PID.

Why a live Slurm: placer reads what Slurm prints, and what Slurm prints (which GPUs it reports used, in
which command, in which form) is exactly what broke with hand-written fixtures — plain ``scontrol show
node`` reports every GPU free when gres/gpu is not accounted. Debian's packages (``slurmctld slurmd
slurm-client munge``, Slurm 22.05) start in under a second; ``.ci/run`` installs them. Root is needed.

Jobs (what the tests' arithmetic relies on):

* ``a`` holds 2 H100 (time limit 30 minutes) and ``b`` 3 H100 (120 minutes) of ``gpu01`` (8): 3 free there;
* ``c`` holds 4 of ``gpu02``'s 8 H100 (no time limit), which is then drained (``drain while job runs``);
* ``d`` holds all 4 A100 of ``gpu03`` (90 minutes);
* ``gpu04`` (8 H100) is idle and set down (``down by hand``); ``cpu01`` (no GPU) is drained idle;
* ``f`` asks 8 H100 on ``gpu01`` and stays pending.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "LiveSlurm",
    "available",
    "available_accounting",
    "running",
    "start",
    "start_licenses",
    "start_mixed",
    "start_options",
    "start_partition_qos",
    "start_qos",
    "start_ranges",
    "start_smt",
]

BINARIES = ("slurmctld", "slurmd", "scontrol", "sbatch", "munged", "munge")
#: What an accounted Slurm needs besides (``slurmdbd`` stores into a throw-away MariaDB).
ACCOUNTING = ("slurmdbd", "sacctmgr", "mariadbd", "mariadb-install-db", "mariadb")
#: Node name -> (slurmd port, Gres, gres.conf line or "").
NODES = {
    "gpu01": (17001, "gpu:h100:8", "Name=gpu Type=h100 File={dev}/nvidia[0-7]"),
    "gpu02": (17002, "gpu:h100:8", "Name=gpu Type=h100 File={dev}/nvidia[0-7]"),
    "gpu03": (17003, "gpu:a100:4", "Name=gpu Type=a100 File={dev}/nvidia[0-3]"),
    "gpu04": (17004, "gpu:h100:8", "Name=gpu Type=h100 File={dev}/nvidia[0-7]"),
    "cpu01": (17011, "", ""),
}
#: topology/tree: two leaf switches under a spine (Slurm reads it; placer reads the same file and what
#: ``scontrol show topology`` prints).
TOPOLOGY = (
    "SwitchName=leaf1 Nodes=gpu[01-02]\nSwitchName=leaf2 Nodes=gpu[03-04],cpu01\n"
    "SwitchName=spine Switches=leaf[1-2]\n"
)
#: Partition -> its settings: ``gpu`` (the default) outranks ``scavenger``, whose jobs Slurm's
#: ``preempt/partition_prio`` may requeue after a 1-second grace time; ``gpu``'s jobs are never preempted.
PARTITIONS = {
    "gpu": "Nodes=gpu[01-04],cpu01 Default=YES MaxTime=INFINITE PriorityTier=10 PreemptMode=OFF",
    "scavenger": "Nodes=gpu[01-04],cpu01 MaxTime=INFINITE PriorityTier=1 PreemptMode=REQUEUE GraceTime=1",
}
#: (name, node, --gres, --time in minutes or None for unlimited).
JOBS = [
    ("a", "gpu01", "gpu:h100:2", 30),
    ("b", "gpu01", "gpu:h100:3", 120),
    ("c", "gpu02", "gpu:h100:4", None),
    ("d", "gpu03", "gpu:a100:4", 90),
]


def available() -> str | None:
    """None when a live Slurm can start here, else why not."""
    if os.geteuid() != 0:
        return "needs root (mknod, slurmd)"
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return f"missing {', '.join(missing)} (apt-get install -y slurmctld slurmd slurm-client munge)"
    return None


def available_accounting() -> str | None:
    """None when a live Slurm with accounting (slurmdbd, MariaDB) can start here, else why not."""
    why = available()
    if why is not None:
        return why
    missing = [b for b in ACCOUNTING if shutil.which(b) is None]
    if missing:
        return f"missing {', '.join(missing)} (apt-get install -y slurmdbd mariadb-server)"
    return None


class LiveSlurm:
    """A started Slurm: its directory, environment, and the PIDs it must stop."""

    def __init__(self, root: Path):
        self.root = root
        self.env = {**os.environ, "SLURM_CONF": str(root / "etc" / "slurm.conf")}
        self.pids: list[int] = []
        self.munged: int | None = None
        self.out: dict[str, str] = {}

    def run(self, *cmd: str, check: bool = True) -> str:
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    def wait(self, what: str, ok: object, seconds: float = 30.0) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if ok():  # type: ignore[operator]
                return
            time.sleep(0.1)
        raise RuntimeError(f"live Slurm: {what} not reached in {seconds:g} s")

    def stop(self) -> None:
        """Cancel the jobs, then stop the daemons it started (slurmds first) and munged if it started it."""
        self.run("scancel", "--user=root", check=False)
        end = time.monotonic() + 10
        while time.monotonic() < end and self.run("squeue", "-h", "-t", "R,CG", check=False).strip():
            time.sleep(0.2)
        run = self.root / "run"
        # In layers, each layer at once (a slurmd takes about 2 s to go): the slurmds, the controller, the
        # accounting daemon, its database, munged.
        layers = [
            sorted(run.glob("slurmd-*.pid")),
            [run / "slurmctld.pid"],
            [run / "slurmdbd.pid"],
            [run / "db.pid"],
        ]
        for layer in layers:
            _kill(*(int(f.read_text().split()[0]) for f in layer if f.exists()))
        if self.munged is not None:
            _kill(self.munged)


def running(
    root: Path, starter: Callable[[Path], LiveSlurm], check: Callable[[], str | None] = available
) -> Iterator[LiveSlurm]:
    """A pytest fixture's body: ``starter(root)``, yielded, stopped afterwards; fails (never skips) where
    a live Slurm cannot start (``check``)."""
    import pytest

    why = check()
    if why is not None:
        pytest.fail(f"a live Slurm cannot start here: {why}; .ci/run installs it (Debian packages)")
    s = starter(root)
    try:
        yield s
    finally:
        s.stop()


def _kill(*pids: int) -> None:
    """SIGTERM to each of ``pids``, then wait up to 5 s for them all to go; SIGKILL to those left."""
    left = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)
            left.append(pid)
    end = time.monotonic() + 5
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = [pid for pid in left if _alive(pid)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _conf(
    root: Path,
    host: str,
    nodes: dict[str, tuple[int, str, str]] | None = None,
    partitions: dict[str, str] | None = None,
    cpus: str = "CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1",
) -> str:
    nodes = NODES if nodes is None else nodes
    partitions = PARTITIONS if partitions is None else partitions
    lines = f"""ClusterName=placer
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
SwitchType=switch/none
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
""".splitlines()
    for name, (port, gres, _) in nodes.items():
        g = f" Gres={gres}" if gres else ""
        lines.append(f"NodeName={name} NodeHostname={host} Port={port} {cpus} RealMemory=4000{g}")
    lines += [f"PartitionName={p} {rest} State=UP" for p, rest in partitions.items()]
    return "\n".join(lines) + "\n"


def _boot(
    root: Path,
    nodes: dict[str, tuple[int, str, str]],
    conf: str,
    topology: str | None = None,
    before: Callable[[LiveSlurm], None] | None = None,
) -> LiveSlurm:
    """Write ``conf`` (and ``topology``) under ``root``, start munged if needed, then ``before(s)`` (what
    slurmctld needs up first), slurmctld and one slurmd per node of ``nodes``, and wait until every node
    has registered. On failure it stops what it started before raising."""
    s = LiveSlurm(root)
    for d in ("etc", "state", "run", "log", "dev", *(f"spool/{n}" for n in nodes)):
        (root / d).mkdir(parents=True, exist_ok=True)
    for i in range(8):
        os.mknod(root / "dev" / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, i))
    (root / "etc" / "slurm.conf").write_text(conf)
    gres = ["AutoDetect=off"] + [
        f"NodeName={n} " + line.format(dev=root / "dev") for n, (_, _, line) in nodes.items() if line
    ]
    (root / "etc" / "gres.conf").write_text("\n".join(gres) + "\n")
    if topology is not None:
        (root / "etc" / "topology.conf").write_text(topology)
    try:
        if subprocess.run(["munge", "-n"], capture_output=True).returncode != 0:
            for d in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
                Path(d).mkdir(parents=True, exist_ok=True)
                shutil.chown(d, "munge", "munge")
            pid_file = Path("/run/munge/placer-tests-munged.pid")  # munged runs as munge: its own dir
            pid_file.unlink(missing_ok=True)
            subprocess.run(
                ["runuser", "-u", "munge", "--", "munged", f"--pid-file={pid_file}"], check=True, timeout=30
            )
            s.wait("munged", pid_file.exists, 10)
            s.munged = int(pid_file.read_text().split()[0])
            s.wait("munge", lambda: subprocess.run(["munge", "-n"], capture_output=True).returncode == 0, 10)
        if before is not None:
            before(s)
        s.run("slurmctld", "-f", s.env["SLURM_CONF"], "-c", "-i")
        s.wait("slurmctld", lambda: "UP" in s.run("scontrol", "ping", check=False))
        for n in nodes:
            s.run("slurmd", "-f", s.env["SLURM_CONF"], "-N", n)

        def registered() -> bool:
            states = set(s.run("sinfo", "-h", "-N", "-o", "%t", check=False).split())
            return bool(states) and not any("unk" in x or "*" in x for x in states)

        s.wait("nodes registered", registered)
    except BaseException:
        s.stop()
        raise
    return s


def start(root: Path) -> LiveSlurm:
    """Start Slurm under ``root``, put the jobs of the module docstring on it, drain and down nodes, and
    capture ``scontrol show node`` (plain and ``-d``), ``sinfo --json`` and ``squeue --json`` into
    ``LiveSlurm.out``. On any failure it stops what it started before raising."""
    host = socket.gethostname().split(".")[0]
    s = _boot(root, NODES, _conf(root, host) + "TopologyPlugin=topology/tree\n", TOPOLOGY)
    try:
        # No slurm-<id>.out in the caller's directory; one core each; the job just sleeps.
        quiet = ("-Q", "-o", "/dev/null", "-D", str(root), "-c", "1", "--wrap", "sleep 600")
        for name, node, gres, minutes in JOBS:
            limit = ("-t", str(minutes)) if minutes is not None else ()
            s.run("sbatch", "-J", name, "-w", node, f"--gres={gres}", *limit, *quiet)
        s.run("sbatch", "-J", "f", "-w", "gpu01", "--gres=gpu:h100:8", *quiet)
        s.wait("jobs running", lambda: len(s.run("squeue", "-h", "-t", "R").splitlines()) >= len(JOBS))
        s.run("scontrol", "update", "nodename=gpu02", "state=drain", "reason=drain while job runs")
        s.run("scontrol", "update", "nodename=cpu01", "state=drain", "reason=drain idle")
        s.run("scontrol", "update", "nodename=gpu04", "state=down", "reason=down by hand")
        s.out["show-node"] = s.run("scontrol", "show", "node")
        s.out["show-node-d"] = s.run("scontrol", "show", "node", "-d")
        s.out["sinfo-json"] = s.run("sinfo", "--json")
        s.out["squeue-json"] = s.run("squeue", "--json")
        s.out["squeue-ids"] = s.run("squeue", "-h", "-t", "R", "-o", "%i %j")
        s.out["show-topology"] = s.run("scontrol", "show", "topology")
        s.out["show-job-d"] = s.run("scontrol", "show", "job", "-d")
        s.out["show-partition"] = s.run("scontrol", "show", "partition")
    except BaseException:
        s.stop()
        raise
    return s


#: A node whose CPUs are hardware threads: 1 socket x 2 cores x 2 threads = 4 CPUs (slurm.conf's word
#: taken over the host's, ``SlurmdParameters=config_overrides``), alone in partition ``smt``.
SMT_NODES = {"smt01": (17021, "", "")}
SMT_CPUS = "CPUs=4 Sockets=1 CoresPerSocket=2 ThreadsPerCore=2"


def start_smt(root: Path) -> LiveSlurm:
    """A second throw-away Slurm (run after the first has stopped: same ports) with the one node of
    :data:`SMT_NODES`, and ``off01``, a cloud node that is powered down (power saving on, no slurmd: Slurm
    would start it through ``ResumeProgram``; ``PrivateData=cloud`` shows it, as Slurm hides powered-down
    cloud nodes otherwise), alone in partition ``cloud``. Job ``e`` asks 1 CPU and
    runs: Slurm allocates whole cores (``CR_Core_Memory``), so it holds one core, 2 CPUs. Job ``g`` asks 3
    CPUs (2 cores) and waits: one core is left. Captures ``sinfo --json``, ``squeue --json``, ``scontrol
    show node -d`` and ``scontrol show job -d``."""
    host = socket.gethostname().split(".")[0]
    partitions = {
        "smt": "Nodes=smt01 Default=YES MaxTime=INFINITE",
        "cloud": "Nodes=off01 MaxTime=INFINITE",
    }
    conf = _conf(root, host, SMT_NODES, partitions, SMT_CPUS)
    conf += "SlurmdParameters=config_overrides\n"
    conf += "SuspendProgram=/bin/true\nResumeProgram=/bin/true\nSuspendTime=600\nPrivateData=cloud\n"
    off = f"NodeName=off01 NodeHostname={host} Port=17022 {SMT_CPUS} RealMemory=4000 State=CLOUD\n"
    conf = conf.replace("PartitionName=", off + "PartitionName=", 1)  # nodes before the partitions
    s = _boot(root, SMT_NODES, conf)
    try:
        quiet = ("-Q", "-o", "/dev/null", "-D", str(root), "--wrap", "sleep 600")
        s.run("sbatch", "-J", "e", "-c", "1", *quiet)
        s.wait("e running", lambda: "RUNNING" in s.run("squeue", "-h", "-o", "%T"))
        s.run("sbatch", "-J", "g", "-c", "3", *quiet)
        _capture(s)
    except BaseException:
        s.stop()
        raise
    return s


#: A node with two GPU types (A100 0-1, T4 2-3: Slurm numbers a node's GPUs in its gres.conf order) and
#: four cores (slurm.conf's word taken over the host's), alone in partition ``mix``.
MIXED_NODES = {
    "mix01": (
        17031,
        "gpu:a100:2,gpu:t4:2",
        "Name=gpu Type=a100 File={dev}/nvidia[0-1]\nNodeName=mix01 Name=gpu Type=t4 File={dev}/nvidia[2-3]",
    )
}
MIXED_CPUS = "CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1"


def start_mixed(root: Path) -> LiveSlurm:
    """A throw-away Slurm (run after the others have stopped: same ports) with the one node of
    :data:`MIXED_NODES`. Job ``t`` holds one T4 (and one core), job ``a`` one A100; job ``w`` asks both
    T4 and waits (one is free). Captures ``scontrol show node -d``, ``sinfo --json``, ``squeue --json`` and
    ``scontrol show job -d``."""
    host = socket.gethostname().split(".")[0]
    partitions = {"mix": "Nodes=mix01 Default=YES MaxTime=INFINITE"}
    conf = _conf(root, host, MIXED_NODES, partitions, MIXED_CPUS) + "SlurmdParameters=config_overrides\n"
    s = _boot(root, MIXED_NODES, conf)
    try:
        quiet = ("-Q", "-o", "/dev/null", "-D", str(root), "-c", "1", "--wrap", "sleep 600")
        s.run("sbatch", "-J", "t", "--gres=gpu:t4:1", *quiet)
        s.run("sbatch", "-J", "a", "--gres=gpu:a100:1", *quiet)
        s.wait("jobs running", lambda: len(s.run("squeue", "-h", "-t", "R").splitlines()) >= 2)
        s.run("sbatch", "-J", "w", "--gres=gpu:t4:2", *quiet)
        _capture(s)
    except BaseException:
        s.stop()
        raise
    return s


#: :func:`start_options`' nodes: two H100 hosts and an A100 host, all up.
OPTION_NODES = {n: NODES[n] for n in ("gpu01", "gpu02", "gpu03")}
#: (name, sbatch options) of :func:`start_options`' held jobs: what a Slurm user asks beside resources.
OPTION_JOBS = [
    ("excl", ("--exclusive", "--gres=gpu:h100:1")),
    ("later", ("--begin=2030-01-01T00:00:00", "--gres=gpu:h100:1")),
    ("resv", ("--reservation=maint", "--gres=gpu:a100:1")),
    ("plain-a100", ("--gres=gpu:a100:1",)),
    ("contig", ("--contiguous", "-N", "2", "--gres=gpu:h100:1")),
    ("too-long", ("-p", "short", "-t", "60", "--gres=gpu:h100:1")),
    ("in-down", ("-p", "down", "--gres=gpu:h100:1")),
    ("in-whole", ("-p", "whole", "--gres=gpu:h100:1")),
]
#: :func:`start_options`' partitions, all on the same nodes: ``gpu`` (the default), ``short`` (10 minutes at
#: most), ``down`` (set DOWN once up), ``whole`` (``OverSubscribe=EXCLUSIVE``: whole nodes to each job).
OPTION_PARTITIONS = {
    "gpu": "Nodes=gpu[01-03] Default=YES MaxTime=INFINITE",
    "short": "Nodes=gpu[01-03] MaxTime=10",
    "down": "Nodes=gpu[01-03] MaxTime=INFINITE",
    "whole": "Nodes=gpu[01-03] MaxTime=INFINITE OverSubscribe=EXCLUSIVE",
}


def start_options(root: Path) -> LiveSlurm:
    """A throw-away Slurm (run after the others have stopped: same ports) with :data:`OPTION_NODES` in the
    partitions of :data:`OPTION_PARTITIONS`: job ``a`` holds 2 H100 of ``gpu01``; reservation ``maint``
    holds ``gpu03`` (the only A100 host) for two hours; the jobs of :data:`OPTION_JOBS` are submitted held
    (``-H``), so they stay pending until a test releases them. Captures ``sinfo --json``, ``squeue
    --json``, ``scontrol show job -d``, ``scontrol show reservation`` and ``scontrol show partition``."""
    host = socket.gethostname().split(".")[0]
    s = _boot(root, OPTION_NODES, _conf(root, host, OPTION_NODES, OPTION_PARTITIONS))
    try:
        quiet = ("-Q", "-o", "/dev/null", "-D", str(root), "-c", "1", "--wrap", "sleep 600")
        s.run("scontrol", "update", "partitionname=down", "state=down")
        s.run("sbatch", "-J", "a", "-w", "gpu01", "--gres=gpu:h100:2", *quiet)
        s.wait("job a running", lambda: len(s.run("squeue", "-h", "-t", "R").splitlines()) >= 1)
        s.run(
            "scontrol", "create", "reservation", "reservationname=maint", "nodes=gpu03", "starttime=now",
            "duration=120", "users=root",
        )  # fmt: skip
        for name, options in OPTION_JOBS:
            s.run("sbatch", "-H", "-J", name, *options, *quiet)
        _capture(s)
        s.out["show-reservation"] = s.run("scontrol", "show", "reservation")
        s.out["show-partition"] = s.run("scontrol", "show", "partition")
    except BaseException:
        s.stop()
        raise
    return s


#: :func:`start_licenses`' cluster-wide licences (slurm.conf ``Licenses=``) and jobs: (name, sbatch options,
#: held). ``a`` holds 3 of the 4 ``matlab`` seats and 1 H100; ``p`` asks 2 ``matlab`` and an ``ansys`` seat,
#: so Slurm keeps it pending (reason ``Licenses``); ``q`` asks both ``ansys`` seats and waits held.
LICENSES = "matlab:4,ansys:2"
LICENSE_JOBS = [
    ("a", ("-L", "matlab:3", "--gres=gpu:h100:1"), False),
    ("p", ("-L", "matlab:2,ansys", "--gres=gpu:h100:1"), False),
    ("q", ("-L", "ansys:2", "--gres=gpu:h100:1"), True),
]


def start_licenses(root: Path) -> LiveSlurm:
    """A throw-away Slurm (run after the others have stopped: same ports) with :data:`OPTION_NODES` in
    partition ``gpu``, the licences :data:`LICENSES` and the jobs of :data:`LICENSE_JOBS`, ``p`` waiting
    for ``matlab`` seats (Slurm's reason ``Licenses``). Captures ``sinfo --json``, ``squeue --json``,
    ``scontrol show job -d``, ``scontrol show licenses`` (plain and ``-o``)."""
    host = socket.gethostname().split(".")[0]
    partitions = {"gpu": "Nodes=gpu[01-03] Default=YES MaxTime=INFINITE"}
    conf = _conf(root, host, OPTION_NODES, partitions) + f"Licenses={LICENSES}\n"
    s = _boot(root, OPTION_NODES, conf)
    try:
        quiet = ("-Q", "-o", "/dev/null", "-D", str(root), "-c", "1", "--wrap", "sleep 600")
        for name, options, held in LICENSE_JOBS:
            s.run("sbatch", *(("-H",) if held else ()), "-J", name, *options, *quiet)
            if name == "a":
                s.wait("job a running", lambda: len(s.run("squeue", "-h", "-t", "R").splitlines()) >= 1)

        def waits_for_licenses() -> bool:
            return "Licenses" in s.run("squeue", "-h", "-n", "p", "-o", "%r", check=False)

        s.wait("job p pending for licences", waits_for_licenses)
        _capture(s)
        s.out["show-licenses"] = s.run("scontrol", "show", "licenses")
        s.out["show-licenses-o"] = s.run("scontrol", "show", "licenses", "-o")
    except BaseException:
        s.stop()
        raise
    return s


def start_ranges(root: Path) -> LiveSlurm:
    """A throw-away Slurm (run after the others have stopped: same ports) with :data:`OPTION_NODES` in
    partition ``gpu``: job ``a`` holds all 8 H100 of gpu01; job ``r`` (``-N 1-3``, one GPU a node) waits
    held. Captures ``sinfo --json`` and ``squeue --json``."""
    host = socket.gethostname().split(".")[0]
    partitions = {"gpu": "Nodes=gpu[01-03] Default=YES MaxTime=INFINITE"}
    s = _boot(root, OPTION_NODES, _conf(root, host, OPTION_NODES, partitions))
    try:
        quiet = ("-Q", "-o", "/dev/null", "-D", str(root), "-c", "1", "--wrap", "sleep 600")
        s.run("sbatch", "-J", "a", "-w", "gpu01", "--gres=gpu:h100:8", *quiet)
        s.wait("job a running", lambda: len(s.run("squeue", "-h", "-t", "R").splitlines()) >= 1)
        s.run("sbatch", "-H", "-J", "r", "-N", "1-3", "--gres=gpu:1", *quiet)
        s.out["sinfo-json"] = s.run("sinfo", "--json")
        s.out["squeue-json"] = s.run("squeue", "--json")
    except BaseException:
        s.stop()
        raise
    return s


def _capture(s: LiveSlurm) -> None:
    """What the second and third Slurm's tests read: ``scontrol show node -d``, ``sinfo --json``,
    ``squeue --json``, ``scontrol show job -d``."""
    for key, cmd in (
        ("show-node-d", ("scontrol", "show", "node", "-d")),
        ("sinfo-json", ("sinfo", "--json")),
        ("squeue-json", ("squeue", "--json")),
        ("show-job-d", ("scontrol", "show", "job", "-d")),
    ):
        s.out[key] = s.run(*cmd)


#: Accounting for :func:`start_qos`: the throw-away MariaDB's and slurmdbd's ports.
DB_PORT, DBD_PORT = 16819, 16820
#: ``sacctmgr`` commands of :func:`start_qos`: ``high`` may preempt ``low``, whose jobs are requeued after
#: a 1-second grace time; ``normal`` (Slurm's default QOS) preempts nothing, with the cluster's mode;
#: ``capped``'s jobs hold at most 8 GPUs together (``GrpTRES``, :data:`CAPPED`, set once slurmctld has
#: registered the ``gres/gpu`` TRES; enforced: ``AccountingStorageEnforce`` has ``limits``).
QOS = [
    ("add", "cluster", "placer"),
    ("add", "qos", "low", "Priority=10", "PreemptMode=requeue", "GraceTime=1"),
    ("add", "qos", "high", "Priority=100", "Preempt=low"),
    ("add", "qos", "capped"),
    ("add", "qos", "small"),
    ("add", "account", "ml"),
    ("add", "user", "root", "account=ml", "qos=normal,low,high,capped,small"),
    ("add", "account", "vision", "parent=ml"),
    ("add", "user", "root", "account=vision"),
]

#: The limit of QOS ``capped`` (``sacctmgr modify qos capped set ...``) and of account ``vision`` (a
#: sub-account of ``ml``: ``sacctmgr modify account vision set ...``).
CAPPED = "GrpTRES=gres/gpu=8"
#: QOS ``small``'s per-job limit: one job of it may have 2 GPUs.
SMALL = "MaxTRES=gres/gpu=2"
VISION = "GrpTRES=gres/gpu=4"


def _accounting(
    root: Path, host: str, commands: list[tuple[str, ...]] | None = None
) -> Callable[[LiveSlurm], None]:
    """What :func:`start_qos` starts before slurmctld: a MariaDB of its own under ``root/db`` (TCP on
    127.0.0.1 only), slurmdbd storing into it, and the QOSes, account and user of ``commands``
    (``sacctmgr -i`` arguments; default :data:`QOS`)."""

    def start(s: LiveSlurm) -> None:
        run, db = root / "run", root / "db"
        install = ["mariadb-install-db", "--no-defaults", f"--datadir={db}", "--user=root", "--skip-test-db"]
        install.append("--auth-root-authentication-method=normal")
        subprocess.run(install, check=True, capture_output=True, timeout=60)
        server = ["mariadbd", "--no-defaults", f"--datadir={db}", "--user=root", "--bind-address=127.0.0.1"]
        server += [f"--port={DB_PORT}", f"--socket={run}/db.sock", f"--pid-file={run}/db.pid"]
        server.append(f"--log-error={root}/log/db.log")
        # In the background of a shell that exits at once: init reaps it, so stop() sees it gone by its PID.
        subprocess.run(["sh", "-c", '"$@" >/dev/null 2>&1 &', "sh", *server], check=True, timeout=30)
        sql = ["mariadb", "--no-defaults", f"--socket={run}/db.sock", "-uroot", "-e"]
        ready = lambda: subprocess.run([*sql, "select 1"], capture_output=True).returncode == 0  # noqa: E731
        s.wait("MariaDB", ready)
        grant = (
            "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'placer'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';"
        )
        subprocess.run([*sql, grant], check=True, capture_output=True, timeout=30)
        dbd = root / "etc" / "slurmdbd.conf"  # next to slurm.conf: slurmdbd reads it from SLURM_CONF's dir
        dbd.write_text(
            f"AuthType=auth/munge\nDbdHost={host}\nDbdPort={DBD_PORT}\nSlurmUser=root\n"
            f"PidFile={run}/slurmdbd.pid\nLogFile={root}/log/slurmdbd.log\n"
            f"StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\nStoragePort={DB_PORT}\n"
            "StorageUser=slurm\nStoragePass=placer\nStorageLoc=placer_acct\n"
        )
        dbd.chmod(0o600)
        s.run("slurmdbd")
        show = ["sacctmgr", "-n", "show", "cluster"]
        s.wait("slurmdbd", lambda: subprocess.run(show, env=s.env, capture_output=True).returncode == 0)
        for command in QOS if commands is None else commands:
            s.run("sacctmgr", "-i", *command)

    return start


#: ``sacctmgr`` commands of :func:`start_partition_qos`: QOS ``partq``, the partition QOS of partition
#: ``pq``, holds :data:`PARTQ` (set once slurmctld has registered the ``gres/gpu`` TRES).
PARTITION_QOS = [
    ("add", "cluster", "placer"),
    ("add", "qos", "partq"),
    ("add", "account", "ml"),
    ("add", "user", "root", "account=ml"),
]
PARTQ = "GrpTRES=gres/gpu=4"


def _accounted(conf: str, host: str) -> str:
    """``conf`` storing into :func:`_accounting`'s slurmdbd, with GPUs accounted and limits enforced."""
    return conf.replace(
        "AccountingStorageType=accounting_storage/none",
        f"AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost={host}\n"
        f"AccountingStoragePort={DBD_PORT}\nAccountingStorageTRES=gres/gpu\n"
        "AccountingStorageEnforce=associations,limits,qos",
    )


def start_partition_qos(root: Path) -> LiveSlurm:
    """A throw-away Slurm with accounting whose partition ``pq`` (gpu04 only) has the partition QOS
    ``partq`` (``QOS=partq`` on its line: :data:`PARTQ`, 4 GPUs for all of the partition's jobs, whatever
    their own QOS; every job here is of QOS ``normal``, which has no limits). Job ``pr1`` runs in ``pq``
    with 2 H100 of gpu04; ``pq2`` (4 H100) and then ``pq3`` (2 H100) are submitted to ``pq`` held: gpu04
    has room for both (6 GPUs and 3 of its 4 cores free), the partition QOS for ``pq3`` alone (2 + 2 = 4;
    2 + 4 > 4). Partition
    ``gpu`` (every node, no QOS) runs nothing. Captures ``scontrol show node -d``, ``scontrol show job
    -d``, ``scontrol show partition`` and ``sacctmgr show qos -P``."""
    host = socket.gethostname().split(".")[0]
    partitions = {
        "gpu": "Nodes=gpu[01-04],cpu01 Default=YES MaxTime=INFINITE",
        "pq": "Nodes=gpu04 QOS=partq MaxTime=INFINITE",
    }
    cores = "CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1"  # room for three one-core jobs on gpu04
    conf = _accounted(_conf(root, host, NODES, partitions, cores), host)
    conf += "SlurmdParameters=config_overrides\n"  # the configured cores, not this host's
    s = _boot(root, NODES, conf, before=_accounting(root, host, PARTITION_QOS))
    try:
        s.run("sacctmgr", "-i", "modify", "qos", "partq", "set", PARTQ)
        quiet = ("--parsable", "-o", "/dev/null", "-D", str(root), "-c", "1", "-A", "ml", "-p", "pq")
        quiet += ("--wrap", "sleep 600")
        pr1 = s.run("sbatch", "-J", "pr1", "-w", "gpu04", "--gres=gpu:h100:2", *quiet).split(";")[0].strip()
        s.wait("pr1 running", lambda: s.run("squeue", "-h", "-j", pr1, "-o", "%T").strip() == "RUNNING")
        s.run("sbatch", "-H", "-J", "pq2", "--gres=gpu:h100:4", *quiet)
        s.run("sbatch", "-H", "-J", "pq3", "--gres=gpu:h100:2", *quiet)
        s.out["show-node-d"] = s.run("scontrol", "show", "node", "-d")
        s.out["show-job-d"] = s.run("scontrol", "show", "job", "-d")
        s.out["show-partition"] = s.run("scontrol", "show", "partition")
        s.out["qos"] = s.run("sacctmgr", "show", "qos", "-P")
    except BaseException:
        s.stop()
        raise
    return s


def start_qos(root: Path) -> LiveSlurm:
    """A third throw-away Slurm (after the others have stopped: same ports), with accounting (slurmdbd in
    a MariaDB of its own) and ``PreemptType=preempt/qos``: QOSes of :data:`QOS`, the nodes of
    :data:`NODES` in one partition. Job ``lo`` (QOS ``low``) holds gpu03's 4 A100 (no time limit); job
    ``hi`` (QOS ``high``) asks them and is held, so Slurm leaves both alone. Job ``cap1`` (QOS ``capped``)
    holds 4 H100 of gpu01; ``cap2`` and ``cap3`` (``capped``) ask 4 H100 each and are held: the QOS lets
    one of them run beside ``cap1``. Account ``vision`` (under ``ml``) holds 4 GPUs at most: ``v1`` runs
    there with 2 H100 of gpu04, ``v2`` asks 4 and is held. QOS ``small`` lets one job have 2 GPUs: ``s1``
    asks 4 and is held. Captures ``sacctmgr show assoc [tree] -P``,
    ``sacctmgr show qos
    -P``, ``scontrol show node`` (plain: accounting now reports GPUs in ``AllocTRES``), ``scontrol show job
    -d``, ``squeue --json`` and ``scontrol show config``."""
    host = socket.gethostname().split(".")[0]
    partitions = {"gpu": "Nodes=gpu[01-04],cpu01 Default=YES MaxTime=INFINITE"}
    conf = _accounted(_conf(root, host, NODES, partitions), host)
    conf = conf.replace("PreemptType=preempt/partition_prio", "PreemptType=preempt/qos")
    s = _boot(root, NODES, conf, before=_accounting(root, host))
    try:
        quiet = (
            "--parsable",
            "-o",
            "/dev/null",
            "-D",
            str(root),
            "-c",
            "1",
            "-A",
            "ml",
            "--wrap",
            "sleep 600",
        )
        lo = (
            s.run("sbatch", "-J", "lo", "--qos=low", "-w", "gpu03", "--gres=gpu:a100:4", *quiet)
            .split(";")[0]
            .strip()
        )
        s.wait("lo running", lambda: s.run("squeue", "-h", "-j", lo, "-o", "%T").strip() == "RUNNING")
        s.run("sbatch", "-H", "-J", "hi", "--qos=high", "--gres=gpu:a100:4", *quiet)
        s.run("sacctmgr", "-i", "modify", "qos", "capped", "set", CAPPED)
        s.run("sacctmgr", "-i", "modify", "qos", "small", "set", SMALL)
        s.run("sbatch", "-H", "-J", "s1", "--qos=small", "--gres=gpu:h100:4", *quiet)
        cap = ("--qos=capped", "--gres=gpu:h100:4", *quiet)
        cap1 = s.run("sbatch", "-J", "cap1", "-w", "gpu01", *cap).split(";")[0].strip()
        s.wait("cap1 running", lambda: s.run("squeue", "-h", "-j", cap1, "-o", "%T").strip() == "RUNNING")
        for name in ("cap2", "cap3"):
            s.run("sbatch", "-H", "-J", name, *cap)
        s.run("sacctmgr", "-i", "modify", "account", "vision", "set", VISION)
        vision = [a if a != "ml" else "vision" for a in quiet]  # the same, under account vision
        v1 = s.run("sbatch", "-J", "v1", "-w", "gpu04", "--gres=gpu:h100:2", *vision).split(";")[0].strip()
        s.wait("v1 running", lambda: s.run("squeue", "-h", "-j", v1, "-o", "%T").strip() == "RUNNING")
        s.run("sbatch", "-H", "-J", "v2", "--gres=gpu:h100:4", *vision)
        s.out["assoc"] = s.run("sacctmgr", "show", "assoc", "tree", "-P")
        s.out["assoc-flat"] = s.run("sacctmgr", "show", "assoc", "-P")
        s.out["qos"] = s.run("sacctmgr", "show", "qos", "-P")
        s.out["show-node"] = s.run("scontrol", "show", "node")
        s.out["show-node-d"] = s.run("scontrol", "show", "node", "-d")
        s.out["show-job-d"] = s.run("scontrol", "show", "job", "-d")
        s.out["squeue-json"] = s.run("squeue", "--json")
        s.out["show-config"] = s.run("scontrol", "show", "config")
    except BaseException:
        s.stop()
        raise
    return s
