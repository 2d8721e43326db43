"""Temporary changes: made by a runbook step that writes the change to the journal
(``storage.expiring``) before it makes it, and reverted at the deadline by ``sweep``,
which whoever runs next calls (``stordoc watch`` each interval, the bot's periodic
checks, the next command that touches the cluster: ``core.env.Env``), also after
stordoc was restarted or killed.

The revert is audited as a run of its own (``expiry-revert``, one step per change) and
restores exactly the value recorded before, and only while the cluster still has the
value stordoc set: a value someone else changed since is said and left as it is.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from runbooks.model import (
    InvalidRequest,
    MonOp,
    PlannedStep,
    Probe,
    Refused,
    RunContext,
    StepEnv,
    StepStatus,
)
from runbooks.steps import NoRunner, run_step, short
from storage import expiring
from storage.audit import Audit, LockHeld
from storage.model import HeldChange

# a window is at least a few seconds (0 s is nothing to hold) and at most a week (a
# "temporary" change of ten years is a permanent one nobody remembers)
MIN_WINDOW_S, MAX_WINDOW_S = 5.0, 7 * 86400.0
MAX_RATIO = 0.99
RATIO_TOL = 1e-4  # osd dump's ratios are float32 (0.949999988079071)
RATIO_KEYS = ("nearfull_ratio", "backfillfull_ratio", "full_ratio")
SWEEP_LOCK = "expiring-changes"

_DUR_RE = re.compile(r"\A([0-9]{1,9})([smhd]?)\Z", re.ASCII)
_DUR_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_FLOAT_RE = re.compile(r"\A(?:0?\.[0-9]{1,6}|0|1(?:\.0{0,6})?)\Z", re.ASCII)


def parse_window(text: object) -> float:
    """``90s``, ``30m``, ``2h``, ``1d`` -> seconds in [MIN_WINDOW_S, MAX_WINDOW_S];
    anything else is an ``InvalidRequest`` in one line."""
    t = str(text).strip().lower()
    m = _DUR_RE.match(t)
    if not m:
        raise InvalidRequest(f"not a duration like 90s, 30m, 2h or 1d: {str(text)[:40]!r}")
    v = float(int(m.group(1)) * _DUR_UNIT[m.group(2)])
    if not MIN_WINDOW_S <= v <= MAX_WINDOW_S:
        raise InvalidRequest(f"a temporary change lasts between {MIN_WINDOW_S:g}s and "
                             f"{MAX_WINDOW_S / 86400:g}d, not {t}")
    return v


def parse_ratio(text: object, what: str = "ratio") -> float:
    """A plain decimal in (0, MAX_RATIO]: ``nan``, ``inf``, ``1e20``, ``0.995`` refused."""
    t = str(text).strip()
    if not _FLOAT_RE.match(t):
        raise InvalidRequest(f"{what}: not a plain decimal between 0 and {MAX_RATIO}: "
                             f"{t[:40]!r}")
    v = float(t)
    if not math.isfinite(v) or v <= 0.0 or v > MAX_RATIO + 1e-9:
        raise InvalidRequest(f"{what} must be above 0 and at most {MAX_RATIO}, not {t}")
    return v


def fmt_at(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))


# ------------------------------------------------------------------ making a change


def temporary_op(kind: str, key: str, window_s: float, mon: MonOp,
                 entities: Sequence[str] = (), before: float | None = None,
                 after: float | None = None, reason: str = "") -> Probe:
    """A step's action: write the change (deadline = now + window) to the journal, then
    make it with ``mon``; the row is ``held`` once made, ``not_made`` when it failed."""

    def fn(env: StepEnv) -> tuple[bool, str]:
        ctx = env.ctx
        now = time.time()
        ch = expiring.record(ctx.journal, ctx.cluster, kind, key, now + window_s, ctx.user,
                             entities, before, after, None, reason, now=now)
        try:
            env.ceph.mon(mon.prefix, **dict(mon.args))
        except BaseException:
            expiring.mark(ctx.journal, ch.id, "not_made")
            raise
        expiring.mark(ctx.journal, ch.id, "held")
        return True, (f"{mon.command()}: done; stordoc reverts it at "
                      f"{fmt_at(ch.deadline)} (change #{ch.id})")

    return fn


def end_flag_now(key: str, entities: Sequence[str]) -> Probe:
    """A step's action for ``maintenance end``: unset the flag on those OSDs and end the
    open changes that held it (state ``ended``, by the person)."""

    def fn(env: StepEnv) -> tuple[bool, str]:
        ctx = env.ctx
        env.ceph.mon("osd unset-group", flags=key, who=list(entities))
        ended = []
        for c in expiring.open_changes(ctx.journal, ctx.cluster):
            if c.kind == "osd-flag" and c.key == key and set(c.entities) & set(entities):
                expiring.mark(ctx.journal, c.id, "ended", f"ended early by {ctx.user}",
                              by=ctx.user)
                ended.append(f"#{c.id}")
        return True, (f"{key} unset on {', '.join(entities)}"
                      + (f"; change {', '.join(ended)} ended" if ended else ""))

    return fn


# ------------------------------------------------------------------ reverting


def _osd_flags(dump: Mapping[str, Any]) -> dict[str, set[str]]:
    return {f"osd.{int(o.get('osd', -1))}": {str(s) for s in o.get("state") or ()}
            for o in dump.get("osds") or () if isinstance(o, Mapping)}


def decide(c: HeldChange, dump: Mapping[str, Any]) -> tuple[MonOp | None, str, str]:
    """What to do with a change at its deadline: (the revert, or None; the state it ends
    in; what to say)."""
    if c.kind == "ratio":
        try:
            cur = float(dump.get(c.key))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None, "left", f"{c.key} is not in the osd dump: left as it is"
        if c.before is None or c.after is None:
            return None, "left", f"change #{c.id} has no recorded value: left as it is"
        if abs(cur - c.after) <= RATIO_TOL:
            name = c.key.removesuffix("_ratio")
            return (MonOp(f"osd set-{name}-ratio", {"ratio": round(c.before, 6)}),
                    "reverted", f"{c.key} {cur:g} -> {c.before:g} (the value before "
                                f"change #{c.id})")
        if c.state == "pending" and abs(cur - c.before) <= RATIO_TOL:
            return None, "not_made", (f"{c.key} is {cur:g}, as before change #{c.id}: "
                                      f"it was never made")
        return None, "left", (f"{c.key} is {cur:g} now, not the {c.after:g} stordoc set "
                              f"(change #{c.id}): changed by someone else since; left as "
                              f"it is")
    flags = _osd_flags(dump)
    still = [e for e in c.entities if c.key in flags.get(e, set())]
    gone = [e for e in c.entities if e not in still]
    if still:
        note = f"{c.key} unset on {', '.join(still)} (set by change #{c.id})"
        if gone:
            note += f"; {', '.join(gone)} no longer had it (cleared by someone else)"
        return MonOp("osd unset-group", {"flags": c.key, "who": still}), "reverted", note
    if c.state == "pending":
        return None, "not_made", f"{c.key} is on none of {', '.join(c.entities)}: never made"
    return None, "left", (f"{c.key} is no longer set on {', '.join(c.entities)}: cleared "
                          f"by someone else before the deadline of change #{c.id}")


def sweep(ctx: RunContext, now: float | None = None) -> list[str]:
    """Revert every change whose deadline has passed (one audited ``expiry-revert`` run);
    returns one line a change. Nothing is due: nothing is read, nothing is written. The
    cluster unreachable: the changes stay open, tried again next time."""
    now = time.time() if now is None else now
    if not expiring.due(ctx.journal, ctx.cluster, now):
        return []
    audit = Audit(ctx.journal, ctx.secrets)
    try:
        lock = audit.acquire(ctx.cluster, SWEEP_LOCK, ctx.user, "revert expired changes")
    except LockHeld:
        return []  # another stordoc is reverting them right now
    try:
        changes = expiring.due(ctx.journal, ctx.cluster, now)  # again, under the lock
        if not changes:
            return []
        return _revert(ctx, audit, changes)
    finally:
        audit.release(lock)


def _revert(ctx: RunContext, audit: Audit, changes: list[HeldChange]) -> list[str]:
    env = StepEnv(ctx, NoRunner())
    try:
        dump = env.ceph.mon("osd dump") or {}
    except (Refused, Exception) as e:  # unreachable: try again next time
        env.close()
        return [f"expired change(s) {', '.join(f'#{c.id}' for c in changes)} not reverted "
                f"yet: the cluster did not answer ({short(str(e), 120)})"]
    run_id = audit.start_run(
        ctx.cluster, "expiry-revert", ", ".join(f"#{c.id}" for c in changes), "stordoc",
        ctx.source, {"changes": [{"id": c.id, "what": c.what, "by": c.by,
                                  "deadline": c.deadline} for c in changes]},
        confirmed_by="; ".join(sorted({f"{c.by} (deadline)" for c in changes})))
    out: list[str] = []
    ok = True
    try:
        for i, c in enumerate(changes, 1):
            op, state, note = decide(c, dump)
            title = f"revert change #{c.id} ({c.what}, set by {c.by}, expired " \
                    f"{fmt_at(c.deadline)})"
            if op is None:
                audit.record_step(run_id, i, title, "ceph", "(nothing run)", None, note, "",
                                  0.0, StepStatus.SKIPPED)
                expiring.mark(ctx.journal, c.id, state, note, by="stordoc")
                out.append(f"change #{c.id} expired: {note}")
                continue
            step = PlannedStep(i, title, "ceph", op.command(), ctx.step_timeout_s, None, op)
            row = audit.begin_step(run_id, i, title, "ceph", step.command)
            t0 = time.monotonic()
            status, rc, so, se = run_step(env, step, threading.Event())
            audit.end_step(row, rc, so or note, se, time.monotonic() - t0, status)
            if status == StepStatus.DONE:
                expiring.mark(ctx.journal, c.id, state, note, by="stordoc")
                out.append(f"change #{c.id} expired and reverted: {note}; "
                           f"$ {step.command}")
            else:  # stays held: tried again next time
                ok = False
                out.append(f"change #{c.id} expired; revert FAILED ({short(se, 160)}): "
                           f"tried again next time")
    finally:
        env.close()
        audit.finish_run(run_id, "success" if ok else "failed", "; ".join(out))
    return out


def describe_open(ctx_journal: Any, cluster: str, now: float | None = None) -> list[str]:
    """One line per open temporary change (for ``maintenance list`` and status)."""
    now = time.time() if now is None else now
    return [f"#{c.id} {c.what}: set by {c.by} at {fmt_at(c.created_at)}, " + (
            f"reverted at {fmt_at(c.deadline)} (in {int(c.deadline - now)} s)"
            if c.deadline > now else
            f"OVERDUE: its deadline {fmt_at(c.deadline)} passed {int(now - c.deadline)} s "
            f"ago (watch and the bot revert it; now: stordoc maintenance sweep)")
            for c in expiring.open_changes(ctx_journal, cluster)]
