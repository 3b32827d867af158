"""Where an array is stored: a local path, or an S3 location (``s3://bucket/prefix`` at an endpoint).

Credentials never reach a record, a log or the book. For a user's endpoint (AWS, Ceph, a user's own MinIO)
they come from the standard AWS environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, a profile...) of the process that writes or reads, as every AWS-compatible client
expects. For the versitygw this project starts (``servers.versitygw``) they are that server's and nothing else: its
clients run in processes whose AWS variables are exactly the server's (:func:`environ_with_aws`, nothing of
the user's inherited), or get them in their configuration (:attr:`S3Target.credentials`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from benchmarks_lib.base.redact import redact
from benchmarks_lib.base.specs import SpecError

#: S3 bucket names: 3-63 lower-case letters, digits, dots and hyphens, starting and ending alphanumeric
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_ENDPOINT = re.compile(r"^https?://[A-Za-z0-9_.\-\[\]:]+(:\d{1,5})?/?$")


@dataclass(frozen=True)
class S3Target:
    """``s3://bucket/prefix`` at ``endpoint`` (None: AWS) in ``region``; a store lives under the prefix.

    ``credentials`` (``access_key_id``, ``secret_access_key``) are given to the clients an adapter makes for it
    instead of the AWS environment's; they are never shown (no repr) nor compared. Each client's own
    configuration for a target is built in ``adapters/`` by the adapter that owns the client (obstore's store in
    ``adapters.obstore_s3``, the tensorstore adapter's ``kvstore``, the zarr-fsspec reader's ``s3_options``): this
    module only says where data lives."""

    bucket: str
    prefix: str = ""
    endpoint: str | None = None
    region: str = "us-east-1"
    credentials: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def child(self, name: str) -> S3Target:
        """The location ``name`` under this prefix."""
        return replace(self, prefix=f"{self.prefix.rstrip('/')}/{name}".lstrip("/"))


def credentials() -> dict[str, str]:
    """The credentials of the standard AWS variables (those that are set), named as ``S3Target.credentials``
    names them (and ``token``)."""
    names = {"AWS_ACCESS_KEY_ID": "access_key_id", "AWS_SECRET_ACCESS_KEY": "secret_access_key",
             "AWS_SESSION_TOKEN": "token"}
    return {key: os.environ[var] for var, key in names.items() if os.environ.get(var)}


def without_aws(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's environment) without any ``AWS_*`` variable: no key, token, profile,
    config or credentials file, role or CA bundle of the user's."""
    return {k: v for k, v in (os.environ if environ is None else environ).items() if not k.startswith("AWS_")}


def environ_with_aws(aws: Mapping[str, str]) -> dict[str, str]:
    """The environment of a child process that talks to a server of ours: this process's, its AWS variables
    replaced by exactly ``aws`` (that server's)."""
    return without_aws() | dict(aws)


def is_s3(location: object) -> bool:
    return isinstance(location, str) and location.startswith("s3://")


def from_environment(url: str) -> S3Target:
    """An ``s3://`` URL at the endpoint and region the standard AWS variables name (``AWS_ENDPOINT_URL``,
    ``AWS_REGION`` or ``AWS_DEFAULT_REGION``; AWS itself when no endpoint is set)."""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return parse_s3(url, os.environ.get("AWS_ENDPOINT_URL") or None, region)


def parse_s3(value: object, endpoint: object = None, region: object = "us-east-1") -> S3Target:
    """``s3://bucket[/prefix]`` (and an ``http(s)://host:port`` endpoint, None for AWS); a one-line error otherwise."""
    text = value.strip() if isinstance(value, str) else ""
    match = re.fullmatch(r"s3://([^/]+)/?(.*)", text)
    if not match or not _BUCKET.match(match.group(1)):
        raise SpecError(f"S3 target {redact(repr(value))} must be s3://bucket[/prefix] (bucket: 3-63 lower-case "
                        "letters, digits, dots or hyphens)")
    prefix = match.group(2).strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise SpecError(f"S3 target {redact(repr(value))}: the prefix may not hold empty, '.' or '..' parts")
    if endpoint is not None and not (isinstance(endpoint, str) and _ENDPOINT.match(endpoint)):
        raise SpecError(f"S3 endpoint {redact(repr(endpoint))} must be http(s)://host[:port] (credentials come from "
                        "the AWS environment, never the URL), e.g. http://127.0.0.1:9000")
    if not isinstance(region, str) or not re.fullmatch(r"[a-z0-9\-]{2,32}", region):
        raise SpecError(f"S3 region {region!r} must be a region name such as us-east-1")
    return S3Target(match.group(1), prefix, endpoint.rstrip("/") if isinstance(endpoint, str) else None, region)


__all__ = ["S3Target", "credentials", "environ_with_aws", "from_environment", "is_s3", "parse_s3", "without_aws"]
