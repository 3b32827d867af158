"""AWS Signature Version 4 for the few plain HTTP requests made to an S3 server of ours (creating its bucket, the
request that closes a count of its counters; the tests' raw requests), with the standard library.

No S3 client library is used for them: obstore (the clients' store, :mod:`benchmarks_lib.adapters.obstore_s3`)
cannot create a bucket, and an SDK session would read the user's AWS profile and files. A request to our own
loopback server is path-style, has no query, is unchunked and is signed with the keys that server was started
with; the signed headers are ``host``, ``x-amz-content-sha256`` and ``x-amz-date``, as AWS's SDKs sign such a
request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from urllib.parse import urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signed_headers(method: str, url: str, body: bytes, access_key_id: str, secret_access_key: str, *,
                   region: str = "us-east-1", now: dt.datetime | None = None) -> dict[str, str]:
    """The headers that sign ``method url`` with ``body`` for S3 (``x-amz-date``, ``x-amz-content-sha256``,
    ``Authorization``); send them with the request as they are, to ``url`` as given (its path percent-encoded as
    it goes on the wire). ``now`` (UTC) fixes the time, for a test."""
    parts = urlsplit(url)
    if parts.query:
        raise ValueError(f"{url!r}: only a bucket or object path is signed here, not a query")
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    payload = hashlib.sha256(body).hexdigest()
    headers = {"host": parts.netloc, "x-amz-content-sha256": payload, "x-amz-date": stamp}
    names = ";".join(headers)
    canonical = "\n".join([method, parts.path or "/", "",
                           "".join(f"{k}:{v}\n" for k, v in headers.items()), names, payload])
    scope = f"{stamp[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(f"AWS4{secret_access_key}".encode(), stamp[:8])
    for part in (region, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {"X-Amz-Date": stamp, "X-Amz-Content-SHA256": payload,
            "Authorization": f"{ALGORITHM} Credential={access_key_id}/{scope}, SignedHeaders={names}, "
                             f"Signature={signature}"}


__all__ = ["signed_headers"]
