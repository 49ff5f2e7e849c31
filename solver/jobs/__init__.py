"""Jobs in: every format of the specs read into one validated :class:`Job` model.

Public API::

    read_files(paths, fmt="auto", options=None) -> list[ReadResult]   # a batch of files, batch checks run
    read_file / read_text / read_object                                # one document
    check_batch(results)                                               # duplicate ids, dependency cycles
    ReadOptions, QueueConfig                                           # queue defaults/limits, upper bounds
    ReadLimits                                                         # upper bounds and lists from a file
    Job and its parts (TaskGroup, GpuDemand, TpuDemand, Placement, ...), ReadResult
    Issue, JobValidationError, ISSUE_CODES                             # structured errors

>>> batch = '[{"id": "a", "ext_ml_gpu_count": 2}, {"id": "b", "ext_ml_gpu_type": "nvidia-l4"}]'
>>> [r.job.total_gpus for r in read_text(batch)]
[2, 1]
"""

from placer.solver.jobs.errors import ISSUE_CODES, Issue, JobValidationError
from placer.solver.jobs.load import check_batch, read_file, read_files, read_object, read_text
from placer.solver.jobs.model import (
    Accelerator,
    AffinityOperator,
    AllOf,
    AnyOf,
    Checkpointing,
    CountRange,
    Dependency,
    DependencyCondition,
    DistributedStrategy,
    Escalation,
    FluxResource,
    GpuAffinity,
    GpuDemand,
    Interconnect,
    Job,
    LabelRule,
    LastCheckpoint,
    ModelRef,
    Not,
    Placement,
    Precision,
    Preemption,
    PreemptionPolicy,
    PriorityClass,
    ReadResult,
    ReservationRef,
    Rule,
    SpotPreference,
    TaskGroup,
    TpuDemand,
)
from placer.solver.jobs.options import ReadLimits, ReadOptions
from placer.solver.jobs.queues import MlLimits, QueueConfig

__all__ = [
    "ISSUE_CODES",
    "Accelerator",
    "AffinityOperator",
    "AllOf",
    "AnyOf",
    "Checkpointing",
    "CountRange",
    "Dependency",
    "DependencyCondition",
    "DistributedStrategy",
    "Escalation",
    "FluxResource",
    "GpuAffinity",
    "GpuDemand",
    "Interconnect",
    "Issue",
    "Job",
    "JobValidationError",
    "LabelRule",
    "LastCheckpoint",
    "MlLimits",
    "ModelRef",
    "Not",
    "Placement",
    "Precision",
    "Preemption",
    "PreemptionPolicy",
    "PriorityClass",
    "QueueConfig",
    "ReadLimits",
    "ReadOptions",
    "ReadResult",
    "ReservationRef",
    "Rule",
    "SpotPreference",
    "TaskGroup",
    "TpuDemand",
    "check_batch",
    "read_file",
    "read_files",
    "read_object",
    "read_text",
]
