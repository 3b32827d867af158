"""Where an array is stored: a local path, or an S3 location (``s3://bucket/prefix`` at an endpoint).

Credentials never reach a record, a log or the book. For a user's endpoint (AWS, Ceph, a user's own MinIO)
they come from the standard AWS environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, a profile...) of the process that writes or reads, as every AWS-compatible client
expects. For the MinIO this project starts (``servers.minio``) they are that server's and nothing else: its
clients run in processes whose AWS variables are exactly the server's (:func:`environ_with_aws`, nothing of
the user's inherited), or get them in their configuration (:attr:`S3Target.credentials`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .redact import redact
from .specs import SpecError

#: S3 bucket names: 3-63 lower-case letters, digits, dots and hyphens, starting and ending alphanumeric
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_ENDPOINT = re.compile(r"^https?://[A-Za-z0-9_.\-\[\]:]+(:\d{1,5})?/?$")


@dataclass(frozen=True)
class StaticCredentials:
    """obstore's credential provider for given keys (and no session token, whatever the environment holds)."""

    access_key_id: str
    secret_access_key: str = field(repr=False)

    def __call__(self) -> dict:
        return {"access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key, "token": None,
                "expires_at": None}


@dataclass(frozen=True)
class S3Target:
    """``s3://bucket/prefix`` at ``endpoint`` (None: AWS) in ``region``; a store lives under the prefix.

    ``credentials`` (obstore's keywords: ``access_key_id``, ``secret_access_key``) are given to the obstore and
    s3fs clients it makes instead of the AWS environment's; they are never shown (no repr) nor compared."""

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

    def kvstore(self) -> dict:
        """TensorStore's ``s3`` kvstore spec (credentials from the environment: TensorStore takes none in a spec)."""
        spec = {"driver": "s3", "bucket": self.bucket, "path": self.prefix.rstrip("/") + "/",
                "aws_region": self.region}
        return spec | ({"endpoint": self.endpoint} if self.endpoint else {})

    def fsspec_options(self) -> dict:
        """``s3fs.S3FileSystem`` keyword arguments for this location (its credentials, else the environment's)."""
        names = {"access_key_id": "key", "secret_access_key": "secret", "token": "token"}
        options: dict = {names[k]: v for k, v in (self.credentials or credentials()).items()}
        options["client_kwargs"] = {"region_name": self.region} | (
            {"endpoint_url": self.endpoint} if self.endpoint else {})
        return options

    def obstore(self):
        """An ``obstore`` S3Store at this location (its credentials, else the environment's)."""
        from obstore.store import S3Store

        if self.credentials:  # a provider: obstore would add a session token from the environment to given keys
            options: dict = {"region": self.region, "credential_provider": StaticCredentials(**self.credentials)}
        else:
            options = {"region": self.region, **credentials()}
        if self.endpoint:
            options |= {"endpoint": self.endpoint, "client_options": {"allow_http": self.endpoint.startswith("http:")}}
        return S3Store(self.bucket, prefix=self.prefix.rstrip("/") or None, **options)


def list_objects(target: S3Target) -> list[tuple[str, int]]:
    """(path under the prefix, size) of every object under ``target``'s prefix."""
    import obstore

    return [(meta["path"], meta["size"]) for batch in obstore.list(target.obstore()) for meta in batch]


def delete_prefix(target: S3Target) -> None:
    """Delete every object under ``target``'s prefix: only ever a prefix the caller made (a new uuid)."""
    import obstore

    if not target.prefix:
        raise ValueError(f"refusing to delete a whole bucket ({target.url}): only a prefix this tool made")
    store = target.obstore()
    paths = [path for path, _ in list_objects(target)]
    for i in range(0, len(paths), 500):
        obstore.delete(store, paths[i:i + 500])


def credentials() -> dict[str, str]:
    """obstore's credential keywords from the standard AWS variables (those that are set)."""
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


__all__ = ["S3Target", "credentials", "delete_prefix", "environ_with_aws", "from_environment", "is_s3", "list_objects",
           "parse_s3", "without_aws"]
