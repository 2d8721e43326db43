"""What the journal remembers, for every front end: check history, findings of a run,
audited runbook runs and their steps, mutes, and the alert stream the bot posted."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import checks.catalog  # noqa: F401  (registers every check's codes)
import checks.engine  # noqa: F401  (registers the engine's own codes)
from checks.model import Finding, Severity
from checks.mutable import mute_refusal
from core.env import Env
from core.service.fixes import UnknownFindingCode, catalogued_code
from core.settings_model import SettingsError
from storage.audit import Audit, AuditRun, AuditStep
from storage.journal import CheckRun, FindingRecord
from storage.mutes import Mute, add_mute, list_mutes, remove_mutes

__all__ = ["AlertPost", "AuditRun", "AuditStep", "CheckRun", "FindingRecord", "Mute",
           "MuteRefused", "Records", "UnknownCode", "known_code"]

ALERT_TABLE = "alert_threads"  # written by the bot's alert desk (bot/alerts/__init__.py)


class MuteRefused(Exception):
    """A mute that cannot be made (no reason, already over); nothing was written."""


class UnknownCode(MuteRefused):
    """A mute of a code no check reports (a typo would mute nothing, silently)."""

    def __init__(self, code: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown code {code!r}")
        self.code = code
        self.known = tuple(known)


@dataclass(frozen=True)
class AlertPost:
    """One alert or watch-mode thread the bot opened in the on-call channel."""

    key: str
    cluster: str
    title: str
    opened_at: float
    closed_at: float | None

    @property
    def open(self) -> bool:
        return self.closed_at is None


def known_code(code: str) -> str:
    """A registered finding code, upper-cased (``fixes.catalogued_code``, the one rule).
    ASCII only: ``str.upper`` turns a long s (ſ) into S, so ``oſd_down`` would otherwise
    mute OSD_DOWN."""
    try:
        return catalogued_code(code)
    except UnknownFindingCode as e:
        raise UnknownCode(code, e.known) from None


def _finding(r: FindingRecord) -> Finding:
    try:
        sev = Severity[r.severity.upper()]
    except KeyError:
        sev = Severity.WARN
    return Finding(r.code, sev, r.entity, r.message, dict(r.evidence), r.runbook, r.target,
                   since=r.since)


class Records:
    def __init__(self, env: Env) -> None:
        self.env = env

    # ------------------------------------------------------------------ check runs
    def history(self, cluster: str, limit: int = 20) -> list[CheckRun]:
        return self.env.journal.runs(self.env.cluster_name(cluster), limit=limit)

    def findings_of(self, run_id: int) -> list[FindingRecord]:
        return self.env.journal.findings_of(run_id)

    def last_findings(self, cluster: str) -> tuple[CheckRun | None, list[Finding]]:
        """The newest recorded run of ``cluster`` and its findings (no new check)."""
        runs = self.history(cluster, limit=1)
        if not runs:
            return None, []
        return runs[0], [_finding(r) for r in self.findings_of(runs[0].id)]

    # ------------------------------------------------------------------ audit
    def _audit(self, cluster: str | None) -> Audit:
        # the run context's preflight is wanted even for reading: a user who cannot read
        # the cluster's keyring is told so (exit 77), tests/lab/test_cli_hardening.py
        secrets = self.env.run_context(cluster, discover=False).secrets if cluster else ()
        return Audit(self.env.journal, secrets)

    def audit(self, cluster: str | None, limit: int = 20) -> list[AuditRun]:
        name = self.env.cluster_name(cluster) if cluster else None
        return self._audit(name).runs(limit=limit, cluster=name)

    def audit_run(self, run_id: int) -> tuple[AuditRun | None, list[AuditStep]]:
        a = Audit(self.env.journal)
        run = a.run(run_id)
        return run, (a.steps(run_id) if run is not None else [])

    def audit_steps(self, run_id: int) -> list[AuditStep]:
        return Audit(self.env.journal).steps(run_id)

    # ------------------------------------------------------------------ mutes
    def mute(self, cluster: str, code: str, entity: str | None, for_s: float, reason: str,
             by: str) -> Mute:
        """Mute a finding code (on one entity, or all) for ``for_s`` seconds."""
        code = known_code(code)
        refused = mute_refusal(code)  # "cannot see the cluster" is never muted into OK
        if refused:
            raise MuteRefused(refused)
        try:
            return add_mute(self.env.journal, self.env.cluster_name(cluster), code,
                            entity or None, time.time() + for_s, by, reason,
                            secrets=self._configured_secrets())
        except ValueError as e:
            raise MuteRefused(str(e)) from None

    def _configured_secrets(self) -> tuple[str, ...]:
        """The secrets the settings name (Swift keys, the alert token): kept out of a
        mute's stored reason even when they do not look like one."""
        s = self.env.settings
        found = [c.swift.key for c in s.clusters.values() if c.swift and c.swift.key]
        found += [x for x in (s.alerts.token,) if x]
        out = []
        for sec in found:
            try:
                v = sec.resolve()
            except (OSError, ValueError, SettingsError):
                continue
            if v:
                out.append(v)
        return tuple(out)

    def unmute(self, cluster: str, code: str, entity: str | None, by: str) -> list[Mute]:
        return remove_mutes(self.env.journal, self.env.cluster_name(cluster),
                            known_code(code), entity or None, by)

    def mutes(self, cluster: str | None, limit: int = 100) -> list[Mute]:
        name = self.env.cluster_name(cluster) if cluster else None
        return list_mutes(self.env.journal, name, limit)

    # ------------------------------------------------------------------ alert stream
    def alert_stream(self, limit: int = 20) -> list[AlertPost]:
        """What the bot posted from alerts and watch mode, newest first: the TUI follows
        the same stream as the on-call channel."""
        journal = self.env.journal
        with journal.lock:
            if ALERT_TABLE not in journal.db.table_names():
                return []
            rows = list(journal.db.table(ALERT_TABLE).rows_where(order_by="opened_at desc",
                                                                 limit=limit))
        return [AlertPost(str(r["key"]), str(r["cluster"] or ""), str(r["title"] or ""),
                          float(r["opened_at"] or 0.0),
                          None if r["closed_at"] is None else float(r["closed_at"]))
                for r in rows]
