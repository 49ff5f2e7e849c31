"""``placer.cli.inputs``: the files ``place`` and ``check`` share fail the same way — ``usage`` when a file
cannot be opened, ``content`` when it cannot be read — naming the file and the problem."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from placer.cli.inputs import (
    InputError,
    cluster_arg,
    jobs_arg,
    prices_arg,
    read_options_arg,
    reservations_arg,
    with_running_arg,
)
from placer.topology import cluster_of, dgx_h100

CLUSTER = cluster_of(dgx_h100(1))


def _loaders(tmp: Path) -> dict[str, Callable[[str], Any]]:
    return {
        "cluster": cluster_arg,
        "queue config": lambda p: read_options_arg(p, None),
        "limits file": lambda p: read_options_arg(None, p),
        "running jobs": lambda p: with_running_arg(CLUSTER, p),
        "reservations": lambda p: reservations_arg(p, CLUSTER),
        "prices": prices_arg,
    }


@pytest.mark.parametrize(
    "what", ["cluster", "queue config", "limits file", "running jobs", "reservations", "prices"]
)
def test_unopenable_file_is_usage_and_bad_content_is_content(tmp_path: Path, what: str) -> None:
    load = _loaders(tmp_path)[what]
    with pytest.raises(InputError) as missing:
        load(str(tmp_path / "none.json"))
    assert missing.value.kind == "usage"
    assert missing.value.message.startswith(f"cannot open {what} ") and "none.json" in missing.value.message
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"no": ["such", "thing"]}))
    with pytest.raises(InputError) as wrong:
        load(str(bad))
    assert wrong.value.kind == "content" and "bad.json" in wrong.value.message


def test_absent_optional_files_change_nothing() -> None:
    assert with_running_arg(CLUSTER, None) is CLUSTER
    assert reservations_arg(None, CLUSTER) is None
    assert prices_arg(None) is None


def test_running_jobs_that_do_not_fit_are_content(tmp_path: Path) -> None:
    # GPU 8 of an 8-GPU node (indices 0-7) does not exist.
    f = tmp_path / "running.json"
    f.write_text(json.dumps([{"id": "r", "ext_ml_gpu_count": 1, "node": "dgx-h100", "gpus": [8]}]))
    with pytest.raises(InputError) as e:
        with_running_arg(CLUSTER, str(f))
    assert e.value.kind == "content" and e.value.message.startswith("running jobs do not fit the cluster")


def test_unopenable_job_file_is_usage(tmp_path: Path) -> None:
    from placer.solver.jobs.options import ReadOptions

    with pytest.raises(InputError) as e:
        jobs_arg([str(tmp_path / "jobs.json")], ReadOptions())
    assert (
        e.value.kind == "usage"
        and "cannot open jobs file" in e.value.message
        and "jobs.json" in e.value.message
    )


@pytest.mark.parametrize("what", ["queue config", "limits file", "reservations", "prices"])
def test_a_file_that_is_not_utf8_is_content_not_a_traceback(tmp_path: Path, what: str) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError) as e:
        _loaders(tmp_path)[what](str(f))
    assert e.value.kind == "content" and "not UTF-8" in e.value.message
