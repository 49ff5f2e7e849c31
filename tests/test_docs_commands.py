"""Every concrete command in the shell blocks of ``docs/*.md`` runs, with the exit code the text gives
(``# exit 1: ...``, else 0), so none rots. Left out: commands against a live Kubernetes cluster or Slurm
controller (:data:`LIVE_SYSTEM`; the Slurm loop runs for real in the live Slurm tests), syntax templates
(``FILE``, ``[--flag]``, ``...``), commands that need ``../shared`` traces or write results trees
(``fill``, ``simulate --out``, ``sweep``), benchmarks (they print figures, for minutes), ``pip`` and
``serve`` (``test_server.py`` runs the reference's HTTP example). The README's quickstart output is
compared with what placer prints today.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Words that mark a template or a command with a test of its own.
LEFT_TO_OTHERS = (
    "FILE",
    "[--",
    "$T",
    "--out ",
    "placer serve",
    "placer sweep",
    "placer fill",
    "pip ",
    "python3 -m venv",
    "benchmarks/",
    "localhost:8080",
    "...",
)
#: Commands against a live system (a Kubernetes cluster, a Slurm controller) or an interactive tool: the
#: Slurm loop runs for real in ``tests/topology/test_importers_slurm_live.py``; no Kubernetes runs here.
LIVE_SYSTEM = (
    "kubectl",
    " nodes.json",  # what kubectl wrote from a live cluster
    " pods.json",
    "sinfo",
    "squeue",
    "scontrol",
    "scancel",
    "sacctmgr",
    " qos.txt",  # what sacctmgr printed on a live cluster
    " assoc.txt",
    "sh apply.sh",
    "less ",
    "sleep ",
    "openssl",
)
DOCS = [
    "docs/cli.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md") if p.name != "cli.md"),
]


def _commands(doc: str) -> list[str]:
    """The shell lines of ``doc``'s ```sh blocks, continuation lines joined, in order."""
    out: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", (REPO / doc).read_text(), re.S):
        for line in re.sub(r"(\\|\|)\n", lambda m: " " if m.group(1) == "\\" else "| ", block).splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(line.strip())
    return out


def _runnable(doc: str) -> list[str]:
    return [c for c in _commands(doc) if not any(w in c for w in (*LEFT_TO_OTHERS, *LIVE_SYSTEM))]


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch directory that sees the repository's examples and scenarios (commands write files)."""
    d = tmp_path_factory.mktemp("docs")
    for name in ("examples", "scenarios", "benchmarks", "tests"):
        (d / name).symlink_to(REPO / name)
    return d


@pytest.mark.parametrize("doc", DOCS)
def test_every_concrete_command_runs_with_the_exit_code_the_text_gives(doc: str, workdir: Path) -> None:
    commands = _runnable(doc)
    if doc == "docs/cli.md":
        assert len(commands) >= 6, commands  # the reference shows real commands, not only templates
    for command in commands:  # in order: a later one may read what an earlier one wrote
        said = re.search(r"#\s*exit (\d+)", command)
        r = _run(command, workdir)
        assert r.returncode == (int(said.group(1)) if said else 0), (
            command,
            r.stdout[-500:],
            r.stderr[-500:],
        )
        assert "Traceback" not in r.stderr, command


def test_the_readme_quickstart_is_what_placer_prints() -> None:
    readme = (REPO / "README.md").read_text()
    shown = re.search(r"## Quickstart.*?```text\n(.*?)```", readme, re.S)
    assert shown, "README lost its quickstart output"
    r = _run(
        "placer place --cluster examples/clusters/h100-training.yaml --jobs examples/jobs/* "
        "--now 2026-01-01T02:00:00Z --reproducible",
        REPO,
    )
    assert r.returncode == 0, r.stderr
    printed, expected = r.stdout.rstrip().splitlines(), shown.group(1).rstrip().splitlines()
    timing = re.compile(r"[0-9.]+ s")  # seconds differ from run to run; everything else is the decision
    assert [timing.sub("T s", x) for x in printed] == [timing.sub("T s", x) for x in expected]
    # The README's words about this output, checked against it.
    assert "pretrain-8b-gang  dgx-r3-" in r.stdout and "`dgx-r3-*`" in readme and "$347.82/h" in r.stdout
    greedy = _run(
        "placer place --cluster examples/clusters/h100-training.yaml --jobs examples/jobs/* "
        "--now 2026-01-01T02:00:00Z --engine greedy",
        REPO,
    )
    assert "$443.74/h" in greedy.stdout and "$443.74/h" in readme and "$2.40/h" in readme
