"""Planned is not a problem: what stordoc changed on purpose, within its deadline.

A maintenance window (``stordoc maintenance start HOST``: noout on that host's OSDs) and a
temporary change stordoc made (``full-ratio-raise``: ratios raised until a deadline) are
written to the journal (``storage.expiring``) and reach the checks as ``snap.changes``.
Until the deadline, the findings they explain are one INFO finding each, saying what is
on, until when and by whom (``maintenance node2 on until 14:30 by alice``), with no Fix:
the next on-call is never told to end a colleague's window, and the check exits 0 for it.
Past its deadline the findings stay as the checks made them (a WARN whose next step ends
or reverts it) and say the change is overdue: the check never reverts it (a read never
writes, issue 39.3); ``watch``, the bot's timer and ``stordoc maintenance sweep`` do. A
flag set by hand, with no window in the journal, stays a problem.

Applied by the engine after every check ran (``checks.engine.run_checks``), so the CLI,
the Slack bot, the TUI and ``watch`` read the same verdict.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace

from checks.model import Finding, Severity
from storage.model import ClusterSnapshot, HeldChange

RATIO_TOL = 1e-4  # osd dump's ratios are float32
_OSD_LINE_RE = re.compile(r"\A(osd\.\d+) has flags? ([a-z_,-]+)\Z")


def until(deadline: float, now: float) -> str:
    """``14:30`` (UTC) within a day, else ``Mon 14:30``."""
    fmt = "%H:%M" if deadline - now < 86400 else "%a %H:%M"
    return time.strftime(fmt, time.gmtime(deadline))


def _left(s: float) -> str:
    s = max(0, int(s))
    return f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m"


def _open(snap: ClusterSnapshot, now: float) -> list[HeldChange]:
    return [c for c in snap.changes if c.deadline > now]


def _window_of(changes: Sequence[HeldChange], flag: str, osd: str) -> HeldChange | None:
    return next((c for c in changes if c.kind == "osd-flag" and c.key == flag
                 and osd in c.entities), None)


def _host_of(snap: ClusterSnapshot, ch: HeldChange) -> str:
    m = re.match(r"maintenance of host (\S+)", ch.reason)
    if m:
        return m.group(1)
    st = snap.ceph
    ids = [int(e[4:]) for e in ch.entities if re.fullmatch(r"osd\.[0-9]{1,9}", e)]
    hosts = {o.host for i in ids if st is not None and (o := st.osd(i)) is not None
             and o.host}
    return hosts.pop() if len(hosts) == 1 else ", ".join(ch.entities)


def _window_finding(snap: ClusterSnapshot, ch: HeldChange, osds: list[str],
                    since: float | None, now: float) -> Finding:
    host = _host_of(snap, ch)
    summary = f"maintenance {host} on until {until(ch.deadline, now)} by {ch.by}"
    return Finding(
        "OSDMAP_FLAGS", Severity.INFO, f"maintenance {host}",
        f"{summary} (UTC, {_left(ch.deadline - now)} left): {ch.key} on {', '.join(osds)}, "
        f"so their data is not re-replicated while they are down; stordoc unsets it at "
        f"the deadline (to end it early: stordoc maintenance end {host})",
        {"flag": ch.key, "osds": osds, "host": host,
         "planned": {"summary": summary, "by": ch.by, "until": ch.deadline,
                     "change_id": ch.id, "reason": ch.reason}},
        since=since if since is not None else ch.created_at)


def _ceph_flags_planned(f: Finding, changes: Sequence[HeldChange]) -> list[HeldChange]:
    """Ceph's OSD_FLAGS: the open windows that set every flag it lists, or [] when one
    is not a window's (a flag on a CRUSH node, or one set by hand, stays a problem)."""
    lines = [str(x) for x in f.evidence.get("detail") or ()]
    found: dict[int, HeldChange] = {}
    for line in lines:
        m = _OSD_LINE_RE.match(line.strip())
        if m is None:
            return []
        for fl in m.group(2).split(","):
            ch = _window_of(changes, fl, m.group(1))
            if ch is None:
                return []
            found[ch.id] = ch
    return list(found.values())


def _ratios_planned(f: Finding, changes: Sequence[HeldChange]) -> HeldChange | None:
    """FULL_RATIOS_RAISED, when every raised ratio is the value an open change set."""
    raised = f.evidence.get("raised") or {}
    if not isinstance(raised, dict) or not raised:
        return None
    found = []
    for k, v in raised.items():
        ch = next((c for c in changes if c.kind == "ratio" and c.key == f"{k}_ratio"
                   and c.after is not None and abs(c.after - float(v)) <= RATIO_TOL), None)
        if ch is None:
            return None
        found.append(ch)
    return min(found, key=lambda c: c.deadline)


def _overdue_note(ch: HeldChange, now: float) -> str:
    return (f"overdue: change #{ch.id} ({ch.what}, by {ch.by}) outlived its deadline "
            f"{until(ch.deadline, now)} UTC by {_left(now - ch.deadline)}; watch and the "
            f"bot revert it at its deadline, a check never does (now: stordoc maintenance "
            f"sweep)")


def _explaining(f: Finding, changes: Sequence[HeldChange]) -> list[HeldChange]:
    """The temporary changes among ``changes`` that explain ``f``: a window's flag on an
    OSD, Ceph's OSD_FLAGS when windows set each flag it lists, ratios a change raised."""
    ev = f.evidence
    if f.code == "OSDMAP_FLAGS" and ev.get("osd") is not None and ev.get("flag"):
        ch = _window_of(changes, str(ev["flag"]), f"osd.{ev['osd']}")
        return [ch] if ch is not None else []
    if f.code == "CEPH_HEALTH" and ev.get("ceph_code") == "OSD_FLAGS":
        return _ceph_flags_planned(f, changes)
    if f.code == "FULL_RATIOS_RAISED":
        ch = _ratios_planned(f, changes)
        return [ch] if ch is not None else []
    return []


def _said_overdue(findings: Sequence[Finding], snap: ClusterSnapshot,
                  now: float) -> list[Finding]:
    """Past its deadline a change is not reverted by the check that sees it (a read
    never writes): each finding it explains keeps its severity and next step and says
    the change is overdue, and how it is put back."""
    late = [c for c in snap.changes if c.deadline <= now]
    if not late:
        return list(findings)
    out = []
    for f in findings:
        ev = f.evidence
        chs = _explaining(f, late)
        ch = chs[0] if chs else None
        if ch is None:
            out.append(f)
            continue
        out.append(replace(f, message=f"{f.message} ({_overdue_note(ch, now)})",
                           evidence={**ev, "overdue": {"change_id": ch.id, "by": ch.by,
                                                       "deadline": ch.deadline}}))
    return out


def apply(findings: Sequence[Finding], snap: ClusterSnapshot, now: float) -> list[Finding]:
    """``findings`` with what an open temporary change explains made planned (INFO,
    saying until when and by whom), the flags of one window as one finding; what a
    change past its deadline explains said to be overdue."""
    findings = _said_overdue(findings, snap, now)
    changes = _open(snap, now)
    if not changes:
        return list(findings)
    out: list[Finding] = []
    windows: dict[int, tuple[HeldChange, list[str], float | None]] = {}
    for f in findings:
        ev = f.evidence
        chs = _explaining(f, changes)
        if not chs:
            out.append(f)
            continue
        if f.code == "OSDMAP_FLAGS":
            ch = chs[0]
            _, osds, since = windows.setdefault(ch.id, (ch, [], f.since))
            osds.append(f"osd.{ev['osd']}")
            continue
        if f.code == "CEPH_HEALTH":
            summary = "; ".join(f"maintenance {_host_of(snap, c)} on until "
                                f"{until(c.deadline, now)} by {c.by}" for c in chs)
            out.append(replace(f, severity=Severity.INFO,
                               message=f"{f.message} (planned: {summary})",
                               evidence={**ev, "planned": {"summary": summary}}))
            continue
        else:  # FULL_RATIOS_RAISED
            ch = chs[0]
            summary = f"full ratios raised until {until(ch.deadline, now)} by {ch.by}"
            out.append(replace(
                f, severity=Severity.INFO,
                message=f"{summary} (UTC, {_left(ch.deadline - now)} left"
                        + (f"; {ch.reason}" if ch.reason else "") + "): stordoc puts "
                        "them back at the deadline",
                evidence={**ev, "planned": {"summary": summary, "by": ch.by,
                                            "until": ch.deadline, "change_id": ch.id,
                                            "reason": ch.reason}}))
    for ch, osds, since in windows.values():
        out.append(_window_finding(snap, ch, sorted(osds, key=lambda o: int(o[4:])),
                                   since, now))
    return out
