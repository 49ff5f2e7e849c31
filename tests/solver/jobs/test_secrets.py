"""OJS ML extensions §12.4: "Credentials MUST NOT appear in job envelope attributes" — every string of an
OJS envelope is scanned (``solver/jobs/secrets.py``); a job holding one is refused with code ``secret`` at
the attribute's path, and the message never repeats the credential. The tokens below are made up in the
published shapes, not real ones."""

from __future__ import annotations

import pytest

from placer.solver.jobs.load import read_object
from placer.solver.jobs.secrets import find_secrets

FAKE = {
    "aws": "AKIA" + "ABCDEFGHIJ234567",
    "google": "AIza" + "Sy" + "A" * 33,
    "github": "ghp_" + "a1B2" * 9,
    "github_pat": "github_pat_" + "11AB" * 10 + "_x",
    "hf": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "slack": "xoxb-" + "1234567890-abcdef",
    "openai": "sk-proj-" + "Ab3" * 12,
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
}


@pytest.mark.parametrize(
    ("where", "kind"),
    [
        ({"args": ["--key", FAKE["aws"]]}, "an AWS access key id"),
        ({"args": [f"--api-key={FAKE['google']}"]}, "a Google API key"),
        ({"meta": {"note": f"clone with {FAKE['github']}"}}, "a GitHub token"),
        ({"meta": {"note": FAKE["github_pat"]}}, "a GitHub token"),
        ({"ext_mlx_hyperparameters": {"hub": FAKE["hf"]}}, "a Hugging Face token"),
        ({"args": [FAKE["slack"]]}, "a Slack token"),
        ({"args": ["--openai", FAKE["openai"]]}, "a secret API key (sk-...)"),
        ({"meta": {"auth": f"Bearer {FAKE['jwt']}"}}, "a JSON Web Token"),
        ({"meta": {"auth": "Bearer abcdefghijklmnopqrstuvwxyz0123"}}, "a bearer token"),
        ({"meta": {"sa": {"private_key": FAKE["pem"]}}}, "a PEM private key"),
        (
            {"args": ["env", "WANDB_API_KEY=0123456789abcdef", "python", "train.py"]},
            "the credential WANDB_API_KEY",
        ),
        ({"meta": {"env": {"HF_TOKEN": "anything at all"}}}, "the credential HF_TOKEN"),
    ],
)
def test_a_credential_anywhere_in_the_envelope_refuses_the_job(where: dict, kind: str) -> None:  # type: ignore[type-arg]
    env = {"id": "j", "type": "train", "queue": "q", "ext_ml_gpu_count": 1, **where}
    [r] = read_object(env)
    assert not r.ok and r.job is None
    secrets = [e for e in r.errors if e.code == "secret"]
    (e,) = secrets
    assert kind in e.message and "§12.4" in e.message
    # The path names the attribute; the message never repeats the credential.
    assert e.path.split(".")[0].split("[")[0] in where
    for value in FAKE.values():
        assert value not in e.message


@pytest.mark.parametrize(
    "benign",
    [
        {"args": ["train.py", "--tokenizer", "gpt2", "--max-tokens", "4096"]},
        {
            "meta": {
                "token_budget": "4096",
                "secret_name": "hf-credentials",
                "password_file": "/run/secrets/pw",
            }
        },
        {"ext_ml_model_registry_uri": "hf://meta-llama/Llama-3.1-70B-Instruct@main"},
        {"ext_ml_model_checksum": "sha256:" + "ab" * 32},
        {"args": ["--lib", "sk-learn", "--bearer-timeout", "30"]},
        {"meta": {"env": {"HF_TOKEN": ""}}},
        {"meta": {"commit": "9fceb02d0ae598e95dc970b74767f19372d61af8"}},
    ],
)
def test_words_that_only_sound_secret_are_not_refused(benign: dict) -> None:  # type: ignore[type-arg]
    assert list(find_secrets(benign)) == []
    [r] = read_object({"id": "j", "type": "train", "queue": "q", **benign})
    assert not [e for e in r.errors if e.code == "secret"]


def test_every_credential_is_named_at_its_own_path() -> None:
    env = {"args": ["x", FAKE["aws"]], "meta": {"env": {"GITHUB_TOKEN": "t", "PATH": "/usr/bin"}}}
    assert list(find_secrets(env)) == [
        ("args[1]", "an AWS access key id"),
        ("meta.env.GITHUB_TOKEN", "the credential GITHUB_TOKEN"),
    ]
