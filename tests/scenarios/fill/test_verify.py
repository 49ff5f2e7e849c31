"""Every placement a fill makes passes placer's independent checker — and a tampered one does not.

The baselines place on the fill's own numpy state; placer's engines through ``place()``. Both are judged
by ``placer.solver.checks.check`` on a Decision built from the run. A small slice of the real openb trace runs
where ``../shared/traces`` is present (skipped with a message otherwise); the hand-made instance always.
"""

from __future__ import annotations

import dataclasses

import pytest

from placer.scenarios.fill.policies import POLICIES
from placer.scenarios.fill.run import ENGINES, run_fill
from placer.scenarios.fill.verify import verify
from placer.scenarios.traces import openb_dir
from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod, parse_nodes, parse_pods

NODES = [
    OpenbNode("p100", 16000, 65536, 2, "P100"),
    OpenbNode("v16", 32000, 131072, 4, "V100M16"),
    OpenbNode("v32", 48000, 376832, 4, "V100M32"),
    OpenbNode("t4", 104000, 524288, 2, "T4"),
]
PODS = [
    OpenbPod("share", 2000, 4096, 1, 460),
    OpenbPod("big-share", 4000, 8192, 1, 810),
    OpenbPod("whole", 6000, 16384, 1, 1000),
    OpenbPod("pair", 8000, 16384, 2, 1000),
    OpenbPod("v32-only", 4000, 8192, 1, 500, ("V100M32",)),
    OpenbPod("cpu", 16000, 30517, 0, 0),
]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_baselines_pass_the_checker(policy: str) -> None:
    r = run_fill(NODES, PODS, policy=policy, seed=7, load=1.3)
    assert r.failed > 0 and (r.node >= 0).sum() > 0  # the instance is saturated: both cases checked
    assert verify(NODES, PODS, r) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_engines_pass_the_checker(engine: str) -> None:
    r = run_fill(NODES, PODS, policy=engine, seed=7, load=1.3, batch=6, time_limit_s=1.0)
    assert (r.node >= 0).sum() > 0
    assert verify(NODES, PODS, r) == []


def test_a_double_booked_gpu_is_caught() -> None:
    r = run_fill(NODES, PODS, policy="best-fit", seed=7, load=1.3)
    wholes = [k for k in range(len(r.order)) if PODS[int(r.order[k])].name == "whole" and r.node[k] >= 0]
    first, second = wholes[:2]
    r.node[second], r.gpus[second] = r.node[first], r.gpus[first]  # the same GPU twice
    rules = {v.rule for v in verify(NODES, PODS, r)}
    assert "gpu-double-booked" in rules  # "whole" pods hold whole GPUs: no share rule applies


def test_a_refused_model_is_caught() -> None:
    r = run_fill(NODES, PODS, policy="first-fit", seed=7, load=1.3)
    k = next(k for k in range(len(r.order)) if PODS[int(r.order[k])].name == "v32-only" and r.node[k] >= 0)
    tampered = dataclasses.replace(r)
    tampered.node = r.node.copy()
    tampered.node[k] = 0  # the P100 node, which the pod's gpu_spec refuses
    assert any(v.rule == "gpu-type" for v in verify(NODES, PODS, tampered))


def test_real_trace_slice_passes_the_checker() -> None:
    folder = openb_dir()
    if not (folder / "openb_node_list_gpu_node.csv").is_file():
        pytest.skip(f"openb traces not found at {folder}; set PLACER_SHARED to the shared/ folder")
    node_lines = (folder / "openb_node_list_gpu_node.csv").read_text().splitlines()
    pod_lines = (folder / "openb_pod_list_gpuspec25.csv").read_text().splitlines()
    nodes = parse_nodes("\n".join(node_lines[:1] + node_lines[1::40]) + "\n", "node slice")  # 31 nodes
    pods = parse_pods("\n".join(pod_lines[:600]) + "\n", "pod slice")
    for policy in ("fgd", "placer-frag", "random"):
        r = run_fill(nodes, pods, policy=policy, seed=42, load=1.3)
        assert verify(nodes, pods, r) == [], policy
    r = run_fill(nodes, pods, policy="greedy", seed=42, load=1.3, batch=50)
    assert verify(nodes, pods, r) == []
