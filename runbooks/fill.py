"""Fixes for a filling cluster: even the OSDs out (``osd-reweight-by-utilization``, shown
as Ceph's own dry run first; ``balancer-upmap``), and an emergency, temporary raise of
the full ratios (``full-ratio-raise``) that stordoc reverts at its deadline
(``runbooks.expiry``), written to the journal before it is made.

The target of each is the cluster itself (its configured name).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from typing import Any

from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.expiry import (
    MAX_RATIO,
    RATIO_KEYS,
    fmt_at,
    parse_ratio,
    parse_window,
    temporary_op,
)
from runbooks.model import (
    InvalidRequest,
    MonOp,
    PyOp,
    Refused,
    RunbookInfo,
    RunContext,
    StepEnv,
)
from storage.model import CephState, ClusterSnapshot

DEFAULT_OLOAD = 120  # Ceph's default: OSDs above 120% of the average are reweighted
DEFAULT_MAX_CHANGE = 0.05
DEFAULT_MAX_OSDS = 4
DEFAULT_RAISE_WINDOW = "4h"
MIN_HEADROOM = 0.01  # a raised ratio stays at least this far above the fullest OSD
DEFAULT_FAILSAFE = 0.97  # Ceph's osd_failsafe_full_ratio


def _cluster_target(d: Draft, target: str) -> None:
    if target.removeprefix("cluster ").strip() != d.ctx.cluster:
        raise InvalidRequest(f"the target of this runbook is the cluster itself "
                             f"({d.ctx.cluster}), not {target!r}")


def _int_opt(d: Draft, key: str, default: int, lo: int, hi: int) -> int:
    raw = d.options.get(key)
    if raw is None:
        return default
    t = str(raw).strip()
    if not t.isascii() or not t.isdigit() or not lo <= int(t) <= hi:
        raise InvalidRequest(f"option {key} must be a whole number from {lo} to {hi}, "
                             f"not {t[:40]!r}")
    return int(t)


def failsafe_ratio(ceph: CephState) -> float:
    """The monitor's ``osd_failsafe_full_ratio`` (``config get mon``; Ceph's default 0.97
    when it was not read); a value above 1 is a percentage, as the monitor reads it."""
    raw = ceph.config.get("osd_failsafe_full_ratio")
    try:
        v = float(raw) if raw is not None else DEFAULT_FAILSAFE
    except ValueError:
        return DEFAULT_FAILSAFE
    if not math.isfinite(v) or v <= 0:
        return DEFAULT_FAILSAFE
    return v / 100 if v > 1.0 else v


def ratio_order_problem(nearfull: float, backfillfull: float, full: float,
                        failsafe: float) -> str | None:
    """Which of Ceph's orders nearfull <= backfillfull <= full <= osd_failsafe_full_ratio
    the ratios would break (one line), None when none: the monitor raises HEALTH_ERR
    OSD_OUT_OF_ORDER_FULL for each (the same comparisons; equal is allowed)."""
    tol = 1e-6  # osd dump's ratios are float32
    pairs = (("nearfull", nearfull, "backfillfull", backfillfull),
             ("backfillfull", backfillfull, "full", full),
             ("full", full, "osd_failsafe_full_ratio", failsafe))
    for lo_name, lo, hi_name, hi in pairs:
        if lo > hi + tol:
            return (f"{lo_name} {lo:g} would be above {hi_name} {hi:g}: Ceph orders them "
                    f"nearfull <= backfillfull <= full <= osd_failsafe_full_ratio "
                    f"({nearfull:g}, {backfillfull:g}, {full:g}, {failsafe:g} would be "
                    f"HEALTH_ERR OSD_OUT_OF_ORDER_FULL); nothing was changed")
    return None


def _clean(ceph: CephState) -> tuple[bool, str]:
    bad = {s: n for s, n in ceph.pgs.by_state.items() if s != "active+clean" and n}
    return not bad, ", ".join(f"{n} {s}" for s, n in sorted(bad.items()))


def _ceph_op(describe: str, prefix: str, args: Mapping[str, Any], mgr: bool) -> PyOp:
    """A Ceph command as a step, sent to the manager (``balancer ...``) or the monitor
    (``osd (test-)reweight-by-utilization``: the manager's command of that name answered
    "no change" on the lab whatever the fill; the ceph CLI sends it to the monitor)."""

    def fn(env: StepEnv) -> tuple[bool, str]:
        out = (env.ceph.mgr if mgr else env.ceph.mon)(prefix, **dict(args))
        return True, out if isinstance(out, str) else json.dumps(out)

    return PyOp(describe, fn)


def _balancer_on(env: StepEnv) -> tuple[bool, str]:
    """The manager's own word that the change took: what a fill check cannot see yet
    (the balancer moves PGs over minutes)."""
    st = env.ceph.mgr("balancer status") or {}
    mode, active = st.get("mode"), st.get("active")
    return mode == "upmap" and active is True, f"mode {mode}, active {active}"


def dry_run_lines(out: Any) -> list[str]:
    """``osd test-reweight-by-utilization``'s answer (JSON or text) for people."""
    if isinstance(out, Mapping):
        lines = [f"average utilization {float(out.get('average_utilization', 0)):.4f}, "
                 f"overload {float(out.get('overload_utilization', 0)):.4f}, "
                 f"max change {out.get('max_change')}"]
        rw = out.get("reweights") or []
        for r in rw if isinstance(rw, list) else []:
            if isinstance(r, Mapping):
                lines.append(f"osd.{r.get('osd')} reweight {float(r.get('weight', 0)):.4f} "
                             f"-> {float(r.get('new_weight', 0)):.4f}")
        if not rw:
            lines.append("no change: no OSD is above the overload threshold")
        return lines
    text = str(out or "").strip()
    return text.splitlines() or ["no change"]


def test_reweight(ctx: RunContext, args: Mapping[str, Any]) -> Any:
    """Ceph's own dry run (reads only)."""
    from storage.ceph import CephClient

    if ctx.target.ceph is None:
        raise Refused(f"cluster {ctx.cluster} has no Ceph configured")
    from storage.ceph import CephCommandError, CephError

    try:
        with CephClient(ctx.target.ceph) as c:
            return c.mon("osd test-reweight-by-utilization", **dict(args))
    except CephCommandError as e:
        if "no change" in e.outs:  # Ceph says it with a non-zero status (seen on the lab)
            return e.outs
        raise Refused(f"Ceph's dry run (osd test-reweight-by-utilization) failed: {e}"
                      ) from None
    except CephError as e:
        raise Refused(f"Ceph's dry run (osd test-reweight-by-utilization) failed: {e}"
                      ) from None


@register
class ReweightByUtilization(Runbook):
    option_keys = ("oload", "max_change", "max_osds")
    info = RunbookInfo(
        "osd-reweight-by-utilization",
        "Lower the reweight of the fullest OSDs (Ceph's reweight-by-utilization), shown "
        "as Ceph's own dry run (test-reweight-by-utilization) before it is applied.",
        ("OSD_FILL_SPREAD",), destructive=True, target_kind="cluster",
        target_help="the cluster's name")

    def lock_keys(self, target: str) -> list[str]:
        return ["osd reweights"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        _cluster_target(d, target)
        ceph = need_ceph(snap)
        oload = _int_opt(d, "oload", DEFAULT_OLOAD, 101, 300)
        max_osds = _int_opt(d, "max_osds", DEFAULT_MAX_OSDS, 1, 100)
        raw = d.options.get("max_change")
        max_change = DEFAULT_MAX_CHANGE if raw is None else parse_ratio(raw, "max_change")
        ok, why = _clean(ceph)
        if not ok:
            raise Refused(f"not all PGs are active+clean ({why}): reweighting now moves "
                          "data on top of recovery; wait for the cluster to settle")
        args = {"oload": oload, "max_change": max_change, "max_osds": max_osds}
        d.params.update(oload=oload, max_change=max_change, max_osds=max_osds)
        if d.ctx.offline:
            d.warnings.append("planned from a saved snapshot: Ceph's dry run is not shown")
        else:
            lines = dry_run_lines(test_reweight(d.ctx, args))
            d.params["dry_run"] = lines
            if not any("->" in x for x in lines):
                raise Refused("Ceph's dry run changes nothing: "
                              + "; ".join(lines)[:300])
        d._add("Ceph's dry run again (what the next step changes)", "ceph",
               _ceph_op(f"ceph osd test-reweight-by-utilization {oload} {max_change} "
                        f"{max_osds}", "osd test-reweight-by-utilization", args, mgr=False),
               None, None)
        op = _ceph_op(f"ceph osd reweight-by-utilization {oload} {max_change} {max_osds}",
                      "osd reweight-by-utilization", args, mgr=False)
        d._add("reweight the fullest OSDs", "ceph", op, None, None)
        d.verify_codes = ("OSD_FILL_SPREAD",)
        d.verify_entities = (f"cluster {d.ctx.cluster}",)


# the clients a require-min-compat-client luminous would lock out (``ceph features``)
OLD_RELEASES = ("jewel", "kraken", "hammer", "infernalis", "firefly", "giant", "argonaut",
                "bobtail", "cuttlefish", "dumpling", "emperor")


def _old_clients(features: Any) -> list[str]:
    """Client groups older than Luminous in ``ceph features``."""
    out: list[str] = []
    if not isinstance(features, Mapping):
        return out
    for kind in ("client", "mgr", "osd", "mon", "mds"):
        for grp in features.get(kind) or []:
            if isinstance(grp, Mapping) and str(grp.get("release", "")).lower() in \
                    OLD_RELEASES:
                out.append(f"{grp.get('num', '?')} {kind} ({grp.get('release')})")
    return out


@register
class BalancerUpmap(Runbook):
    info = RunbookInfo(
        "balancer-upmap",
        "Turn the manager's balancer on in upmap mode (require-min-compat-client "
        "luminous first, only when no older client is connected): the other fix of "
        "OSD_FILL_SPREAD.",
        (), destructive=True, target_kind="cluster",
        target_help="the cluster's name")

    def lock_keys(self, target: str) -> list[str]:
        return ["balancer"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        _cluster_target(d, target)
        need_ceph(snap)
        from storage.ceph import CephClient

        if d.ctx.offline or d.ctx.target.ceph is None:
            raise Refused("balancer-upmap reads the connected clients' releases: plan it "
                          "on the live cluster")
        from storage.ceph import CephError

        try:
            with CephClient(d.ctx.target.ceph) as c:
                features = c.mon("features")
                dump = c.mon("osd dump") or {}
                status = c.mgr("balancer status") or {}
        except CephError as e:
            raise Refused(f"cannot read the clients' releases or the balancer: {e}"
                          ) from None
        old = _old_clients(features)
        if old:
            raise Refused("clients older than Luminous are connected ("
                          + ", ".join(old) + "): upmap would lock them out; the balancer "
                          "is left as it is")
        cur = str(dump.get("require_min_compat_client") or "")
        d.params.update(require_min_compat_client=cur or "-",
                        balancer_mode=status.get("mode"), active=status.get("active"))
        if cur.lower() in OLD_RELEASES or not cur:
            d.mon("require clients of Luminous or newer (no older one is connected)",
                  "osd set-require-min-compat-client", {"version": "luminous"})
            d.before_after["require_min_compat_client"] = (cur or "-", "luminous")
        if status.get("mode") != "upmap":
            d._add("balancer mode upmap", "ceph",
                   _ceph_op("ceph balancer mode upmap", "balancer mode", {"mode": "upmap"},
                            mgr=True),
                   None, None)
            d.before_after["balancer mode"] = (status.get("mode"), "upmap")
        if not status.get("active"):
            d._add("balancer on", "ceph",
                   _ceph_op("ceph balancer on", "balancer on", {}, mgr=True), None, None)
            d.before_after["balancer active"] = (False, True)
        if not d.steps:
            raise Refused("the balancer is on in upmap mode already")
        d.wait("wait until the balancer says upmap, active",
               "ceph balancer status: mode upmap, active true", _balancer_on, timeout_s=30)
        d.verify_codes = ("OSD_FILL_SPREAD",)
        d.verify_entities = (f"cluster {d.ctx.cluster}",)


@register
class FullRatioRaise(Runbook):
    option_keys = ("full", "backfillfull", "nearfull", "for")
    info = RunbookInfo(
        "full-ratio-raise",
        "Emergency: raise the nearfull/backfillfull/full ratios for a while (at most "
        f"{MAX_RATIO} and the cluster's osd_failsafe_full_ratio, in Ceph's order, never "
        "below the fullest OSD); stordoc puts the values back at the "
        "deadline (written to the journal before the change).",
        ("OSD_IS_FULL",), destructive=True, target_kind="cluster",
        target_help="the cluster's name")

    def lock_keys(self, target: str) -> list[str]:
        return ["full ratios"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        _cluster_target(d, target)
        ceph = need_ceph(snap)
        window = parse_window(d.options.get("for", DEFAULT_RAISE_WINDOW))
        fullest = max((u.utilization / 100.0 for u in ceph.osd_usage), default=0.0)
        cur = {"nearfull_ratio": ceph.nearfull_ratio,
               "backfillfull_ratio": ceph.backfillfull_ratio, "full_ratio": ceph.full_ratio}
        want: dict[str, float] = {}
        for key in RATIO_KEYS:
            raw = d.options.get(key.removesuffix("_ratio"))
            if raw is not None:
                want[key] = parse_ratio(raw, key.removesuffix("_ratio"))
        failsafe = failsafe_ratio(ceph)
        top = min(MAX_RATIO, failsafe)
        if not want:  # default: full +0.02 (at most 0.99 and the failsafe), the others
            step = min(0.02, top - ceph.full_ratio)  # the same step
            if step <= 1e-6:
                raise Refused(f"the full ratio is {ceph.full_ratio:.3f} already: it cannot "
                              f"be raised further (at most {top:g}: "
                              + ("osd_failsafe_full_ratio)" if top < MAX_RATIO else
                                 f"{MAX_RATIO})"))
            want = {k: round(v + step, 4) for k, v in cur.items()}
        from checks.ceph_config import DEFAULT_RATIOS, ratio_causes

        for key in want:  # issue 38.2: never a revert to a value that is the fault
            name = key.removesuffix("_ratio")
            if ratio_causes(cur[key], DEFAULT_RATIOS[name], fullest):
                raise Refused(
                    f"{name} {cur[key]:.4g} is below Ceph's default "
                    f"{DEFAULT_RATIOS[name]:g} under the OSDs' fill ({fullest:.1%}): it is "
                    "the cause, and a temporary raise would put it back at its deadline; "
                    f"put it back for good: stordoc fix ratio-restore {d.ctx.cluster}")
        for key, v in want.items():
            if v < fullest + MIN_HEADROOM:
                raise InvalidRequest(
                    f"{key.removesuffix('_ratio')} {v:g} is below the fullest OSD's fill "
                    f"{fullest:.3f} (+{MIN_HEADROOM}): it would stop writes at once")
            if v <= cur[key] + 1e-6:
                raise InvalidRequest(f"{key.removesuffix('_ratio')} {v:g} is not above the "
                                     f"current {cur[key]:.3f}: this runbook only raises")
        merged = {**cur, **want}
        why = ratio_order_problem(merged["nearfull_ratio"], merged["backfillfull_ratio"],
                                  merged["full_ratio"], failsafe)
        if why is not None:
            raise Refused(why)
        d.params.update(failsafe_ratio=failsafe)
        d.params.update(fullest_osd=round(fullest, 4), window_s=int(window))
        d.warnings.append(f"temporary: stordoc puts the previous values back {window:.0f} s "
                          f"after the change (by whoever runs next: watch, the bot, any "
                          f"command), even after a restart; until then the cluster has "
                          f"less room to recover")
        # raise full first, then backfillfull, then nearfull (reverted the other way)
        for key in reversed(RATIO_KEYS):
            if key not in want:
                continue
            name = key.removesuffix("_ratio")
            mon = MonOp(f"osd set-{name}-ratio", {"ratio": want[key]})
            d.before_after[key] = (round(cur[key], 4), want[key])
            op = PyOp(f"{mon.command()}  (reverted to {cur[key]:.4g} after {window:.0f} s)",
                      temporary_op("ratio", key, window, mon, (), cur[key], want[key],
                                   f"{d.ctx.user}: full-ratio-raise"))
            d._add(f"raise {name} ratio to {want[key]:g} for {window:.0f} s", "ceph", op,
                   None, None)
        d.verify_codes = ("OSD_IS_FULL",)


__all__ = ["BalancerUpmap", "FullRatioRaise", "ReweightByUtilization", "dry_run_lines",
           "fmt_at"]


# ------------------------------------------------------------ ratio-restore (issue 38.2)

OSDMAP_LOOKBACK = 64  # epochs of the osdmap's history asked for a ratio's previous value


def _osdmap_previous(d: Draft, ceph: CephState, key: str) -> tuple[float, int] | None:
    """(the value ``key`` had before its current one, the epoch it last had it) from the
    monitor's osdmap history (``osd dump EPOCH``, newest first, at most OSDMAP_LOOKBACK
    epochs back, stopping at the first epoch the monitor trimmed); None when not found."""
    from storage.ceph import CephClient, CephError

    if d.ctx.offline or d.ctx.target.ceph is None:
        return None
    cur = getattr(ceph, key)
    client: CephClient | None = None
    try:
        for epoch in range(ceph.epoch - 1, max(0, ceph.epoch - OSDMAP_LOOKBACK), -1):
            ratios = _EPOCH_RATIOS.get((ceph.fsid, epoch))
            if ratios is None:  # an old epoch never changes: each is asked once
                if client is None:
                    client = CephClient(d.ctx.target.ceph)
                    client.connect()
                try:
                    dump = client.mon("osd dump", epoch=epoch) or {}
                except CephError:
                    return None  # trimmed: the history stops here
                ratios = {k: float(v) for k in RATIO_KEYS
                          if isinstance(dump, Mapping)
                          and isinstance(v := dump.get(k), (int, float))}
                with _EPOCH_LOCK:
                    if len(_EPOCH_RATIOS) >= 4096:
                        _EPOCH_RATIOS.clear()
                    _EPOCH_RATIOS[ceph.fsid, epoch] = ratios
            v = ratios.get(key)
            if v is not None and abs(v - cur) > RATIO_TOL_F32:
                return round(v, 4), epoch
    except CephError:
        return None
    finally:
        if client is not None:
            client.close()
    return None


# (fsid, epoch) -> its ratios: a plan (each check's next step, each watch cycle) walks the
# same old epochs again; they are asked of the monitor once per process
_EPOCH_RATIOS: dict[tuple[str, int], dict[str, float]] = {}
_EPOCH_LOCK = threading.Lock()


RATIO_TOL_F32 = 1e-4


def _journal_previous(d: Draft, key: str, cur: float) -> tuple[float, int] | None:
    """(the value before stordoc's last change of ``key`` that set the current value,
    the change's id) from the journal (``storage.expiring``)."""
    from storage import expiring

    for c in expiring.history(d.ctx.journal, d.ctx.cluster, limit=200):
        if c.kind == "ratio" and c.key == key and c.before is not None and \
                c.after is not None and abs(c.after - cur) <= RATIO_TOL_F32:
            return c.before, c.id
    return None


def _end_changes_and_set(name: str, key: str, value: float) -> PyOp:
    """Set the ratio, then end stordoc's open temporary changes of it (a full-ratio-raise
    would otherwise put its recorded value back at its deadline)."""
    mon = MonOp(f"osd set-{name}-ratio", {"ratio": value})

    def fn(env: StepEnv) -> tuple[bool, str]:
        from storage import expiring

        env.ceph.mon(mon.prefix, **dict(mon.args))
        ended = []
        for c in expiring.open_changes(env.ctx.journal, env.ctx.cluster):
            if c.kind == "ratio" and c.key == key:
                expiring.mark(env.ctx.journal, c.id, "ended",
                              f"{key} put back to {value:g} by ratio-restore", by=env.ctx.user)
                ended.append(f"#{c.id}")
        return True, (f"{mon.command()}: done"
                      + (f"; stordoc's change {', '.join(ended)} ended" if ended else ""))

    return PyOp(mon.command(), fn)


def _ratios_back(want: Mapping[str, float], codes: tuple[str, ...]) -> Any:
    """The verify probe: the osdmap carries the values and Ceph's health none of the codes
    the lowered ratios raised."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        dump = env.ceph.mon("osd dump") or {}
        off = {k: dump.get(k) for k, v in want.items()
               if not isinstance(dump.get(k), (int, float))
               or abs(float(dump[k]) - v) > RATIO_TOL_F32}
        health = env.ceph.mon("health", detail="detail") or {}
        left = sorted(set(codes) & set((health.get("checks") or {}) if
                                       isinstance(health, Mapping) else ()))
        if off:
            return False, "osd dump: " + ", ".join(f"{k} {v}" for k, v in off.items())
        if left:
            return False, f"Ceph still warns {', '.join(left)}"
        return True, ("osd dump: " + ", ".join(f"{k} {v:g}" for k, v in want.items())
                      + f"; Ceph no longer warns {', '.join(codes) or '-'}")

    return probe


@register
class RatioRestore(Runbook):
    option_keys = ("nearfull", "backfillfull", "full")
    info = RunbookInfo(
        "ratio-restore",
        "Put a nearfull/backfillfull/full ratio set below Ceph's default under the OSDs' "
        "fill back: to its previous value (stordoc's journal, else the monitor's osdmap "
        "history) when that one leaves room above the fullest OSD, else Ceph's default "
        "(0.85/0.90/0.95); never in an order Ceph rejects.",
        ("FULL_RATIO_LOWERED",), destructive=False, target_kind="cluster",
        target_help="the cluster's name")

    def lock_keys(self, target: str) -> list[str]:
        return ["full ratios"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        from checks.ceph_config import DEFAULT_RATIOS, RATIO_CODES, lowered_ratios, ratio_causes

        _cluster_target(d, target)
        ceph = need_ceph(snap)
        cur = {k: float(getattr(ceph, k)) for k in RATIO_KEYS}
        fullest = max((u.utilization / 100.0 for u in ceph.osd_usage), default=0.0)
        given: dict[str, float] = {}
        for key in RATIO_KEYS:
            raw = d.options.get(key.removesuffix("_ratio"))
            if raw is not None:
                given[key] = parse_ratio(raw, key.removesuffix("_ratio"))
        low = {f"{r.name}_ratio": r for r in lowered_ratios(ceph)}
        todo = sorted(set(low) | set(given), key=RATIO_KEYS.index)
        if not todo:
            raise Refused(
                "no ratio is below Ceph's default under the OSDs' fill (nearfull "
                f"{cur['nearfull_ratio']:g}, backfillfull {cur['backfillfull_ratio']:g}, "
                f"full {cur['full_ratio']:g}; fullest OSD {fullest:.1%}): nothing to put "
                "back")
        want: dict[str, float] = {}
        source: dict[str, str] = {}
        for key in todo:
            name = key.removesuffix("_ratio")
            default = DEFAULT_RATIOS[name]
            if key in given:
                v = given[key]
                if ratio_causes(v, default, fullest) or v < fullest + MIN_HEADROOM:
                    raise InvalidRequest(
                        f"{name} {v:g} is under the fullest OSD's fill {fullest:.3f} "
                        f"(+{MIN_HEADROOM}): Ceph would warn on at once")
                want[key], source[key] = v, "given"
                continue
            for found, where in ((_journal_previous(d, key, cur[key]), "stordoc's change #"),
                                 (_osdmap_previous(d, ceph, key), "osdmap epoch ")):
                if found is None:
                    continue
                prev, ref = found
                if not ratio_causes(prev, default, fullest) and \
                        prev >= fullest + MIN_HEADROOM and abs(prev - cur[key]) > 1e-4:
                    want[key], source[key] = prev, f"previous value, {where}{ref}"
                    break
                d.warnings.append(f"{name}'s previous value {prev:g} ({where}{ref}) is "
                                  "itself under the OSDs' fill: not used")
                break
            if key not in want:
                want[key], source[key] = default, "Ceph's default"
        merged = {**cur, **want}
        why = ratio_order_problem(merged["nearfull_ratio"], merged["backfillfull_ratio"],
                                  merged["full_ratio"], failsafe_ratio(ceph))
        if why is not None:
            raise Refused(why)
        codes = tuple(c for k in low for c in RATIO_CODES[k.removesuffix("_ratio")])
        d.params.update(fullest_osd=round(fullest, 4),
                        sources={k.removesuffix("_ratio"): s for k, s in source.items()})
        # raises go highest first, lowers lowest first: Ceph's order holds at every step
        ups = [k for k in reversed(RATIO_KEYS) if k in want and want[k] > cur[k]]
        downs = [k for k in RATIO_KEYS if k in want and want[k] <= cur[k]]
        for key in (*downs, *ups):
            name = key.removesuffix("_ratio")
            d.before_after[key] = (round(cur[key], 4), want[key])
            d._add(f"{name} ratio {cur[key]:.4g} -> {want[key]:g} ({source[key]})", "ceph",
                   _end_changes_and_set(name, key, want[key]), None, None)
        d.wait("wait until osd dump has them and Ceph's warnings are gone",
               "ceph osd dump; ceph health detail", _ratios_back(want, codes),
               timeout_s=120, interval_s=2.0)
        d.verify_codes = ("FULL_RATIO_LOWERED",)
        d.verify_entities = (f"cluster {d.ctx.cluster} full ratios",)
