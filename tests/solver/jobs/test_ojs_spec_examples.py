"""Every ```json block of the three OJS specs, read at test time from ``specs_dir`` (never copied).

Each block is classified (job envelope, workflow, queue config, worker advertisement, checkpoint
metadata); the counts per kind are asserted so a block added to a spec makes a test fail until it is
looked at. Envelopes and workflows must read OK, queue configs must load, the rest must be refused as
not-jobs. The §12 and §13 examples are then checked value by value against the spec text.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from solver.jobs.formats.ojs import classify, read
from solver.jobs.load import read_object
from solver.jobs.model import (
    Accelerator,
    AffinityOperator,
    DependencyCondition,
    DistributedStrategy,
    Interconnect,
    Precision,
    PriorityClass,
)
from solver.jobs.options import ReadOptions
from solver.jobs.queues import load_queue_configs

V03 = "ojs-ml-resources-v0.3.0.md"
V01 = "ojs-ml-resources-v0.1.0.md"
MLX = "ojs-ml-extensions-v0.1.0.md"


@dataclass(frozen=True)
class Block:
    spec: str
    heading: str  # the nearest heading above the block, without the leading #s
    line: int
    obj: Any


def spec_blocks(specs_dir: Path, spec: str) -> list[Block]:
    """Every ```json block of ``spec`` with the heading it sits under."""
    text = (specs_dir / spec).read_text(encoding="utf-8")
    out: list[Block] = []
    heading = ""
    in_block = False
    start = 0
    buf: list[str] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if in_block:
            if line.strip() == "```":
                out.append(Block(spec, heading, start, json.loads("\n".join(buf))))
                in_block = False
            else:
                buf.append(line)
        elif line.strip() == "```json":
            in_block, start, buf = True, n, []
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    return out


def spec_block(specs_dir: Path, spec: str, section: str) -> Any:
    """The one block under the heading starting with ``section`` (e.g. ``"13.2"``)."""
    found = [b.obj for b in spec_blocks(specs_dir, spec) if b.heading.startswith(section + " ")]
    assert len(found) == 1, f"expected one json block under {section} of {spec}, found {len(found)}"
    return found[0]


def read_one(obj: Any, options: ReadOptions | None = None) -> Any:
    rs = read_object(obj, source="spec", options=options or ReadOptions())
    assert len(rs) == 1
    assert rs[0].ok, rs[0].errors
    assert rs[0].job is not None
    return rs[0].job


# ---------------------------------------------------------------------------------------------------
# Classification of every block
# ---------------------------------------------------------------------------------------------------

#: Blocks per kind, counted by hand in the spec texts.
EXPECTED_KINDS = {
    # §7.1 selector, §5.2 registry, §7.2 affinity, §7.3 anti-affinity fragments + §13.1-§13.5 envelopes;
    # §12.1 chain, §12.2 group; §10.1, §10.2 queue configs; §11 worker; §9.2 checkpoint metadata.
    V03: {"envelope": 9, "workflow": 2, "queue_config": 2, "worker": 1, "checkpoint_metadata": 1},
    # §2.1, §3.1, §4.2, §4.4, §5.1 envelopes; §2.3 worker registration, §6.1 FETCH request.
    V01: {"envelope": 5, "worker": 2},
    # §4.2 schemas, §5.1/§5.2/§5.4 examples, §5.3 transformations, split ratios, thresholds fragments,
    # §10.1, §10.2 envelopes; §9.1 chain, §9.2 group.
    MLX: {"envelope": 9, "workflow": 2},
}


@pytest.mark.parametrize("spec", [V03, V01, MLX])
def test_every_json_block_is_classified_with_expected_counts(specs_dir: Path, spec: str) -> None:
    counts: dict[str, int] = {}
    for b in spec_blocks(specs_dir, spec):
        kind = classify(b.obj)
        counts[kind] = counts.get(kind, 0) + 1
    assert counts == EXPECTED_KINDS[spec]


@pytest.mark.parametrize("spec", [V03, V01, MLX])
def test_every_job_block_reads_ok_and_every_other_block_is_handled(specs_dir: Path, spec: str) -> None:
    for b in spec_blocks(specs_dir, spec):
        kind = classify(b.obj)
        where = f"{spec}:{b.line} ({b.heading})"
        if kind in ("envelope", "workflow"):
            rs = read_object(b.obj, source=where)
            assert rs, where
            for r in rs:
                assert r.ok, (where, r.errors)
                assert r.job is not None and r.job.source_format == "ojs-ml-v0.3"
        elif kind == "queue_config":
            configs = load_queue_configs(b.obj, source=where)
            assert list(configs) == [b.obj["queue"]]
        else:
            # worker ads, FETCH requests and checkpoint metadata are not jobs: one "format" refusal
            rs = read(b.obj, source=where, options=ReadOptions())
            assert [(r.ok, [e.code for e in r.errors]) for r in rs] == [(False, ["format"])], where


# ---------------------------------------------------------------------------------------------------
# §13 envelopes, value by value
# ---------------------------------------------------------------------------------------------------


def test_13_1_llm_inference(specs_dir: Path) -> None:
    job = read_one(spec_block(specs_dir, V03, "13.1"))
    assert job.id == "019502a4-1234-7abc-8000-000000000001"
    assert job.type == "ml.inference" and job.queue == "gpu-inference"
    assert job.accelerator is Accelerator.GPU
    gpu = job.tasks[0].gpu
    assert (job.total_gpus, gpu.types, gpu.min_memory_gb) == (2, ["nvidia-a100"], 80)
    # no explicit compute capability: §6 infers 7.0 from fp16
    assert gpu.min_compute_capability == "7.0"
    assert job.precision is Precision.FP16
    m = job.model
    assert (m.id, m.version, m.provider, m.format) == ("llama-3.1-70b", "v2.1", "huggingface", "safetensors")
    assert job.runtime == "vllm"
    assert job.metadata["ext_ml_max_tokens"] == 4096
    assert job.priority_class is PriorityClass.ON_DEMAND
    assert job.duration_s == 60


def test_13_2_large_scale_training(specs_dir: Path) -> None:
    job = read_one(spec_block(specs_dir, V03, "13.2"))
    gpu = job.tasks[0].gpu
    assert job.total_gpus == 8
    assert gpu.types == ["nvidia-h100"] and gpu.min_memory_gb == 80
    assert gpu.min_compute_capability == "9.0"  # explicit, not the 8.0 bf16 would imply
    assert gpu.interconnect is Interconnect.NVLINK
    t = job.tasks[0]
    assert (t.memory_gb, t.storage_gb, t.shm_gb) == (1024, 2000, 256)
    assert job.distributed_strategy is DistributedStrategy.FSDP and job.may_span_nodes()
    assert job.duration_s == 172800
    assert job.priority_class is PriorityClass.RESERVED
    c = job.checkpointing
    assert (c.enabled, c.interval_s, c.storage_uri, c.max_count) == (
        True,
        600,
        "s3://checkpoints/train-70b/",
        5,
    )
    assert job.preemption.preemptible is False and not job.is_preemptible
    assert job.placement.node_selector == {"cluster": "ml-training-prod", "instance_type": "p5.48xlarge"}
    rules = {(r.key, r.operator, tuple(r.values)) for r in job.placement.required}
    assert rules == {
        ("cluster", AffinityOperator.IN, ("ml-training-prod",)),
        ("instance_type", AffinityOperator.IN, ("p5.48xlarge",)),
    }


def test_13_3_tpu_training(specs_dir: Path) -> None:
    job = read_one(spec_block(specs_dir, V03, "13.3"))
    tpu = job.tasks[0].tpu
    assert job.accelerator is Accelerator.TPU
    assert (tpu.type, tpu.topology, tpu.chips) == ("v5e", (4, 4), 16)
    assert job.total_tpu_chips == 16 and job.total_gpus == 0
    assert job.tasks[0].gpu is None  # bf16 precision infers a compute capability only for GPU jobs
    assert job.tasks[0].memory_gb == 256
    assert job.checkpointing.storage_uri == "gs://checkpoints/t5-xxl/" and job.checkpointing.interval_s == 900
    assert job.duration_s == 86400 and job.runtime == "tensorflow"


def test_13_4_cost_optimized_sweep(specs_dir: Path) -> None:
    job = read_one(spec_block(specs_dir, V03, "13.4"))
    assert (job.total_gpus, job.tasks[0].gpu.min_memory_gb, job.tasks[0].memory_gb) == (4, 40, 128)
    assert job.priority_class is PriorityClass.SPOT
    p = job.preemption
    assert (p.preemptible, p.grace_period_s, p.checkpoint_on_preempt) == (True, 60, True)
    assert job.is_preemptible
    assert job.distributed_strategy is DistributedStrategy.DATA_PARALLEL
    assert (
        job.checkpointing.interval_s == 300 and job.checkpointing.storage_uri == "s3://checkpoints/sweep-42/"
    )
    assert job.duration_s == 14400


def test_13_5_cpu_only_inference(specs_dir: Path) -> None:
    job = read_one(spec_block(specs_dir, V03, "13.5"))
    assert job.accelerator is Accelerator.CPU and job.total_gpus == 0 and job.tasks[0].gpu is None
    assert (job.tasks[0].cpu_cores, job.tasks[0].memory_gb) == (4, 8)
    assert job.model.format == "onnx" and job.runtime == "onnx"
    assert job.metadata["ext_ml_max_batch_size"] == 32
    assert job.duration_s == 10


# ---------------------------------------------------------------------------------------------------
# §12 workflows
# ---------------------------------------------------------------------------------------------------


def test_12_1_training_chain(specs_dir: Path) -> None:
    doc = spec_block(specs_dir, V03, "12.1")
    rs = read_object(doc, source="spec")
    assert [r.ok for r in rs] == [True] * 4
    wf = "019502a4-0001-7abc-8000-000000000001"
    jobs = [r.job for r in rs]
    assert [j.id for j in jobs] == [f"{wf}.step-{i}" for i in range(4)]
    assert [j.type for j in jobs] == ["ml.data_prep", "ml.train", "ml.evaluate", "ml.deploy"]
    prep, train, evaluate, deploy = jobs
    # §12.3: data_prep inherits nothing from the 8x H100 train step
    assert prep.accelerator is Accelerator.CPU and prep.total_gpus == 0 and prep.tasks[0].gpu is None
    assert (prep.tasks[0].cpu_cores, prep.tasks[0].memory_gb, prep.tasks[0].storage_gb) == (16, 64, 500)
    assert prep.duration_s == 3600 and prep.checkpointing.enabled is False
    assert (train.total_gpus, train.tasks[0].gpu.types, train.tasks[0].gpu.interconnect) == (
        8,
        ["nvidia-h100"],
        Interconnect.NVLINK,
    )
    assert train.duration_s == 86400 and train.priority_class is PriorityClass.RESERVED
    assert train.checkpointing.storage_uri == "s3://checkpoints/llama-finetune/"
    assert (evaluate.total_gpus, evaluate.tasks[0].gpu.types, evaluate.runtime) == (
        2,
        ["nvidia-a100"],
        "vllm",
    )
    assert deploy.accelerator is Accelerator.CPU and deploy.duration_s == 300
    # chain: each step waits for the previous one to succeed
    assert prep.dependencies == []
    for before, after in itertools.pairwise(jobs):
        assert [(d.job, d.condition) for d in after.dependencies] == [
            (before.id, DependencyCondition.SUCCESS)
        ]
    assert {j.workflow_id for j in jobs} == {wf}


def test_12_2_inference_group(specs_dir: Path) -> None:
    rs = read_object(spec_block(specs_dir, V03, "12.2"), source="spec")
    jobs = [r.job for r in rs]
    assert [(j.total_gpus, j.tasks[0].gpu.types[0], j.tasks[0].gpu.min_memory_gb) for j in jobs] == [
        (4, "nvidia-a100", 80),
        (1, "nvidia-l4", 24),
        (1, "nvidia-t4", 16),
    ]
    assert all(j.dependencies == [] for j in jobs)
    assert [j.model.id for j in jobs] == ["llama-3.1-70b", "stable-diffusion-xl", "whisper-large-v3"]


def test_extensions_9_1_pipeline_keeps_mlx_metadata_per_step(specs_dir: Path) -> None:
    rs = read_object(spec_block(specs_dir, MLX, "9.1"), source="spec")
    prep, train, evaluate, deploy = (r.job for r in rs)
    assert prep.metadata["ext_mlx_preprocess_split_ratios"] == {"train": 0.8, "validation": 0.1, "test": 0.1}
    assert "ext_mlx_training_hyperparameters" not in prep.metadata  # nothing inherited (§12.3)
    assert train.metadata["ext_mlx_training_epochs"] == 5 and train.total_gpus == 4
    assert train.checkpointing.enabled and train.checkpointing.storage_uri is None
    assert evaluate.metadata["ext_mlx_eval_metrics"] == ["accuracy", "f1", "precision", "recall"]
    assert deploy.metadata["ext_mlx_artifact_registry"] == "s3"
    assert all(j.metadata["workflow_name"] == "customer-support-classifier-v1" for j in (prep, train, deploy))


def test_v01_examples(specs_dir: Path) -> None:
    job = read_one(spec_block(specs_dir, V01, "2.1"))
    assert (job.total_gpus, job.tasks[0].gpu.types, job.tasks[0].gpu.min_memory_gb) == (
        2,
        ["nvidia-a100"],
        40,
    )
    assert (job.tasks[0].cpu_cores, job.tasks[0].memory_gb, job.tasks[0].storage_gb) == (8, 64, 200)
    job = read_one(spec_block(specs_dir, V01, "3.1"))
    assert [(r.key, r.operator.value, r.values) for r in job.placement.required] == [
        ("region", "In", ["us-east-1", "us-west-2"])
    ]
    assert [(r.key, r.operator.value, r.values) for r in job.placement.preferred] == [
        ("spot", "NotIn", ["true"])
    ]
    job = read_one(spec_block(specs_dir, V01, "4.2"))
    c = job.checkpointing
    assert (c.enabled, c.interval_s, c.storage_uri, c.max_count) == (
        True,
        300,
        "s3://my-bucket/checkpoints/",
        3,
    )
    job = read_one(spec_block(specs_dir, V01, "4.4"))
    assert (job.last_checkpoint.epoch, job.last_checkpoint.loss) == (42, 0.0234)
    job = read_one(spec_block(specs_dir, V01, "5.1"))
    assert (
        job.preemption.preemptible,
        job.preemption.grace_period_s,
        job.preemption.checkpoint_on_preempt,
    ) == (
        True,
        60,
        True,
    )


def test_9_2_checkpoint_metadata_schema_reads_inside_meta(specs_dir: Path) -> None:
    block = spec_block(specs_dir, V03, "9.2")
    job = read_one({"id": "j", "type": "ml.train", "meta": block})
    lc = job.last_checkpoint
    assert (lc.job_id, lc.epoch, lc.step, lc.loss) == (
        "019502a4-5678-7abc-8000-000000000002",
        42,
        126000,
        0.0234,
    )
    assert lc.metrics == {"accuracy": 0.947, "learning_rate": 0.0001}
    assert lc.storage_key == "s3://checkpoints/train-70b/epoch-42/"
    assert lc.created_at is not None and lc.created_at.isoformat() == "2026-02-19T12:00:00+00:00"


def test_spec_block_extraction_sees_headings(specs_dir: Path) -> None:
    headings = [b.heading for b in spec_blocks(specs_dir, V03)]
    assert any(re.match(r"13\.2 ", h) for h in headings)
