"""The one strict grammar of the bot: chat text -> a typed command, or a helpful error.

Slack text is hostile input. Nothing here is ever handed to a shell: every token must
match a narrow pattern, values become ints/enums/known names, and anything unknown or
ambiguous is refused with a suggestion instead of being guessed. The same parser serves
slash commands and mentions, so both front doors accept exactly the same language.

Two stages: ``parse`` checks syntax only (no cluster needed); ``check_osd``,
``check_name`` and ``resolve_cluster`` check names against what the cluster really has
(OSD ids, pools, findings) once a snapshot exists.

The words (tokens, OSDs, targets, entities) live in ``words``, the command types
and their usage in ``commands``, ``bench`` options in ``bench``; this
module is the parser and the checks against a cluster, and the one name importers use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from bot.grammar.bench import (
    BENCH_KEYS,
    MAX_BENCH_SECONDS,
    MAX_BENCH_SIZE,
    BenchValue,
    bench_option,
    bench_options,
)
from bot.grammar.commands import (
    ACTING,
    COMMANDS,
    USAGE,
    Audit,
    Bench,
    Cache,
    Command,
    Findings,
    Fix,
    FixFinding,
    Health,
    Help,
    History,
    Maintenance,
    Mute,
    MuteList,
    Osd,
    Plan,
    Pools,
    Ring,
    Silence,
    Silences,
    Unmute,
)
from bot.grammar.words import (
    CODE_RE,
    DEVICE_RE,
    MAX_TEXT,
    NAME_RE,
    RING_KINDS,
    RUNBOOK_TARGETS,
    SNAPSHOT_RE,
    GrammarError,
    clip_words,
    parse_entity,
    parse_osd,
    parse_target,
    show,
    suggest,
    take_cluster,
    tokenize,
)

__all__ = [
    "ACTING", "BENCH_KEYS", "COMMANDS", "MAX_BENCH_SECONDS", "MAX_BENCH_SIZE", "MAX_MUTE_S",
    "MAX_TEXT", "RING_KINDS", "RUNBOOK_TARGETS", "SILENCE_MAX_S", "SILENCE_MIN_S", "USAGE",
    "Audit", "Bench", "BenchValue", "Cache", "Command", "Findings", "Fix", "FixFinding",
    "GrammarError", "Health", "Help", "History", "Maintenance", "Mute", "MuteList", "Osd", "Plan", "Pools",
    "Ring", "Silence", "Silences", "Unmute", "bench_option", "check_name", "check_osd",
    "osd_ranges", "parse", "parse_osd", "parse_target", "resolve_cluster", "suggest",
    "tokenize",
]

MAX_MUTE_S = 30 * 86400.0
_ALERT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_:]{0,127}", re.ASCII)
SILENCE_MIN_S, SILENCE_MAX_S = 300.0, 30 * 86400.0


def _no_more(cmd: str, rest: Sequence[str]) -> None:
    if rest:
        raise GrammarError(f"unexpected `{show(rest[0])}` after `{cmd}`; usage: "
                           f"{USAGE[cmd]}")


def parse(text: str, runbooks: Iterable[str] | None = None) -> Command:
    """Parse one command line. ``runbooks`` are the names that exist (default: agreed)."""
    rb_names = sorted(runbooks) if runbooks is not None else sorted(RUNBOOK_TARGETS)
    toks = tokenize(text)
    toks, cluster = take_cluster(toks)
    if not toks:
        return Help(None, cluster)
    verb, rest = toks[0].lower(), toks[1:]
    if verb not in COMMANDS:
        hint = suggest(verb, COMMANDS) or f"; commands: {', '.join(COMMANDS)}"
        raise GrammarError(f"unknown command `{show(toks[0])}`{hint}")
    if verb == "health":
        snapshot = None
        if len(rest) >= 2 and rest[-2].lower() == "from":
            snapshot = rest[-1]
            if not SNAPSHOT_RE.match(snapshot):
                raise GrammarError(f"`{show(snapshot)}` is not a snapshot name (letters, "
                                   "digits, `.`, `_`, `-`; at most 64)")
            rest = rest[:-2]
        if len(rest) > 1:
            _no_more(verb, rest[1:])
        if rest:
            if cluster is not None and rest[0] != cluster:
                raise GrammarError(f"two clusters named (`{rest[0]}` and `{cluster}`)")
            if not NAME_RE.match(rest[0]):
                raise GrammarError(f"`{show(rest[0])}` is not a cluster name")
            cluster = rest[0]
        return Health(cluster, snapshot)
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
            raise GrammarError(f"unknown ring `{show(rest[0])}`: one of "
                               f"{', '.join(RING_KINDS)}{suggest(kind, RING_KINDS)}")
        return Ring(cluster, kind)
    if verb == "help":
        _no_more(verb, rest[1:])
        topic = rest[0].lower() if rest else None
        if topic is not None and topic not in COMMANDS:
            raise GrammarError(f"no help on `{show(rest[0])}`{suggest(topic, COMMANDS)}")
        return Help(topic, cluster)
    if verb == "bench":
        if not rest:
            raise GrammarError(f"`bench` needs a kind; usage: {USAGE['bench']}")
        kind = rest[0].lower()
        if not NAME_RE.match(kind):
            raise GrammarError(f"`{show(rest[0])}` is not a benchmark kind")
        return Bench(kind, bench_options(rest[1:]), cluster)
    if verb in ("mute", "unmute"):
        return _mute(verb, rest, cluster)
    if verb == "maintenance":
        return _maintenance(rest, cluster)
    # plan / fix
    if not rest:
        raise GrammarError(f"`{verb}` needs a runbook and a target; usage: {USAGE[verb]}")
    if verb == "fix" and CODE_RE.match(rest[0]):
        _no_more(verb, rest[2:])
        target = rest[1] if len(rest) > 1 else None
        if target is not None and not (NAME_RE.match(target) or DEVICE_RE.match(target)):
            raise GrammarError(f"`{show(target)}` is not a target")
        return FixFinding(rest[0], target, cluster)
    runbook = rest[0].lower()
    if runbook not in rb_names:
        raise GrammarError(f"unknown runbook `{show(rest[0])}`{suggest(runbook, rb_names)}"
                           f" (runbooks: {', '.join(rb_names)})")
    if len(rest) < 2:
        raise GrammarError(f"`{verb} {runbook}` needs a target; usage: {USAGE[verb]}")
    target = parse_target(runbook, rest[1])
    options = _runbook_options(verb, runbook, rest[2:])
    return (Plan if verb == "plan" else Fix)(runbook, target, cluster, options)


def _runbook_options(verb: str, runbook: str, words: Sequence[str]
                     ) -> tuple[tuple[str, str], ...]:
    """The words after a runbook's target: ``key=value`` for the keys the runbook reads
    (``Runbook.option_keys``), and one bare word for its ``mode`` (``fix
    pg-mark-unfound-lost 3.0 revert``). Only the spelling is checked here; the runbook
    judges the values (an unknown mode is its one-line refusal)."""
    if not words:
        return ()
    from runbooks.catalog import registry

    rb = registry().get(runbook)
    keys = tuple(rb.option_keys) if rb is not None else ()
    out: dict[str, str] = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep:
            key, value = "mode", w
        key = key.lower()
        if key not in keys:
            if not keys:
                raise GrammarError(f"`{runbook}` takes no options: unexpected "
                                   f"`{show(w)}`; usage: {USAGE[verb]}")
            raise GrammarError(f"`{runbook}` takes {', '.join(f'{k}=' for k in keys)}"
                               + (" (or the mode alone)" if "mode" in keys else "")
                               + f", not `{show(w)}`")
        if not NAME_RE.match(value):
            raise GrammarError(f"`{show(value)}` is not a value for {key}")
        if key in out:
            raise GrammarError(f"{key} given twice")
        out[key] = value
    return tuple(out.items())


def _mute(verb: str, rest: Sequence[str], cluster: str | None) -> Command:
    from core.argtypes import parse_duration

    if verb == "mute" and len(rest) == 1 and rest[0].lower() == "list":
        return MuteList(cluster)
    if not rest or not CODE_RE.match(rest[0]):
        raise GrammarError(f"`{verb}` needs a finding CODE; usage: {USAGE[verb]}")
    code, rest = rest[0], list(rest[1:])
    entity = None
    if rest and rest[0].lower() != "for":
        entity = parse_entity(rest.pop(0))
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
    return Mute(code, entity, for_s, clip_words(words, 300), cluster)


def _maintenance(rest: Sequence[str], cluster: str | None) -> Maintenance:
    """``maintenance start HOST for 2h`` | ``end HOST`` | ``list``: the host's spelling and
    the window are the runbook's to judge (runbooks.targets, runbooks.expiry)."""
    from runbooks.expiry import parse_window
    from runbooks.model import InvalidRequest

    action = rest[0].lower() if rest else ""
    if action == "list":
        _no_more("maintenance", rest[1:])
        return Maintenance("list", None, None, cluster)
    if action not in ("start", "end") or len(rest) < 2:
        raise GrammarError(f"usage: {USAGE['maintenance']}")
    host = rest[1]
    if action == "end":
        _no_more("maintenance", rest[2:])
        return Maintenance("end", host, None, cluster)
    words = list(rest[2:])
    window = "2h"
    if words and words[0].lower() == "for" and len(words) >= 2:
        window = words[1]
        words = words[2:]
    elif words and words[0].lower().startswith("for="):
        window = words.pop(0)[4:]
    _no_more("maintenance", words)
    try:
        parse_window(window)
    except InvalidRequest as e:
        raise GrammarError(f"maintenance window: {e}") from None
    return Maintenance("start", host, window.strip().lower(), cluster)


def _parse_silence(rest: Sequence[str], cluster: str | None) -> Silence:
    from core.argtypes import parse_duration

    if not rest:
        raise GrammarError(f"`silence` needs an alert name; usage: {USAGE['silence']}")
    if not _ALERT_RE.fullmatch(rest[0]):
        raise GrammarError(f"`{show(rest[0])}` is not an alert name (letters, digits, _ :)")
    dur = 4 * 3600.0
    words = list(rest[1:])
    if words and words[0].lower().startswith("for="):
        try:
            dur = parse_duration(words.pop(0)[4:], SILENCE_MIN_S, SILENCE_MAX_S)
        except ValueError as e:
            raise GrammarError(f"silence for=: {e}") from None
    reason = clip_words(words, 200)
    return Silence(rest[0], dur, reason, cluster)


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
