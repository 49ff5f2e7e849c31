"""Shared test fixtures: where the specs and traces live, and the hypothesis profiles.

The specifications and traces are read from ``../shared`` beside the repository (as CI lays it out), or
from ``$PLACER_SHARED``; they are never copied into the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PLACER_SHARED", REPO.parent / "shared"))
SPECS = SHARED / "specs"
TRACES = SHARED / "traces"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "nightly", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def specs_dir() -> Path:
    """``shared/specs``; fails loudly (not a skip) when missing, because the spec tests are the point."""
    if not SPECS.is_dir():
        pytest.fail(f"specifications not found at {SPECS}; set PLACER_SHARED to the shared/ folder")
    return SPECS


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    if not TRACES.is_dir():
        pytest.fail(f"traces not found at {TRACES}; set PLACER_SHARED to the shared/ folder")
    return TRACES
