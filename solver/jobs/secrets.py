"""Credentials in an OJS envelope: OJS ML extensions §12.4, "Credentials MUST NOT appear in job envelope
attributes".

Why a scan of every attribute and not only URIs: a token pasted into ``args``, a hyperparameter map or
``meta`` leaks as surely as one in a storage URI (``uris.py`` refuses those: ``user:password@``, secret
query parameters). Every string of the envelope, at any depth, is matched against forms that are
credentials and nothing else, so a job is never refused for a word that merely sounds secret:

* provider keys and tokens by their published shapes: AWS access key ids (``AKIA``/``ASIA`` + 16),
  Google API keys (``AIza`` + 35), GitHub (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``,
  ``github_pat_``), Hugging Face (``hf_`` + 30 or more), Slack (``xoxb-``...), OpenAI-style ``sk-`` keys,
  JSON Web Tokens, ``Bearer`` tokens, PEM private keys;
* an environment variable that is a credential by its name (``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``,
  ``WANDB_API_KEY``, ...; :data:`SECRET_VARIABLES`) given a value: ``NAME=value`` in a string (``args``),
  or an object key of that name whose value is a non-empty string.

The job is refused with code ``secret`` at the attribute's path; the message names the kind, never the
value (an error log must not become the leak).

>>> [(p, k) for p, k in find_secrets({"args": ["--token", "hf_" + "a" * 34]})]
[('args[1]', 'a Hugging Face token')]
>>> list(find_secrets({"args": ["train.py", "--tokenizer", "gpt2"], "meta": {"token_budget": "4096"}}))
[]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["SECRET_VARIABLES", "find_secrets"]

#: Environment variables whose value is a credential (their names as the tools that read them spell them).
SECRET_VARIABLES = frozenset(
    {
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AZURE_CLIENT_SECRET",
        "AZURE_STORAGE_KEY",
        "AZURE_STORAGE_SAS_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HUGGINGFACE_TOKEN",
        "WANDB_API_KEY",
        "MLFLOW_TRACKING_PASSWORD",
        "MLFLOW_TRACKING_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "NGC_API_KEY",
        "DOCKER_PASSWORD",
    }
)

_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("an AWS access key id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("a Google API key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    (
        "a GitHub token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ),
    ("a Hugging Face token", re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])")),
    ("a Slack token", re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}")),
    ("a secret API key (sk-...)", re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}")),
    ("a JSON Web Token", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*")),
]
_ASSIGNED = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(SECRET_VARIABLES)) + r")=(\S+)")


def find_secrets(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, kind) of every credential in ``value`` (an envelope, or any part of one), in document
    order; paths as the readers write them (``args[1]``, ``meta.env.HF_TOKEN``)."""
    if isinstance(value, str):
        kind = _kind(value)
        if kind is not None:
            yield path or "envelope", kind
    elif isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and key in SECRET_VARIABLES and isinstance(item, str) and item.strip():
                yield sub, f"the credential {key}"
                continue
            yield from find_secrets(item, sub)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from find_secrets(item, f"{path}[{i}]")


def _kind(text: str) -> str | None:
    """The kind of credential ``text`` holds, or None."""
    if len(text) < 8:
        return None
    for kind, shape in _SHAPES:
        if shape.search(text):
            return kind
    m = _ASSIGNED.search(text)
    if m is not None:
        return f"the credential {m.group(1)}"
    return None
