"""The words of the bot's grammar: tokens, names, OSDs, targets, entities.

Slack text is hostile input. Nothing here is ever handed to a shell: every token must
match a narrow pattern and becomes an int or a known spelling, else a ``GrammarError``
with a suggestion instead of a guess. The parser (``bot.grammar``) and the bench options
(``bot.grammar.bench``) are built from these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

MAX_TEXT = 500  # longer text is refused outright: no command needs more

# the runbooks' own target kinds (RunbookInfo.target_kind) as the words the grammar parses
_GRAMMAR_KIND = {"osd": "osd", "pool": "pool", "cache-pool": "pool",
                 "swift-device": "device", "swift-ring": "ring", "swift-server": "server"}


def _registry_kinds() -> dict[str, str]:
    """Every runbook and the kind of target it takes, from the runbooks' registry (the
    bot keeps no list of its own: a new runbook is parsed right the day it lands)."""
    from runbooks.api import list_runbooks

    return {rb.name: rb.target_kind for rb in list_runbooks()
            if not rb.name.startswith("bench")}


_REGISTRY_KINDS = _registry_kinds()
RUNBOOK_TARGETS: Mapping[str, str] = {n: _GRAMMAR_KIND.get(k, "name")
                                      for n, k in _REGISTRY_KINDS.items()}
RING_KINDS = ("object", "account", "container")

_TOKEN_RE = re.compile(r"^[A-Za-z0-9._@:=,/+-]+$")
_OSD_RE = re.compile(r"^(?:osd\.)?([0-9]{1,6})$", re.ASCII)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# a saved snapshot's directory name under slack.snapshots_dir: never a path
SNAPSHOT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", re.ASCII)
DEVICE_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_-]{0,63})@([A-Za-z0-9][A-Za-z0-9._-]{0,127})$")
CODE_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


class GrammarError(ValueError):
    """A command that cannot be run; the message is one line a person can act on."""



def suggest(word: str, choices: Iterable[str]) -> str:
    """``; did you mean `x`?`` for the closest choice, or nothing."""
    from checks.spelling import closest  # the CLI's rule: one "did you mean" everywhere

    m = closest(word, choices)
    return f"; did you mean `{m}`?" if m else ""


def show(tok: str) -> str:
    """User text for a refusal, shown inside `code`: clipped, and a backtick (which would
    end the code span and break Slack's formatting) shown as a look-alike ``ˋ``. Secrets
    go before the clip (a clipped key no longer looks like one)."""
    from storage.audit import redact

    tok = redact(tok)
    tok = tok if len(tok) <= 40 else tok[:37] + "..."
    return tok.replace("`", "\u02cb")


def clip_words(words: Sequence[str], limit: int) -> str:
    """``words`` joined by spaces, whole words only up to ``limit`` characters (a free
    text such as a mute reason): a word is never cut in two, so a secret in it keeps the
    shape the redactor knows (a word longer than the limit alone is cut)."""
    out = ""
    for w in words:
        nxt = f"{out} {w}" if out else w
        if len(nxt) > limit:
            return out or w[:limit]
        out = nxt
    return out


def tokenize(text: str) -> list[str]:
    """Split on whitespace; refuse any character a command never needs (quotes, ``;``,
    ``$``, backticks, pipes, non-ASCII) so hostile text stops here."""
    if len(text) > MAX_TEXT:
        raise GrammarError(f"command too long ({len(text)} characters; the limit is "
                           f"{MAX_TEXT})")
    toks = text.split()
    for t in toks:
        if not _TOKEN_RE.match(t):
            bad = next(c for c in t if not _TOKEN_RE.match(c))
            if bad == "`":
                what = "backtick"
            else:
                shown = bad if bad.isprintable() and not bad.isspace() else repr(bad)
                what = f"character `{show(shown)}`"
            raise GrammarError(f"unexpected {what} in `{show(t)}`: commands "
                               f"use letters, digits and . _ - @ : = , / + only")
    return toks


def take_cluster(toks: list[str]) -> tuple[list[str], str | None]:
    """Remove ``--cluster C`` / ``-c C`` / ``--cluster=C`` wherever they stand: (the other
    tokens, the cluster named or None); two different clusters are refused."""
    out: list[str] = []
    cluster: str | None = None
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in ("--cluster", "-c"):
            if i + 1 >= len(toks):
                raise GrammarError(f"`{t}` needs a cluster name")
            val = toks[i + 1]
            i += 2
        elif t.startswith("--cluster="):
            val = t.split("=", 1)[1]
            i += 1
        else:
            out.append(t)
            i += 1
            continue
        if not NAME_RE.match(val):
            raise GrammarError(f"`{show(val)}` is not a cluster name")
        if cluster is not None and cluster != val:
            raise GrammarError(f"two clusters named (`{cluster}` and `{val}`): name one")
        cluster = val
    return out, cluster


def parse_osd(tok: str) -> int:
    # the one OSD spelling rule (ASCII digits only) shared with the CLI and the TUI
    from runbooks.model import Refused
    from runbooks.targets import osd_id

    m = _OSD_RE.match(tok)
    if not m:
        raise GrammarError(f"`{show(tok)}` is not an OSD: write `osd.N` (e.g. `osd.1`)")
    try:
        return osd_id(f"osd.{m.group(1)}")
    except Refused:
        raise GrammarError(f"`{show(tok)}` is not an OSD: write `osd.N` (e.g. `osd.1`)") \
            from None


def parse_target(runbook: str, tok: str) -> str:
    """Normalise a runbook target to the agreed string form, or refuse it."""
    kind = RUNBOOK_TARGETS.get(runbook, "name")
    if kind == "osd":
        return f"osd.{parse_osd(tok)}"
    if kind == "ring":
        if tok not in RING_KINDS:
            raise GrammarError(f"`{show(tok)}` is not a ring: one of "
                               f"{', '.join(RING_KINDS)}{suggest(tok, RING_KINDS)}")
        return tok
    if kind == "server":
        m = DEVICE_RE.match(tok)
        if not m or m.group(1) not in RING_KINDS:
            raise GrammarError(f"`{show(tok)}` is not a Swift server: write SERVER@HOST "
                               "(e.g. `object@node1`)")
        return tok
    if kind == "device":
        if not DEVICE_RE.match(tok):
            raise GrammarError(f"`{show(tok)}` is not a Swift device: write DEVICE@HOST "
                               "(e.g. `d2@node2`)")
        return _canonical(kind, tok)
    if kind == "name":  # a crash id, a dispersion target: the runbook's own rule
        return _canonical(_REGISTRY_KINDS.get(runbook, "name"), tok)
    if not NAME_RE.match(tok):
        raise GrammarError(f"`{show(tok)}` is not a valid {kind} name")
    return _canonical(kind, tok)


def _canonical(kind: str, tok: str) -> str:
    """The runbooks' one spelling of a target (the same lock key as the CLI's)."""
    from runbooks.model import Refused
    from runbooks.targets import canonical_target

    try:
        return canonical_target(kind, tok)
    except Refused as e:
        raise GrammarError(str(e)) from None


def parse_entity(tok: str) -> str:
    """``osd.1``, ``d2@node2`` as typed; ``pool:rbd`` / ``host:node2`` are ``pool rbd``..."""
    kind, sep, name = tok.partition(":")
    if sep and kind.lower() in ("pool", "host", "mon", "ceph") and NAME_RE.match(name):
        return f"{kind.lower()} {name}"
    if NAME_RE.match(tok) or DEVICE_RE.match(tok):
        return tok
    raise GrammarError(f"`{show(tok)}` is not an entity (osd.1, pool:rbd, host:node2)")
