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

from placer.solver.jobs.formats.ojs import classify, read
from placer.solver.jobs.load import read_object
from placer.solver.jobs.model import (
    Accelerator,
    AffinityOperator,
    DependencyCondition,
    DistributedStrategy,
    Interconnect,
    Placement,
    Precision,
    PriorityClass,
)
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import load_queue_configs

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


def blocks_under(specs_dir: Path, spec: str, heading: str, count: int) -> list[Any]:
    """The blocks under the heading starting with ``heading``, in spec order, asserting there are ``count``.

    For headings with several blocks, tests pick one by its index in this list (the order the blocks
    appear in the spec text), so a block inserted under the heading fails the count before it shifts an
    index. The extensions' §5.x "Example ... job" blocks sit under the last ``####`` attribute heading of
    their section (e.g. §5.4's under "`ext_mlx_eval_thresholds` (object)", after that attribute's own
    fragment), which is the heading named here.
    """
    found = [b.obj for b in spec_blocks(specs_dir, spec) if b.heading.startswith(heading + " ")]
    assert len(found) == count, f"expected {count} json blocks under {heading} of {spec}, found {len(found)}"
    return found


def read_fragment(obj: Any, options: ReadOptions | None = None) -> Any:
    """A spec fragment (attributes only, no core fields) as a job: it reads OK, every key is understood
    (nothing in ``Job.unknown``), and the one warning is the missing core ``type``."""
    rs = read_object(obj, source="spec", options=options or ReadOptions())
    assert [(r.ok, [(w.code, w.path) for w in r.warnings]) for r in rs] == [(True, [("required", "type")])]
    job = rs[0].job
    assert job is not None and job.unknown == {}
    return job


def mlx_attributes(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k.startswith("ext_mlx_")}


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


# ---------------------------------------------------------------------------------------------------
# v0.3 §5.2 and §7 fragments (attributes only: no id, no type)
# ---------------------------------------------------------------------------------------------------


def test_5_2_registry_uri_fragment(specs_dir: Path) -> None:
    job = read_fragment(spec_block(specs_dir, V03, "5.2"))
    m = job.model
    # §5.2 example, field by field (§4 model identity, §5.1 registry provider and URI)
    assert m.id == "meta-llama/Llama-3.1-70B-Instruct"
    assert (m.registry, m.registry_uri) == ("huggingface", "hf://meta-llama/Llama-3.1-70B-Instruct@main")
    assert (m.format, m.checksum) == ("safetensors", "sha256:e3b0c44298fc...")
    assert (m.version, m.provider) == (None, None)  # not in the fragment
    # §3.1: no ext_ml_gpu_*/ext_ml_tpu_* attribute, so no accelerator is implied
    assert job.accelerator is Accelerator.CPU and job.total_gpus == 0 and job.tasks[0].gpu is None


def test_7_1_node_selector_fragment(specs_dir: Path) -> None:
    job = read_fragment(spec_block(specs_dir, V03, "7.1"))
    selector = {"gpu_type": "nvidia-a100", "region": "us-east-1", "gpu_memory": "80gb"}
    assert job.placement.node_selector == selector
    # §7.1: "a set of equality constraints. A worker MUST match ALL key-value pairs" -> one hard In rule each
    assert {(r.key, r.operator, tuple(r.values)) for r in job.placement.required} == {
        (k, AffinityOperator.IN, (v,)) for k, v in selector.items()
    }
    assert job.placement.preferred == [] and job.placement.anti_affinity == []
    # a "gpu_type" node label is not ext_ml_gpu_type (§3.1 infers gpu only from ext_ml_gpu_count/_type)
    assert job.accelerator is Accelerator.CPU and job.tasks[0].gpu is None


def test_7_2_affinity_rules_fragment(specs_dir: Path) -> None:
    job = read_fragment(spec_block(specs_dir, V03, "7.2"))
    p = job.placement
    # §7.2 example: two required rules (hard, no weight) ...
    assert [(r.key, r.operator, r.values, r.weight) for r in p.required] == [
        ("gpu_type", AffinityOperator.IN, ["nvidia-a100", "nvidia-h100"], None),
        ("compute_capability", AffinityOperator.GTE, ["8.0"], None),
    ]
    # ... and two preferred rules with weights 80 and 20 (§7.2 "weighted by the weight field (0-100)")
    assert [(r.key, r.operator, r.values, r.weight) for r in p.preferred] == [
        ("gpu_interconnect", AffinityOperator.IN, ["nvlink"], 80),
        ("region", AffinityOperator.IN, ["us-east-1"], 20),
    ]
    assert p.node_selector == {} and p.anti_affinity == [] and p.anti_affinity_preferred == []
    # the rules stay node-label rules: no GPU demand is made of them (§3.1, as for §7.1)
    assert job.accelerator is Accelerator.CPU and job.tasks[0].gpu is None


def test_7_3_anti_affinity_fragment(specs_dir: Path) -> None:
    job = read_fragment(spec_block(specs_dir, V03, "7.3"))
    p = job.placement
    # §7.3: same operator syntax as §7.2, under ext_ml_anti_affinity; it tests other *jobs* on a node
    assert [(r.key, r.operator, r.values) for r in p.anti_affinity] == [
        ("job_type", AffinityOperator.IN, ["ml.train.large"])
    ]
    assert p.anti_affinity_preferred == []
    # anti-affinity is not node affinity: nothing lands in the node-label rules
    assert p.required == [] and p.preferred == [] and p.node_selector == {}


# ---------------------------------------------------------------------------------------------------
# v0.3 §10 queue configurations. The loaded values of both blocks are asserted in
# tests/solver/jobs/test_queues.py::test_spec_10_1_and_10_2_blocks_load; here, what the spec text says
# they do to jobs, with the spec's own blocks as the configuration.
# ---------------------------------------------------------------------------------------------------


def test_10_1_defaults_fill_what_the_producer_left_unset(specs_dir: Path) -> None:
    block = spec_block(specs_dir, V03, "10.1")
    opts = ReadOptions(queues=load_queue_configs(block))
    # §10.1: "any ext_ml_* attribute not explicitly set ... MUST be filled with the queue's default value"
    job = read_one({"id": "j", "type": "ml.inference", "queue": "gpu-inference"}, opts)
    assert job.accelerator is Accelerator.GPU and job.total_gpus == 1
    assert job.duration_s == 60  # ext_ml_timeout_seconds (§6: the job's timeout)
    assert job.priority_class is PriorityClass.ON_DEMAND
    assert job.metadata["ml_defaults_applied"] == list(block["config"]["ml_defaults"])
    # explicitly set attributes keep the producer's values
    env = {
        "id": "k",
        "type": "ml.inference",
        "queue": "gpu-inference",
        "ext_ml_gpu_count": 2,
        "ext_ml_priority_class": "reserved",
    }
    job = read_one(env, opts)
    assert (job.total_gpus, job.priority_class, job.duration_s) == (2, PriorityClass.RESERVED, 60)
    # defaults belong to their queue only
    job = read_one({"id": "m", "type": "ml.inference", "queue": "cpu-workers"}, opts)
    assert job.accelerator is Accelerator.CPU and job.duration_s is None


def test_10_2_limits_reject_jobs_that_exceed_them(specs_dir: Path) -> None:
    opts = ReadOptions(queues=load_queue_configs(spec_block(specs_dir, V03, "10.2")))
    base = {"id": "j", "type": "ml.inference", "queue": "gpu-inference"}
    ok = {**base, "ext_ml_gpu_type": "nvidia-l4", "ext_ml_gpu_count": 4, "ext_ml_gpu_memory_gb": 24}
    assert read_one(ok, opts).total_gpus == 4  # at the limits of the block, not over them
    # §10.2: "MUST reject ... any job whose ext_ml_* attributes exceed the queue's resource limits"
    over = [
        {"ext_ml_gpu_count": 5},  # max_gpu_count 4
        {"ext_ml_gpu_memory_gb": 141},  # max_gpu_memory_gb 80
        {"ext_ml_memory_gb": 512},  # max_memory_gb 256
        {"ext_ml_timeout_seconds": 7200},  # max_timeout_seconds 3600
        {"ext_ml_gpu_type": "nvidia-t4"},  # not in allowed_gpu_types
        {"ext_ml_priority_class": "spot"},  # not in allowed_priority_classes
    ]
    for attrs in over:
        [r] = read_object({**base, **attrs}, source="spec", options=opts)
        assert (r.ok, [e.code for e in r.errors]) == (False, ["limit"]), attrs
    # §10.3: max_total_gpus 64 is a budget, "MUST NOT reject budget-exceeded jobs": 17 x 4 GPUs all read
    batch = [{**base, "id": f"j{i}", "ext_ml_gpu_count": 4} for i in range(17)]
    assert all(r.ok for r in read_object(batch, source="spec", options=opts))


def test_10_1_defaults_are_within_10_2_limits_of_the_same_queue(specs_dir: Path) -> None:
    # both blocks configure queue "gpu-inference"; as one configuration they are consistent (1 GPU <= 4,
    # 60 s <= 3600 s, on-demand allowed), so loading does not report a default/limit conflict
    d, lim = spec_block(specs_dir, V03, "10.1"), spec_block(specs_dir, V03, "10.2")
    merged = {"queue": "gpu-inference", "config": {**d["config"], **lim["config"]}}
    qc = load_queue_configs(merged)["gpu-inference"]
    assert qc.config.ml_defaults["ext_ml_gpu_count"] == 1 and qc.config.ml_limits.max_gpu_count == 4


# ---------------------------------------------------------------------------------------------------
# Worker advertisements: v0.3 §11, v0.1 §2.3 and §6.1
# ---------------------------------------------------------------------------------------------------


def test_worker_blocks_are_not_jobs_and_import_as_nodes(specs_dir: Path) -> None:
    from placer.topology.importers.ojs_workers import parse_ojs_workers
    from tests.topology.test_importers_ojs import SPEC_V01_FETCH, SPEC_V01_LABELS, SPEC_V03_AD

    ad = spec_block(specs_dir, V03, "11.")
    # the job reader refuses it as "not a job" (classification and refusal: tests above)
    assert classify(ad) == "worker"
    # the value-by-value import checks live in tests/topology/test_importers_ojs.py on verbatim copies;
    # they must be the spec's blocks
    assert ad == SPEC_V03_AD
    assert spec_block(specs_dir, V01, "2.3") == SPEC_V01_LABELS
    assert spec_block(specs_dir, V01, "6.1") == SPEC_V01_FETCH
    (node,) = parse_ojs_workers(ad, source="spec").nodes
    assert node.name == "gpu-worker-01" and node.gpus is not None
    # §11: 8x nvidia-a100, 80 GB, compute capability 8.0, NVLink
    assert (node.gpus.type, node.gpus.count, node.gpus.memory_gb) == ("nvidia-a100", 8, 80)
    assert (node.gpus.compute_capability, node.gpus.interconnect) == ("8.0", "nvlink")
    assert node.labels["cluster"] == "ml-training-prod"


# ---------------------------------------------------------------------------------------------------
# ML extensions §4-§5 fragments and examples, §10 envelopes, §9.2 group
# ---------------------------------------------------------------------------------------------------


def test_extensions_4_2_schemas_are_metadata(specs_dir: Path) -> None:
    block = spec_block(specs_dir, MLX, "4.2")
    job = read_fragment(block)
    # §4.2: JSON Schema objects describing model input/output; informational (§3), kept as given
    assert job.metadata == mlx_attributes(block)
    inp, out = job.metadata["ext_mlx_model_input_schema"], job.metadata["ext_mlx_model_output_schema"]
    assert inp["required"] == ["text"] and inp["properties"]["text"] == {"type": "string", "maxLength": 4096}
    assert inp["properties"]["max_tokens"] == {"type": "integer", "minimum": 1, "maximum": 4096}
    assert out["properties"]["finish_reason"]["enum"] == ["stop", "length", "error"]
    assert job.placement == Placement() and job.accelerator is Accelerator.CPU


def test_extensions_5_1_training_example(specs_dir: Path) -> None:
    # "Example training job", the block under §5.1's last attribute heading
    block = spec_block(specs_dir, MLX, "`ext_mlx_training_resume_from`")
    job = read_one(block)
    assert (job.type, job.queue, job.unknown) == ("ml.train", "gpu-training", {})
    # ML resources attributes: 4x nvidia-h100, pytorch, bf16 -> compute capability 8.0 (v0.3 §6 table)
    gpu = job.tasks[0].gpu
    assert job.accelerator is Accelerator.GPU and (job.total_gpus, gpu.types) == (4, ["nvidia-h100"])
    assert job.precision is Precision.BF16 and gpu.min_compute_capability == "8.0"
    assert gpu.interconnect is Interconnect.ANY and job.runtime == "pytorch"
    # §3: ext_mlx_* are informational -> all in metadata, by attribute name; none of them places the job
    assert job.metadata == mlx_attributes(block)
    md = job.metadata
    assert (md["ext_mlx_model_name"], md["ext_mlx_model_version"], md["ext_mlx_model_framework"]) == (
        "llama-3.1-8b-custom",
        "1.0.0",
        "pytorch",
    )
    # §5.1: hyperparameters preserved exactly
    assert md["ext_mlx_training_hyperparameters"] == {
        "learning_rate": 2e-5,
        "batch_size": 32,
        "epochs": 3,
        "weight_decay": 0.01,
        "warmup_steps": 500,
        "seed": 42,
    }
    assert md["ext_mlx_training_epochs"] == 3
    assert md["ext_mlx_training_dataset_uri"] == "s3://datasets/customer-support-v3/train.parquet"
    assert md["ext_mlx_training_validation_uri"] == "s3://datasets/customer-support-v3/val.parquet"
    assert md["ext_mlx_training_checkpoint_uri"] == "s3://checkpoints/llama-custom/run-001/"
    assert md["ext_mlx_training_output_model_uri"] == "s3://models/llama-custom/v1.0.0/"
    assert (md["ext_mlx_experiment_id"], md["ext_mlx_run_id"]) == ("exp-llama-finetune-2024", "run-001")
    # the mlx checkpoint URI is not OJS ML §9.1 checkpointing, nor the mlx model name an ext_ml_model_id
    assert job.checkpointing.enabled is False and job.checkpointing.storage_uri is None
    assert job.model.id is None
    assert job.placement == Placement()


def test_extensions_5_2_inference_example(specs_dir: Path) -> None:
    # "Example inference job", the block under §5.2's last attribute heading
    block = spec_block(specs_dir, MLX, "`ext_mlx_inference_mode`")
    job = read_one(block)
    assert (job.type, job.queue, job.unknown) == ("ml.inference", "gpu-inference", {})
    gpu = job.tasks[0].gpu
    assert (job.total_gpus, gpu.types, job.runtime) == (1, ["nvidia-l4"], "vllm")
    # no ext_ml_precision and no explicit capability: nothing to infer (v0.3 §6)
    assert job.precision is None and gpu.min_compute_capability is None
    assert job.metadata == mlx_attributes(block)
    md = job.metadata
    assert md["ext_mlx_inference_model_uri"] == "s3://models/llama-custom/v1.0.0/"
    assert (md["ext_mlx_inference_batch_size"], md["ext_mlx_inference_mode"]) == (64, "batch")
    assert md["ext_mlx_inference_input_uri"] == "s3://data/classify-input/batch-2024-01.jsonl"
    assert md["ext_mlx_inference_output_uri"] == "s3://data/classify-output/batch-2024-01.jsonl"
    # §5.2: ext_mlx_inference_timeout_ms is a per-request timeout, not the job's (v0.3 §6 timeout)
    assert md["ext_mlx_inference_timeout_ms"] == 5000 and job.duration_s is None
    assert "ext_ml_max_batch_size" not in md  # the mlx batch size is not the v0.3 §6 limit
    assert job.placement == Placement()


def test_extensions_5_3_transformations_fragment(specs_dir: Path) -> None:
    block = spec_block(specs_dir, MLX, "`ext_mlx_preprocess_transformations`")
    job = read_fragment(block)
    assert job.metadata == mlx_attributes(block)
    steps = job.metadata["ext_mlx_preprocess_transformations"]
    # §5.3: "an ordered list": order and configs as written
    assert [t["type"] for t in steps] == ["filter", "deduplicate", "tokenize", "sample"]
    assert steps[0]["config"] == {"column": "language", "value": "en"}
    assert steps[1]["config"] == {"columns": ["text"]}
    assert steps[2]["config"] == {"tokenizer": "meta-llama/Llama-3.1-8B", "max_length": 2048}
    assert steps[3]["config"] == {"fraction": 0.1, "seed": 42}
    assert job.placement == Placement() and job.accelerator is Accelerator.CPU


def test_extensions_5_3_split_ratios_fragment(specs_dir: Path) -> None:
    block = spec_block(specs_dir, MLX, "`ext_mlx_preprocess_split_ratios`")
    job = read_fragment(block)
    assert job.metadata == {"ext_mlx_preprocess_split_ratios": {"train": 0.8, "validation": 0.1, "test": 0.1}}
    # §5.3: "The ratios MUST sum to 1.0. Backends SHOULD validate this": the block changed to sum 1.1 fails
    bad = {"ext_mlx_preprocess_split_ratios": {**block["ext_mlx_preprocess_split_ratios"], "train": 0.9}}
    [r] = read_object(bad, source="spec")
    assert (r.ok, [(e.code, e.path) for e in r.errors]) == (
        False,
        [("range", "ext_mlx_preprocess_split_ratios")],
    )


def test_extensions_5_4_thresholds_fragment_and_evaluation_example(specs_dir: Path) -> None:
    # two blocks under "`ext_mlx_eval_thresholds` (object)": [0] the attribute's fragment, [1] §5.4's
    # "Example evaluation job"
    fragment, example = blocks_under(specs_dir, MLX, "`ext_mlx_eval_thresholds`", 2)
    job = read_fragment(fragment)
    # §5.4: min for quality metrics, max for loss-type ones
    assert job.metadata == {
        "ext_mlx_eval_thresholds": {
            "accuracy": {"min": 0.92},
            "f1": {"min": 0.88},
            "latency_p99": {"max": 100},
            "loss": {"max": 0.15},
        }
    }
    job = read_one(example)
    assert (job.type, job.queue, job.unknown) == ("ml.evaluate", "gpu-inference", {})
    assert (job.total_gpus, job.tasks[0].gpu.types) == (1, ["nvidia-a100"])
    assert job.tasks[0].gpu.min_compute_capability is None  # no precision given (v0.3 §6)
    assert job.metadata == mlx_attributes(example)
    md = job.metadata
    assert md["ext_mlx_eval_metrics"] == ["accuracy", "f1", "precision", "recall", "latency_p99"]
    assert md["ext_mlx_eval_thresholds"] == {
        "accuracy": {"min": 0.92},
        "f1": {"min": 0.88},
        "latency_p99": {"max": 100},
    }
    assert md["ext_mlx_eval_dataset_uri"] == "s3://datasets/customer-support-v3/test.parquet"
    assert md["ext_mlx_eval_model_uri"] == "s3://models/llama-custom/v1.0.0/"
    assert md["ext_mlx_eval_output_uri"] == "s3://eval-results/llama-custom/v1.0.0/"
    assert (md["ext_mlx_eval_baseline_run_id"], md["ext_mlx_run_id"]) == ("run-000", "run-001")
    assert job.placement == Placement()


def test_extensions_10_1_fine_tuning_with_resume(specs_dir: Path) -> None:
    block = spec_block(specs_dir, MLX, "10.1")
    job = read_one(block)
    assert (job.id, job.type, job.queue, job.unknown) == (
        "019539a4-ft-resume-001",
        "ml.train",
        "gpu-training",
        {},
    )
    gpu = job.tasks[0].gpu
    assert job.accelerator is Accelerator.GPU
    assert (job.total_gpus, gpu.types, gpu.interconnect) == (8, ["nvidia-h100"], Interconnect.NVLINK)
    # bf16 without an explicit capability: 8.0 inferred (v0.3 §6 table)
    assert job.precision is Precision.BF16 and gpu.min_compute_capability == "8.0"
    assert job.distributed_strategy is DistributedStrategy.FSDP and job.may_span_nodes()
    # reserved: never preemptible (v0.3 §8.1 table)
    assert job.priority_class is PriorityClass.RESERVED and not job.is_preemptible
    assert job.metadata == mlx_attributes(block)
    md = job.metadata
    # §5.1: the checkpoint to resume from; it is not a v0.3 §9.2 last_checkpoint nor §9.1 checkpointing
    assert md["ext_mlx_training_resume_from"] == "s3://checkpoints/llama-70b-domain/run-003/step-15000/"
    assert job.last_checkpoint is None and job.checkpointing.enabled is False
    assert md["ext_mlx_training_hyperparameters"] == {
        "learning_rate": 1e-5,
        "batch_size": 8,
        "gradient_accumulation_steps": 4,
        "seed": 42,
    }
    assert (md["ext_mlx_model_name"], md["ext_mlx_model_version"], md["ext_mlx_model_framework"]) == (
        "llama-3.1-70b-domain",
        "0.2.0",
        "pytorch",
    )
    assert md["ext_mlx_training_dataset_uri"] == "s3://data/domain-corpus/train.parquet"
    assert md["ext_mlx_training_output_model_uri"] == "s3://models/llama-70b-domain/v0.2.0/"
    assert (md["ext_mlx_experiment_id"], md["ext_mlx_run_id"]) == ("exp-domain-adaptation", "run-003")
    assert job.placement == Placement()


def test_extensions_10_2_batch_inference(specs_dir: Path) -> None:
    block = spec_block(specs_dir, MLX, "10.2")
    job = read_one(block)
    assert (job.id, job.type, job.queue, job.unknown) == (
        "019539a4-batch-inf-001",
        "ml.inference",
        "gpu-inference",
        {},
    )
    assert job.accelerator is Accelerator.GPU
    assert (job.total_gpus, job.tasks[0].gpu.types, job.runtime) == (1, ["nvidia-l4"], "onnx")
    assert job.metadata == mlx_attributes(block)
    md = job.metadata
    assert (md["ext_mlx_model_name"], md["ext_mlx_model_version"], md["ext_mlx_model_framework"]) == (
        "customer-intent-classifier",
        "3.1.0",
        "onnx",
    )
    assert md["ext_mlx_inference_model_uri"] == "s3://models/intent-classifier/v3.1.0/model.onnx"
    assert (md["ext_mlx_inference_batch_size"], md["ext_mlx_inference_timeout_ms"]) == (256, 30000)
    assert md["ext_mlx_inference_input_uri"] == "s3://data/daily-tickets/2024-01-15.jsonl"
    assert md["ext_mlx_inference_output_uri"] == "s3://data/daily-predictions/2024-01-15.jsonl"
    assert md["ext_mlx_inference_mode"] == "batch"
    assert job.duration_s is None  # timeout_ms is per request (§5.2), not the job's timeout
    assert job.placement == Placement()


def test_extensions_10_2_on_the_v03_gpu_inference_queue(specs_dir: Path) -> None:
    # the extensions' §10.2 job names queue "gpu-inference", the queue of ML resources §10.1/§10.2: its
    # defaults fill the two attributes it leaves unset, and it is within the limits (1 nvidia-l4)
    d, lim = spec_block(specs_dir, V03, "10.1"), spec_block(specs_dir, V03, "10.2")
    queues = load_queue_configs({"queue": "gpu-inference", "config": {**d["config"], **lim["config"]}})
    job = read_one(spec_block(specs_dir, MLX, "10.2"), ReadOptions(queues=queues))
    assert job.metadata["ml_defaults_applied"] == ["ext_ml_timeout_seconds", "ext_ml_priority_class"]
    assert (job.duration_s, job.priority_class, job.total_gpus) == (60, PriorityClass.ON_DEMAND, 1)


def test_extensions_9_2_parallel_evaluation_group(specs_dir: Path) -> None:
    rs = read_object(spec_block(specs_dir, MLX, "9.2"), source="spec")
    assert [r.ok for r in rs] == [True] * 3
    jobs = [r.job for r in rs]
    wf = "019539a4-eval-group-001"
    assert {j.workflow_id for j in jobs} == {wf}
    assert len({j.id for j in jobs}) == 3
    # §9.2 "in parallel": a group has no edges
    assert all(j.dependencies == [] for j in jobs)
    assert [j.type for j in jobs] == ["ml.evaluate"] * 3
    assert [j.metadata["ext_mlx_eval_dataset_uri"] for j in jobs] == [
        "s3://eval/english-test.parquet",
        "s3://eval/spanish-test.parquet",
        "s3://eval/adversarial-test.parquet",
    ]
    assert {j.metadata["ext_mlx_eval_model_uri"] for j in jobs} == {"s3://models/classifier/v1.0.0/"}
    assert [j.metadata["ext_mlx_eval_metrics"] for j in jobs] == [
        ["accuracy", "f1"],
        ["accuracy", "f1"],
        ["accuracy", "f1", "latency_p99"],
    ]
    # the steps carry no ext_ml_* attribute: no accelerator demand, no queue
    assert all(j.accelerator is Accelerator.CPU and j.total_gpus == 0 and j.queue is None for j in jobs)
