"""The runbook audit and target locks, in the shared journal (``journal.db``).

Everything that changes a cluster leaves a trail here: who ran which runbook on which
target, the plan they confirmed, each step's command, exit status and output, and the
outcome. Secrets are redacted *before* anything is stored, so the journal can be shown in
Slack or the TUI without leaking a key.

Locks: one row per (cluster, target) with a UNIQUE constraint, so taking a lock is a
single atomic INSERT that SQLite serialises across processes (the CLI, the bot and the TUI
share the file). A lock whose process is gone (same hostname, pid no longer alive) or that
is older than ``stale_after_s`` is *stale*. A lock whose holder is gone from this same
host (its pid dead, or now another process's: the pid and the process's start time are
recorded with the lock) is taken over by the next ``acquire``, which says so
(``Audit.takeovers``; a run records it in its audit). A lock of a live process, of another
host or only too old is never taken over: ``clear()`` removes it when a person says so.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from storage.journal import Journal
from storage.procs import pid_alive, process_gone, process_start

# re-exported: the audit's callers use them from here too
from storage.redact import REDACTED as REDACTED
from storage.redact import redact as redact
from storage.redact import redact_obj as redact_obj
from storage.redact import secrets_in as secrets_in


class LockHeld(Exception):
    """Someone else holds the lock on this target (or left a stale one behind)."""

    def __init__(self, cluster: str, target: str, holder: str, pid: int, host: str,
                 since: float, purpose: str = "", stale: bool = False) -> None:
        self.cluster = cluster
        self.target = target
        self.holder = holder
        self.pid = pid
        self.host = host
        self.since = since
        self.purpose = purpose
        self.stale = stale
        age = max(0.0, time.time() - since)
        what = f" ({purpose})" if purpose else ""
        msg = (f"{target} on {cluster} is locked by {holder}{what}, pid {pid} on {host}, "
               f"for {age:.0f} s")
        if stale:
            msg += (f"; the lock looks stale (process gone or too old): clear it with "
                    f"'stordoc locks --clear {target}'")
        super().__init__(msg)


@dataclass(frozen=True)
class LockInfo:
    id: int
    cluster: str
    target: str
    owner: str
    purpose: str
    pid: int
    host: str
    since: float
    stale: bool
    gone: bool = False  # its process is no longer there (this host): taken over by the next

    def line(self) -> str:
        """What a run says when it takes this lock over."""
        return (f"took over the lock on {self.target}: its holder {self.owner} "
                f"({self.purpose}), pid {self.pid} on {self.host} since "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.since))}, is "
                f"gone (killed or crashed)")


def _pk(table: Any) -> int:
    pk = table.last_pk
    return int(pk) if pk is not None else 0


def _json_obj(v: Any) -> Mapping[str, Any]:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return {}
    return v if isinstance(v, dict) else {}


@dataclass(frozen=True)
class AuditRun:
    """One runbook or benchmark run as audited: who asked, who confirmed, the plan shown,
    how it ended and what verification said."""

    id: int
    cluster: str
    runbook: str
    target: str
    user: str
    source: str
    confirmed_by: str
    plan: Mapping[str, Any]
    started_at: float
    finished_at: float | None
    outcome: str  # running, success, failed, cancelled, verify_failed, refused, interrupted
    message: str
    verify: Mapping[str, Any]
    pid: int | None
    host: str | None

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> AuditRun:
        # scrubbed as read too: a row an older version stored raw is never shown raw
        return cls(int(r["id"]), str(r["cluster"]), str(r["runbook"]),
                   redact(str(r["target"])), str(r["user"] or ""), str(r["source"] or ""),
                   str(r["confirmed_by"] or ""), redact_obj(_json_obj(r["plan"])),
                   float(r["started_at"]),
                   None if r["finished_at"] is None else float(r["finished_at"]),
                   str(r["outcome"] or ""), redact(str(r["message"] or "")),
                   redact_obj(_json_obj(r["verify"])),
                   None if r.get("pid") is None else int(r["pid"]), r.get("host"))


@dataclass(frozen=True)
class AuditStep:
    """One step of an audited run: where it ran, the exact command, what came back."""

    id: int
    run_id: int
    idx: int
    title: str
    host: str
    command: str
    rc: int | None
    stdout: str
    stderr: str
    duration_s: float
    status: str  # done, failed, skipped, cancelled; running, interrupted (runbooks' StepStatus)
    at: float

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> AuditStep:
        return cls(int(r["id"]), int(r["run_id"]), int(r["idx"]),
                   redact(str(r["title"] or "")), str(r["host"] or ""),
                   redact(str(r["command"] or "")),
                   None if r["rc"] is None else int(r["rc"]), redact(str(r["stdout"] or "")),
                   redact(str(r["stderr"] or "")), float(r["duration_s"] or 0.0),
                   str(r["status"] or ""), float(r["at"] or 0.0))


class Audit:
    """Runs, steps and locks in the journal. Thread-safe through the journal's lock."""

    def __init__(self, journal: Journal, secrets: Iterable[str] = (),
                 stale_after_s: float = 6 * 3600.0) -> None:
        self.journal = journal
        self.db = journal.db
        self.secrets = tuple(s for s in secrets if s)
        self.stale_after_s = stale_after_s
        self.hostname = socket.gethostname()
        # the locks this Audit took over from a process that is gone, oldest first
        self.takeovers: list[LockInfo] = []
        journal.ensure_schema("audit", self._create)

    # ------------------------------------------------------------------ schema
    def _create(self) -> None:
        self.db.table("runbook_locks").create(
            {"id": int, "cluster": str, "target": str, "owner": str, "purpose": str,
             "pid": int, "host": str, "since": float},
            pk="id", if_not_exists=True)
        self.db.table("runbook_locks").create_index(["cluster", "target"], unique=True,
                                              if_not_exists=True)
        self.db.table("runbook_runs").create(
            {"id": int, "cluster": str, "runbook": str, "target": str, "user": str,
             "source": str, "confirmed_by": str, "plan": str, "started_at": float,
             "finished_at": float, "outcome": str, "message": str, "verify": str,
             "pid": int, "host": str},
            pk="id", if_not_exists=True)
        self.db.table("runbook_runs").create_index(["cluster", "started_at"], if_not_exists=True)
        self.db.table("runbook_steps").create(
            {"id": int, "run_id": int, "idx": int, "title": str, "host": str,
             "command": str, "rc": int, "stdout": str, "stderr": str,
             "duration_s": float, "status": str, "at": float},
            pk="id", foreign_keys=[("run_id", "runbook_runs", "id")], if_not_exists=True)
        self.db.table("runbook_steps").create_index(["run_id"], if_not_exists=True)
        runs = self.db.table("runbook_runs")
        for col, typ in (("pid", int), ("host", str)):  # journals older than these
            if col not in runs.columns_dict:
                runs.add_column(col, typ)
        lks = self.db.table("runbook_locks")
        if "pid_start" not in lks.columns_dict:  # the holder's start (storage.procs)
            lks.add_column("pid_start", str)
        self.db.table("runbook_owned").create(
            {"id": int, "run_id": int, "cluster": str, "step_idx": int, "what": str,
             "undo_prefix": str, "undo_args": str, "undo_command": str, "state": str,
             "at": float},
            pk="id", foreign_keys=[("run_id", "runbook_runs", "id")], if_not_exists=True)

    def _r(self, text: str | None) -> str:
        return redact(text or "", self.secrets)

    # ------------------------------------------------------------------ locks
    def _is_gone(self, row: Mapping[str, Any]) -> bool:
        """The holder was a process of this host that is no longer there."""
        return bool(row["host"] == self.hostname
                    and process_gone(int(row["pid"]), row.get("pid_start")))

    def _is_stale(self, row: Mapping[str, Any]) -> bool:
        if self._is_gone(row):
            return True
        return bool(time.time() - float(row["since"]) > self.stale_after_s)

    def _info(self, row: Mapping[str, Any]) -> LockInfo:
        return LockInfo(int(row["id"]), row["cluster"], row["target"], row["owner"],
                        row["purpose"] or "", int(row["pid"]), row["host"],
                        float(row["since"]), self._is_stale(row), self._is_gone(row))

    def acquire(self, cluster: str, target: str, owner: str, purpose: str,
                pid: int | None = None) -> int:
        """Take the lock on (cluster, target) or raise LockHeld; one atomic INSERT. A lock
        whose holder is gone from this host is taken over (``takeovers``): the row is
        deleted only as it was read (a live process that took it meanwhile keeps it)."""
        me = pid if pid is not None else os.getpid()
        row = {"cluster": cluster, "target": target, "owner": owner,
               "purpose": redact(purpose, self.secrets), "pid": me, "host": self.hostname, "since": time.time(),
               "pid_start": process_start(me)}
        for _ in range(3):
            with self.journal.lock:
                try:
                    cur = self.db.conn.execute(
                        "insert into runbook_locks (cluster, target, owner, purpose, pid, "
                        "host, since, pid_start) values (:cluster, :target, :owner, "
                        ":purpose, :pid, :host, :since, :pid_start)", row)
                    return int(cur.lastrowid or 0)
                except sqlite3.IntegrityError:
                    rows = list(self.db.table("runbook_locks").rows_where(
                        "cluster = ? and target = ?", [cluster, target]))
            if not rows:  # released in between: try again
                continue
            h = rows[0]
            if not self._is_gone(h):
                raise LockHeld(cluster, target, h["owner"], int(h["pid"]), h["host"],
                               float(h["since"]), h["purpose"] or "", self._is_stale(h))
            with self.journal.lock:
                cur = self.db.conn.execute(
                    "delete from runbook_locks where id = ? and pid = ? and host = ? and "
                    "since = ?", [h["id"], h["pid"], h["host"], h["since"]])
                if cur.rowcount:
                    self.takeovers.append(self._info(h))
        raise LockHeld(cluster, target, "?", 0, "?", time.time(), "taken in between")

    def release(self, lock_id: int) -> None:
        with self.journal.lock:
            self.db.conn.execute("delete from runbook_locks where id = ?", [lock_id])

    def locks(self, cluster: str | None = None) -> list[LockInfo]:
        where, args = ("cluster = ?", [cluster]) if cluster else (None, [])
        return [self._info(r) for r in
                self.db.table("runbook_locks").rows_where(where, args, order_by="since")]

    def stale_locks(self, cluster: str | None = None) -> list[LockInfo]:
        return [lk for lk in self.locks(cluster) if lk.stale]

    def clear(self, cluster: str, target: str) -> bool:
        """Remove the lock on (cluster, target), stale or not; True if there was one."""
        with self.journal.lock:
            cur = self.db.conn.execute(
                "delete from runbook_locks where cluster = ? and target = ?", [cluster, target])
            return bool(cur.rowcount)

    # ------------------------------------------------------------------ runs
    def start_run(self, cluster: str, runbook: str, target: str, user: str, source: str,
                  plan: Mapping[str, Any], confirmed_by: str | None = None) -> int:
        with self.journal.lock:
            return _pk(self.db.table("runbook_runs").insert({
                "cluster": cluster, "runbook": runbook, "target": self._r(target),
                "user": user,
                "source": source, "confirmed_by": confirmed_by or user,
                "plan": json.dumps(redact_obj(dict(plan), self.secrets), default=str),
                "started_at": time.time(), "finished_at": None, "outcome": "running",
                "message": "", "verify": "{}", "pid": os.getpid(), "host": self.hostname}))

    def record_step(self, run_id: int, index: int, title: str, where: str, command: str,
                    rc: int | None, stdout: str, stderr: str, duration_s: float,
                    status: str) -> int:
        with self.journal.lock:
            return _pk(self.db.table("runbook_steps").insert({
                "run_id": run_id, "idx": index, "title": self._r(title),
                "host": self._r(where),
                "command": self._r(command), "rc": rc, "stdout": self._r(stdout)[-20000:],
                "stderr": self._r(stderr)[-20000:], "duration_s": duration_s,
                "status": status, "at": time.time()}))

    def begin_step(self, run_id: int, index: int, title: str, where: str,
                   command: str) -> int:
        """A step about to run, audited before it runs (status ``running``): if the
        process dies during it, the audit says it was under way, not that it never ran.
        ``end_step`` records its outcome in the same row."""
        return self.record_step(run_id, index, title, where, command, None, "", "", 0.0,
                                "running")

    def end_step(self, step_id: int, rc: int | None, stdout: str, stderr: str,
                 duration_s: float, status: str) -> None:
        with self.journal.lock:
            self.db.table("runbook_steps").update(step_id, {
                "rc": rc, "stdout": self._r(stdout)[-20000:],
                "stderr": self._r(stderr)[-20000:], "duration_s": duration_s,
                "status": status, "at": time.time()})

    def interrupt_steps(self, run_id: int) -> list[AuditStep]:
        """A dead run's steps still ``running``, marked ``interrupted`` (their outcome is
        unknown: the process died during them); returns them."""
        with self.journal.lock:
            running = [s for s in self.steps(run_id) if s.status == "running"]
            self.db.conn.execute("update runbook_steps set status = 'interrupted' where "
                                 "run_id = ? and status = 'running'", [run_id])
        return running

    def finish_run(self, run_id: int, outcome: str, message: str,
                   verify: Mapping[str, Any] | None = None) -> None:
        with self.journal.lock:
            self.db.table("runbook_runs").update(run_id, {
                "finished_at": time.time(), "outcome": outcome, "message": self._r(message),
                "verify": json.dumps(redact_obj(dict(verify or {}), self.secrets),
                                     default=str)})

    # ------------------------------------------------------------------ owned changes
    # A run's own changes to the cluster (a flag it sets, e.g. noout) are written here
    # BEFORE they are made, with the command that undoes them. If the process dies
    # mid-run, a later run, `stordoc locks --clear` or a front end's start-up finds the
    # run dead, marks it interrupted and offers to undo exactly what it owned, never a
    # flag someone else set.
    def own(self, run_id: int, cluster: str, step_idx: int, what: str, undo_prefix: str,
            undo_args: Mapping[str, Any], undo_command: str) -> int:
        with self.journal.lock:
            return _pk(self.db.table("runbook_owned").insert({
                "run_id": run_id, "cluster": cluster, "step_idx": step_idx,
                "what": self._r(what), "undo_prefix": undo_prefix,
                # the arguments are run again by the undo (a flag's name): kept as they are
                "undo_args": json.dumps(dict(undo_args)),
                "undo_command": self._r(undo_command), "state": "held", "at": time.time()}))

    def set_owned(self, run_id: int, step_idx: int, state: str) -> None:
        """``undone`` (the run's cleanup ran), ``not_made`` (the step failed), ``left``."""
        with self.journal.lock:
            self.db.conn.execute(
                "update runbook_owned set state = ?, at = ? where run_id = ? and step_idx = ?"
                " and state = 'held'", [state, time.time(), run_id, step_idx])

    def set_owned_by_id(self, owned_id: int, state: str) -> None:
        with self.journal.lock:
            self.db.conn.execute("update runbook_owned set state = ?, at = ? where id = ?",
                                 [state, time.time(), owned_id])

    def flags_of(self, run_id: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the osdmap flags a run set, those it has not unset yet): its owned
        ``osd set``s, made (held) or undone; one that failed (not_made) is neither."""
        rows = self.db.conn.execute(
            "select undo_args, state from runbook_owned where run_id = ? and"
            " undo_prefix = 'osd unset' and state in ('held', 'undone', 'left')"
            " order by id", [run_id]).fetchall()
        made: list[str] = []
        held: list[str] = []
        for args, state in rows:
            key = _json_obj(args).get("key")
            if isinstance(key, str) and key:
                made.append(key)
                if state != "undone":
                    held.append(key)
        return tuple(made), tuple(held)

    def alive(self, run: AuditRun) -> bool:
        """A run marked running whose process is there (another host's: assumed so)."""
        return run.outcome == "running" and (
            run.host != self.hostname or run.pid is None or pid_alive(run.pid))

    def dead_runs(self, cluster: str) -> list[dict[str, Any]]:
        """Runs still marked running whose process on this host is gone."""
        rows = self.db.table("runbook_runs").rows_where(
            "cluster = ? and outcome = 'running' and host = ? and pid is not null",
            [cluster, self.hostname])
        return [self._decode(dict(r)) for r in rows if not pid_alive(int(r["pid"]))]

    def release_locks_of(self, pid: int, host: str) -> int:
        with self.journal.lock:
            cur = self.db.conn.execute("delete from runbook_locks where pid = ? and host = ?",
                                       [pid, host])
            return int(cur.rowcount or 0)

    def leftovers(self, cluster: str) -> list[dict[str, Any]]:
        """Changes owned by interrupted runs and never undone."""
        rows = self.db.conn.execute(
            "select o.*, r.runbook, r.target, r.user from runbook_owned o join runbook_runs r"
            " on r.id = o.run_id where o.cluster = ? and o.state = 'held' and"
            " r.outcome = 'interrupted' order by o.id", [cluster])
        cols = [c[0] for c in rows.description]
        out = []
        for r in rows.fetchall():
            d = dict(zip(cols, r, strict=True))
            d["undo_args"] = json.loads(d["undo_args"] or "{}")
            out.append(d)
        return out

    @staticmethod
    def _decode(row: dict[str, Any]) -> dict[str, Any]:
        for k in ("plan", "verify"):
            if isinstance(row.get(k), str):
                try:
                    row[k] = json.loads(row[k])
                except ValueError:
                    pass
        return row

    def runs(self, limit: int = 20, cluster: str | None = None) -> list[AuditRun]:
        """The newest runs first."""
        where, args = ("cluster = ?", [cluster]) if cluster else (None, [])
        return [AuditRun.from_row(r) for r in self.db.table("runbook_runs").rows_where(
            where, args, order_by="id desc", limit=limit)]

    def run(self, run_id: int) -> AuditRun | None:
        rows = list(self.db.table("runbook_runs").rows_where("id = ?", [run_id]))
        return AuditRun.from_row(rows[0]) if rows else None

    def steps(self, run_id: int) -> list[AuditStep]:
        return [AuditStep.from_row(r) for r in
                self.db.table("runbook_steps").rows_where("run_id = ?", [run_id], order_by="id")]
