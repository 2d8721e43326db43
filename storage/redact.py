"""Secrets scrubbed from text and JSON before anything is stored or posted: PEM blocks,
auth headers, bearer tokens, URL credentials, ``key=value`` assignments, Ceph keys, Swift
and AWS tokens, secret-looking flags. Its own module so the journal and the audit log both
use it without importing each other (issue 39.6); ``storage.audit`` re-exports it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"

# The secret shapes (one list, every caller: the journal, mutes, the audit, the bot's
# posts and logs, the CLI's audit and mute listings). Order matters: whole blocks and
# headers first, so a later pattern never sees half of one.

# PEM private keys, even multi-line or cut short (a text truncated before its END line)
_PEM_RE = re.compile(
    r"(-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)(?:.*?"
    r"(-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)|.*\Z)", re.DOTALL)
# Authorization / Proxy-Authorization headers: the scheme is kept, the credential goes
_AUTH_HEADER_RE = re.compile(
    r"(?i)(\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|digest|negotiate|token|aws4-hmac-sha256)\s+)?)"
    r"(\"[^\"]*\"|[^\s\"']+(?:[ \t]*,[ \t]*[^\s\"',]+)*)")
# a bearer token standing alone (``curl ... Bearer eyJ...``): only token-shaped words
_BEARER_RE = re.compile(r"(\bBearer\s+)[A-Za-z0-9._~+/-]{8,}=*")
# URLs with a password: scheme://user:PASSWORD@host
_URL_CRED_RE = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/:@]*:)[^\s/]*(?=@)")
# key/token/password-like assignments: "key = AQB...", "password: x", "pass=x",
# "X-Auth-Token: AUTH_tk...", JSON's "secret_key": "..."; ``pass`` only as a word of its
# own (``db_pass=``), never ``bypass=``
_ASSIGN_RE = re.compile(
    r"(?i)(\b(?:[\w-]*?(?:key|secret|token|password|passwd|passphrase|pwd|credentials?)"
    r"|(?:[\w-]*[_-])?pass)[\"']?\s*[:=]\s*)"
    r"(\"[^\"]*\"|'[^']*'|[^\s,;\"'}]+)")
# Ceph keys: base64 of 28 bytes starting with AQ (cephx secrets)
_CEPH_KEY_RE = re.compile(r"\bAQ[A-Za-z0-9+/]{36,}={0,2}")
# Swift tempauth / keystone tokens, JWTs, Slack tokens and webhook paths
_TOKEN_RE = re.compile(r"\b(AUTH_tk[0-9a-f]{16,}|gAAAAA[\w-]{20,}"
                       r"|eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*"
                       r"|x(?:ox[abposre]|app)-[A-Za-z0-9-]{6,})"
                       r"|(?<=hooks\.slack\.com/services/)[\w/]+")
# AWS access key ids, and 40-character secret keys near a word that says what they are
# (an id pasted with its secret key, ``AKIA... wJalr...``, loses both)
_AWS_ID_RE = re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)"
                        r"[A-Z0-9]{16}\b(?:[\s:=,;'\"]{1,4}(?<![A-Za-z0-9/+=])"
                        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?")
_AWS_SECRET_RE = re.compile(
    r"(?i)((?:aws|secret|access[_ -]?key)[^\n]{0,40}?)"
    r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# --key VALUE / -K VALUE / --password VALUE on a command line
_FLAG_RE = re.compile(
    r"(?i)(--?(?:key|password|passwd|pass|passphrase|token|secret|os-password|"
    r"os-token|auth-token|K)[ =])(\S+)")


def _cut(m: re.Match[str], found: list[str] | None, keep_head: bool = True,
         quoted: bool = False) -> str:
    """The match with its secret part as ``***``: group 1 (the name, the header, the
    BEGIN line) kept when ``keep_head``; a PEM's END line (group 2) kept; a quoted value
    keeps its quotes (JSON text stays JSON). The part removed goes to ``found``."""
    whole = m.group(0)
    head = m.group(1) if keep_head else ""
    tail = ""
    if m.re is _PEM_RE:
        tail = m.group(2) or ""
    secret = whole[len(head):len(whole) - len(tail)]
    q = ""
    if quoted and secret[:1] in ("'", '"') and secret[-1:] == secret[:1] and len(secret) > 1:
        q, secret = secret[0], secret[1:-1]
    if found is not None and secret.strip():
        found.append(secret.strip())
    return f"{head}{q}{REDACTED}{q}{tail}"


# (pattern, its group 1 is a name to keep, its value may be quoted), in this order
_RULES: tuple[tuple[re.Pattern[str], bool, bool], ...] = (
    (_PEM_RE, True, False), (_AUTH_HEADER_RE, True, True), (_BEARER_RE, True, False),
    (_URL_CRED_RE, True, False), (_CEPH_KEY_RE, False, False), (_TOKEN_RE, False, False),
    (_AWS_ID_RE, False, False), (_AWS_SECRET_RE, True, False), (_ASSIGN_RE, True, True),
    (_FLAG_RE, True, False))


def _scrub(text: str, secrets: Iterable[str], found: list[str] | None) -> str:
    if not text:
        return text
    for s in sorted((s for s in secrets if s and len(s) >= 3), key=len, reverse=True):
        text = text.replace(s, REDACTED)
    for rx, head, quoted in _RULES:
        text = rx.sub(lambda m, h=head, q=quoted: _cut(m, found, h, q), text)  # type: ignore[misc]
    return text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove secrets from free text: known secret values first, then secret-shaped text
    (the shapes above). Ordinary words are left alone: ``passive``, ``tokens 5``,
    ``keyring /etc/ceph/ceph.keyring``, ``osd.1``, pool names."""
    return _scrub(text, secrets, None)


def secrets_in(text: str) -> tuple[str, ...]:
    """The secret values ``redact`` would take out of ``text``: what a person pasted, to be
    taken out of anything said back to them even when it is quoted without its shape (a
    refusal that quotes one word of ``Authorization: Bearer TOKEN``). Values shorter than
    4 characters are left out (replacing them everywhere would garble the answer)."""
    found: list[str] = []
    _scrub(text, (), found)
    words = [w for v in found for w in v.split()]  # a key's lines, quoted one by one
    return tuple(dict.fromkeys(v for v in (*found, *words) if len(v) >= 4))


# a mapping key that names a secret: its (string) value goes whatever it looks like
_SECRET_KEY_RE = re.compile(
    r"(?i)(?:key|secret|token|password|passwd|passphrase|pwd|credentials?|authorization)$"
    r"|(?:^|[_-])pass$")
_NOT_SECRET_KEYS = frozenset({"disk_key"})  # our own evidence: host:device, not a key


def redact_obj(obj: Any, secrets: Iterable[str] = ()) -> Any:
    """Redact a JSON-like structure: secret-named keys lose their value, strings are scrubbed."""
    sec = tuple(secrets)
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if isinstance(k, str) and _SECRET_KEY_RE.search(k) and \
                    k not in _NOT_SECRET_KEYS and isinstance(v, str) and v:
                out[str(k)] = REDACTED
            else:
                out[redact(str(k), sec)] = redact_obj(v, sec)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v, sec) for v in obj]
    if isinstance(obj, str):
        return redact(obj, sec)
    return obj
