"""A hostile run of the real stordoc (issue #37's goal line), without a lab: some
1,500-3,000 inputs in a few minutes on a 2-core machine, each judged, and the counts of
bad outcomes printed, one line per category:

  unauthorized   a Slack command or button from a user not in the roles (or a forged,
                 replayed or self-confirmed button) that plans a change for them (a
                 Confirm button in their channel), runs one ("started by", "running"),
                 or leaves a mute or maintenance window behind
  secrets        a secret pasted in a Slack command, a mute reason, a CLI ``--reason`` or
                 ``-o`` value found afterwards in the raw bytes of a journal (SQLite file,
                 its -wal/-shm) or in any call the fake Slack received
  tracebacks     "Traceback (most recent call last)" in any output, log record or stderr,
                 a log record carrying exc_info, or an exception class name (KeyError, ...)
                 in a user-facing line (CLI output, an HTTP answer, a Slack post)
  500s           an HTTP 5xx answer of the bot's endpoint
  hangs          a CLI run (in-process or a subprocess) or an HTTP request not done within
                 its bound (HANG_S / FILE_HANG_S / HTTP_HANG_S, far above the configured
                 timeouts of the config under test: Ceph 1 s, Prometheus 2 s)
  false OK       a check that says OK (exit 0, "All checks passed.") on a cluster it
                 cannot reach, a snapshot it could not read whole or a Prometheus whose
                 every answer is odd (the base snapshot has a WARN finding: read right it is
                 never OK)

Parts (all real: the CLI through ``stordoc.cli.main`` in this process and ``python -m
stordoc`` in subprocesses, the slack-bolt App over HTTP on loopback with the repo's fake
Slack, SQLite journals, a fake Prometheus on loopback, snapshot directories):

  cli        every argparse slot of every subcommand (walked from the parser) with hostile
             values, against a config whose cluster does not answer
  cli-secret ``mute --reason``, ``-o KEY=VALUE``, ``--pool``, ``--cluster`` with secrets
  files      config-named files (the config, journal, ceph conf, keyring, Swift key, SSH key,
             known_hosts, a ring, snapshot files) that are FIFOs, /dev/zero, directories,
             300 MB sparse files or symlink loops, each CLI in a subprocess with a timeout
  snapshot   ``check --from DIR`` on copies of a saved snapshot with odd values
             (``taken_at`` 1e20, -1e18, NaN; each Ceph answer [], null, "x", ...)
  prom       ``check`` of hosts whose facts come from a fake Prometheus answering NaN, Inf,
             strings, missing fields, odd shapes
  slack      signed Slack bodies of many JSON shapes per payload type (slash command form,
             block_actions, view_submission, events nested 60 deep, event null, ...)
  slack-auth commands and buttons from users not in the roles, forged/replayed buttons
  slack-secret secrets in commands, mute reasons, mentions
  slack-snap ``health lab from NAME`` on the odd snapshots

Two goal figures are measured and printed too: a signed request's answer time while 64
slow connections are open (goal <= 2 s) and the p95 of 20 concurrent ``health`` (<= 2 s).

A fixed seed (``--seed``, default 37) makes runs comparable; ``--quick`` is a smaller
run. Exit status 1 when any bad-outcome count is non-zero or a goal is missed.

    .venv/bin/python benchmarks/hostile_run.py            # the full run
    .venv/bin/python benchmarks/hostile_run.py --quick -v # smaller, and the first examples

Only public entry points are used (``stordoc.cli.main``/``build_parser``, settings
loading, ``core.service.snapshots.load``, the bot's ``build_bot`` through
tests/support's BotHarness), so the script keeps working while internals change.
Attribution is per input where the input is known (its own Slack channel, its own CLI
run); log records and stderr text written by the bot's background workers are counted
against the input sent last.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import copy
import http.client
import io
import json
import logging
import math
import os
import random
import re
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CATEGORIES = ("unauthorized", "secrets", "tracebacks", "http500", "hangs", "false_ok")
LABELS = {"unauthorized": "unauthorized", "secrets": "secrets stored/posted",
          "tracebacks": "tracebacks", "http500": "500s", "hangs": "hangs",
          "false_ok": "false OK"}
# what the run before issue #37's fixes found non-zero (the unit test does not assert these
# are zero on a real sample: it tests the counting, not today's product)
# the categories a run may still find (none since issue #37's fixes: before them, secrets,
# tracebacks, hangs, false OK and 500s; tests/unit/test_hostile_run.py asserts the rest zero)
KNOWN_BAD_BEFORE: frozenset[str] = frozenset()

HANG_S = 30.0  # an in-process CLI run (its cluster's Ceph timeout is 1 s)
FILE_HANG_S = 20.0  # a CLI subprocess on a hostile file
HTTP_HANG_S = 15.0  # one HTTP request to the bot (it acks at once, works in the background)
SNAPSHOT = ROOT / "tests/fixtures/snapshots/reef/osd-unmounted-out"  # WARN when read right

TRACEBACK = "Traceback (most recent call last)"
_EXC_NAMES = sorted({n for n, v in vars(builtins).items() if isinstance(v, type)
                     and issubclass(v, BaseException) and not issubclass(v, Warning)
                     and n not in ("BaseException", "SystemExit", "KeyboardInterrupt",
                                   "GeneratorExit")}
                    | {"JSONDecodeError", "ValidationError", "OperationalError",
                       "IntegrityError", "DatabaseError", "ProgrammingError", "SSLError",
                       "ProtocolError", "SlackApiError", "TOMLDecodeError", "HTTPError",
                       "URLError", "RemoteDisconnected", "IncompleteRead", "ParserError"})
EXC_NAME = re.compile(r"\b(?:" + "|".join(map(re.escape, _EXC_NAMES)) + r")\b")


# =========================================================================== counting


@dataclass
class Tally:
    """Inputs per part and, per bad-outcome category, the inputs that had it (an input
    counts once per category, with the first detail seen)."""

    inputs: Counter[str] = field(default_factory=Counter)
    hits: dict[str, dict[str, str]] = field(
        default_factory=lambda: {c: {} for c in CATEGORIES})
    goals: list[tuple[str, bool]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def new(self, part: str) -> str:
        """A key for one more input of ``part``."""
        self.inputs[part] += 1
        return f"{part}#{self.inputs[part]}"

    def hit(self, cat: str, key: str, detail: str) -> None:
        assert cat in CATEGORIES, cat
        self.hits[cat].setdefault(key, _short(detail))

    def count(self, cat: str) -> int:
        return len(self.hits[cat])

    def by_part(self, cat: str) -> Counter[str]:
        return Counter(k.split("#")[0] for k in self.hits[cat])

    def bad(self) -> bool:
        return any(self.count(c) for c in CATEGORIES) or any(not ok for _, ok in self.goals)

    def report(self, out: Any = sys.stdout, examples: int = 0) -> None:
        total = sum(self.inputs.values())
        parts = ", ".join(f"{p} {n}" for p, n in sorted(self.inputs.items()))
        print(f"inputs                 {total:6d}  ({parts})", file=out)
        for c in CATEGORIES:
            per = ", ".join(f"{p} {n}" for p, n in sorted(self.by_part(c).items()))
            print(f"{LABELS[c]:22s} {self.count(c):6d}" + (f"  ({per})" if per else ""),
                  file=out)
            if c == "tracebacks" and self.count(c):
                kinds = Counter("log record" if d.startswith("log ") else "Traceback text"
                                if d.startswith(TRACEBACK) else "thread" if
                                d.startswith("uncaught") else "exception name"
                                for d in self.hits[c].values())
                print("    (" + ", ".join(f"{n} {k}" for k, n in kinds.most_common()) + ")",
                      file=out)
            for k, d in list(self.hits[c].items())[:examples]:
                print(f"    {k}: {d}", file=out)
        print(f"{'total bad':22s} {sum(self.count(c) for c in CATEGORIES):6d}", file=out)
        for line, ok in self.goals:
            print(f"goal: {line}: {'met' if ok else 'MISSED'}", file=out)
        for n in self.notes:
            print(f"note: {n}", file=out)


def _short(s: str, n: int = 160) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + "..."


def judge_text(t: Tally, key: str, text: str, user_facing: bool = True) -> None:
    """Tracebacks in ``text``; with ``user_facing``, also an exception class name."""
    if TRACEBACK in text:
        i = text.index(TRACEBACK)
        t.hit("tracebacks", key, text[i:i + 300])
        return
    if user_facing:
        m = EXC_NAME.search(text)
        if m:
            lo = max(0, m.start() - 80)
            t.hit("tracebacks", key, text[lo:m.end() + 80])


@dataclass
class Run:
    """What one CLI run did: exit status (None: it never returned), output, hung."""

    rc: int | None
    out: str = ""
    err: str = ""
    hung: bool = False


def judge_cli(t: Tally, key: str, argv: Sequence[str], r: Run, check_like: bool) -> None:
    what = " ".join(argv)[:120]
    if r.hung:
        t.hit("hangs", key, f"{what}: not done in time")
        return
    judge_text(t, key, r.out + "\n" + r.err)
    if check_like and r.rc == 0:
        t.hit("false_ok", key, f"{what}: exit 0 ({r.out.strip()[:80]})")


def judge_http(t: Tally, key: str, what: str, status: int | None, body: str) -> None:
    if status is None:
        t.hit("hangs", key, f"{what}: no answer in {HTTP_HANG_S:.0f} s")
        return
    if status >= 500:
        t.hit("http500", key, f"{what}: HTTP {status} {body[:80]}")
    judge_text(t, key, body)


def scan_secrets(t: Tally, needles: Mapping[str, str], blobs: Mapping[str, bytes]) -> None:
    """Each needle (a secret's distinctive part) -> its input's key: found in any blob."""
    for needle, key in needles.items():
        nb = needle.encode()
        for where, blob in blobs.items():
            if nb in blob:
                t.hit("secrets", key, f"{needle[:24]}... in {where}")
                break


def journal_blobs(paths: Iterable[Path]) -> dict[str, bytes]:
    """The raw bytes of each SQLite file given, with its -wal and -shm."""
    out = {}
    for p in paths:
        for q in (p, Path(str(p) + "-wal"), Path(str(p) + "-shm"), Path(str(p) + "-journal")):
            if q.is_file():
                out[str(q)] = q.read_bytes()
    return out


# =========================================================================== secrets


def _tag(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(n))


def secret_cases(rng: random.Random) -> list[tuple[str, str]]:
    """(text to paste, the distinctive part to look for afterwards), one of each form the
    issue names, each with values of its own so a leak is traced to its input."""
    t = _tag(rng)
    b64 = string.ascii_letters + string.digits
    aws = "".join(rng.choice(b64) for _ in range(40))
    ceph = "AQ" + "".join(rng.choice(b64) for _ in range(36)) + "=="
    pem_line = "MIIEowIBAAKCAQEA" + "".join(rng.choice(b64) for _ in range(48))
    pem = ("-----BEGIN RSA PRIVATE KEY-----\n" + pem_line + "\n"
           + "".join(rng.choice(b64) for _ in range(64)) + "\n-----END RSA PRIVATE KEY-----")
    xoxb = f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**11, 10**12)}-{t}{_tag(rng, 16).lower()}"
    return [
        (f"pass=hunter2{t}", f"hunter2{t}"),
        (f"password: x{t}", f"x{t}"),
        (f"Authorization: Bearer abc.def{t}", f"abc.def{t}"),
        (pem, pem_line),
        (f"AKIAIOSFODNN7EXAMPLE {aws}", aws),
        (xoxb, xoxb),
        (ceph, ceph),
        (f"https://u:pw{t}@host", f"pw{t}"),
    ]


# =========================================================================== the CLI


HOSTILE = [
    "inf", "-inf", "nan", "NaN", "1e400", "-1e400", "1e308", str(10**20), str(-(10**20)),
    "-1", "0", "00", "1e3", "0x10", "1_000", "+5", ".5", "5.", " 5", "5 ",
    "\u0662", "\uff12", "\u0968\u0968", "osd.\u0662", "\U0001d7d0",
    "\u2212" "1", "\u00bd", "\u2167", "\u0031\u0336",
    "", " ", "\x00", "a\x00b", "\n", "a\nb", "\x1b[31m", "x" * 5000, "9" * 400,
    "/etc", "../../etc/passwd", "/proc/self/mem", "/dev/zero", "-", "--", "[bold]x[/]",
    "$(reboot)", "osd.2;reboot", "4k", "4M", "1G", "1T", "2T", "80/15/5", "80/15/4",
    "200/0/0", "pool=/etc", "nosuch=1", "c1", "osd.1", "OSD_DOWN_OUT", "OSD_DATA_UNMOUNTED",
    "CEPH_UNREACHABLE", "4h", "0s", "3650d", "node1", "`;reboot`", "%s%n", "{0}", "'\"",
]
# started long-running things (a server, a UI, a lab, a watch): only parsed
PARSE_ONLY = {"bot", "tui", "lab", "watch"}
CHECK_LIKE = {("check",), ("swift", "dispersion", "report")}


@dataclass(frozen=True)
class Slot:
    path: tuple[str, ...]
    option: str | None  # "--duration", or None for a positional
    index: int
    positionals: tuple[tuple[str, ...], ...]  # each positional's choices (or ())

    def argv(self, value: str) -> list[str]:
        pos = [c[0] if c else "x" for c in self.positionals]
        if self.option is None:
            pos[self.index] = value
            return [*self.path, *pos]
        return [*self.path, *pos, f"{self.option}={value}"]


def cli_slots() -> list[Slot]:
    """Every option taking a value and every positional of every subcommand."""
    from stordoc.cli import build_parser

    out: list[Slot] = []

    def walk(p: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        pos = tuple(tuple(str(c) for c in (a.choices or ())) for a in p._actions
                    if not a.option_strings and not isinstance(a, argparse._SubParsersAction))
        if path:
            for a in p._actions:
                if a.option_strings and a.nargs != 0 and a.dest not in ("help", "config"):
                    out.append(Slot(path, max(a.option_strings, key=len), -1, pos))
            out.extend(Slot(path, None, i, pos) for i in range(len(pos)))
        for s in subs:
            for name, sp in s.choices.items():
                walk(sp, (*path, name))

    walk(build_parser(), ())
    return out


class _Alarm(BaseException):
    pass


class LogTrap(logging.Handler):
    """Every log record of the process while installed (the root logger at INFO)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[tuple[str, logging.LogRecord]] = []
        self.current = "-"

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((self.current, record))

    @contextlib.contextmanager
    def installed(self) -> Iterator[LogTrap]:
        root = logging.getLogger()
        old = root.level
        root.addHandler(self)
        root.setLevel(min(old, logging.INFO) if old else logging.INFO)
        try:
            yield self
        finally:
            root.removeHandler(self)
            root.setLevel(old)

    def judge(self, t: Tally) -> None:
        for key, rec in self.records:
            try:
                msg = rec.getMessage()
            except Exception as e:  # a record whose arguments do not format
                msg = f"unformattable log record: {e!r}"
            if rec.exc_info or TRACEBACK in msg:
                t.hit("tracebacks", key, f"log {rec.name}: {msg[:120]} (exc_info)"
                      if rec.exc_info else f"log {rec.name}: {msg}")
        self.records.clear()


def run_cli_inprocess(argv: Sequence[str], limit: float = HANG_S) -> Run:
    """``stordoc.cli.main(argv)`` on a captured terminal in this process, bounded by a
    SIGALRM after ``limit`` s (a hang); anything escaping main is its traceback text."""
    from tests.support.cli import run_main

    def alarm(*_: Any) -> None:
        raise _Alarm

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    sout, serr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(sout), contextlib.redirect_stderr(serr):
            rc, out, err = run_main(*argv)
        return Run(rc, out + sout.getvalue(), err + serr.getvalue())
    except _Alarm:
        return Run(None, sout.getvalue(), serr.getvalue(), hung=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        return Run(code, sout.getvalue(), serr.getvalue() + ("" if isinstance(e.code, int)
                                                              or e.code is None
                                                              else str(e.code)))
    except BaseException:
        return Run(None, sout.getvalue(), serr.getvalue() + traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def parse_only(argv: Sequence[str]) -> Run:
    """The parser alone (for subcommands that would start a server, a UI, a lab)."""
    from stordoc.cli import build_parser

    serr = io.StringIO()
    try:
        with contextlib.redirect_stderr(serr), contextlib.redirect_stdout(io.StringIO()):
            args = build_parser().parse_args(list(argv))
    except SystemExit as e:
        return Run(int(e.code or 0) if isinstance(e.code, int) else 64, "", serr.getvalue())
    except BaseException:
        return Run(None, "", traceback.format_exc())
    try:
        from core.argtypes import check_strings
    except ImportError:
        return Run(0)
    try:
        bad = check_strings(args)
    except BaseException:
        return Run(None, "", traceback.format_exc())
    return Run(64 if bad else 0, "", f"error: {bad}\n" if bad else "")


CliRunner = Callable[[Sequence[str]], Run]


def part_cli(t: Tally, rng: random.Random, n: int, cfg: str,
             run: CliRunner = run_cli_inprocess, logs: LogTrap | None = None) -> None:
    """``n`` (slot, hostile value) pairs through the CLI: every slot at least once when
    ``n`` allows, then at random."""
    slots = cli_slots()
    picks = [(s, rng.choice(HOSTILE)) for s in slots][:n]
    while len(picks) < n:
        s = rng.choice(slots)
        v = rng.choice(HOSTILE) if rng.random() < 0.8 else "".join(
            rng.choice(string.printable + "\u0662\u00bd\u2212") for _ in range(rng.randrange(8)))
        picks.append((s, v))
    for s, v in picks:
        key = t.new("cli")
        argv = ["--config", cfg, *s.argv(v)]
        if logs is not None:
            logs.current = key
        r = parse_only(argv) if s.path[0] in PARSE_ONLY else run(argv)
        judge_cli(t, key, argv, r, check_like=any(s.path[:len(c)] == c for c in CHECK_LIKE))
        if r.rc is not None and r.rc not in (0, 1, 2, 3, 4, 5, 64, 77, 130) and not r.hung:
            t.notes.append(f"{key}: unexpected exit {r.rc} for {' '.join(argv)[:100]}")


def part_cli_secrets(t: Tally, rng: random.Random, cfg: str, journal: Path,
                     run: CliRunner = run_cli_inprocess) -> None:
    """Secrets where a person types free text: mute reasons, -o values, names."""
    needles: dict[str, str] = {}
    forms: list[Callable[[str], list[str]]] = [
        lambda s: ["mute", "OSD_DOWN_OUT", "osd.1", "--for", "4h", "--reason", s],
        lambda s: ["mute", "OSD_FLAPPING", "--for", "1h", f"--reason=disk swap {s}"],
        lambda s: ["fix", "osd-start", "osd.1", "-o", f"key={s}", "--yes"],
        lambda s: ["plan", "osd-replace-disk", "osd.1", "-o", f"device={s}"],
        lambda s: ["bench", "rados", f"--pool={s}", "--yes"],
        lambda s: ["check", f"--cluster={s}"],
        lambda s: ["maintenance", "start", s, "--for", "2h", "--yes"],
    ]
    for form in forms:
        for text, needle in secret_cases(rng):
            key = t.new("cli-secret")
            needles[needle] = key
            argv = ["--config", cfg, *form(text)]
            judge_cli(t, key, argv, run(argv), check_like=False)
    scan_secrets(t, needles, journal_blobs([journal]))


# =========================================================================== files


UNREACHABLE = """journal = "{journal}"
[clusters.c1.ceph]
conf = "{conf}"
keyring = "{keyring}"
timeout = 1
[clusters.c1.swift]
auth_url = "http://127.0.0.1:9/auth/v1.0"
swift_dir = "{swift_dir}"
user = "u"
key = {{ file = "{swift_key}" }}
[[clusters.c1.hosts]]
name = "node1"
address = "127.0.0.1"
port = 9
timeout = 2
key_file = "{key_file}"
known_hosts = "{known_hosts}"
[bench]
max_duration_s = 10
"""


def make_hostile_file(kind: str, path: Path, sparse: Path) -> str:
    """``path`` made into ``kind``; the path to name (``/dev/zero`` is named as such)."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "sparse":
        os.link(sparse, path) if sparse.stat().st_dev == path.parent.stat().st_dev \
            else shutil.copy(sparse, path)
    elif kind == "symloop":
        path.symlink_to(path.name)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    else:
        raise ValueError(kind)
    return str(path)


FILE_KINDS = ("fifo", "devzero", "dir", "sparse", "symloop")
FILE_PLACES = ("config", "journal", "conf", "keyring", "swift_key", "key_file",
               "known_hosts", "ring", "snapshot.json", "osd_dump.json", "snapshot-save")


def file_cases(d: Path, kinds: Sequence[str], places: Sequence[str]
               ) -> list[tuple[str, list[str]]]:
    """(description, argv after ``python -m stordoc``) per kind x place, files made in
    ``d``."""
    sparse = d / "sparse-300M"
    with open(sparse, "wb") as fh:
        fh.truncate(300 * 1024 * 1024)
    out = []
    for kind in kinds:
        for place in places:
            w = d / f"{kind}-{place}"
            w.mkdir()
            vals = {"journal": w / "j.db", "conf": "/nonexistent/ceph.conf",
                    "keyring": "/nonexistent/keyring", "swift_dir": w / "swift",
                    "swift_key": w / "swift.key", "key_file": w / "id", "known_hosts":
                    w / "kh"}
            (w / "swift").mkdir()
            (w / "swift.key").write_text("k\n")
            target = w / "hostile"
            if place in ("journal", "conf", "keyring", "swift_key", "key_file", "known_hosts"):
                vals[place] = make_hostile_file(kind, target, sparse)
            elif place == "ring":
                make_hostile_file(kind, w / "swift" / "object.ring.gz", sparse)
            cfg = w / "c.toml"
            if place == "config":
                cfg_s = make_hostile_file(kind, target, sparse)
            else:
                cfg.write_text(UNREACHABLE.format(**{k: str(v) for k, v in vals.items()}))
                cfg_s = str(cfg)
            if place in ("snapshot.json", "osd_dump.json"):
                snap = w / "snap"
                shutil.copytree(SNAPSHOT, snap)
                sf = snap / ("snapshot.json" if place == "snapshot.json"
                             else "ceph/osd_dump.json")
                sf.unlink()
                make_hostile_file(kind, sf, sparse)
                out.append((f"{kind} as {place}", ["check", "--from", str(snap)]))
                continue
            if place == "snapshot-save":
                out.append((f"{kind} as snapshot save DIR",
                            ["--config", cfg_s, "snapshot", "save",
                             make_hostile_file(kind, target, sparse)]))
                continue
            out.append((f"{kind} as {place}", ["--config", cfg_s, "check"]))
            if place in ("journal", "config"):
                out.append((f"{kind} as {place} (mute --list)",
                            ["--config", cfg_s, "mute", "--list"]))
    return out


def run_subprocess(cmd: Sequence[str], limit: float, env: Mapping[str, str] | None = None
                   ) -> Run:
    """``cmd`` in a fresh process, killed after ``limit`` s (a hang)."""
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, cwd=ROOT,
                           timeout=limit, check=False, stdin=subprocess.DEVNULL,
                           env=dict(env) if env is not None else None, errors="replace")
    except subprocess.TimeoutExpired as e:
        def s(x: Any) -> str:
            return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
        return Run(None, s(e.stdout), s(e.stderr), hung=True)
    return Run(p.returncode, p.stdout, p.stderr)


def run_cli_subprocess(argv: Sequence[str], limit: float = FILE_HANG_S) -> Run:
    """``python -m stordoc ARGV`` in a fresh process, as on-call runs it."""
    from tests.support.cli import cli_argv, cli_env

    return run_subprocess(cli_argv(None, *argv), limit, cli_env(None))


def part_files(t: Tally, cases: Sequence[tuple[str, list[str]]],
               run: CliRunner = run_cli_subprocess, parallel: int = 2) -> None:
    def one(case: tuple[str, list[str]]) -> Run:
        return run(case[1])

    with ThreadPoolExecutor(parallel) as pool:
        for (what, argv), r in zip(cases, pool.map(one, cases), strict=True):
            key = t.new("files")
            judge_cli(t, key, [what, "|", *argv], r,
                      check_like=argv[-1] == "check" or "--from" in argv)


# =========================================================================== snapshots


ODD_JSON: list[Any] = [None, [], {}, "x", 0, -1, 1e308, True, [None], [{}], {"x": 1},
                       "x" * 5000]


def _deep(n: int) -> Any:
    d: Any = "bottom"
    for _ in range(n):
        d = {"a": d}
    return d


def snapshot_mutations(rng: random.Random) -> list[tuple[str, Callable[[Path], None]]]:
    """(description, a change to a copy of SNAPSHOT)."""
    muts: list[tuple[str, Callable[[Path], None]]] = []

    def set_key(file: str, path: tuple[Any, ...], value: Any, raw: str | None = None
                ) -> Callable[[Path], None]:
        def f(d: Path) -> None:
            p = d / file
            if raw is not None and not path:
                p.write_text(raw)
                return
            doc = _mutate(json.loads(p.read_text()), path, value)
            text = json.dumps(doc) if raw is None else json.dumps(doc).replace(
                json.dumps("@@RAW@@"), raw)
            p.write_text(text)
        return f

    manifest = json.loads((SNAPSHOT / "snapshot.json").read_text())
    v: Any
    for v in [1e20, -1e18, 0, -1, "x", None, [], True, 1e308, 2**64]:
        muts.append((f"taken_at {v!r}", set_key("snapshot.json", ("taken_at",), v)))
    for raw in ["NaN", "Infinity", "-Infinity", "1e400"]:
        muts.append((f"taken_at {raw}", set_key("snapshot.json", ("taken_at",), "@@RAW@@", raw)))
    for k in ["version", "format", "cluster", "ceph_error", "swift_error", "hosts", "ceph",
              "swift", "settings", "host_facts_collected"]:
        for v in ([_DELETE, None, [], {}, "x", 0, -1, 1e20, True, ["../x"], "../../etc"]
                  if k in manifest else []):
            muts.append((f"snapshot.json {k} {v!r}"[:80], set_key("snapshot.json", (k,), v)))
    muts.append(("ceph.collected_at NaN", set_key("snapshot.json", ("ceph", "collected_at"),
                                                  "@@RAW@@", "NaN")))
    for answer in sorted((SNAPSHOT / "ceph").glob("*.json")):
        rel = f"ceph/{answer.name}"
        for v in ODD_JSON:
            muts.append((f"{rel} = {json.dumps(v)[:20]}", set_key(rel, (), v, json.dumps(v))))
        muts.append((f"{rel} nested 70 deep", set_key(rel, (), None, json.dumps(_deep(70)))))
    dump = json.loads((SNAPSHOT / "ceph/osd_dump.json").read_text())
    for k in ["osds", "pools", "full_ratio", "nearfull_ratio", "backfillfull_ratio", "epoch",
              "flags", "fsid", "osd_xinfo"]:
        if k not in dump:
            continue
        for v in [_DELETE, None, [], {}, "x", -1, 1e20, [None], [{}], [{"osd": "x"}]]:
            muts.append((f"osd_dump {k} {json.dumps(v) if v is not _DELETE else 'deleted'}",
                         set_key("ceph/osd_dump.json", (k,), v)))
        if k.endswith("ratio"):
            for raw in ["NaN", "Infinity"]:
                muts.append((f"osd_dump {k} {raw}",
                             set_key("ceph/osd_dump.json", (k,), "@@RAW@@", raw)))
    for osd_k in ["osd", "up", "in", "weight", "uuid", "public_addr"]:
        for v in [_DELETE, None, "x", -1, 1e20, [], True]:
            def f(d: Path, k: str = osd_k, v: Any = v) -> None:
                p = d / "ceph/osd_dump.json"
                doc = json.loads(p.read_text())
                for o in doc.get("osds") or []:
                    if v is _DELETE:
                        o.pop(k, None)
                    else:
                        o[k] = v
                p.write_text(json.dumps(doc))
            muts.append((f"osd_dump osds[*].{osd_k} {v if v is not _DELETE else 'deleted'}", f))
    for i in range(4):
        for k in ["facts", "error", "address", "collected_at"]:
            for v in [None, 5, "", "x" * 3000, [], {}, "@@now\nx\n@@findmnt\n{"]:
                muts.append((f"hosts/{i}.json {k} {json.dumps(v)[:16]}",
                             set_key(f"hosts/{i}.json", (k,), v)))
    for k in json.loads((SNAPSHOT / "swift.json").read_text()):
        for v in [None, "x", [], {}, -1]:
            muts.append((f"swift.json {k} {json.dumps(v)}", set_key("swift.json", (k,), v)))
    for k in json.loads((SNAPSHOT / "cluster.json").read_text()):
        for v in [None, "x", [], {}, -1, _DELETE]:
            muts.append((f"cluster.json {k} {v!r}"[:60], set_key("cluster.json", (k,), v)))
    rng.shuffle(muts)
    return muts


class _Delete:
    def __repr__(self) -> str:
        return "deleted"


_DELETE: Any = _Delete()


def make_snapshots(d: Path, muts: Sequence[tuple[str, Callable[[Path], None]]]
                   ) -> list[tuple[str, Path]]:
    out = []
    for i, (what, change) in enumerate(muts):
        p = d / f"odd-{i:04d}"
        shutil.copytree(SNAPSHOT, p)
        try:
            change(p)
        except (KeyError, IndexError, TypeError) as e:  # the fixture lacks that field
            shutil.rmtree(p)
            what = f"{what} (not applied: {e!r})"
            continue
        out.append((what, p))
    return out


def part_snapshots(t: Tally, snaps: Sequence[tuple[str, Path]],
                   run: CliRunner = run_cli_inprocess, logs: LogTrap | None = None) -> None:
    for what, p in snaps:
        key = t.new("snapshot")
        if logs is not None:
            logs.current = key
        argv = ["check", "--from", str(p)]
        r = run(argv)
        judge_cli(t, key, [what, "|", *argv], r, check_like=True)


# =========================================================================== Prometheus


PROM_CFG = """journal = "{j}"
[clusters.p]
[[clusters.p.hosts]]
name = "node1"
address = "127.0.0.2"
swift_devices_dir = "/srv/node"
[[clusters.p.hosts]]
name = "node2"
address = "127.0.0.3"
swift_devices_dir = "/srv/node"
[clusters.p.prometheus]
url = "{url}"
timeout_s = 2
stale_s = 300
ssh_max_hosts = 0
"""


def prom_variants() -> list[tuple[str, Callable[[dict[str, Any]], Any]]]:
    """(description, a change of every Prometheus answer document)."""
    def each_sample(fn: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], Any]:
        def f(doc: dict[str, Any]) -> Any:
            for s in doc["data"]["result"]:
                fn(s)
            return doc
        return f

    def value(v: Any) -> Callable[[dict[str, Any]], None]:
        def f(s: dict[str, Any]) -> None:
            s["value"] = [s["value"][0], v]
        return f

    def stamp(v: Any) -> Callable[[dict[str, Any]], None]:
        def f(s: dict[str, Any]) -> None:
            s["value"] = [v, s["value"][1]]
        return f

    def setk(k: str, v: Any) -> Callable[[dict[str, Any]], None]:
        def f(s: dict[str, Any]) -> None:
            if v is _DELETE:
                s.pop(k, None)
            else:
                s[k] = v
        return f

    def labels(v: Any) -> Callable[[dict[str, Any]], None]:
        def f(s: dict[str, Any]) -> None:
            s["metric"] = {k: v for k in s.get("metric", {})}
        return f

    out: list[tuple[str, Callable[[dict[str, Any]], Any]]] = []
    v: Any
    for v in ["NaN", "+Inf", "-Inf", "Inf", "nan", "x", "", None, 1, 1.5, [], {}, "1e400",
              "0x1", "1_0", " 1", "\u0661"]:
        out.append((f"every value {json.dumps(v)}", each_sample(value(v))))
    for v in ["x", None, 1e20, -1, "NaN", []]:
        out.append((f"every timestamp {json.dumps(v)}", each_sample(stamp(v))))
    for k, v in [("value", _DELETE), ("value", None), ("value", []), ("value", [1]),
                 ("value", "1"), ("metric", _DELETE), ("metric", None), ("metric", []),
                 ("metric", "x")]:
        out.append((f"every sample {k}={v!r}", each_sample(setk(k, v))))
    # a range vector's "values" in place of an instant vector's "value" (a "values" beside
    # a good "value" is a good answer: not a case)
    out.append(("every sample values instead of value", each_sample(
        lambda s: s.update(values=[s.pop("value")]))))
    for v in [5, None, [], {}]:
        out.append((f"every label value {json.dumps(v)}", each_sample(labels(v))))
    whole: list[tuple[str, Any]] = [
        ("result null", lambda d: {**d, "data": {**d["data"], "result": None}}),
        ("result {}", lambda d: {**d, "data": {**d["data"], "result": {}}}),
        ("result 'x'", lambda d: {**d, "data": {**d["data"], "result": "x"}}),
        ("result [null]", lambda d: {**d, "data": {**d["data"], "result": [None]}}),
        ("result [1]", lambda d: {**d, "data": {**d["data"], "result": [1]}}),
        ("data missing", lambda d: {"status": "success"}),
        ("data null", lambda d: {"status": "success", "data": None}),
        ("status missing", lambda d: {"data": d["data"]}),
        ("status 'weird'", lambda d: {**d, "status": "weird"}),
        ("resultType matrix", lambda d: {**d, "data": {"resultType": "matrix", "result": [
            {"metric": s["metric"], "values": [s["value"]]} for s in d["data"]["result"]]}}),
        ("document []", lambda d: []),
        ("document null", lambda d: None),
        ("document 'x'", lambda d: "x"),
        ("document nested 70 deep", lambda d: _deep(70)),
    ]
    out.extend(whole)
    return out


def part_prom(t: Tally, d: Path, variants: Sequence[tuple[str, Callable[[Any], Any]]],
              run: CliRunner = run_cli_inprocess, logs: LogTrap | None = None) -> None:
    """``check`` of two hosts whose facts come only from a fake Prometheus, every answer
    changed the same way; the control (answers unchanged) must not be counted."""
    from tests.support.prom_server import FakeProm, FsSeries, Node

    class OddProm(FakeProm):
        change: Callable[[Any], Any] | None = None

        def body(self, expr: str) -> bytes:
            doc = json.loads(super().body(expr))
            if self.change is not None:
                doc = self.change(copy.deepcopy(doc))
            return json.dumps(doc).encode()

    nodes = [Node("127.0.0.2:9100", "node1", fs=[FsSeries("/srv/node/d1", "/dev/sdb")]),
             Node("127.0.0.3:9100", "node2", fs=[FsSeries("/srv/node/d2", "/dev/sdb")])]
    fake = OddProm(nodes)
    with fake.serve() as url:
        cfg = d / "prom.toml"
        cfg.write_text(PROM_CFG.format(j=d / "prom-j.db", url=url))
        argv = ["--config", str(cfg), "check", "--cluster", "p", "--no-record"]
        control = run(argv)
        if control.rc != 0:
            t.notes.append(f"prom: the control check (answers unchanged) exited {control.rc}: "
                           f"{control.out.strip()[:100]}")
        for what, change in variants:
            fake.change = change
            fake._cache.clear()
            key = t.new("prom")
            if logs is not None:
                logs.current = key
            judge_cli(t, key, [what, "|", *argv], run(argv), check_like=True)


# =========================================================================== Slack


VIEWER, OP1, OP2, STRANGER = "UVIEWER001", "UOPERATOR1", "UOPERATOR2", "USTRANGER1"
FORM = "application/x-www-form-urlencoded"
JSONT = "application/json"


def post_raw(url: str, body: bytes, headers: Mapping[str, str],
             timeout: float = HTTP_HANG_S) -> tuple[int | None, str]:
    """One POST with these headers; (status, body), status None when no answer came."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=timeout)
    try:
        c.putrequest("POST", u.path or "/")
        for k, v in {"Content-Length": str(len(body)), **headers}.items():
            c.putheader(k, v)
        c.endheaders()
        c.send(body)
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    except TimeoutError:
        return None, ""
    except (ConnectionError, http.client.HTTPException) as e:
        return 0, f"connection: {e!r}"
    finally:
        c.close()


def signed_post(url: str, secret: str) -> Callable[[bytes, str], tuple[int | None, str]]:
    from tests.support.fake_slack import sign

    def post(body: bytes, ctype: str) -> tuple[int | None, str]:
        return post_raw(url, body, {"Content-Type": ctype, **sign(secret, body)})
    return post


class Ids:
    """Fresh channel, trigger and event ids: each request its own channel."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> tuple[str, str, str]:
        self.n += 1
        return (f"CH{self.n:07d}", f"{self.n}.{time.time_ns()}.trigger", f"EvH{self.n:09d}")


def base_docs(kind: str, ids: Ids, user: str, value: str) -> tuple[Any, str, str]:
    """(document, content type, channel) of one payload type with fresh ids."""
    ch, trig, ev = ids.next()
    team = {"id": "T0000001", "domain": "fake"}
    u = {"id": user, "username": "someone", "team_id": "T0000001"}
    if kind == "command":
        return ({"token": "deprecated", "team_id": "T0000001", "team_domain": "fake",
                 "channel_id": ch, "channel_name": "oncall", "user_id": user,
                 "user_name": "someone", "command": "/stordoc", "text": value,
                 "api_app_id": "A0000001", "response_url": "http://127.0.0.1:9/response",
                 "trigger_id": trig}, FORM, ch)
    if kind == "block_actions":
        return ({"type": "block_actions", "team": team, "user": u, "api_app_id": "A0000001",
                 "token": "x", "container": {"type": "message", "message_ts": "1700000000.1",
                                             "channel_id": ch, "is_ephemeral": False},
                 "trigger_id": trig, "channel": {"id": ch, "name": "oncall"},
                 "message": {"type": "message", "ts": "1700000000.1", "text": "x"},
                 "response_url": "http://127.0.0.1:9/response",
                 "actions": [{"action_id": "fix", "block_id": "b1", "value": value,
                              "type": "button", "action_ts": f"{time.time():.6f}"}]},
                FORM, ch)
    if kind == "view_submission":
        return ({"type": "view_submission", "team": team, "user": u, "api_app_id": "A0000001",
                 "trigger_id": trig, "view": {"id": "V1", "type": "modal",
                                              "callback_id": value, "private_metadata": ch,
                                              "state": {"values": {"b": {"a": {
                                                  "type": "plain_text_input",
                                                  "value": value}}}}}}, FORM, ch)
    if kind == "event":
        return ({"token": "x", "team_id": "T0000001", "api_app_id": "A0000001",
                 "type": "event_callback", "event_id": ev, "event_time": int(time.time()),
                 "event": {"type": "app_mention", "user": user, "channel": ch,
                           "text": f"<@UBOT000001> {value}", "ts": "1690000000.000001",
                           "event_ts": "1690000000.000001"},
                 "authorizations": [{"user_id": "UBOT000001", "is_bot": True}]}, JSONT, ch)
    if kind == "other":
        return ({"type": "shortcut", "callback_id": value, "trigger_id": trig, "user": u,
                 "team": team, "channel": {"id": ch}}, FORM, ch)
    raise ValueError(kind)


def _paths(doc: Any, prefix: tuple[Any, ...] = (), depth: int = 3) -> Iterator[tuple[Any, ...]]:
    if depth == 0:
        return
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k), depth - 1)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i), depth - 1)


SLACK_ODD: list[Any] = [_DELETE, None, [], {}, "", "x", 0, -1, 1e308, True, [None], [{}],
                        "x" * 5000, {"id": None}, "U1\nU2", _deep(60)]


def _mutate(doc: Any, path: tuple[Any, ...], v: Any) -> Any:
    d = copy.deepcopy(doc)
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    if v is _DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = copy.deepcopy(v)
    return d


def encode(kind: str, doc: Any, ctype: str) -> bytes:
    if ctype == JSONT:
        return json.dumps(doc).encode()
    if kind == "command":
        if not isinstance(doc, dict):
            return json.dumps(doc).encode()
        return urllib.parse.urlencode({k: (v if isinstance(v, str) else json.dumps(v))
                                       for k, v in doc.items()}).encode()
    return urllib.parse.urlencode({"payload": json.dumps(doc)}).encode()


def slack_shapes(rng: random.Random, n: int, ids: Ids, fix_token: str
                 ) -> list[tuple[str, bytes, str, str]]:
    """``n`` (description, body, content type, channel): every payload type's fields set
    to odd values (or removed), plus whole-body oddities."""
    raw: list[tuple[str, bytes, str]] = [
        ("empty form", b"", FORM), ("not UTF-8", b"\xff\xfe\x00", FORM),
        ("payload=", b"payload=", FORM), ("payload=null", b"payload=null", FORM),
        ("payload=[]", b"payload=%5B%5D", FORM), ("payload=1", b"payload=1", FORM),
        ("payload=\"x\"", b"payload=%22x%22", FORM), ("=&=&", b"=&=&", FORM),
        ("repeated keys", b"command=/stordoc&command=/x&text=help&text=x&user_id=U1&"
                          b"user_id=U2&channel_id=C1&channel_id=C2", FORM),
        ("json null", b"null", JSONT), ("json []", b"[]", JSONT), ("json 1", b"1", JSONT),
        ("json string", b"\"x\"", JSONT), ("json event null",
                                           b'{"type":"event_callback","event":null}', JSONT),
        ("json event 'x'", b'{"type":"event_callback","event":"x"}', JSONT),
        ("json event []", b'{"type":"event_callback","event":[]}', JSONT),
        ("url_verification challenge {}", b'{"type":"url_verification","challenge":{}}',
         JSONT),
        ("url_verification no challenge", b'{"type":"url_verification"}', JSONT),
        ("nested 60 deep", json.dumps({"type": "event_callback", "event": _deep(60)}).encode(),
         JSONT),
        ("nested 63 deep", json.dumps(_deep(63)).encode(), JSONT),
        ("nested 70 deep", json.dumps(_deep(70)).encode(), JSONT),
        ("payload nested 60 deep", urllib.parse.urlencode(
            {"payload": json.dumps({"type": "block_actions", "actions": _deep(58)})}).encode(),
         FORM),
        ("text/plain", b"hello", "text/plain"), ("no content type", b"text=help", ""),
    ]
    typ: Any
    ev: Any
    for typ in ["block_actions", "view_submission", "view_closed", "shortcut",
                "message_action", "block_suggestion", "interactive_message",
                "dialog_submission", "workflow_step_edit", "nosuch", None, 5, []]:
        for acts in [_DELETE, [], [None], None, "x", [{}], [{"action_id": None}],
                     [{"action_id": "fix", "value": None}], [{"action_id": "fix", "value": {}}],
                     [{"action_id": 5}], [{"action_id": ["fix"]}], [[]]]:
            doc: dict[str, Any] = {"type": typ, "user": {"id": OP1}, "team": {"id": "T1"},
                                   "channel": {"id": "CRAW0001"}}
            if acts is not _DELETE:
                doc["actions"] = acts
            raw.append((f"type {typ!r} actions {json.dumps(acts) if acts is not _DELETE else '-'}",
                        urllib.parse.urlencode({"payload": json.dumps(doc)}).encode(), FORM))
    for ev in [None, "x", [], {}, {"type": None}, {"type": "app_mention"},
               {"type": "app_mention", "text": None, "user": None, "channel": None},
               {"type": "app_mention", "text": 5, "user": [], "channel": {}},
               {"type": "message", "subtype": None}, {"type": "reaction_added", "item": None},
               {"type": ["app_mention"]}]:
        raw.append((f"event {json.dumps(ev)}", json.dumps(
            {"type": "event_callback", "event_id": f"EvR{len(raw):06d}", "team_id": "T1",
             "event": ev}).encode(), JSONT))
    out = [(what, body, ct, "") for what, body, ct in raw]
    values = {"command": "help", "block_actions": fix_token, "view_submission": "x",
              "event": "help", "other": "x"}
    muts: list[tuple[str, tuple[Any, ...], Any]] = []
    for kind in values:
        doc, _, _ = base_docs(kind, Ids(), OP1, values[kind])
        for path in _paths(doc):
            for v in SLACK_ODD:
                if kind == "command" and not isinstance(v, str) and v is not _DELETE:
                    continue  # a form field is a string
                muts.append((kind, path, v))
    rng.shuffle(muts)
    for kind, path, v in muts[:max(0, n - len(out))]:
        doc, ctype, ch = base_docs(kind, ids, OP1, values[kind])
        try:
            odd = _mutate(doc, path, v)
        except (KeyError, IndexError, TypeError):
            continue
        vs = "deleted" if v is _DELETE else json.dumps(v)[:24]
        out.append((f"{kind} {'.'.join(map(str, path))} = {vs}", encode(kind, odd, ctype),
                    ctype, ch))
    return out[:n] if n < len(out) else out


def calls_in(fake: Any, channel: str) -> list[Any]:
    return [c for c in fake.of("chat.postMessage", "chat.postEphemeral", "chat.update",
                               "chat.delete") if c.params.get("channel") == channel]


def unauthorized_signs(calls: Sequence[Any]) -> str | None:
    """What in these Slack calls shows a change planned or run: a Confirm button, a run
    started, a message turned into "running"."""
    from tests.support.fake_slack import all_text, buttons

    for c in calls:
        if buttons(c, "confirm"):
            return f"{c.method} with a Confirm button: {all_text(c)[:80]}"
        text = all_text(c)
        for sign_ in ("` started by <@", "running, progress in the thread", ": running"):
            if sign_ in text:
                return f"{c.method}: {text[:100]}"
    return None


def false_ok_signs(calls: Sequence[Any]) -> str | None:
    from tests.support.fake_slack import all_text

    for c in calls:
        text = all_text(c)
        if "All checks passed." in text or text.startswith(("OK ", "*OK ")):
            return f"{c.method}: {text[:100]}"
    return None


def judge_channels(t: Tally, fake: Any, sent: Sequence[tuple[str, str, str]],
                   unauthorized: bool = False, false_ok: bool = False) -> None:
    """Each input's own channel (``sent``: key, description, channel): exception names
    in what the bot said there, and with the flags, a change planned or run / an OK."""
    from tests.support.fake_slack import all_text

    for key, what, ch in sent:
        if not ch:
            continue
        calls = calls_in(fake, ch)
        if unauthorized:
            sign_ = unauthorized_signs(calls)
            if sign_:
                t.hit("unauthorized", key, f"{what}: {sign_}")
        if false_ok:
            sign_ = false_ok_signs(calls)
            if sign_:
                t.hit("false_ok", key, f"{what}: {sign_}")
        for c in calls:
            judge_text(t, key, all_text(c))


def wait_quiet(fake: Any, quiet_s: float = 1.5, limit_s: float = 120.0) -> None:
    """Until the fake Slack has had no call for ``quiet_s`` (the bot's workers done)."""
    end = time.monotonic() + limit_s
    last, since = -1, time.monotonic()
    while time.monotonic() < end:
        n = len(fake.calls) + len(fake.failed)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.1)


class StderrTrap(io.TextIOBase):
    """sys.stderr while the bot runs: what is written (http.server prints tracebacks
    there), counted against the input sent last, and passed on."""

    def __init__(self, logs: LogTrap, real: Any) -> None:
        self.logs = logs
        self.real = real
        self.chunks: list[tuple[str, str]] = []

    def write(self, s: str) -> int:
        self.chunks.append((self.logs.current, s))
        return len(s)

    def judge(self, t: Tally) -> None:
        by: dict[str, str] = {}
        for k, s in self.chunks:
            by[k] = by.get(k, "") + s
        for k, s in by.items():
            judge_text(t, k, s, user_facing=False)
        self.chunks.clear()


@dataclass
class Bot:
    """The real bot over HTTP with the fake Slack, its cluster a replayed snapshot."""

    h: Any
    tmp: Path
    cfg: Path
    journal: Path
    fix_token: str = ""
    replayed: bool = False
    restore: tuple[Any, str, Any] | None = None

    def close(self) -> None:
        self.h.close()
        if self.restore is not None:
            setattr(*self.restore)


BOT_TOML = """journal = "{j}"
default_cluster = "lab"
[clusters.lab.ceph]
conf = "{conf}"
timeout = 2
"""


def bot_cluster_doc(conf: Path) -> dict[str, Any]:
    """SNAPSHOT's cluster settings (its hosts, so runbooks can plan), every address the
    bot could reach made a closed port: whatever goes wrong, nothing is touched."""
    doc = json.loads((SNAPSHOT / "cluster.json").read_text())["cluster"]
    doc["ceph"] = {**doc.get("ceph", {}), "conf": str(conf), "timeout": 2}
    doc["ceph"].pop("osdmaptool", None)
    for h in doc.get("hosts", []):
        h["port"] = 9
    for k, v in list((doc.get("swift") or {}).items()):
        if isinstance(v, str) and v.startswith("http"):
            u = urllib.parse.urlsplit(v)
            doc["swift"][k] = u._replace(netloc=f"{u.hostname}:9").geturl()
    return doc


def start_bot(tmp: Path, snapshots_dir: Path) -> Bot:
    from core.settings import parse_settings
    from tests.support.fake_slack import BotHarness

    conf = tmp / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\nauth_cluster_required = none\n"
                    "auth_service_required = none\nauth_client_required = none\n")
    journal = tmp / "bot-journal.db"
    cfg = tmp / "bot.toml"  # for the CLI's `mute --list` on the bot's journal
    cfg.write_text(BOT_TOML.format(j=journal, conf=conf))
    settings = parse_settings({"journal": str(journal), "default_cluster": "lab",
                               "clusters": {"lab": bot_cluster_doc(conf)}}, "hostile-bot")
    h = BotHarness(settings, {"lab": {"viewers": [VIEWER], "operators": [OP1, OP2],
                                      "two_person": True}}, str(journal),
                   snapshots_dir=str(snapshots_dir), working_after_s=0.5, throttle_s=0.0)
    bot = Bot(h, tmp, cfg, journal)
    try:  # the cluster answers as the snapshot (as benchmarks/bot_burst.py --replay)
        from core.service.snapshots import load

        snap = load(str(SNAPSHOT)).outcome.snapshot

        def collect(*a: Any, **kw: Any) -> Any:
            return snap
        h.env.collect = collect  # type: ignore[method-assign]
        try:  # runbooks plan on a collection of their own: the same snapshot
            import storage.collect

            bot.restore = (storage.collect, "collect", storage.collect.collect)
            storage.collect.collect = collect
        except (ImportError, AttributeError) as e:
            print(f"note: runbooks plan on the unreachable monitor ({e!r})", file=sys.stderr)
        bot.replayed = True
    except Exception as e:  # the run goes on against the unreachable monitor
        print(f"note: no replayed cluster for the bot ({e!r}): it is unreachable",
              file=sys.stderr)
    return bot


def setup_tokens(t: Tally, bot: Bot) -> tuple[str, str, str]:
    """A Fix token from OP1's ``health`` and the Confirm/Cancel tokens of OP1's plan (""
    when there is none: the forged ones are sent all the same)."""
    from tests.support.fake_slack import SlackSender, buttons

    h = bot.h

    def first(ch: str, action: str) -> str:
        try:
            got = h.fake.wait_for(lambda f: [b for c in calls_in(f, ch)
                                             for b in buttons(c, action)], 30)
            return str(got[0].get("value", ""))
        except AssertionError:
            t.notes.append(f"setup: no {action} button in {ch}: {h.fake.summary()[-3:]}")
            return ""

    SlackSender(h.server.url, channel="CSETUP0001").slash("health lab", OP1)
    fix = first("CSETUP0001", "fix")
    conf = canc = ""
    if fix:
        SlackSender(h.server.url, channel="CSETUP0002").press("fix", fix, OP1,
                                                              "1700000000.000100")
        conf = first("CSETUP0002", "confirm")
        canc = first("CSETUP0002", "cancel") if conf else ""
    bot.fix_token = fix
    if conf and not unauthorized_signs(calls_in(h.fake, "CSETUP0002")):
        t.notes.append("self-check: the unauthorized detector does not see OP1's own plan "
                       "(its Confirm button): the unauthorized count cannot be trusted")
    return fix, conf, canc


def auth_cases(fix: str, conf: str, canc: str) -> list[tuple[str, str, str, str]]:
    """(description, kind "slash"/"press:ACTION", text or button value, user) for people
    who must not get a change planned or run."""
    odd_users = [STRANGER, VIEWER, "UVIEWER001\n", "uoperator1", "UOPERATOR1 ",
                 "U\u0661\u0662\u0663", "WOPERATOR1", "UOPERATOR1X", ""]
    texts = ["fix osd-remount osd.1", "fix OSD_DATA_UNMOUNTED", "fix OSD_DOWN_OUT osd.1",
             "plan osd-remount osd.1", "fix osd-start osd.1", "fix osd-in osd.1",
             "bench rados", "bench rados seconds=5", "mute OSD_DOWN_OUT osd.1 for 4h swap",
             "unmute OSD_DOWN_OUT osd.1", "maintenance start node1 for 2h",
             "maintenance end node1", "silence CephOSDDown for=4h", "fix pool-pg-num rbd",
             "fix pg-mark-unfound-lost 2.5 revert", "fix full-ratio-raise lab full=0.97"]
    out = []
    for u in odd_users:
        for x in texts:
            out.append((f"{u!r} types `{x}`", "slash", x, u))
        for act, val in [("fix", fix), ("confirm", conf), ("cancel", canc)]:
            if val:
                out.append((f"{u!r} presses {act}", f"press:{act}", val, u))
    forged = [conf + "x", conf.upper(), conf[:-1], conf + "\n", " " + conf, fix, canc, "",
              "x" * 5000, json.dumps({"token": conf}), "null", "0", "../" + conf,
              "confirm:" + conf, "%s", "\u0000" + conf]
    for v in forged:
        for u in (OP2, VIEWER, STRANGER):
            out.append((f"{u} presses confirm with value {v[:20]!r}", "press:confirm", v, u))
    # the requester confirming their own plan on a two-person cluster
    out.append(("OP1 confirms their own plan (two-person)", "press:confirm", conf, OP1))
    # a stranger replays the requester's Fix press again
    out.append(("stranger replays fix twice", "press:fix", fix, STRANGER))
    return out


def part_slack_auth(t: Tally, bot: Bot, cases: Sequence[tuple[str, str, str, str]],
                    ids: Ids, logs: LogTrap) -> None:
    from tests.support.fake_slack import SIGNING_SECRET, SlackSender

    h = bot.h
    sent: list[tuple[str, str, str]] = []
    for what, kind, val, user in cases:
        key = t.new("slack-auth")
        logs.current = key
        ch = ids.next()[0]
        s = SlackSender(h.server.url, SIGNING_SECRET, channel=ch)
        if kind == "slash":
            body, ctype = s.command_body(val, user), FORM
        else:
            body, ctype = s.action_body(kind.split(":")[1], val, user, "1700000000.000100"), FORM
        status, text = signed_post(h.server.url, SIGNING_SECRET)(body, ctype)
        judge_http(t, key, what, status, text)
        sent.append((key, what, ch))
    wait_quiet(h.fake)
    judge_channels(t, h.fake, sent, unauthorized=True)
    # a mute or maintenance window left behind by any of them (nobody allowed made one)
    for argv in (["mute", "--list", "--cluster", "lab"],
                 ["maintenance", "list", "--cluster", "lab"]):
        r = run_cli_inprocess(["--config", str(bot.cfg), *argv])
        for line in r.out.splitlines():
            if re.search(r"\bactive\b", line) and not line.lstrip().startswith("id"):
                t.hit("unauthorized", f"slack-auth#{argv[0]}", f"left behind: {line.strip()}")


def part_slack_shapes(t: Tally, post: Callable[[bytes, str], tuple[int | None, str]],
                      shapes: Sequence[tuple[str, bytes, str, str]], logs: LogTrap,
                      fake: Any = None) -> None:
    sent = []
    for what, body, ctype, ch in shapes:
        key = t.new("slack")
        logs.current = key
        status, text = post(body, ctype)
        judge_http(t, key, what, status, text)
        sent.append((key, what, ch))
    if fake is None:
        return
    wait_quiet(fake)
    judge_channels(t, fake, sent)


def part_slack_secrets(t: Tally, bot: Bot, rng: random.Random, ids: Ids, logs: LogTrap
                       ) -> dict[str, str]:
    """Secrets typed by an operator (and a viewer) in commands, mute reasons, mentions;
    the needles, to look for at the end."""
    from tests.support.fake_slack import SIGNING_SECRET, SlackSender

    h = bot.h
    needles: dict[str, str] = {}
    forms: list[tuple[str, Callable[[str], str], str]] = [
        ("mute reason", lambda s: f"mute OSD_DOWN_OUT osd.1 for 4h disk swap {s}", OP1),
        ("mute reason (viewer)", lambda s: f"mute OSD_DOWN_OUT osd.1 for 4h {s}", VIEWER),
        ("health", lambda s: f"health {s}", OP1),
        ("plan option", lambda s: f"plan osd-remount osd.1 device={s}", OP1),
        ("bench pool", lambda s: f"bench rados pool={s}", OP1),
        ("silence reason", lambda s: f"silence CephOSDDown for=4h {s}", OP1),
        ("maintenance host", lambda s: f"maintenance start {s} for 2h", OP1),
        ("mention", lambda s: s, OP1),
    ]
    for what, form, user in forms:
        for text, needle in secret_cases(rng):
            key = t.new("slack-secret")
            logs.current = key
            needles[needle] = key
            s = SlackSender(h.server.url, SIGNING_SECRET, channel=ids.next()[0])
            if what == "mention":
                status = s.mention(form(text), user).status
            else:
                status = s.slash(form(text), user).status
            judge_http(t, key, what, status, "")
    wait_quiet(h.fake)
    return needles


def fake_slack_blob(fake: Any) -> bytes:
    return "\n".join(json.dumps(c.params, ensure_ascii=False) for c in
                     [*fake.calls, *fake.failed]).encode()


def part_slack_snapshots(t: Tally, bot: Bot, names: Sequence[tuple[str, str]], ids: Ids,
                         logs: LogTrap) -> None:
    """``health lab from NAME`` on odd snapshots: never "All checks passed."."""
    from tests.support.fake_slack import SIGNING_SECRET, SlackSender

    h = bot.h
    sent = []
    for what, name in names:
        key = t.new("slack-snap")
        logs.current = key
        ch = ids.next()[0]
        s = SlackSender(h.server.url, SIGNING_SECRET, channel=ch)
        r = s.slash(f"health lab from {name}", VIEWER)
        judge_http(t, key, what, r.status, r.body)
        sent.append((key, what, ch))
    wait_quiet(h.fake)
    judge_channels(t, h.fake, sent, false_ok=True)


def goal_slow_clients(t: Tally, bot: Bot, n_slow: int = 64) -> None:
    """A signed ``help`` answered within 2 s while ``n_slow`` connections dribble."""
    from tests.support.fake_slack import SIGNING_SECRET, SlackSender

    h = bot.h
    u = urllib.parse.urlsplit(h.server.url)
    socks = []
    try:
        for i in range(n_slow):
            s = socket.create_connection((u.hostname or "127.0.0.1", u.port or 80), 5)
            half = i % 2 == 0
            s.sendall(f"POST {u.path or '/'} HTTP/1.1\r\nHost: x\r\n".encode()
                      + (b"Content-Type: application/x-www-form-urlencoded\r\n"
                         b"Content-Length: 100\r\n\r\ntext=" if half else b""))
            socks.append(s)
        time.sleep(0.5)  # the server has taken them up
        body = SlackSender(h.server.url, SIGNING_SECRET,
                           channel="CSLOW00001").command_body("help", VIEWER)
        t0 = time.monotonic()
        status, _ = signed_post(h.server.url, SIGNING_SECRET)(body, FORM)
        took = time.monotonic() - t0
    finally:
        for s_ in socks:
            s_.close()
    ok = status == 200 and took <= 2.0
    t.goals.append((f"signed request with {n_slow} slow connections open: HTTP {status} in "
                    f"{took:.2f} s (<= 2 s)", ok))


def goal_health_burst(t: Tally, bot: Bot, n: int = 20) -> None:
    """``n`` concurrent ``health lab`` (viewers): p95 of the time to the answer."""
    from tests.support.fake_slack import SIGNING_SECRET, SlackSender

    h = bot.h
    chans = [f"CBURST{i:04d}" for i in range(n)]
    sent: dict[str, float] = {}
    barrier = threading.Barrier(n)

    def one(ch: str) -> int:
        barrier.wait()
        sent[ch] = time.monotonic()
        return SlackSender(h.server.url, SIGNING_SECRET, channel=ch).slash("health lab",
                                                                           VIEWER).status

    with ThreadPoolExecutor(n) as pool:
        list(pool.map(one, chans))

    def answer(ch: str) -> Any:
        for c in calls_in(h.fake, ch):
            if c.method in ("chat.postMessage", "chat.update") and " lab" in str(
                    c.params.get("text", ""))[:60] and "still working" not in str(
                    c.params.get("text", "")):
                return c
        return None
    try:
        h.fake.wait_for(lambda f: all(answer(c) for c in chans), 120)
    except AssertionError:
        pass
    lat = sorted(answer(c).at - sent[c] if answer(c) else math.inf for c in chans)
    p95 = lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)]
    t.goals.append((f"{n} concurrent `health lab` answer p95 {p95:.2f} s, max "
                    f"{lat[-1]:.2f} s (<= 2 s)", p95 <= 2.0))


# =========================================================================== the run


@dataclass
class Plan:
    cli: int
    files_kinds: tuple[str, ...]
    files_places: tuple[str, ...]
    snapshots: int
    prom: int
    slack: int
    slack_snap: int
    auth: bool = True
    goals: bool = True


FULL = Plan(cli=900, files_kinds=FILE_KINDS, files_places=FILE_PLACES, snapshots=380,
            prom=60, slack=700, slack_snap=40)
QUICK = Plan(cli=150, files_kinds=("fifo", "devzero"),
             files_places=("config", "journal", "conf", "snapshot.json"), snapshots=60,
             prom=15, slack=150, slack_snap=10)


def run_all(plan: Plan, seed: int, out: Any = sys.stdout, verbose: bool = False) -> Tally:
    rng = random.Random(seed)
    t = Tally()
    tmp = Path(tempfile.mkdtemp(prefix="stordoc-hostile-"))
    cwd = os.getcwd()
    logs = LogTrap()
    old_hook = threading.excepthook

    def hook(a: Any) -> None:
        t.hit("tracebacks", logs.current, f"uncaught in thread {a.thread and a.thread.name}: "
              f"{a.exc_type.__name__}: {a.exc_value}")
    threading.excepthook = hook
    t0 = time.monotonic()

    def step(name: str) -> None:
        print(f"[{time.monotonic() - t0:6.1f} s] {name}", file=sys.stderr, flush=True)

    try:
        with logs.installed():
            from tests.support.cli import unreachable_config

            cli_dir = tmp / "cli"
            cli_dir.mkdir()
            cfg = unreachable_config(cli_dir)
            scratch = tmp / "cwd"
            scratch.mkdir()
            os.chdir(scratch)  # `snapshot save DIR` writes here, whatever DIR is
            step(f"cli: {plan.cli} hostile values in every argparse slot")
            part_cli(t, rng, plan.cli, cfg, logs=logs)
            step("cli: secrets in reasons and options")
            part_cli_secrets(t, rng, cfg, cli_dir / "journal.db")
            logs.judge(t)
            step("files: FIFOs, /dev/zero, directories, sparse 300 MB, loops (subprocesses)")
            fdir = tmp / "files"
            fdir.mkdir()
            part_files(t, file_cases(fdir, plan.files_kinds, plan.files_places))
            step(f"snapshots: {plan.snapshots} odd copies, check --from")
            sdir = tmp / "snapshots"
            sdir.mkdir()
            muts = snapshot_mutations(rng)
            snaps = make_snapshots(sdir, muts[:plan.snapshots + plan.slack_snap])
            part_snapshots(t, snaps[:plan.snapshots], logs=logs)
            logs.judge(t)
            step("prometheus: odd samples")
            pv = prom_variants()
            rng.shuffle(pv)
            part_prom(t, tmp, pv[:plan.prom], logs=logs)
            logs.judge(t)
            os.chdir(cwd)
            step("slack: the real bot over HTTP")
            trap = StderrTrap(logs, sys.stderr)
            real_err = sys.stderr
            sys.stderr = trap
            bot = None
            try:
                bot = start_bot(tmp, sdir)
                ids = Ids()
                fix, conf, canc = setup_tokens(t, bot)
                if plan.auth:
                    part_slack_auth(t, bot, auth_cases(fix, conf, canc), ids, logs)
                from tests.support.fake_slack import SIGNING_SECRET

                part_slack_shapes(t, signed_post(bot.h.server.url, SIGNING_SECRET),
                                  slack_shapes(rng, plan.slack, ids, fix), logs, bot.h.fake)
                part_slack_snapshots(t, bot, [(w, p.name) for w, p in
                                              snaps[plan.snapshots:]], ids, logs)
                needles = part_slack_secrets(t, bot, rng, ids, logs)
                if plan.goals:
                    goal_slow_clients(t, bot)
                    goal_health_burst(t, bot)
                wait_quiet(bot.h.fake)
                scan_secrets(t, needles, {**journal_blobs([bot.journal]),
                                          "fake Slack calls": fake_slack_blob(bot.h.fake)})
            finally:
                sys.stderr = real_err
                if bot is not None:
                    bot.close()
                trap.judge(t)
                logs.judge(t)
    finally:
        threading.excepthook = old_hook
        os.chdir(cwd)
        step("done")
        shutil.rmtree(tmp, ignore_errors=True)
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--quick", action="store_true", help="a smaller run (about 500 inputs)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="the first examples of each bad outcome")
    ap.add_argument("--examples", type=int, default=5, metavar="N",
                    help="with -v: how many examples per category (default 5)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    t = run_all(QUICK if args.quick else FULL, args.seed, verbose=args.verbose)
    print(f"hostile run, seed {args.seed}{' (quick)' if args.quick else ''}, "
          f"{time.monotonic() - t0:.0f} s:")
    t.report(examples=args.examples if args.verbose else 0)
    return 1 if t.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
