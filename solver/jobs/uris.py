"""Checking URIs that job producers put in envelopes: checkpoint storage, model registries, artifacts.

Why a module of its own: a URI in a job is an instruction a worker will follow (write checkpoints there,
download a model from there). OJS ML resources §15.2 ("model storage URIs MUST be validated to prevent
path traversal and SSRF"), §15.3 (checkpoint URIs against an allow-list of prefixes), §9.4 (schemes and a
REQUIRED trailing slash) and ML extensions §12.1/§12.4 (allowed schemes, no arbitrary file-system access,
no credentials in envelopes) all land here, and every format's guard uses the same rules.

The rules, in order (the first failing rule is reported):

1. a string without whitespace or control characters, at most :data:`MAX_URI_CHARS` characters;
2. ``scheme://...`` with a scheme from the allowed set, compared case-insensitively (RFC 3986 §3.1:
   ``S3://`` is ``s3://``);
3. no credentials: no ``user@``/``user:password@`` part and no query parameter whose name looks like a
   secret (``token``, ``password``, ``signature``, ``X-Amz-Credential``, ...);
4. no ``..`` path segment, also after percent-decoding (up to three rounds, so ``%252e%252e`` and
   ``a%2f..%2fb`` are caught); backslashes count as segment separators;
5. no host that is a cloud metadata service, loopback, link-local, multicast or reserved address — in any
   spelling resolvers accept (decimal, hex, octal, shortened IPv4, IPv4-mapped IPv6, trailing dot,
   percent-encoding) — nor, unless the operator allows it, a private address (SSRF, OJS ML §15.2);
6. ``file://`` only as ``file:///absolute/path`` (empty or ``localhost`` host), normalized, never below system
   directories (``/etc``, ``/proc``, ``/sys``, ``/dev``, ``/boot``, ``/root``, ``/run``, ``/var/run``):
   the "no arbitrary file system access" of extensions §12.1;
7. no ``#fragment``: a fragment is never sent to the storage service (RFC 3986 §3.5), so it names no
   object, and after it "ends with a slash" would be about the fragment, not the location;
8. a trailing slash when the caller requires one (checkpoint storage, §9.4);
9. when ``allowed_prefixes`` is non-empty, the URI starts with one of them (§15.3, extensions §12.1); the
   scheme of both is compared case-insensitively, the rest exactly.

>>> check_uri("s3://checkpoints/run-1/", schemes={"s3"}, require_trailing_slash=True) is None
True
>>> check_uri("s3://bucket/../etc/", schemes={"s3"})
'must not contain ".." path segments (path traversal)'
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

__all__ = [
    "FORBIDDEN_FILE_ROOTS",
    "FORBIDDEN_FILE_SEGMENTS",
    "MAX_URI_CHARS",
    "METADATA_HOSTS",
    "canonical_host",
    "check_uri",
    "ipv4_aton",
    "outside_prefixes",
]

#: Longest URI accepted (a guard against pathological inputs, well above any real object-store key).
MAX_URI_CHARS = 4096

#: Directories a ``file://`` URI may never point into.
FORBIDDEN_FILE_ROOTS: tuple[str, ...] = (
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/root",
    "/run",
    "/var/run",
    "/var/lib/kubelet",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/log",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
)
#: Directory names that hold credentials wherever they are (``/home/alice/.ssh``, ``/data/.aws``).
FORBIDDEN_FILE_SEGMENTS: frozenset[str] = frozenset(
    {
        ".ssh",
        ".aws",
        ".kube",
        ".gnupg",
        ".docker",
        ".azure",
        ".netrc",
        ".git-credentials",
        "gcloud",
        "secrets",
    }
)

#: Query parameter names (lower case, compared after removing ``-`` and ``_``) that carry secrets.
_SECRET_PARAMS = re.compile(
    r"^(xamz(credential|signature|securitytoken)|token|accesstoken|apikey|secret|secretkey|accesskey|"
    r"password|passwd|pwd|sig|signature|sastoken|credential|credentials|authorization)$"
)

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f]")


#: Host names of cloud instance-metadata services (SSRF targets, OJS ML §15.2).
METADATA_HOSTS = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "instance-data"})
#: AWS's IPv6 instance-metadata block.
_IMDS_V6 = ipaddress.ip_network("fd00:ec2::/32")


def ipv4_aton(name: str) -> ipaddress.IPv4Address | None:
    """``name`` read as an IPv4 address the way ``inet_aton`` (and so every common resolver and HTTP
    client) reads it: 1 to 4 dot-separated parts, each decimal, ``0x`` hex or ``0``-led octal, the last
    part filling the remaining bytes. ``2852039166``, ``0xa9fea9fe``, ``0251.0376.0251.0376`` and
    ``169.254.43518`` are all ``169.254.169.254``; ``127.1`` is ``127.0.0.1``. None when it is not one.

    >>> spellings = ("2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "127.1")
    >>> [str(ipv4_aton(h)) for h in spellings]
    ['169.254.169.254', '169.254.169.254', '169.254.169.254', '169.254.169.254', '127.0.0.1']
    >>> ipv4_aton("bucket.example.com") is None, ipv4_aton("1.2.3.4.5") is None
    (True, True)
    """
    parts = name.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        if not part.isascii() or not part:
            return None
        try:
            if part.lower().startswith("0x"):
                v = int(part[2:] or "0", 16)
            elif len(part) > 1 and part.startswith("0"):
                v = int(part, 8)
            else:
                v = int(part, 10)
        except ValueError:
            return None
        values.append(v)
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = number * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(number)


def canonical_host(host: str) -> str | ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The host a URI really names: percent-decoded, lower case, without brackets, zone id or trailing
    dots; an IP address (every IPv4 spelling of :func:`ipv4_aton`, IPv4-mapped and -compatible IPv6 as
    their IPv4 address) as an address object, anything else as the cleaned name."""
    name = unquote(host).strip().strip("[]").lower().rstrip(".")
    name = name.split("%", 1)[0]  # an IPv6 zone id (fe80::1%eth0)
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(name)
    except ValueError:
        v4 = ipv4_aton(name)
        return name if v4 is None else v4
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        packed = ip.packed
        if packed[:12] == bytes(12) and int(ip) > 1:  # IPv4-compatible ::a.b.c.d (deprecated, still routed)
            return ipaddress.IPv4Address(packed[12:])
    return ip


def _internal_host(host: str, private_ok: bool = False) -> str | None:
    """Why ``host`` is refused as an SSRF target (OJS ML §15.2: "MUST be validated to prevent … SSRF"),
    judged on its canonical form (:func:`canonical_host`: decimal, hex, octal and short IPv4 forms,
    IPv4-mapped IPv6, trailing dots, percent-encoding): cloud metadata services by name, loopback,
    link-local (169.254.0.0/16, fe80::/10, where metadata services live), unspecified, multicast and
    reserved addresses, and — unless ``private_ok`` (``ReadOptions.private_hosts_allowed``, for
    on-premises HDFS or MLflow) — private ranges (10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10)."""
    where = canonical_host(host)
    if isinstance(where, str):
        if where in METADATA_HOSTS or where == "localhost" or where.endswith(".localhost"):
            return f"host {host!r} is a metadata or local service, refused (SSRF, OJS ML §15.2)"
        return None
    if (
        where.is_loopback
        or where.is_link_local
        or where.is_unspecified
        or where.is_multicast
        or where.is_reserved
        or where in _IMDS_V6
    ):
        return (
            f"host {host!r} ({where}) is a loopback, link-local or metadata address, refused "
            "(SSRF, OJS ML §15.2)"
        )
    if not private_ok and (where.is_private or where in _SHARED):
        return (
            f"host {host!r} ({where}) is a private address, refused unless the operator allows private "
            "hosts (ReadOptions.private_hosts_allowed; SSRF, OJS ML §15.2)"
        )
    return None


#: RFC 6598 shared address space (carrier-grade NAT), not "private" to ``ipaddress`` but not public.
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def _decoded_forms(text: str) -> list[str]:
    """``text`` and its percent-decodings, until stable (three rounds at most)."""
    forms = [text]
    for _ in range(3):
        nxt = unquote(forms[-1])
        if nxt == forms[-1]:
            break
        forms.append(nxt)
    return forms


def _traversal(path: str) -> str | None:
    for form in _decoded_forms(path):
        if any(seg == ".." for seg in re.split(r"[/\\]", form)):
            return 'must not contain ".." path segments (path traversal)'
    return None


def _credentials(netloc: str, query: str) -> str | None:
    if "@" in netloc:
        return "must not embed credentials (user@ or user:password@); use IAM roles or workload identity"
    for part in query.split("&"):
        name = unquote(part.split("=", 1)[0]).lower().replace("-", "").replace("_", "")
        if name and _SECRET_PARAMS.match(name):
            return f"must not carry credentials in the query (parameter {part.split('=', 1)[0]!r})"
    return None


def check_uri(
    uri: str,
    *,
    schemes: Iterable[str],
    require_trailing_slash: bool = False,
    allowed_prefixes: Iterable[str] = (),
    private_ok: bool = False,
) -> str | None:
    """Return why ``uri`` is refused, or None when it is acceptable (rules in the module docstring).

    >>> check_uri("file://relative/x/", schemes={"file"})
    'file:// URIs must be absolute (file:///path)'
    >>> check_uri("gs://b/ckpt", schemes={"gs"}, require_trailing_slash=True)
    'must end with "/" (a directory prefix, OJS ML §9.4)'
    >>> check_uri("s3://key:secret@bucket/m/", schemes={"s3"})
    'must not embed credentials (user@ or user:password@); use IAM roles or workload identity'
    >>> check_uri("S3://b/x/", schemes={"s3"}, require_trailing_slash=True) is None
    True
    >>> check_uri("s3://b/x/#frag", schemes={"s3"}, require_trailing_slash=True)
    'must not contain a #fragment (it is not part of the storage location, RFC 3986 §3.5)'
    """
    if not isinstance(uri, str):
        return "must be a string"
    if not uri or len(uri) > MAX_URI_CHARS:
        return f"must be 1 to {MAX_URI_CHARS} characters"
    if _BAD_CHARS.search(uri):
        return "must not contain whitespace or control characters"
    allowed = {s.lower() for s in schemes}
    m = _SCHEME.match(uri)
    if m is None or not uri[m.end() :].startswith("//"):
        return f"must be an absolute URI scheme://...; allowed schemes: {', '.join(sorted(allowed))}"
    scheme = m.group(1).lower()
    if scheme not in allowed:
        return f"scheme {scheme!r} is not allowed; allowed schemes: {', '.join(sorted(allowed))}"
    try:
        parts = urlsplit(uri)
    except ValueError as e:  # e.g. an unbalanced "[" in the host
        return f"is not a valid URI: {e}"
    problem = _credentials(parts.netloc, parts.query)
    if problem:
        return problem
    problem = _traversal(parts.path) or _traversal(parts.netloc)
    if problem:
        return problem
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            return "file:// URIs must be absolute (file:///path)"
        # Compare the path as the file system would resolve it: decoded, "." and "//" collapsed.
        decoded = posixpath.normpath("/" + _decoded_forms(parts.path)[-1].lstrip("/")).rstrip("/") + "/"
        for root in FORBIDDEN_FILE_ROOTS:
            if decoded.startswith(root + "/"):
                return f"file:// URIs must not point into the system directory {root}"
        secret = next((seg for seg in decoded.split("/") if seg in FORBIDDEN_FILE_SEGMENTS), None)
        if secret is not None:
            return f"file:// URIs must not point into a credentials directory ({secret})"
    elif not parts.netloc:
        return "must name a bucket, container or host after scheme://"
    else:
        problem = _internal_host(_host_of(parts.netloc), private_ok)
        if problem:
            return problem
    if "#" in uri:
        return "must not contain a #fragment (it is not part of the storage location, RFC 3986 §3.5)"
    if require_trailing_slash and not uri.endswith("/"):
        return 'must end with "/" (a directory prefix, OJS ML §9.4)'
    prefixes = tuple(allowed_prefixes)
    if prefixes and outside_prefixes(uri, prefixes):
        return "is outside the allowed storage prefixes: " + ", ".join(prefixes)
    return None


def outside_prefixes(uri: str, prefixes: Iterable[str]) -> bool:
    """Whether ``uri`` starts with none of ``prefixes`` (schemes compared case-insensitively, as
    :func:`check_uri` compares ``allowed_prefixes``).

    >>> outside_prefixes("S3://train/ckpt/", ["s3://train/"]), outside_prefixes("s3://other/", ["s3://train/"])
    (False, True)
    """
    return not _scheme_lowered(uri).startswith(tuple(_scheme_lowered(p) for p in prefixes))


def _host_of(netloc: str) -> str:
    """The host part of ``netloc`` as written (``urlsplit().hostname`` would lower-case and drop too
    much to report; credentials are refused earlier): without a port."""
    host = netloc.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _scheme_lowered(uri: str) -> str:
    """``uri`` with its scheme in lower case (the only part RFC 3986 makes case-insensitive for all
    schemes; hosts are too, but bucket names are not for every store, so the rest is compared as is)."""
    m = _SCHEME.match(uri)
    return uri if m is None else m.group(1).lower() + uri[m.end(1) :]
