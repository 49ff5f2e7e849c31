"""Regression tests of the hardening round (issue "Hardening"): hostile numbers, disguised addresses,
writes that must not half-happen, browser-borne requests, escaped output. Each failed on main before it.

Hostile numbers are tried as *text* — the way a file or an HTTP body arrives — against every reader,
importer and configuration, through the one loader they share (``topology/safe_load.py``): the number
must be refused with a structured error naming the field, never read as infinity and never a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.solver.jobs import read_object, read_text
from placer.solver.jobs.errors import JobValidationError
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import load_queue_configs
from placer.solver.prices import load_prices
from placer.topology.build import build_cluster
from placer.topology.errors import TopologyError
from placer.topology.importers.quantity import parse_quantity
from placer.topology.load import inventory_from_input

REPO = Path(__file__).resolve().parents[2]


def load_cluster_text(text: str, source: str) -> Any:
    """A cluster from text, as ``placer cluster`` and the service read one."""
    return build_cluster(inventory_from_input(text, source=source), source=source)


#: Number literals as they appear in hostile JSON/YAML text, each beyond the one rule (finite, |x| <= 2^53).
HOSTILE_LITERALS = ["1e400", "-1e400", "1" + "0" * 400, "-" + "9" * 300, "9007199254740993", "1e300"]


OJS_TEXT = '{"id": "j", "type": "ml.train", "args": [], "ext_ml_gpu_count": 1, "ext_ml_memory_gb": NUMBER}'


def _ojs(number: str) -> str:
    return OJS_TEXT.replace("NUMBER", number)


def _inventory(number: str) -> str:
    return '{"nodes": [{"name": "n1", "cpu_cores": NUMBER, "memory_gb": 64}]}'.replace("NUMBER", number)


def _queue(number: str) -> str:
    return '{"queue": "q", "config": {"ml_limits": {"max_cost_per_hour": NUMBER}}}'.replace("NUMBER", number)


def _prices(number: str) -> str:
    return '{"budgets": {"tenants": {"a": NUMBER}}}'.replace("NUMBER", number)


def _workers(number: str) -> str:
    return '{"worker_id": "w", "capabilities": {"cpu_cores": 4, "memory_gb": NUMBER}}'.replace(
        "NUMBER", number
    )


def _jobs_refuse(text: str) -> list[str]:
    results = read_text(text, source="hostile.json")
    assert [r.ok for r in results] == [False]
    return [f"{e.path}: {e.message}" for e in results[0].errors]


def _cluster_refuses(text: str) -> str:
    with pytest.raises(TopologyError) as e:
        load_cluster_text(text, source="hostile.json")
    return str(e.value)


def _config_refuses(load: Any, text: str) -> str:
    with pytest.raises(JobValidationError) as e:
        load(text)
    return str(e.value)


@pytest.mark.parametrize("number", HOSTILE_LITERALS)
def test_hostile_numbers_are_refused_by_every_reader_naming_the_field(number: str) -> None:
    assert any("ext_ml_memory_gb" in m for m in _jobs_refuse(_ojs(number)))
    assert "nodes[0].cpu_cores" in _cluster_refuses(_inventory(number))
    assert "memory_gb" in _cluster_refuses(_workers(number))
    assert "max_cost_per_hour" in _config_refuses(
        lambda t: load_queue_configs(t, source="q.json"), _queue(number)
    )
    assert "tenants" in _config_refuses(lambda t: load_prices(t, source="p.json"), _prices(number))


#: Number literals beyond the one rule (finite, magnitude at most 2^53).
BEYOND_THE_RULE = st.one_of(
    st.integers().filter(lambda n: abs(n) > 2**53).map(str),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: abs(x) > 2**53).map(repr),
    st.integers(min_value=309, max_value=5000).map(lambda e: f"1e{e}"),
)
SSS = "<Job><JobId>s</JobId><Requested><Processors>NUMBER</Processors></Requested></Job>"
FLUX = (
    "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: s\n    with:\n"
    "      - type: core\n        count: NUMBER\ntasks:\n  - command: [a]\n    slot: s\n"
    "    count: {per_slot: 1}\nattributes: {system: {duration: 60}}\n"
)
SLURM = "NodeName=g1 CPUTot=NUMBER RealMemory=1000 State=IDLE"


@settings(max_examples=60, deadline=None)
@given(BEYOND_THE_RULE)
def test_text_formats_refuse_numbers_beyond_the_rule_naming_the_field(number: str) -> None:
    # SSS XML, Flux YAML and Slurm's Key=Value text do not go through the JSON loader's number check:
    # each reader applies the same rule itself (finite, magnitude at most 2^53).
    [sss] = read_text(SSS.replace("NUMBER", number), source="h.xml")
    assert not sss.ok and any("Processors" in f"{e.path} {e.message}" for e in sss.errors)
    [flux] = read_text(FLUX.replace("NUMBER", number), source="h.yaml")
    assert not flux.ok and any("count" in f"{e.path} {e.message}" for e in flux.errors)
    assert "CPUTot" in _cluster_refuses(SLURM.replace("NUMBER", number))


def test_text_formats_read_numbers_within_the_rule() -> None:
    [sss] = read_text(SSS.replace("NUMBER", "16"), source="ok.xml")
    assert sss.ok and sss.job is not None and sss.job.tasks[0].cpu_cores == 16
    [flux] = read_text(FLUX.replace("NUMBER", "4"), source="ok.yaml")
    assert flux.ok and flux.job is not None and flux.job.tasks[0].cpu_cores == 4
    assert load_cluster_text(SLURM.replace("NUMBER", "64"), source="ok.txt").nodes[0].cpu_cores == 64


def test_yaml_infinity_and_nan_are_refused_too() -> None:
    for value in (".inf", "-.inf", ".nan"):
        assert "cpu_cores" in _cluster_refuses(
            f"nodes:\n  - name: n1\n    cpu_cores: {value}\n    memory_gb: 4\n"
        )


@settings(max_examples=60, deadline=None)
@given(BEYOND_THE_RULE)
def test_any_number_beyond_the_rule_is_refused_never_read(number: str) -> None:
    # Every such literal, in a job and in an inventory: a structured refusal, never an accepted infinity.
    results = read_text(_ojs(number), source="hostile.json")
    assert [r.ok for r in results] == [False] and results[0].errors
    with pytest.raises(TopologyError):
        load_cluster_text(_inventory(number), source="hostile.json")


def test_numbers_within_the_rule_are_read_as_written() -> None:
    [r] = read_text(_ojs("2.5e3"), source="ok.json")
    assert r.ok and r.job is not None and r.job.tasks[0].memory_gb == 2500
    assert load_cluster_text(_inventory("96"), source="ok.json").nodes[0].cpu_cores == 96


def test_prices_are_bounded_where_the_model_sums_them() -> None:
    # A node price of 10^15 $/h overflowed CP-SAT's 64-bit coefficients (a traceback from `placer place`).
    text = '{"nodes": [{"name": "n1", "cpu_cores": 8, "memory_gb": 8, "price_per_hour": 1e15}]}'
    assert "price_per_hour" in _cluster_refuses(text)


def test_a_lone_surrogate_in_a_job_id_is_refused_not_printed() -> None:
    # '\ud800' cannot be written as UTF-8: the table printer crashed with UnicodeEncodeError.
    messages = _jobs_refuse('{"id": "a\\ud800b", "type": "t", "args": []}')
    assert any("id: a string holds a lone UTF-16 surrogate" in m for m in messages)


@pytest.mark.parametrize("quantity", ["\u0668", "\uff18", "1\u0660Gi", "\u0968"])
def test_kubernetes_quantities_take_ascii_digits_only(quantity: str) -> None:
    # Arabic-Indic, full-width and Devanagari digits were read as 8 GPUs; Kubernetes refuses them.
    with pytest.raises(ValueError):
        parse_quantity(quantity)


# -- addresses (OJS ML §15.2: validate to prevent SSRF) --------------------------------------------------

ENVELOPE = {"id": "u", "type": "ml.train", "args": []}
MODEL = "ext_ml_model_registry_uri"

METADATA_SPELLINGS = [
    "hdfs://2852039166/m/",  # decimal
    "hdfs://0xa9fea9fe/m/",  # hex
    "hdfs://0251.0376.0251.0376/m/",  # octal
    "hdfs://169.254.43518/m/",  # shortened
    "hdfs://0xa9.0xfe.0xa9.0xfe/m/",  # dotted hex
    "hdfs://[::ffff:169.254.169.254]/m/",  # IPv4-mapped IPv6
    "hdfs://[::ffff:a9fe:a9fe]/m/",
    "hdfs://169.254.169.254./m/",  # trailing dot
    "hdfs://%31%36%39.254.169.254/m/",  # percent-encoded
    "hdfs://127.1/m/",  # loopback, shortened
    "hdfs://2130706433/m/",  # loopback, decimal
    "hdfs://localhost./m/",
    "hdfs://[::1]/m/",
    "hdfs://0/m/",  # unspecified
    "hdfs://10.0.0.5/m/",  # private: refused unless allowed
    "hdfs://[fd12::1]/m/",
]


@pytest.mark.parametrize("uri", METADATA_SPELLINGS)
def test_every_spelling_of_an_internal_address_is_refused(uri: str) -> None:
    [r] = read_object({**ENVELOPE, MODEL: uri}, source="inline")
    assert (r.ok, [(e.code, e.path) for e in r.errors]) == (False, [("uri", MODEL)])


def test_private_hosts_are_allowed_when_the_operator_says_so() -> None:
    options = ReadOptions(private_hosts_allowed=True)
    [r] = read_object({**ENVELOPE, MODEL: "hdfs://10.0.0.5:8020/m/"}, source="inline", options=options)
    assert r.ok
    # Never the metadata service, whatever the setting.
    [r] = read_object({**ENVELOPE, MODEL: "hdfs://0xa9fea9fe/m/"}, source="inline", options=options)
    assert not r.ok


@pytest.mark.parametrize(
    "uri",
    ["file:///var/lib/kubelet/pods/", "file:///home/alice/.ssh/", "file:///data/.aws/", "file:///usr/lib/"],
)
def test_file_uris_cannot_reach_credentials_or_the_kubelet(uri: str) -> None:
    [r] = read_object({**ENVELOPE, "ext_ml_checkpoint_storage_uri": uri}, source="inline")
    assert not r.ok and r.errors[0].code == "uri"


# -- the CLI ------------------------------------------------------------------------------------------------


def _placer(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from placer.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO)


@pytest.mark.parametrize(("flag", "value"), [("--time-limit", "1e306"), ("--seed", "2147483648")])
def test_out_of_range_flags_are_usage_errors(flag: str, value: str) -> None:
    cluster, jobs = "examples/clusters/h100-training.yaml", "examples/jobs/batch.json"
    p = _placer("place", "--cluster", cluster, "--jobs", jobs, flag, value)
    assert p.returncode == 2 and "Traceback" not in p.stderr and value in p.stderr


def test_job_ids_cannot_forge_table_rows(tmp_path: Path) -> None:
    job = tmp_path / "evil.json"
    job.write_text(json.dumps({"id": "evil\nfake  greedy  n9\x1b[31m", "type": "t", "args": []}))
    p = _placer(
        "place", "--cluster", "examples/clusters/h100-training.yaml", "--jobs", str(job), "--engine", "greedy"
    )
    assert p.returncode == 0
    assert "\x1b" not in p.stdout and "\\x1b[31m" in p.stdout
    assert not any(line.startswith("fake") for line in p.stdout.splitlines())


# -- the service (in process) --------------------------------------------------------------------------------


@pytest.fixture
def client() -> Any:
    from fastapi.testclient import TestClient

    from placer.service.app import ServiceConfig, create_app

    with TestClient(
        create_app(ServiceConfig()), base_url="http://127.0.0.1", raise_server_exceptions=False
    ) as c:
        yield c


SMALL = {"nodes": [{"name": "n1", "cpu_cores": 8, "memory_gb": 32}]}
JSON = {"content-type": "application/json"}


def test_a_refused_upload_stores_nothing(client: Any) -> None:
    body = '{"cluster": {"nodes": [{"name": "n1", "cpu_cores": 1e400, "memory_gb": 32}]}}'
    r = client.put("/v1/clusters/c", content=body, headers=JSON)
    assert r.status_code == 422 and r.json()["error"]["errors"][0]["path"] == "cluster.nodes[0].cpu_cores"
    assert client.get("/v1/clusters/c").status_code == 404


def test_a_write_that_fails_after_validation_changes_nothing(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import placer.service.routes as routes

    assert client.put("/v1/clusters/c", json={"cluster": SMALL}).status_code == 201
    real = routes._view

    def broken(*a: Any, **k: Any) -> Any:
        raise RuntimeError("injected after validation")

    monkeypatch.setattr(routes, "_view", broken)
    assert client.put("/v1/clusters/c", json={"cluster": SMALL}).status_code == 500
    patch = {"changes": [{"op": "node_down", "node": "n1"}]}
    assert client.patch("/v1/clusters/c", json=patch).status_code == 500
    monkeypatch.setattr(routes, "_view", real)
    view = client.get("/v1/clusters/c").json()
    assert view["version"] == 1 and view["unavailable"] == []
    # The next write is version 2: the failed ones took no version.
    assert client.patch("/v1/clusters/c", json={**patch, "if_version": 1}).json()["version"] == 2


def test_a_foreign_host_header_is_refused(client: Any) -> None:
    # DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1.
    r = client.get("/v1/clusters", headers={"host": "evil.example"})
    assert r.status_code == 421 and r.json()["error"]["code"] == "misdirected_host"
    assert client.get("/healthz", headers={"host": "localhost:8080"}).status_code == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_bodies_must_say_they_are_json(client: Any, content_type: str | None) -> None:
    # A cross-site form posts text/plain or urlencoded without a CORS preflight.
    headers = {} if content_type is None else {"content-type": content_type}
    r = client.put("/v1/clusters/c", content=json.dumps({"cluster": SMALL}), headers=headers)
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
    assert client.get("/v1/clusters/c").status_code == 404


# -- tenants ------------------------------------------------------------------------------------------------

TOKENS = {"a" * 20: "team-a", "b" * 20: "team-b"}


@pytest.fixture
def tenants() -> Any:
    from fastapi.testclient import TestClient

    from placer.service.app import ServiceConfig, create_app

    app = create_app(ServiceConfig(tokens=TOKENS))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def _as(tenant: str) -> dict[str, str]:
    token = next(t for t, name in TOKENS.items() if name == tenant)
    return {"authorization": f"Bearer {token}"}


def test_requests_without_a_valid_token_are_refused(tenants: Any) -> None:
    assert tenants.get("/v1/clusters").status_code == 401
    assert tenants.get("/v1/clusters", headers={"authorization": "Bearer " + "c" * 20}).status_code == 401
    assert tenants.get("/healthz").status_code == 200  # health checks need no token


def test_a_tenant_cannot_see_or_touch_another_tenants_cluster(tenants: Any) -> None:
    assert tenants.put("/v1/clusters/c", json={"cluster": SMALL}, headers=_as("team-a")).status_code == 201
    assert tenants.get("/v1/clusters", headers=_as("team-a")).json()["clusters"] == ["c"]
    b = _as("team-b")
    assert tenants.get("/v1/clusters", headers=b).json()["clusters"] == []
    assert tenants.get("/v1/clusters/c", headers=b).status_code == 404
    assert tenants.delete("/v1/clusters/c", headers=b).status_code == 404
    assert tenants.patch("/v1/clusters/c", json={"changes": []}, headers=b).status_code == 404
    assert tenants.post("/v1/clusters/c/placements", json={"jobs": []}, headers=b).status_code == 404
    # team-b's own "c" is another cluster; team-a's is untouched.
    assert tenants.put("/v1/clusters/c", json={"cluster": SMALL}, headers=b).status_code == 201
    assert tenants.get("/v1/clusters/c", headers=_as("team-a")).json()["version"] == 1


def test_tokens_files_are_checked() -> None:
    from placer.service.guard import read_tokens

    with pytest.raises(ValueError, match="tokens:1"):
        read_tokens("team-a short\n")
    with pytest.raises(ValueError, match="given twice"):
        read_tokens(f"a {'x' * 20}\nb {'x' * 20}\n")


def test_bodies_in_flight_are_admitted_against_a_byte_budget() -> None:
    # Bodies are buffered before the solver pool's admission control; a byte budget bounds what clients
    # can make the server hold. A request that would pass it is refused before a byte is read.
    from fastapi.testclient import TestClient

    from placer.service.app import ServiceConfig, create_app

    app = create_app(ServiceConfig(max_bytes_in_flight=1000))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        big = json.dumps({"cluster": SMALL, "pad": "x" * 2000})
        r = c.put("/v1/clusters/c", content=big, headers=JSON)
        assert r.status_code == 503 and r.json()["error"]["code"] == "busy"
        assert c.put("/v1/clusters/c", json={"cluster": SMALL}).status_code == 201  # small ones still pass
