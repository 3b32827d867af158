"""Secrets out of messages: the one :func:`redact` applied wherever an error becomes text a person reads
or a row keeps (the command line's error line, every row a case records).

What it hides, each replaced by ``***``: the user part of a URL (``http://KEY:SECRET@host`` becomes
``http://***@host``, whatever the password holds); AWS access key ids (``AKIA...``, ``ASIA...``); the value
of a query parameter or of a ``name=value`` / ``name: value`` pair whose name says secret, token, password,
signature or credential; and any 40-character base64 word that mixes upper and lower case with digits (the
shape of an AWS secret key; a 40-character hex digest such as a git commit, or a path, is left alone).
"""

from __future__ import annotations

import re

MASK = "***"
#: scheme://user[:password]@ : everything between the scheme and the URL's last @ (a password may hold '/' or '@'
#: unencoded; an '@' further along the URL hides a little more than needed, never less)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s'\"<>]*@")
#: AWS access key ids: a 4-letter kind (AKIA long-term, ASIA temporary, ...) and 16 upper-case letters or digits
_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b")
_SECRET_NAME = r"[A-Za-z0-9_.\-]*(?:secret|token|password|passwd|pwd|signature|credential|api_?key|access_?key)" \
               r"[A-Za-z0-9_.\-]*"
#: ?name=value / &name=value in a URL
_QUERY = re.compile(rf"(?i)([?&;]{_SECRET_NAME}=)[^&#\s\"']+")
#: name=value, name: value, "name": "value" in prose, JSON or an environment listing; not a file named like one
#: (``/etc/passwd: not a directory`` is a path and its message)
_PAIR = re.compile(rf"(?i)((?<![/\\A-Za-z0-9_.\-]){_SECRET_NAME}[\"']?\s*[:=]\s*[\"']?)(?!\*\*\*)[^\s\"',;&]+")
#: a 40-character base64 word: an AWS secret access key's shape
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _mask_key_shaped(match: re.Match) -> str:
    word = match.group(0)
    mixed = any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word)
    return MASK if mixed else word


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``***`` (see the module docstring for what counts as one)."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _ACCESS_KEY.sub(MASK, text)
    text = _QUERY.sub(lambda m: m.group(1) + MASK, text)
    text = _PAIR.sub(lambda m: m.group(1) + MASK, text)
    return _BASE64_40.sub(_mask_key_shaped, text)


def redact_row(row: dict) -> dict:
    """A row with every text value redacted (numbers and flags as they are)."""
    return {key: redact(value) if isinstance(value, str) else value for key, value in row.items()}


__all__ = ["MASK", "redact", "redact_row"]
