"""The SQLite journal: every check run and finding (and, through other modules, runbook
runs, steps, locks and benchmark results) in one file, so any front end can show history,
what is new since the last run, and baselines.

sqlite-utils does the schema work; WAL lets the bot, the TUI and the CLI share one file.
Other modules add their own tables through ``Journal.db`` (``storage.audit``,
``storage.benchstore``); this module owns ``check_runs`` and ``findings``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.private import create_private, make_dirs, tighten
from storage.rowcap import MAX_ENTITY, MAX_MESSAGE, bounded_json, cap_text
from storage.sqlite_lib import sqlite_utils


class ImmediateDatabase(sqlite_utils.Database):
    """sqlite-utils opens its write transactions with a deferred ``BEGIN``. In WAL mode a
    transaction that reads before it writes (``create(if_not_exists=True)``, an upsert)
    then fails at once with "database is locked" (SQLITE_BUSY_SNAPSHOT: the busy timeout
    is not consulted) when another connection committed in between: the bot's own store,
    the TUI, a CLI run. ``BEGIN IMMEDIATE`` takes the write lock first and waits for it
    on the busy timeout instead."""

    @contextlib.contextmanager
    def atomic(self) -> Iterator[ImmediateDatabase]:
        if self.conn.in_transaction:  # nested: sqlite-utils' savepoint
            with super().atomic():
                yield self
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise


@dataclass(frozen=True)
class FindingDelta:
    new: tuple[tuple[str, str], ...]  # (code, entity) not in the previous run
    still: tuple[tuple[str, str], ...]
    resolved: tuple[tuple[str, str], ...]  # in the previous run, gone now
    previous_run_id: int | None


@dataclass(frozen=True)
class CheckRun:
    """One recorded check run (a row of ``check_runs``)."""

    id: int
    cluster: str
    started_at: float
    duration_s: float
    exit_code: int  # the run's ExitStatus value: 0 ok, 1 warnings, 2 critical, 3 unreachable
    worst: str  # the worst severity's label, "ok" when nothing was found
    n_findings: int
    source: str  # cli, slack, tui, watch, alert...
    host_facts: bool  # the hosts were inspected too (not a Ceph/Swift-only look)

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> CheckRun:
        return cls(int(r["id"]), str(r["cluster"]), float(r["started_at"]),
                   float(r["duration_s"] or 0.0), int(r["exit_code"] or 0),
                   str(r["worst"] or "ok"), int(r["n_findings"] or 0),
                   str(r["source"] or ""), bool(r["host_facts"]))


@dataclass(frozen=True)
class FindingRecord:
    """One finding as the journal kept it (a row of ``findings``)."""

    id: int
    run_id: int
    cluster: str
    code: str
    severity: str
    entity: str
    message: str
    evidence: Mapping[str, Any]
    runbook: str | None
    target: str | None
    since: float | None

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> FindingRecord:
        try:
            ev = json.loads(r["evidence"] or "{}")
        except ValueError:
            ev = {}
        return cls(int(r["id"]), int(r["run_id"]), str(r["cluster"]), str(r["code"]),
                   str(r["severity"]), str(r["entity"]), str(r["message"] or ""),
                   ev if isinstance(ev, dict) else {}, r["runbook"], r["target"],
                   None if r["since"] is None else float(r["since"]))


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite 3 database


class Journal:
    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:" and os.path.islink(self.path):
            # a journal named through a symlink is the file it names, made 0600 there as a
            # directly named one (SQLite follows the link; create_private does not)
            self.path = os.path.realpath(self.path)
        self.tightened: list[str] = []  # what was said about an older journal's modes
        if self.path != ":memory:":
            self._regular_or_absent()
            self._private_files()
        self._lock = threading.RLock()
        self._schemas: set[str] = set()
        # check_same_thread=False: the TUI and the bot write from worker threads
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30,
                                   isolation_level=None)
        except sqlite3.DatabaseError as e:
            raise self._refused(e) from None
        self.db = ImmediateDatabase(conn)
        if self.path == ":memory:":
            self._ensure()
            return
        # Switching to WAL and creating the schema are not covered by SQLite's busy
        # timeout when several processes open a fresh file at once: serialize them.
        with self._lock_file() as lf:
            fcntl.flock(lf, fcntl.LOCK_EX)
            try:
                if self.db.journal_mode != "wal":
                    self.db.enable_wal()
                self._ensure()
            except sqlite3.DatabaseError as e:
                if "locked" in str(e) or "busy" in str(e):
                    raise
                conn.close()
                raise self._refused(e) from None
            finally:
                fcntl.flock(lf, fcntl.LOCK_UN)

    def _regular_or_absent(self) -> None:
        """A journal that exists is a regular file: a FIFO, a device or a directory named
        as the journal is refused in one line before SQLite opens it (a FIFO blocked, other
        kinds were a traceback)."""
        from storage.safefile import FileRefused, check_regular

        try:
            size = check_regular(self.path, 1 << 62)
        except FileNotFoundError:
            return
        except FileRefused as e:
            raise FileRefused(f"journal {e}") from None
        except PermissionError:
            raise
        except OSError as e:
            raise FileRefused(f"journal {self.path}: "
                              f"{(e.strerror or 'cannot be read').lower()}: refused") from None
        if size == 0:
            return  # SQLite makes an empty file a new database
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        try:
            head = os.read(fd, len(SQLITE_HEADER))
        finally:
            os.close(fd)
        if head != SQLITE_HEADER:  # someone's file: neither opened by SQLite nor tightened
            raise FileRefused(f"journal {self.path}: not an SQLite database: refused (name "
                              f"another file with `journal = ...`)")

    def _refused(self, e: sqlite3.DatabaseError) -> Exception:
        from storage.safefile import FileRefused

        return FileRefused(f"journal {self.path}: not an SQLite database stordoc can open "
                           f"({str(e).splitlines()[0][:80] if str(e) else 'unreadable'}): "
                           f"refused (name another file with `journal = ...`)")

    @contextlib.contextmanager
    def _lock_file(self) -> Iterator[int]:
        """The journal's .lock file, 0600, never through a symlink (ELOOP: an OSError)."""
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW |
                     os.O_CLOEXEC, 0o600)
        try:
            yield fd
        finally:
            os.close(fd)

    def _private_files(self) -> None:
        """The journal holds audits and mute reasons: new files are 0600 (SQLite gives
        -wal and -shm the database file's mode) in 0700 directories; an existing one of
        ours that every user could read is tightened, and that is said (storage.private)."""
        make_dirs(Path(self.path).parent)
        try:
            fresh = create_private(self.path)
            create_private(self.path + ".lock")
        except OSError:
            return  # read-only place, not ours...: SQLite says what it says, as before
        if not fresh:
            for suffix in ("", "-wal", "-shm", ".lock"):
                msg = tighten(self.path + suffix, "journal file")
                if msg:
                    self.tightened.append(msg)

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @contextlib.contextmanager
    def schema_lock(self) -> Iterator[None]:
        """Serialize schema changes (CREATE/ALTER) across processes and threads: SQLite's
        busy timeout does not cover them when another process writes at the same time."""
        with self._lock:
            if self.path == ":memory:":
                yield
                return
            with self._lock_file() as lf:
                fcntl.flock(lf, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lf, fcntl.LOCK_UN)

    def ensure_schema(self, name: str, create: Callable[[], None]) -> None:
        """Run another module's ``create`` (its CREATE ... IF NOT EXISTS) once per journal
        object, under ``schema_lock``: a runbook run or a mute opens its tables in
        passing, and each CREATE takes the write lock."""
        with self._lock:
            if name in self._schemas:
                return
            with self.schema_lock():
                create()
            self._schemas.add(name)

    def _ensure(self) -> None:
        with self._lock:
            self.db.table("check_runs").create(
                {"id": int, "cluster": str, "started_at": float, "duration_s": float,
                 "exit_code": int, "worst": str, "n_findings": int, "source": str,
                 "host_facts": int},
                pk="id", if_not_exists=True)
            self.db.table("findings").create(
                {"id": int, "run_id": int, "cluster": str, "code": str, "severity": str,
                 "entity": str, "message": str, "evidence": str, "runbook": str,
                 "target": str, "since": float},
                pk="id", foreign_keys=[("run_id", "check_runs", "id")], if_not_exists=True)
            self.db.table("findings").create_index(["cluster", "code", "entity"],
                                             if_not_exists=True)
            self.db.table("findings").create_index(["run_id"], if_not_exists=True)

    def record_check_run(self, cluster: str, started_at: float, duration_s: float,
                         exit_code: int, worst: str | None,
                         findings: Iterable[Mapping[str, Any]], source: str = "cli",
                         host_facts: bool = True) -> int:
        from storage.redact import redact, redact_obj

        # scrubbed before the write lock is taken: a host's output can quote a secret
        # then bounded (storage.rowcap): counts and a sample, never every series
        rows = [{"cluster": cluster, "code": f["code"], "severity": f["severity"],
                 "entity": cap_text(f["entity"], MAX_ENTITY),
                 "message": cap_text(redact(f["message"]), MAX_MESSAGE),
                 "evidence": bounded_json(redact_obj(json.loads(json.dumps(
                     f.get("evidence") or {}, default=str)))),
                 "runbook": f.get("runbook"), "target": f.get("target"),
                 "since": f.get("since")} for f in findings]
        with self._lock, self.db.atomic():
            run_id = self.db.table("check_runs").insert(
                {"cluster": cluster, "started_at": started_at, "duration_s": duration_s,
                 "exit_code": exit_code, "worst": worst or "ok", "n_findings": len(rows),
                 "source": source, "host_facts": int(host_facts)}).last_pk
            self.db.table("findings").insert_all({"run_id": run_id, **r} for r in rows)
        assert run_id is not None
        return int(run_id)

    def previous_run(self, cluster: str, before_id: int | None = None) -> int | None:
        where = "cluster = ?"
        args: list[Any] = [cluster]
        if before_id is not None:
            where += " and id < ?"
            args.append(before_id)
        rows = list(self.db.table("check_runs").rows_where(where, args, order_by="id desc", limit=1))
        return int(rows[0]["id"]) if rows else None

    def finding_keys(self, run_id: int) -> set[tuple[str, str]]:
        return {(r["code"], r["entity"]) for r in
                self.db.table("findings").rows_where("run_id = ?", [run_id],
                                               select="code, entity")}

    def delta(self, cluster: str, run_id: int) -> FindingDelta:
        """What is new, still there and resolved in run_id against the run before it."""
        prev = self.previous_run(cluster, before_id=run_id)
        now = self.finding_keys(run_id)
        before = self.finding_keys(prev) if prev else set()
        return FindingDelta(tuple(sorted(now - before)), tuple(sorted(now & before)),
                            tuple(sorted(before - now)), prev)

    def runs(self, cluster: str | None = None, limit: int = 20) -> list[CheckRun]:
        """The newest check runs first."""
        where, args = ("cluster = ?", [cluster]) if cluster else (None, [])
        return [CheckRun.from_row(r) for r in self.db.table("check_runs").rows_where(
            where, args, order_by="id desc", limit=limit)]

    def findings_of(self, run_id: int) -> list[FindingRecord]:
        return [FindingRecord.from_row(r) for r in self.db.table("findings").rows_where(
            "run_id = ?", [run_id], order_by="id")]

    def first_seen(self, cluster: str, code: str, entity: str) -> float | None:
        """Start of the current unbroken streak of runs that reported this finding."""
        runs = [r["id"] for r in self.db.table("check_runs").rows_where(
            "cluster = ?", [cluster], order_by="id desc", limit=500, select="id")]
        seen: float | None = None
        for rid in runs:
            rows = list(self.db.table("findings").rows_where(
                "run_id = ? and code = ? and entity = ?", [rid, code, entity], limit=1))
            if not rows:
                break
            run = self.db.table("check_runs").get(rid)
            seen = float(run["started_at"])
        return seen

    def close(self) -> None:
        self.db.conn.close()

