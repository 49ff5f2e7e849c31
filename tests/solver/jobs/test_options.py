"""The ``--limits`` file (``solver/jobs/options.py``): keys replace defaults, bad files are refused whole,
naming each key."""

from __future__ import annotations

import pytest

from placer.solver.jobs.errors import JobValidationError
from placer.solver.jobs.options import ReadOptions, load_read_limits


def test_uri_prefix_lists_per_queue_and_tenant_from_a_limits_file() -> None:
    text = """
uri_prefixes_by_queue:
  train: [s3://train-ckpt/, s3://models/]
uri_prefixes_by_tenant:
  vision: [gs://vision/]
"""
    options = load_read_limits(text, source="limits.yaml").apply(ReadOptions())
    assert options.uri_prefixes_by_queue == {"train": ("s3://train-ckpt/", "s3://models/")}
    assert options.uri_prefixes_by_tenant == {"vision": ("gs://vision/",)}
    assert options.allowed_uri_prefixes == ()  # the global list keeps its default


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"uri_prefixes_by_queue": {"train": []}}, "uri_prefixes_by_queue"),
        ({"uri_prefixes_by_queue": {"train": [" "]}}, "uri_prefixes_by_queue"),
        ({"uri_prefixes_by_tenant": {"": ["s3://x/"]}}, "uri_prefixes_by_tenant"),
        ({"uri_prefixes_by_tenant": {"vision": "s3://x/"}}, "uri_prefixes_by_tenant.vision"),
    ],
)
def test_an_empty_or_malformed_prefix_list_is_refused_naming_its_key(doc: dict, path: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(JobValidationError) as e:
        load_read_limits(doc)
    assert [i.path for i in e.value.issues] == [path]
