"""openb node and pod lists -> placer cluster and jobs; bad input -> structured errors naming line and column.

The hand-written CSV snippets always run; the slice of the real trace runs where ``../shared/traces`` is
present and is skipped with a message otherwise. Expected numbers come from the CSV text and the unit
definitions (1 core = 1000 milli-CPU, 1 MiB = 2^20 bytes, 1 GB = 10^9 bytes), or from the traces' README.
"""

from __future__ import annotations

import pytest

from placer.scenarios.traces import openb_dir
from placer.scenarios.traces.alibaba import (
    GPU_TYPES,
    nodes_to_cluster,
    parse_nodes,
    parse_pods,
    pod_to_job,
    read_nodes,
)
from placer.scenarios.traces.table import TraceError
from placer.solver.jobs.model import Accelerator

NODES = """sn,cpu_milli,memory_mib,gpu,model
g2-a,96000,393216,8,G2
t4-a,104000,524288,2,T4
v16,8000,32768,1,V100M16
v32,96000,786432,8,V100M32
cpu-a,32000,262144,0,
"""

PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,\
scheduled_time
whole,12000,16384,1,1000,,LS,Running,0,12537496,0
share,6000,12288,1,460,,LS,Running,427061,12902960,427061
eight,64000,262144,8,1000,V100M16|V100M32|V100M32,LS,Running,0,1,0
cpuonly,8000,30517,0,0,,BE,Running,11811762,11827364,11811762
"""


def test_nodes_become_a_cluster_in_placer_units() -> None:
    cluster = nodes_to_cluster(parse_nodes(NODES, "nodes.csv"))
    by = {n.name: n for n in cluster.nodes}
    assert [n.name for n in cluster.nodes] == ["g2-a", "t4-a", "v16", "v32", "cpu-a"]
    assert by["g2-a"].cpu_cores == 96.0
    assert by["g2-a"].memory_gb == pytest.approx(393216 * 2**20 / 1e9)  # 412.316860416 GB
    assert (by["g2-a"].gpu_count, by["g2-a"].gpu_type) == (8, "openb-g2")
    assert (by["t4-a"].gpu_type, by["t4-a"].gpu_memory_gb) == ("nvidia-t4", 16.0)  # the catalog's T4
    assert (by["v16"].gpu_type, by["v16"].gpu_memory_gb) == ("openb-v100m16", 16.0)
    assert (by["v32"].gpu_type, by["v32"].gpu_memory_gb) == ("openb-v100m32", 32.0)
    assert (by["cpu-a"].gpu_count, by["cpu-a"].gpu_type) == (0, None)
    assert sum(n.gpu_count for n in cluster.nodes) == 8 + 2 + 1 + 8


def test_every_trace_model_has_a_distinct_gpu_type() -> None:
    # V100M16 and V100M32 must stay apart: a pod may accept only one of them.
    assert len(set(GPU_TYPES.values())) == len(GPU_TYPES) == 8


def test_pods_become_jobs() -> None:
    pods = parse_pods(PODS, "pods.csv")
    jobs = {p.name: pod_to_job(p) for p in pods}
    whole, share, eight, cpu = (jobs[n].tasks[0] for n in ("whole", "share", "eight", "cpuonly"))
    assert (whole.cpu_cores, whole.gpu.count, whole.gpu.share_milli, whole.gpu.types) == (12.0, 1, None, [])
    assert whole.memory_gb == pytest.approx(16384 * 2**20 / 1e9)
    assert (share.gpu.count, share.gpu.share_milli) == (1, 460)
    assert jobs["share"].total_gpu_milli == 460 and jobs["share"].total_gpus == 0
    assert eight.gpu.count == 8 and eight.gpu.types == ["openb-v100m16", "openb-v100m32"]  # duplicate dropped
    assert cpu.gpu is None and jobs["cpuonly"].accelerator is Accelerator.CPU
    assert [p.total_gpu_milli for p in pods] == [1000, 460, 8000, 0]


def test_multigpu_variant_without_spec_columns() -> None:
    pods = parse_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,4,1000\n", "multi.csv")
    assert pods[0].models == () and pod_to_job(pods[0]).tasks[0].gpu.count == 4


def problems(text: str, kind: str) -> list[tuple[int | None, str | None, str]]:
    parse = parse_nodes if kind == "nodes" else parse_pods
    with pytest.raises(TraceError) as e:
        parse(text, f"{kind}.csv")
    return [(p.line, p.column, p.message) for p in e.value.problems]


def test_missing_column_names_the_column() -> None:
    [(line, column, message)] = problems("sn,cpu_milli,gpu,model\nn,1,1,G2\n", "nodes")
    assert (line, column) == (1, "memory_mib") and "required column missing" in message


def test_every_bad_cell_is_reported_with_line_and_column() -> None:
    text = (
        "sn,cpu_milli,memory_mib,gpu,model\n"
        "a,lots,1024,2,G2\n"  # line 2
        "b,1000,-5,2,G2\n"  # line 3
        "c,1000,1024,9,G2\n"  # line 4: more GPUs than the schema allows
        "d,1000,1024,2,K80\n"  # line 5
        "e,1000,1024,2,\n"  # line 6: GPUs without a model
        "a2,1000,1024\n"  # line 7: short row
        "f,1000,1024,2,G2\n"
        "f,1000,1024,2,G2\n"  # line 9: duplicate name
    )
    got = [(line, column) for line, column, _ in problems(text, "nodes")]
    assert got == [
        (2, "cpu_milli"),
        (3, "memory_mib"),
        (4, "gpu"),
        (5, "model"),
        (6, "model"),
        (7, None),
        (9, "sn"),
    ]


def test_bad_pods() -> None:
    text = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "a,1000,1024,2,500,\n"  # line 2: a share of two GPUs
        "b,1000,1024,0,300,\n"  # line 3: a CPU-only pod with a GPU share
        "c,1000,1024,1,1200,\n"  # line 4: above 1000 milli
        "d,1000,1024,1,0,\n"  # line 5: a GPU pod asking for no GPU
        "e,1000,1024,1,500,H100\n"  # line 6: unknown model in gpu_spec
        "f,1.5,1024,1,500,\n"  # line 7: fractional milli-CPU
    )
    got = [(line, column) for line, column, _ in problems(text, "pods")]
    assert got == [
        (2, "gpu_milli"),
        (3, "gpu_milli"),
        (4, "gpu_milli"),
        (5, "gpu_milli"),
        (6, "gpu_spec"),
        (7, "cpu_milli"),
    ]


def test_empty_and_headerless_files() -> None:
    assert problems("", "pods")[0][2] == "empty file: no header line"
    assert problems("\n\n", "nodes")[0][2] == "empty file: no header line"


def test_a_missing_file_is_an_os_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(OSError):
        read_nodes(tmp_path / "absent.csv")


# -- the real trace (skipped when ../shared/traces is absent) ------------------------------------------


@pytest.fixture(scope="module")
def openb():  # type: ignore[no-untyped-def]
    folder = openb_dir()
    if not (folder / "openb_node_list_gpu_node.csv").is_file():
        pytest.skip(f"openb traces not found at {folder}; set PLACER_SHARED to the shared/ folder")
    return folder


def test_real_node_list_matches_the_readme(openb) -> None:  # type: ignore[no-untyped-def]
    nodes = read_nodes(openb / "openb_node_list_gpu_node.csv")
    # README: 1,213 GPU nodes, 6,212 GPUs; G2 549 x 8; T4 387 x 2 + 17 x 4.
    assert len(nodes) == 1213 and sum(n.gpus for n in nodes) == 6212
    assert sum(1 for n in nodes if n.model == "G2" and n.gpus == 8) == 549
    assert sorted(n.gpus for n in nodes if n.model == "T4").count(4) == 17
    assert len(read_nodes(openb / "openb_node_list_all_node.csv")) == 1523  # plus 310 CPU-only nodes


def test_real_pod_list_slice(openb) -> None:  # type: ignore[no-untyped-def]
    lines = (openb / "openb_pod_list_gpuspec25.csv").read_text().splitlines()[:400]
    pods = parse_pods("\n".join(lines) + "\n", "gpuspec25 slice")
    assert len(pods) == 399
    jobs = [pod_to_job(p) for p in pods]
    for p, j in zip(pods, jobs, strict=True):
        assert j.total_gpu_milli == p.num_gpu * p.gpu_milli
        if p.models:
            assert j.tasks[0].gpu.types == [GPU_TYPES[m] for m in p.models]
    assert any(p.is_share for p in pods) and any(p.models for p in pods)
