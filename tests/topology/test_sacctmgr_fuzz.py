"""Hypothesis: the real ``sacctmgr`` tables (QOS, associations) with random cells, lines and columns
changed; only TopologyError (naming source, item and problem) may escape, and a table that reads gives
limits that are whole numbers or none."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_assoc import parse_slurm_assoc
from placer.topology.importers.slurm_qos import parse_slurm_qos

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
QOS = (REAL / "sacctmgr-show-qos-22.05.txt").read_text()
ASSOC = (REAL / "sacctmgr-show-assoc-tree-22.05.txt").read_text()

cells = st.one_of(
    st.text(max_size=10),
    st.sampled_from(
        [
            "",
            "-1",
            "0",
            "8",
            "ten",
            "gres/gpu=4",
            "gres/gpu=x",
            "cpu=8,gres/gpu=2",
            "gres/gpu:a100=2",
            "=",
            "  ml",
            "   vision",
            "requeue",
            "cluster",
            "low",
            "00:00:01",
            "1-00:00:00",
            "|",
            "gres/gpu",
        ]
    ),
)


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """``text`` with 1-4 cells replaced, or a line dropped or duplicated."""
    lines = [line.split("|") for line in text.splitlines()]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        what = draw(st.sampled_from(["cell", "drop", "copy"]))
        if what == "cell":
            j = draw(st.integers(0, len(lines[i]) - 1))
            lines[i][j] = draw(cells)
        elif what == "drop" and len(lines) > 1:
            del lines[i]
        else:
            lines.insert(i, list(lines[i]))
    return "\n".join("|".join(cells_) for cells_ in lines) + "\n"


def _whole_or_none(*values: object) -> bool:
    return all(v is None or (isinstance(v, int) and v >= 0) for v in values)


@given(mutated(QOS), st.booleans())
def test_a_mutated_qos_table_reads_or_names_its_problems(text: str, limits_only: bool) -> None:
    try:
        table = parse_slurm_qos(text, source="qos.txt", cluster_mode="REQUEUE", limits_only=limits_only)
    except TopologyError as e:
        assert e.problems and all(p.source and p.item and p.message for p in e.problems)
        return
    for q in table.values():
        assert _whole_or_none(
            q.grp_jobs, q.grp_gpus, q.user_jobs, q.user_gpus, q.account_jobs, q.account_gpus
        )


@given(mutated(ASSOC))
def test_a_mutated_association_table_reads_or_names_its_problems(text: str) -> None:
    try:
        table = parse_slurm_assoc(text, source="assoc.txt")
    except TopologyError as e:
        assert e.problems and all(p.source and p.item and p.message for p in e.problems)
        return
    for a in [*table.accounts.values(), *table.users.values()]:
        assert _whole_or_none(a.grp_jobs, a.grp_gpus, a.max_jobs)
        try:
            for _, jobs, gpus in table.limits(a.account, a.user or "root", a.partition):
                assert _whole_or_none(jobs, gpus)
        except TopologyError:
            pass  # no association for that user: named, as the readers name it


@given(st.text(max_size=200))
def test_any_text_reads_or_names_its_problems(text: str) -> None:
    for parse in (parse_slurm_qos, parse_slurm_assoc):
        try:
            parse(text, source="t.txt")
        except TopologyError as e:
            assert e.problems and all(p.source and p.item and p.message for p in e.problems)
