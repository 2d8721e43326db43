"""The one strict grammar of the bot: chat text -> a typed command, or a helpful error.

Slack text is hostile input. Nothing here is ever handed to a shell: every token must
match a narrow pattern, values become ints/enums/known names, and anything unknown or
ambiguous is refused with a suggestion instead of being guessed. The same parser serves
slash commands and mentions, so both front doors accept exactly the same language.

Two stages: ``parse`` checks syntax only (no cluster needed); ``validate`` checks names
against what the cluster really has (OSD ids, pools, findings) once a snapshot exists.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_TEXT = 500  # longer text is refused outright: no command needs more

# Runbooks the team agreed on and what kind of target each takes.
RUNBOOK_TARGETS: Mapping[str, str] = {
    "osd-remount": "osd",
    "osd-start": "osd",
    "osd-in": "osd",
    "cache-tier-tune": "pool",
    "pool-pg-num": "pool",
    "swift-device-remount": "device",
    "swift-ring-rebalance": "ring",
    "swift-server-start": "server",
}
RING_KINDS = ("object", "account", "container")
COMMANDS = ("health", "osd", "pools", "cache", "ring", "findings", "history", "plan",
            "fix", "bench", "audit", "mute", "unmute", "silence", "silences", "help")

_TOKEN_RE = re.compile(r"^[A-Za-z0-9._@:=,/+-]+$")
_OSD_RE = re.compile(r"^(?:osd\.)?([0-9]{1,6})$", re.ASCII)
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_DEVICE_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_-]{0,63})@([A-Za-z0-9][A-Za-z0-9._-]{0,127})$")
_CODE_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_OPT_RE = re.compile(r"([a-z][a-z0-9_]{0,31})=([A-Za-z0-9._/,-]{1,64})")


class GrammarError(ValueError):
    """A command that cannot be run; the message is one line a person can act on."""


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Health:
    cluster: str | None = None


@dataclass(frozen=True)
class Osd:
    cluster: str | None = None
    osd_id: int | None = None  # None: the tree


@dataclass(frozen=True)
class Pools:
    cluster: str | None = None


@dataclass(frozen=True)
class Cache:
    cluster: str | None = None


@dataclass(frozen=True)
class Ring:
    cluster: str | None = None
    kind: str | None = None  # None: all rings


@dataclass(frozen=True)
class Findings:
    cluster: str | None = None


@dataclass(frozen=True)
class History:
    cluster: str | None = None


@dataclass(frozen=True)
class Plan:
    runbook: str
    target: str
    cluster: str | None = None


@dataclass(frozen=True)
class Fix:
    """``fix RUNBOOK TARGET``: shows the plan with Confirm/Cancel (never runs unasked)."""

    runbook: str
    target: str
    cluster: str | None = None


@dataclass(frozen=True)
class FixFinding:
    """``fix CODE [TARGET]``: the runbook comes from the current finding with that code."""

    code: str
    target: str | None = None
    cluster: str | None = None


@dataclass(frozen=True)
class Bench:
    kind: str
    options: Mapping[str, str] = field(default_factory=dict)
    cluster: str | None = None


@dataclass(frozen=True)
class Audit:
    cluster: str | None = None


@dataclass(frozen=True)
class Mute:
    """``mute CODE [ENTITY] for 4h REASON...``: a mute with expiry (storage/mutes.py)."""

    code: str
    entity: str | None
    for_s: float
    reason: str
    cluster: str | None = None


@dataclass(frozen=True)
class Silence:
    """``silence ALERTNAME [for=4h] [reason ...]``: an Alertmanager silence of that alert on
    the cluster, and a stordoc mute of the incident it was posted with, same expiry."""

    alertname: str
    duration_s: float = 4 * 3600.0
    reason: str = ""
    cluster: str | None = None


@dataclass(frozen=True)
class Unmute:
    code: str
    entity: str | None
    cluster: str | None = None


@dataclass(frozen=True)
class MuteList:
    cluster: str | None = None


@dataclass(frozen=True)
class Silences:
    cluster: str | None = None


@dataclass(frozen=True)
class Help:
    topic: str | None = None
    cluster: str | None = None


Command = (Health | Osd | Pools | Cache | Ring | Findings | History | Plan | Fix | FixFinding
           | Bench | Audit | Mute | Unmute | MuteList | Silence | Silences | Help)

ACTING = (Plan, Fix, FixFinding, Bench, Mute, Unmute, Silence)  # need the operator role
MAX_MUTE_S = 30 * 86400.0
_ALERT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_:]{0,127}", re.ASCII)
SILENCE_MIN_S, SILENCE_MAX_S = 300.0, 30 * 86400.0

USAGE: Mapping[str, str] = {
    "health": "health [CLUSTER]  - run the checks and show the findings",
    "osd": "osd [tree|OSD] [--cluster C]  - the OSD tree by host, or one OSD (osd.3)",
    "pools": "pools [--cluster C]  - pools with size, pg_num and usage",
    "cache": "cache [--cluster C]  - cache tiers and their settings",
    "ring": "ring [object|account|container] [--cluster C]  - Swift rings",
    "findings": "findings [--cluster C]  - findings of the last recorded check run",
    "history": "history [--cluster C]  - recent check runs",
    "plan": "plan RUNBOOK TARGET [--cluster C]  - show what a runbook would do",
    "fix": "fix RUNBOOK TARGET | fix FINDING_CODE [TARGET] [--cluster C]  - plan, then "
           "Confirm to run",
    "bench": "bench KIND [key=value ...] [--cluster C]  - a quick benchmark",
    "audit": "audit [--cluster C]  - who ran what",
    "mute": "mute CODE [ENTITY] for 4h REASON... | mute list [--cluster C]  - hide a "
            "finding for a while (ENTITY: osd.1, pool:rbd, host:node2, d2@node2)",
    "unmute": "unmute CODE [ENTITY] [--cluster C]  - end a mute early",
    "silence": "silence ALERTNAME [for=4h] [reason ...] [--cluster C]  - silence an alert in "
               "Alertmanager and mute its incident in stordoc, until then",
    "silences": "silences [--cluster C]  - active Alertmanager silences and stordoc mutes",
    "help": "help [COMMAND]  - this help",
}


def suggest(word: str, choices: Iterable[str]) -> str:
    """``; did you mean `x`?`` for the closest choice, or nothing."""
    m = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=1, cutoff=0.5)
    if not m:
        return ""
    orig = {c.lower(): c for c in choices}[m[0]]
    return f"; did you mean `{orig}`?"


def _show(tok: str) -> str:
    """User text for a refusal, shown inside `code`: clipped, and a backtick (which would
    end the code span and break Slack's formatting) shown as a look-alike ``ˋ``."""
    tok = tok if len(tok) <= 40 else tok[:37] + "..."
    return tok.replace("`", "\u02cb")


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
                what = f"character `{_show(shown)}`"
            raise GrammarError(f"unexpected {what} in `{_show(t)}`: commands "
                               f"use letters, digits and . _ - @ : = , / + only")
    return toks


def _take_cluster(toks: list[str]) -> tuple[list[str], str | None]:
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
        if not _NAME_RE.match(val):
            raise GrammarError(f"`{_show(val)}` is not a cluster name")
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
        raise GrammarError(f"`{_show(tok)}` is not an OSD: write `osd.N` (e.g. `osd.1`)")
    try:
        return osd_id(f"osd.{m.group(1)}")
    except Refused:
        raise GrammarError(f"`{_show(tok)}` is not an OSD: write `osd.N` (e.g. `osd.1`)") \
            from None


def parse_target(runbook: str, tok: str) -> str:
    """Normalise a runbook target to the agreed string form, or refuse it."""
    kind = RUNBOOK_TARGETS.get(runbook, "name")
    if kind == "osd":
        return f"osd.{parse_osd(tok)}"
    if kind == "ring":
        if tok not in RING_KINDS:
            raise GrammarError(f"`{_show(tok)}` is not a ring: one of "
                               f"{', '.join(RING_KINDS)}{suggest(tok, RING_KINDS)}")
        return tok
    if kind == "server":
        m = _DEVICE_RE.match(tok)
        if not m or m.group(1) not in RING_KINDS:
            raise GrammarError(f"`{_show(tok)}` is not a Swift server: write SERVER@HOST "
                               "(e.g. `object@node1`)")
        return tok
    if kind == "device":
        if not _DEVICE_RE.match(tok):
            raise GrammarError(f"`{_show(tok)}` is not a Swift device: write DEVICE@HOST "
                               "(e.g. `d2@node2`)")
        return _canonical(kind, tok)
    if not _NAME_RE.match(tok):
        raise GrammarError(f"`{_show(tok)}` is not a valid {kind} name")
    return _canonical(kind, tok)


def _canonical(kind: str, tok: str) -> str:
    """The runbooks' one spelling of a target (the same lock key as the CLI's)."""
    from runbooks.model import Refused
    from runbooks.targets import canonical_target

    try:
        return canonical_target(kind, tok)
    except Refused as e:
        raise GrammarError(str(e)) from None


def _no_more(cmd: str, rest: Sequence[str]) -> None:
    if rest:
        raise GrammarError(f"unexpected `{_show(rest[0])}` after `{cmd}`; usage: "
                           f"{USAGE[cmd]}")


def parse(text: str, runbooks: Iterable[str] | None = None) -> Command:
    """Parse one command line. ``runbooks`` are the names that exist (default: agreed)."""
    rb_names = sorted(runbooks) if runbooks is not None else sorted(RUNBOOK_TARGETS)
    toks = tokenize(text)
    toks, cluster = _take_cluster(toks)
    if not toks:
        return Help(None, cluster)
    verb, rest = toks[0].lower(), toks[1:]
    if verb not in COMMANDS:
        hint = suggest(verb, COMMANDS) or f"; commands: {', '.join(COMMANDS)}"
        raise GrammarError(f"unknown command `{_show(toks[0])}`{hint}")
    if verb == "health":
        if len(rest) > 1:
            _no_more(verb, rest[1:])
        if rest:
            if cluster is not None and rest[0] != cluster:
                raise GrammarError(f"two clusters named (`{rest[0]}` and `{cluster}`)")
            if not _NAME_RE.match(rest[0]):
                raise GrammarError(f"`{_show(rest[0])}` is not a cluster name")
            cluster = rest[0]
        return Health(cluster)
    if verb == "osd":
        _no_more(verb, rest[1:])
        if not rest or rest[0].lower() == "tree":
            return Osd(cluster, None)
        return Osd(cluster, parse_osd(rest[0]))
    if verb == "silence":
        return _parse_silence(rest, cluster)
    if verb == "silences":
        _no_more(verb, rest)
        return Silences(cluster)
    if verb in ("pools", "cache", "findings", "history", "audit"):
        _no_more(verb, rest)
        simple: dict[str, Command] = {"pools": Pools(cluster), "cache": Cache(cluster),
                                      "findings": Findings(cluster),
                                      "history": History(cluster), "audit": Audit(cluster)}
        return simple[verb]
    if verb == "ring":
        _no_more(verb, rest[1:])
        if not rest:
            return Ring(cluster, None)
        kind = rest[0].lower()
        if kind not in RING_KINDS:
            raise GrammarError(f"unknown ring `{_show(rest[0])}`: one of "
                               f"{', '.join(RING_KINDS)}{suggest(kind, RING_KINDS)}")
        return Ring(cluster, kind)
    if verb == "help":
        _no_more(verb, rest[1:])
        topic = rest[0].lower() if rest else None
        if topic is not None and topic not in COMMANDS:
            raise GrammarError(f"no help on `{_show(rest[0])}`{suggest(topic, COMMANDS)}")
        return Help(topic, cluster)
    if verb == "bench":
        if not rest:
            raise GrammarError(f"`bench` needs a kind; usage: {USAGE['bench']}")
        kind = rest[0].lower()
        if not _NAME_RE.match(kind):
            raise GrammarError(f"`{_show(rest[0])}` is not a benchmark kind")
        opts: dict[str, str] = {}
        for t in rest[1:]:
            m = _OPT_RE.fullmatch(t)
            if not m:
                raise GrammarError(f"bench option `{_show(t)}` must look like key=value "
                                   "(e.g. `seconds=10`)")
            if m.group(1) in opts:
                raise GrammarError(f"bench option `{m.group(1)}` given twice")
            bench_option(m.group(1), m.group(2))  # refuse a bad value now, not mid-run
            opts[m.group(1)] = m.group(2)
        return Bench(kind, opts, cluster)
    if verb in ("mute", "unmute"):
        return _mute(verb, rest, cluster)
    # plan / fix
    if not rest:
        raise GrammarError(f"`{verb}` needs a runbook and a target; usage: {USAGE[verb]}")
    if verb == "fix" and _CODE_RE.match(rest[0]):
        _no_more(verb, rest[2:])
        target = rest[1] if len(rest) > 1 else None
        if target is not None and not (_NAME_RE.match(target) or _DEVICE_RE.match(target)):
            raise GrammarError(f"`{_show(target)}` is not a target")
        return FixFinding(rest[0], target, cluster)
    runbook = rest[0].lower()
    if runbook not in rb_names:
        raise GrammarError(f"unknown runbook `{_show(rest[0])}`{suggest(runbook, rb_names)}"
                           f" (runbooks: {', '.join(rb_names)})")
    if len(rest) < 2:
        raise GrammarError(f"`{verb} {runbook}` needs a target; usage: {USAGE[verb]}")
    _no_more(verb, rest[2:])
    target = parse_target(runbook, rest[1])
    return (Plan if verb == "plan" else Fix)(runbook, target, cluster)


def _entity(tok: str) -> str:
    """``osd.1``, ``d2@node2`` as typed; ``pool:rbd`` / ``host:node2`` are ``pool rbd``..."""
    kind, sep, name = tok.partition(":")
    if sep and kind.lower() in ("pool", "host", "mon", "ceph") and _NAME_RE.match(name):
        return f"{kind.lower()} {name}"
    if _NAME_RE.match(tok) or _DEVICE_RE.match(tok):
        return tok
    raise GrammarError(f"`{_show(tok)}` is not an entity (osd.1, pool:rbd, host:node2)")


def _mute(verb: str, rest: Sequence[str], cluster: str | None) -> Command:
    from stordoc.argtypes import parse_duration

    if verb == "mute" and len(rest) == 1 and rest[0].lower() == "list":
        return MuteList(cluster)
    if not rest or not _CODE_RE.match(rest[0]):
        raise GrammarError(f"`{verb}` needs a finding CODE; usage: {USAGE[verb]}")
    code, rest = rest[0], list(rest[1:])
    entity = None
    if rest and rest[0].lower() != "for":
        entity = _entity(rest.pop(0))
    if verb == "unmute":
        _no_more(verb, rest)
        return Unmute(code, entity, cluster)
    if len(rest) < 2 or rest[0].lower() != "for":
        raise GrammarError(f"`mute` needs `for DURATION` (e.g. `for 4h`); usage: "
                           f"{USAGE['mute']}")
    try:
        for_s = parse_duration(rest[1], 60, MAX_MUTE_S)
    except ValueError as e:
        raise GrammarError(f"mute duration: {e}") from None
    words = rest[2:]
    if words and words[0].lower() in ("because", "reason", "reason:"):
        words = words[1:]
    if not words:
        raise GrammarError("`mute` needs a reason after the duration (kept in the audit)")
    return Mute(code, entity, for_s, " ".join(words)[:300], cluster)


def _parse_silence(rest: Sequence[str], cluster: str | None) -> Silence:
    from stordoc.argtypes import parse_duration

    if not rest:
        raise GrammarError(f"`silence` needs an alert name; usage: {USAGE['silence']}")
    if not _ALERT_RE.fullmatch(rest[0]):
        raise GrammarError(f"`{_show(rest[0])}` is not an alert name (letters, digits, _ :)")
    dur = 4 * 3600.0
    words = list(rest[1:])
    if words and words[0].lower().startswith("for="):
        try:
            dur = parse_duration(words.pop(0)[4:], SILENCE_MIN_S, SILENCE_MAX_S)
        except ValueError as e:
            raise GrammarError(f"silence for=: {e}") from None
    reason = " ".join(words)[:200]
    return Silence(rest[0], dur, reason, cluster)


# --------------------------------------------------------------------------- bench options
# Numbers from chat are ASCII digits with fixed bounds: no inf/nan/exponent, no Unicode
# digits (int() takes them, `\d` matches them), nothing that overflows a float or a C int.

_UINT_RE = re.compile(r"[0-9]{1,9}")
_SECONDS_RE = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,3})?")
_SIZE_RE = re.compile(r"([0-9]{1,7})([kmg]?)(?:i?b)?", re.IGNORECASE)
_MIX_RE = re.compile(r"([0-9]{1,3})/([0-9]{1,3})/([0-9]{1,3})")
_MODE_RE = re.compile(r"[a-z][a-z0-9_-]{0,15}")
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
MAX_BENCH_SECONDS = 3600.0
MAX_BENCH_SIZE = 1024 ** 3  # 1 GiB per object: more is no "quick" benchmark
_INT_BOUNDS = {"concurrency": (1, 1024), "repeat": (1, 100), "ops": (1, 10_000_000)}

# chat word -> BenchOptions field
BENCH_KEYS: Mapping[str, str] = {
    "seconds": "duration_s", "duration": "duration_s", "concurrency": "concurrency",
    "threads": "concurrency", "size": "size", "size_max": "size_max", "modes": "modes",
    "mode": "modes", "repeat": "repeat", "ops": "ops", "pool": "pool",
    "container": "container", "mix": "mix", "engine": "engine"}

BenchValue = int | float | str | tuple[str, ...] | tuple[int, int, int]


def bench_option(key: str, value: str) -> tuple[str, BenchValue]:
    """One ``key=value`` of ``bench``: (BenchOptions field, typed value) or a refusal."""
    field_ = BENCH_KEYS.get(key)
    if field_ is None:
        raise GrammarError(f"unknown bench option `{_show(key)}`{suggest(key, BENCH_KEYS)} "
                           f"(options: {', '.join(sorted(BENCH_KEYS))})")
    shown = f"`{_show(key)}={_show(value)}`"
    if field_ == "duration_s":
        if not _SECONDS_RE.fullmatch(value) or not 0 < float(value) <= MAX_BENCH_SECONDS:
            raise GrammarError(f"bench option {shown}: seconds are a number of seconds "
                               f"above 0 and at most {MAX_BENCH_SECONDS:.0f} (e.g. `10`)")
        return field_, float(value)
    if field_ in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[field_]
        if not _UINT_RE.fullmatch(value) or not lo <= int(value) <= hi:
            raise GrammarError(f"bench option {shown}: a whole number {lo}..{hi}")
        return field_, int(value)
    if field_ in ("size", "size_max"):
        m = _SIZE_RE.fullmatch(value)
        n = int(m.group(1)) * _UNITS[m.group(2).lower()] if m else 0
        if not 0 < n <= MAX_BENCH_SIZE:
            raise GrammarError(f"bench option {shown}: a size above 0 and at most 1G, "
                               "in bytes or with k, M, G (e.g. `4k`, `4M`)")
        return field_, n
    if field_ == "mix":
        mm = _MIX_RE.fullmatch(value)
        parts = tuple(int(x) for x in mm.groups()) if mm else ()
        if len(parts) != 3 or sum(parts) != 100:
            raise GrammarError(f"bench option {shown}: READ/WRITE/DELETE percentages "
                               "that add up to 100 (e.g. `80/15/5`)")
        return field_, (parts[0], parts[1], parts[2])
    if field_ == "modes":
        modes = tuple(value.split(","))
        if not all(_MODE_RE.fullmatch(x) for x in modes):
            raise GrammarError(f"bench option {shown}: mode names separated by commas "
                               "(e.g. `write,seq`)")
        return field_, modes
    if not _NAME_RE.fullmatch(value):  # pool, container, engine
        raise GrammarError(f"bench option {shown}: not a valid {key} name")
    return field_, value


# --------------------------------------------------------------------------- semantics


def osd_ranges(ids: Iterable[int]) -> str:
    """``osd.0-osd.2, osd.5``: how a person lists a set of OSDs."""
    s = sorted(set(ids))
    if not s:
        return "no OSDs"
    parts: list[str] = []
    start = prev = s[0]
    for i in s[1:] + [None]:  # type: ignore[list-item]
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(f"osd.{start}" if start == prev else f"osd.{start}-osd.{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)


def check_osd(osd_id: int, known: Iterable[int]) -> None:
    ids = set(known)
    if osd_id not in ids:
        raise GrammarError(f"unknown OSD `osd.{osd_id}`: this cluster has {osd_ranges(ids)}")


def check_name(kind: str, name: str, known: Iterable[str]) -> None:
    names = sorted(known)
    if name not in names:
        listed = ", ".join(names[:10]) or "none"
        raise GrammarError(f"unknown {kind} `{name}`{suggest(name, names)} (this cluster "
                           f"has: {listed})")


def resolve_cluster(named: str | None, configured: Sequence[str], default: str | None) -> str:
    """The cluster named, or the configured default; refuse rather than guess."""
    if named:
        if named not in configured:
            raise GrammarError(f"unknown cluster `{named}`{suggest(named, configured)} "
                               f"(configured: {', '.join(sorted(configured)) or 'none'})")
        return named
    if default:
        return default
    if len(configured) == 1:
        return configured[0]
    raise GrammarError("several clusters are configured and none is the default: name one "
                       f"({', '.join(sorted(configured))})")
