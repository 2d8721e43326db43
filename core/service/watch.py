"""The watch loop, for ``stordoc watch`` and ``stordoc bot --watch CLUSTER``: check a
cluster every ``every`` seconds, say a line per new incident and per resolution (and one
per stordoc run for what it did itself: a flag it set, PGs settling after it; never a NEW
line), revert temporary changes at their deadlines (its own audited step), and, given an
alert desk (``core.alerts.AlertDesk``), post them the way alerts are posted (one message
per incident, its Fix button, the resolution in its thread). A post that fails is tried
again with backoff (``core.slack.retry.Backoff``); the checks go on meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checks.incidents import alarming, run_of
from checks.model import Verdict

if TYPE_CHECKING:
    from checks.outcome import CheckOutcome
    from core.alerts import AlertDesk
    from core.env import Env
    from core.service.app import Service


def stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Seen:
    """What a watch has said: the incidents announced open (id -> line) and the runs it
    attributed their own doings to (one line a run)."""

    open: dict[str, str] = field(default_factory=dict)
    runs: set[int] = field(default_factory=set)
    first: bool = True


def changes(seen: Seen, out: CheckOutcome) -> list[str]:
    """Lines for what changed since ``seen`` (updated): all open on the first check, then
    NEW and RESOLVED incidents, CHANGED when one thing's cause is seen anew (one NEW and
    one RESOLVED on the same entity). What a running or just-finished stordoc run did (a flag it
    set, PGs settling after it: ``checks.incidents.run_of``) is one RUN line for that
    run, never a NEW line; an INFO incident (PGs settling after an OSD change) is no
    alarm."""
    c = out.report.cluster
    if out.report.verdict == Verdict.UNREACHABLE:
        return [f"{stamp()} {c} UNREACHABLE: "
                + "; ".join(f.message for f in out.report.findings[:1])]
    now: dict[str, str] = {}
    did: dict[int, list[str]] = {}  # run id -> what it did, first seen in this check
    names: dict[int, str] = {}
    for inc in out.incidents:
        by = run_of(inc, out.snapshot.runs)
        if by is not None and inc.id not in seen.open:  # said open: open till gone
            run, what = by
            if run.id not in seen.runs:
                names[run.id] = run.name
                did.setdefault(run.id, []).append(what)
            continue
        if alarming(inc):  # the run's doing was handled above
            now[inc.id] = _line(inc)
    seen.runs |= set(did)
    runs = [f"{stamp()} {c} RUN {names[r]} {'; '.join(w)}" for r, w in did.items()]
    lines: list[str] = []
    if seen.first:
        lines.append(f"{stamp()} {c}: watching, {len(now)} incident"
                     f"{'s' if len(now) != 1 else ''} open")
        lines += [f"{stamp()} {c} OPEN {v}" for v in now.values()]
        lines += runs
    else:
        new = [k for k in now if k not in seen.open]
        gone = [k for k in seen.open if k not in now]
        # the same thing's cause seen anew (osd.1 stopped, then unmounted): one line
        was = {_entity(k): k for k in gone}
        changed = {k: was[_entity(k)] for k in new if _entity(k) in was}
        for k in new:
            if k in changed:
                lines.append(f"{stamp()} {c} CHANGED {changed[k].split(' ', 1)[0]} -> "
                             f"{now[k]}")
            else:
                lines.append(f"{stamp()} {c} NEW {now[k]}")
        lines += runs
        lines += [f"{stamp()} {c} RESOLVED {k}" for k in gone if k not in changed.values()]
    seen.open, seen.first = now, False
    return lines


def _entity(incident_id: str) -> str:
    """What an incident id ("ROOT_CODE entity") is about."""
    return incident_id.split(" ", 1)[-1]


def _line(inc: Any) -> str:
    """An incident in one line, with what to do about it (the check's own words for its
    step: ``core.service.fixes.incident_step``)."""
    from core.service.fixes import incident_step

    return f"{inc.severity.label} {inc.id}: {inc.impact} -- next: {incident_step(inc)}"


def loop(svc: Service, cluster: str, every: float, stop: threading.Event,
         emit: Callable[[str], None], desk: AlertDesk | None = None,
         count: int | None = None, source: str = "watch",
         warn: Callable[[str], None] | None = None) -> int:
    """The watch loop (CLI and bot); returns the number of checks run. A Slack post that
    fails (after slack_sdk's own retries: ``core.slack.retry``) is said in one line
    (``warn``, default ``emit``) and tried again at a later check with backoff; the
    checks go on meanwhile, and a post is recorded only once it went through, so it is
    delivered once."""
    from core.slack.retry import Backoff, describe, is_slack_failure  # slack_sdk: when run

    env = svc.env
    say = warn or emit
    seen = Seen()
    n = 0
    backoff = Backoff(every)
    while not stop.is_set() and (count is None or n < count):
        t0 = time.monotonic()
        # temporary changes past their deadline: reverted here, as its own audited step
        # (a check only reads and says they are overdue)
        env.sweep_expired(cluster, source)
        for line in env.take_reverted():
            emit(f"{stamp()} {cluster} EXPIRED {line}")
        out = svc.check(cluster, source)
        n += 1
        for line in changes(seen, out):
            emit(line)
        if out.report.verdict != Verdict.UNREACHABLE and desk is not None and \
                backoff.due(time.monotonic()):
            try:
                desk.sync(cluster, out)
            except Exception as e:
                if not is_slack_failure(e):
                    raise
                first = backoff.failures == 0
                delay = backoff.failed(time.monotonic())
                if first:
                    say(f"{stamp()} {cluster} SLACK posting failed ({describe(e)}): "
                        f"checks go on, posts are tried again (next in {delay:.0f} s)")
            else:
                if backoff.failures:
                    say(f"{stamp()} {cluster} SLACK posting works again")
                backoff.ok()
        if count is not None and n >= count:
            break
        _wait_reverting(env, cluster, t0 + every, stop, emit, source)
    return n


def _wait_reverting(env: Env, cluster: str, until: float, stop: threading.Event,
                    emit: Callable[[str], None], source: str) -> None:
    """Wait for the next check (``until``, monotonic), waking at each temporary change's
    deadline in between (``storage.expiring``) to revert it then, not up to an interval
    later."""
    while not stop.is_set():
        left = until - time.monotonic()
        if left <= 0:
            return
        soon = next_deadline(env, cluster)
        if soon is None or soon - time.time() >= left:
            stop.wait(left)
            return
        if stop.wait(max(0.0, soon - time.time()) + 0.05):
            return
        env.sweep_expired(cluster, source)
        for line in env.take_reverted():
            emit(f"{stamp()} {cluster} EXPIRED {line}")
        nxt = next_deadline(env, cluster)
        if nxt is not None and nxt <= time.time():  # not reverted (the cluster did not
            stop.wait(max(0.0, until - time.monotonic()))  # answer...): the check retries
            return


def next_deadline(env: Env, cluster: str) -> float | None:
    """The soonest deadline of the cluster's open temporary changes (None: none, or the
    journal busy or gone: the next wake tries again); watch and the bot's timer."""
    from storage.expiring import open_changes

    try:
        return min((c.deadline for c in open_changes(env.journal, cluster)), default=None)
    except Exception:  # the journal busy or gone: the next check sweeps anyway
        return None
