"""Reading a sweep file: the :class:`~placer.scenarios.sweep.spec.SweepSpec`, every scenario it names, and
every
merged scenario (scenario, variant, policy, overrides) validated as a whole — each problem one
``{code, path, message}`` issue of a :class:`SweepError`, never a traceback, and all of them before any
cell runs.

Why merged scenarios are checked here and not in the cells: a variant's cluster may be fine for one
scenario and clash with another (a TPU workload on a GPU cluster); finding that after an hour of
simulation, as an error row, wastes the hour. Issues name the sweep field that caused them
(``variants.big.cluster.layout``, ``policies.cpsat.time_limit_s``), or ``scenarios[i].<field>`` for a
problem of the scenario file itself.

>>> import tempfile
>>> scenario = "name: s\\nhorizon: 1h\\ncluster: {layout: S}\\nworkload: {jobs: []}\\n"
>>> sweep = "name: w\\nscenarios: [s.yaml]\\nseeds: [0]\\nvariants: {xl: {cluster: {layout: XL}}}"
>>> with tempfile.TemporaryDirectory() as d:
...     _ = (Path(d) / "s.yaml").write_text(scenario)
...     try:
...         load_sweep_text(sweep, base=Path(d))
...     except SweepError as e:
...         print(e.issues[0].path)
variants.xl.cluster.layout
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from placer.scenarios.load import (
    ScenarioError,
    issues_of,
    load_scenario,
    parse_document,
    read_document,
    resolve,
)
from placer.scenarios.spec import ScenarioSpec
from placer.scenarios.sweep.spec import Overrides, SweepSpec
from placer.solver.jobs.errors import Issue

__all__ = [
    "BASE_VARIANT",
    "OWN_POLICY",
    "Sweep",
    "SweepError",
    "check",
    "load_sweep",
    "load_sweep_text",
    "merge",
]

#: Name of the variant (resp. policy) of a sweep without ``variants`` (resp. ``policies``).
BASE_VARIANT = "base"
OWN_POLICY = "scenario"


class SweepError(ScenarioError):
    """A sweep that cannot run: every problem of the sweep file, its scenarios and their merges."""


@dataclass(frozen=True)
class Sweep:
    """A checked sweep: the file, its scenarios, and the merged scenario of every (scenario, variant,
    policy) — the grid's cells only add the seed."""

    spec: SweepSpec
    folder: Path | None  # the sweep file's folder: scenario paths start there
    files: list[str]  # as the sweep file names them
    scenarios: list[ScenarioSpec]
    merged: dict[tuple[int, str, str], ScenarioSpec] = field(default_factory=dict)

    @property
    def variants(self) -> list[str]:
        return list(self.spec.variants) or [BASE_VARIANT]

    @property
    def policies(self) -> list[str]:
        return list(self.spec.policies) or [OWN_POLICY]

    def base(self, i: int) -> Path:
        """The folder the paths inside scenario ``i`` start from (its file's folder)."""
        return resolve(self.files[i], self.folder).parent


def merge(
    scenario: ScenarioSpec, variant: dict[str, Any], policy: dict[str, Any], overrides: Overrides
) -> ScenarioSpec:
    """``scenario`` with the ``variant``'s top-level fields replaced, ``policy`` merged over its policy
    block, then ``overrides`` (horizon, interval); :class:`ScenarioError` (paths of the scenario) if the
    result is not a valid scenario.

    >>> from placer.scenarios.load import load_scenario_text
    >>> s = load_scenario_text("name: s\\nhorizon: 1d\\ncluster: {layout: S}\\nworkload: {jobs: []}\\n"
    ...                        "policy: {engine: cpsat, plan: false}")
    >>> m = merge(s, {"cluster": {"layout": "M"}}, {"engine": "greedy"}, Overrides(horizon=3600))
    >>> m.cluster.layout, m.policy.engine, m.policy.plan, m.horizon
    ('M', 'greedy', False, 3600.0)
    """
    doc = scenario.model_dump(by_alias=True, exclude_unset=True)
    doc.update(variant)
    doc["policy"] = {**doc.get("policy", {}), **policy}
    doc.update(overrides.model_dump(exclude_none=True))
    try:
        return ScenarioSpec.model_validate(doc)
    except ValidationError as e:
        raise ScenarioError(issues_of(e)) from None


def _origin(path: str, variant: str, vkeys: set[str], policy: str, pkeys: set[str], okeys: set[str]) -> str:
    """The sweep field a merged scenario's issue at ``path`` comes from, or ``""`` (the scenario's own)."""
    parts = path.replace("[", ".[").split(".")
    top = parts[0]
    if top == "scenario":  # the whole scenario: horizon / interval together (too many intervals)
        if okeys:
            return "overrides"
        return f"variants.{variant}" if vkeys & {"horizon", "interval"} else ""
    if top in okeys:
        return f"overrides.{path}"
    if top in vkeys:
        return f"variants.{variant}.{path}"
    if top == "policy" and len(parts) > 1 and parts[1] in pkeys:
        return f"policies.{policy}.{path.removeprefix('policy.')}"
    return ""


def _merged_issues(
    sweep: SweepSpec, i: int, file: str, scenario: ScenarioSpec, merged: dict[tuple[int, str, str], Any]
) -> list[Issue]:
    """Merge scenario ``i`` with every variant and policy into ``merged``; the issues of those that fail."""
    variants = {k: v.model_dump(by_alias=True, exclude_unset=True) for k, v in sweep.variants.items()}
    policies = {k: p.model_dump(exclude_unset=True) for k, p in sweep.policies.items()}
    okeys = set(sweep.overrides.model_dump(exclude_none=True))
    issues: list[Issue] = []
    for vname, vdoc in (variants or {BASE_VARIANT: {}}).items():
        for pname, pdoc in (policies or {OWN_POLICY: {}}).items():
            try:
                merged[(i, vname, pname)] = merge(scenario, vdoc, pdoc, sweep.overrides)
            except ScenarioError as e:
                for issue in e.issues:
                    where = _origin(issue.path, vname, set(vdoc), pname, set(pdoc), okeys)
                    path = where or _scenario_path(i, issue.path)
                    message = f"{issue.message} (scenario {file}, variant {vname}, policy {pname})"
                    issues.append(Issue(code=issue.code, path=path, message=message))
    return issues


def _scenario_path(i: int, inner: str) -> str:
    return f"scenarios[{i}]" + ("" if inner == "scenario" else f".{inner}")


def check(spec: SweepSpec, folder: Path | None, source: str = "sweep") -> Sweep:
    """Read every scenario of ``spec`` (relative to ``folder``) and merge it with every variant and
    policy; :class:`SweepError` with all the problems found."""
    issues: list[Issue] = []
    scenarios: list[ScenarioSpec] = []
    merged: dict[tuple[int, str, str], ScenarioSpec] = {}
    seen: dict[str, int] = {}
    for i, file in enumerate(spec.scenarios):
        path = resolve(file, folder)
        try:
            scenario = load_scenario(path)
        except OSError as e:
            issues.append(
                Issue(
                    code="required", path=f"scenarios[{i}]", message=f"cannot open {path}: {e.strerror or e}"
                )
            )
            continue
        except ScenarioError as e:
            issues += [
                Issue(code=x.code, path=_scenario_path(i, x.path), message=f"{x.message} (in {file})")
                for x in e.issues
            ]
            continue
        if scenario.name in seen:
            message = f"scenario name {scenario.name!r} is also the name of scenarios[{seen[scenario.name]}]"
            issues.append(Issue(code="duplicate", path=f"scenarios[{i}]", message=message))
        seen.setdefault(scenario.name, i)
        scenarios.append(scenario)
        issues += _merged_issues(spec, i, file, scenario, merged)
    if issues:
        raise SweepError(issues, source)
    return Sweep(spec=spec, folder=folder, files=list(spec.scenarios), scenarios=scenarios, merged=merged)


def load_sweep_text(text: str, *, base: Path | None, source: str = "sweep") -> Sweep:
    """A checked sweep from YAML or JSON text; scenario paths start from folder ``base``."""
    spec = parse_document(text, SweepSpec, source=source, what="sweep", error=SweepError)
    return check(spec, base, source)


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """A checked sweep from a file. ``OSError`` when the sweep file itself cannot be opened (a usage
    error for the CLI); :class:`SweepError` for everything else."""
    p = Path(path)
    return load_sweep_text(read_document(p, what="sweep", error=SweepError), base=p.parent, source=str(p))
