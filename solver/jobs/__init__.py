"""Jobs in: every format of the specs read into one validated :class:`Job` model.

Public API::

    read_files(paths, fmt="auto", options=None) -> list[ReadResult]   # a batch of files, batch checks run
    read_file / read_text / read_object                                # one document
    check_batch(results)                                               # duplicate ids, dependency cycles
    ReadOptions, QueueConfig                                           # queue defaults/limits, upper bounds
    load_queue_configs, in_cluster_queues                              # OJS §10 or Kueue; shared queues
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
    DomainRule,
    Escalation,
    FlavorChoice,
    FluxResource,
    GpuAffinity,
    GpuDemand,
    GroupLimit,
    Interconnect,
    Job,
    LabelRule,
    LastCheckpoint,
    ModelRef,
    Not,
    OneFlavor,
    Placement,
    Precision,
    Preemption,
    PreemptionPolicy,
    PriorityClass,
    ReadResult,
    ReservationRef,
    Rule,
    SpotPreference,
    SpreadRule,
    TaskGroup,
    Throttle,
    TpuDemand,
)
from placer.solver.jobs.options import ReadLimits, ReadOptions
from placer.solver.jobs.queues import MlLimits, QueueConfig, in_cluster_queues, load_queue_configs

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
    "DomainRule",
    "Escalation",
    "FlavorChoice",
    "FluxResource",
    "GpuAffinity",
    "GpuDemand",
    "GroupLimit",
    "Interconnect",
    "Issue",
    "Job",
    "JobValidationError",
    "LabelRule",
    "LastCheckpoint",
    "MlLimits",
    "ModelRef",
    "Not",
    "OneFlavor",
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
    "SpreadRule",
    "TaskGroup",
    "Throttle",
    "TpuDemand",
    "check_batch",
    "in_cluster_queues",
    "load_queue_configs",
    "read_file",
    "read_files",
    "read_object",
    "read_text",
]
