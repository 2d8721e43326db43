"""Would this cluster's Ceph take a ``ceph ...`` command stordoc prints?

Every command a person is told to run (a finding's cause, a step by hand, a plan's
step, the docs) is checked against the command table of the cluster's release, the one
the ``ceph`` CLI itself validates against: the monitors' ``get_command_descriptions``
(the manager's commands with it), the ``tell`` tables of an OSD, a monitor and the
manager, and the admin sockets' (``ceph daemon``). The tables are captured from the
lab of each release (``python -m lab.capture_commands``) into ``checks/ceph_cmdtables/``;
the matching is Ceph's own parser, ``ceph_argparse.validate_command`` (python3-ceph-argparse,
which ships with the ``ceph`` CLI). Without a table for the release, or without
ceph_argparse, nothing is judged (``ok`` None) and nothing is withheld.

A word in capitals (``N``, ``PGID``, ``osd.N``, ``host=HOST``) is a placeholder the
reader fills in: it stands for any value of its argument.

``vetted`` is what the check engine applies to every finding's text: a command the
release refuses is replaced by ``ceph PREFIX -h`` (the CLI's help for the command it
meant, which lists what that Ceph takes), so it is never printed; one refused only for
its missing confirmation word (``ceph osd lost 2``: EPERM, ``CONFIRM``) gets the word.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

TABLES = Path(__file__).resolve().parent / "ceph_cmdtables"

# the ceph CLI's own options that take a value (they come before or between the words)
_OPTS_WITH_VALUE = frozenset({"-f", "--format", "-o", "--out-file", "-i", "--in-file",
                              "-c", "--conf", "--cluster", "--id", "--user", "-n",
                              "--name", "--connect-timeout", "--setuser", "--setgroup"})
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
# commands the monitor refuses (EPERM, "are you SURE?") without their confirmation word,
# whatever the table says (it lists the word as optional): src/mon/OSDMonitor.cc and
# MDSMonitor; ``osd lost`` and ``osd purge-new`` measured on the Pacific lab
CONFIRM: Mapping[str, str] = {
    "osd lost": "--yes-i-really-mean-it", "osd destroy": "--yes-i-really-mean-it",
    "osd purge": "--yes-i-really-mean-it", "osd purge-new": "--yes-i-really-mean-it",
    "osd force-create-pg": "--yes-i-really-mean-it", "fs rm": "--yes-i-really-mean-it",
    "osd pool delete": "--yes-i-really-really-mean-it",
    "osd pool rm": "--yes-i-really-really-mean-it",
}
_lock = threading.Lock()
_KINDS = ("osd", "mon", "mgr")
# manager modules the labs do not load when the tables are captured: their commands exist
# only where the module runs (DASHBOARD_DEBUG is raised by a running dashboard), so a
# command of theirs is not judged, never "refused"
_UNCAPTURED_MODULES = frozenset({"dashboard", "orch", "cephadm", "nfs", "rgw", "restful",
                                 "influx", "telegraf", "zabbix", "k8sevents", "rook"})


@dataclass(frozen=True)
class Judged:
    """One command's verdict: ``ok`` True (Ceph takes it), False (it refuses it: ``why``)
    or None (not judged: ``why``). ``perm`` is the matched command's permission (``r``:
    read-only; the tell and admin-socket tables carry none), ``table`` where it was looked
    up (``mon``, ``tell osd``, ``daemon osd``)."""

    command: str
    ok: bool | None
    why: str = ""
    perm: str = ""
    table: str = ""
    prefix: str = ""  # the command's prefix words as far as a signature matched them
    # the words name a command Ceph has, its arguments left out (``ceph config rm``): a
    # reference for the reader, not a line to run as it is; never withheld
    named: bool = False

    @property
    def read_only(self) -> bool:
        return self.ok is True and bool(self.perm) and not set(self.perm) & {"w", "x"}


def is_placeholder(word: str) -> bool:
    """``N``, ``PGID``, ``osd.N``, ``host=HOST``: a value the reader fills in."""
    return any(_PLACEHOLDER.match(part) for part in re.split(r"[.=:,/]", word) if part)


def releases() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in TABLES.glob("*.json")))


@lru_cache(maxsize=8)
def _raw_table(release: str) -> Mapping[str, Any] | None:
    path = TABLES / f"{release.strip().lower()}.json"
    try:
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def _argparse() -> Any:
    try:
        import ceph_argparse
    except ImportError:
        return None
    return ceph_argparse


@lru_cache(maxsize=32)
def _sigdict(release: str, table: str) -> dict[str, dict[str, Any]] | None:
    """The parsed signatures of one table (``mon``, ``tell osd``, ``daemon mgr``), each
    argument type made to take a placeholder."""
    raw = _raw_table(release)
    ap = _argparse()
    if raw is None or ap is None:
        return None
    node: Any = raw
    for key in table.split():
        node = node.get(key) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        return None
    cmds: dict[str, dict[str, Any]] = {}
    for tag, cmd in node.items():
        # Reef marks keyword-only arguments ``positional: false``: Pacific's parser knows
        # no such key (taking them by position too is more lenient, never stricter)
        sig = [{k: v for k, v in d.items() if k != "positional"} if isinstance(d, dict)
               else d for d in cmd["sig"]]
        try:
            parsed = ap.parse_funcsig(sig)
        except Exception:  # a type this parser does not know: the command is skipped
            continue
        for desc in parsed:
            if desc.t is not ap.CephPrefix:
                desc.instance.__class__ = _lenient(desc.instance.__class__)
        cmds[tag] = {"help": "", **cmd, "sig": parsed}
    return cmds


@cache
def _lenient(cls: type) -> type:
    """``cls`` that also takes a placeholder word as its value."""

    def valid(self: Any, s: str, partial: bool = False) -> None:
        if is_placeholder(s):
            self.val = s
            return
        getattr(cls, "valid")(self, s, partial)  # noqa: B009  (a class made at runtime)

    return type(f"Lenient{cls.__name__}", (cls,), {"valid": valid})


def _words(command: str | Sequence[str]) -> list[str] | None:
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return None
    return list(command)


def _strip_cli_options(args: list[str]) -> list[str]:
    out: list[str] = []
    it = iter(args)
    for a in it:
        if a in _OPTS_WITH_VALUE:
            next(it, None)
        elif a.split("=", 1)[0] in _OPTS_WITH_VALUE and "=" in a:
            continue
        else:
            out.append(a)
    return out


def _route(args: list[str], ap: Any) -> tuple[tuple[str, ...], list[str]] | str:
    """The tables a command is validated against and its words there, as the CLI does:
    ``tell NAME ...`` the daemon's, ``daemon NAME ...`` its admin socket's (any kind's for
    a placeholder name), ``pg PGID ...`` the PG's primary OSD's, anything else the
    monitors'. A string: why not."""
    if args[:1] in (["tell"], ["daemon"]):
        if len(args) < 3:
            return f"{args[0]} needs a daemon and a command"
        kind = args[1].split(".", 1)[0]
        if is_placeholder(kind):  # ``ceph daemon DAEMON ...``: any daemon's
            return tuple(f"{args[0]} {k}" for k in _KINDS), args[2:]
        if kind not in _KINDS:
            return f"no {args[0]} table for {args[1]} (mds, client: not captured)"
        if not is_placeholder(args[1]):
            try:
                ap.CephName().valid(args[1])
            except ap.ArgumentError as e:
                return f"{args[1]}: {e}"
        return (f"{args[0]} {kind}",), args[2:]
    if len(args) >= 3 and args[0] == "pg":
        try:
            ap.CephPgid().valid(args[1])
            return ("tell osd",), args
        except ap.ArgumentError:
            if is_placeholder(args[1]):
                return ("tell osd",), args
    return ("mon",), args


def judge(command: str | Sequence[str], release: str) -> Judged:
    """Would Ceph of ``release`` take ``command`` (``"ceph osd unset pause"`` or its
    argv)? Ceph's parser decides; its complaint is kept in ``why``."""
    words = _words(command)
    text = command if isinstance(command, str) else shlex.join(command)
    if not words or words[0] != "ceph":
        return Judged(text, None, "not a ceph command")
    ap = _argparse()
    if ap is None:
        return Judged(text, None, "ceph_argparse is not installed (python3-ceph-argparse)")
    if _raw_table(release) is None:
        return Judged(text, None, f"no command table for Ceph {release}")
    args = ["status" if a in ("-s", "--status") else a
            for a in _strip_cli_options(words[1:])]
    helping = bool(args) and args[-1] in ("-h", "--help")
    if helping:
        args = args[:-1]
    if not args:
        return Judged(text, True, perm="r", table="mon")
    routed = _route(args, ap)
    if isinstance(routed, str):
        return Judged(text, None if "not captured" in routed else False, routed)
    tables, rest = routed
    if tables == ("mon",) and rest[0] in _UNCAPTURED_MODULES and not any(
            c["sig"][:1] == [rest[0]]
            for c in (_raw_table(release) or {}).get("mon", {}).values()):
        return Judged(text, None, f"the manager module {rest[0]} was not loaded where "
                      f"Ceph {release}'s table was captured")
    best = Judged(text, None, f"no {tables[0]} table for Ceph {release}")
    for table in tables:
        j = _judge_in(text, release, table, rest, helping, ap)
        if j.ok or best.ok is None:
            best = j
        if j.ok:
            break
    return best


def _judge_in(text: str, release: str, table: str, rest: list[str], helping: bool,
              ap: Any) -> Judged:
    sigs = _sigdict(release, table)
    if sigs is None:
        return Judged(text, None, f"no {table} table for Ceph {release}")
    prefix = _prefix(sigs, rest, ap)
    if helping:  # the CLI prints the signatures that start with these words
        return Judged(text, bool(prefix) or not rest, "" if prefix else
                      f"no {table} command starts with {' '.join(rest[:2])!r}",
                      perm="r", table=table, prefix=prefix)
    err = io.StringIO()
    # only the commands whose words are these words (Ceph's parser copies every
    # signature it tries: the whole table is ~1 s a command, these few milliseconds)
    near = {k: c for k, c in sigs.items() if _words_fit(c["sig"], rest, ap)} or sigs
    with _lock, contextlib.redirect_stderr(err):  # it prints its advice to stderr
        try:
            valid = ap.validate_command(near, rest)
        except Exception as e:  # ArgumentError out of a malformed word
            valid = {}
            print(f"{type(e).__name__}: {e}", file=err)
    if not valid:
        why = " ".join(err.getvalue().split())[:300] or "no command matches"
        named = bool(prefix) and prefix == " ".join(rest) and any(
            m in why for m in ("missing required parameter", "saw 0 of", "not enough"))
        return Judged(text, False, why, table=table, prefix=prefix, named=named)
    cmd = _matched(sigs, valid)
    prefix = str(valid.get("prefix", prefix))
    perm = str(cmd.get("perm", "")) if cmd else ""
    sure = CONFIRM.get(prefix) if table == "mon" else None
    if sure and sure not in rest:
        return Judged(text, False, f"Ceph asks for {sure} (EPERM: are you SURE?)", perm,
                      table, prefix)
    return Judged(text, True, perm=perm, table=table, prefix=prefix)


def _words_fit(sig: Sequence[Any], words: Sequence[str], ap: Any) -> bool:
    """Each of the signature's fixed words that has a word at its place is that word."""
    return all(desc.instance.prefix == words[i] for i, desc in enumerate(sig)
               if i < len(words) and desc.t is ap.CephPrefix)


@lru_cache(maxsize=2048)
def _judge_text(command: str, release: str) -> Judged:
    return judge(command, release)


def _prefix(sigs: Mapping[str, Mapping[str, Any]], words: Sequence[str], ap: Any) -> str:
    """The longest run of leading words that is the start of some command's prefix."""
    best: list[str] = []
    for cmd in sigs.values():
        got: list[str] = []
        for desc, w in zip(cmd["sig"], words):
            if desc.t is not ap.CephPrefix or desc.instance.prefix != w:
                break
            got.append(w)
        if len(got) > len(best):
            best = got
    return " ".join(best)


def _matched(sigs: Mapping[str, Mapping[str, Any]], valid: Mapping[str, Any]
             ) -> Mapping[str, Any] | None:
    """The command whose prefix words the validated dict carries."""
    prefix = str(valid.get("prefix", ""))
    for cmd in sigs.values():
        words = [d.instance.prefix for d in cmd["sig"] if hasattr(d.instance, "prefix")]
        if " ".join(words) == prefix:
            return cmd
    return None


# ``ceph ...`` inside backquotes (up to a shell pipe or list), or in parentheses
_QUOTED = re.compile(r"`(ceph [^`]*)`")
_PAREN = re.compile(r"\((ceph [a-z][^()`;]*)\)")
# where a command ends inside a text: a shell pipe or list, or the prose after it
_SHELL_END = re.compile(r"(?:\s(?:\\?\||&&|;|>)\s|[:,;]\s).*$")
_ENTITY = re.compile(r"^ceph [A-Z][A-Z0-9_]+$")  # ``ceph OSD_DOWN``: a finding's entity


def commands_in(text: str) -> Iterator[tuple[str, str]]:
    """(the span as written, the command) for each ``ceph ...`` command a text holds: in
    backquotes, in parentheses, or the whole text when it is one command."""
    found = [m.group(1) for rx in (_QUOTED, _PAREN) for m in rx.finditer(text)]
    stripped = text.strip()
    if not found and stripped.startswith("ceph ") and "`" not in stripped:
        found = [stripped]
    for span in found:
        cmd = _SHELL_END.sub("", span).strip()
        if cmd != "ceph ..." and not _ENTITY.match(cmd):
            yield span, cmd


def vetted(text: str, release: str) -> str:
    """``text`` with each command Ceph of ``release`` refuses replaced by the CLI's help
    for what it meant (``ceph osd unset -h``); unjudged commands are left as written."""
    if "ceph " not in text:
        return text
    for span, cmd in list(commands_in(text)):
        j = _judge_text(cmd, release)
        if j.ok is False and not j.named:
            sure = CONFIRM.get(j.prefix)
            if sure and _judge_text(f"{cmd} {sure}", release).ok:  # the word it asks for
                text = text.replace(span, span.replace(cmd, f"{cmd} {sure}", 1), 1)
            else:
                text = text.replace(span, f"ceph {j.prefix} -h" if j.prefix else "ceph -h",
                                    1)
    return text


def deep_vetted(value: Any, release: str) -> Any:
    """``vetted`` through the strings of a JSON-like value (a finding's evidence)."""
    if isinstance(value, str):
        return vetted(value, release)
    if isinstance(value, Mapping):
        return {k: deep_vetted(v, release) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_vetted(v, release) for v in value]
    if isinstance(value, tuple):
        return tuple(deep_vetted(v, release) for v in value)
    return value


__all__ = ["Judged", "commands_in", "deep_vetted", "is_placeholder", "judge",
           "releases", "vetted"]
