"""Keep Slack tokens and signing secrets out of logs and messages.

Known secret values are replaced wherever they appear, then ``storage.audit.redact``
removes secret-shaped text (Ceph keys, auth tokens, ``password=...``). Slack tokens
(``xoxb-``, ``xapp-``, ...) are matched by shape too, in case one arrives in an error.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from storage.audit import REDACTED, redact

_SLACK_TOKEN_RE = re.compile(r"\bx(?:ox[abposr]|app)-[A-Za-z0-9-]{6,}")
# C0 and C1 controls, DEL, and Unicode's line and paragraph separators: a newline in an
# alert name would otherwise start a forged log line, an ESC drive the reader's terminal
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_controls(text: str) -> str:
    """``text`` on one line: control characters as ``\\n``, ``\\x1b``, ``\\u2028``."""
    return _CONTROL_RE.sub(lambda m: _NAMED.get(m.group(), m.group().encode(
        "unicode_escape").decode("ascii")), text)


# an absolute path on the bot's host (``/srv/stordoc/snaps/x``, ``~/.config/...``): not
# the ``/`` of a URL (``http://h:1/a/b``) nor of a word like ``read/write``
_PATH_RE = re.compile(r"(?<![\w.:/~-])~?/(?:[^\s/`'\"<>|]+/)+[^\s/`'\"<>|,;:)]*")


def hide_paths(text: str) -> str:
    """``text`` with each server path cut to its last part (``…/name``): a Slack error says
    what failed, never where the bot keeps its files (the full text goes to its log)."""
    return _PATH_RE.sub(lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def incident_ref() -> str:
    """A short reference that ties a user-facing error line to its full log record."""
    import secrets

    return secrets.token_hex(4)


class Redactor:
    """``keep``: the bot's own words that only look like secrets (the grammar's
    ``key=value`` placeholder in ``bench KIND [key=value ...]``): shown as they are."""

    def __init__(self, secrets: Iterable[str | None], keep: Iterable[str] = ()) -> None:
        self.secrets = tuple(s for s in secrets if s and len(s) >= 4)
        self.keep = tuple(sorted({k for k in keep if k and k not in self.secrets},
                                 key=len, reverse=True))

    def text(self, s: str, pasted: Iterable[str] = ()) -> str:
        """``s`` without the secrets; ``pasted``: what the asker pasted that was secret
        (``storage.audit.secrets_in``), taken out wherever it is quoted."""
        for sec in sorted((*self.secrets, *pasted), key=len, reverse=True):
            s = s.replace(sec, REDACTED)
        s = _SLACK_TOKEN_RE.sub(REDACTED, s)
        held: dict[str, str] = {}
        for i, word in enumerate(self.keep):  # out of the patterns' sight, then back
            if word in s:  # standing alone only: ``api_key=value42`` is an assignment
                mark = f"\ue000{i}\ue001"
                s, n = re.subn(rf"(?<![\w-]){re.escape(word)}(?![\w.=/+-])", mark, s)
                if n:
                    held[mark] = word
        s = redact(s, self.secrets)
        for mark, word in held.items():
            s = s.replace(mark, word)
        return s


class RedactingFilter(logging.Filter):
    """A logging filter that rewrites each record's message without the secrets and
    without control characters (a traceback, when one is logged, follows on its lines)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:
            return True
        record.msg = escape_controls(self.redactor.text(msg))  # one line per record
        record.args = None
        if record.exc_info:
            import traceback

            record.msg += "\n" + self.redactor.text(
                "".join(traceback.format_exception(*record.exc_info)))
            record.exc_info = None
            record.exc_text = None
        return True


def install(redactor: Redactor) -> RedactingFilter:
    """Attach the filter to every handler of the root logger (configure logging first)."""
    f = RedactingFilter(redactor)
    root = logging.getLogger()
    for h in root.handlers:
        h.addFilter(f)
    return f
