"""Put an option of the monitors' configuration database back (issue 38.2): the options
a fault is made of (a warning line lowered under Ceph's default, a debug injection on:
``checks.ceph_config.option_is_fault``) set for one section (``global``, ``osd``,
``osd.3``), or the one option named with ``-o option=NAME``.

Each goes back to its previous value when Ceph's own history (``ceph config log``) has
one that is not itself the fault, else it is removed (``ceph config rm WHO NAME``: the
daemons fall back to ceph.conf or Ceph's default). Verified by the configuration
database itself and by Ceph's health: the warnings the options raised are gone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.model import InvalidRequest, MonOp, Probe, Refused, RunbookInfo, StepEnv
from storage.model import CephState, ClusterSnapshot, ConfigSetting

WHO_RE = re.compile(r"\A(?:global|mon|mgr|osd|mds|client)(?:\.[A-Za-z0-9_-]{1,64})?\Z",
                    re.ASCII)
NAME_RE = re.compile(r"\A[a-z0-9_]{1,128}\Z", re.ASCII)
LOG_ENTRIES = 500  # ``config log`` entries read for a previous value
OSD_WHO_RE = re.compile(r"\Aosd\.([0-9]{1,6})\Z", re.ASCII)


def previous_value(log: Any, who: str, name: str, current: str) -> str | None:
    """The value ``who/name`` had before it was set to ``current``, from ``config log``
    (newest first; a change without ``previous_value`` set it where nothing was): None
    when it was not set before, or the log does not reach back."""
    key = f"{who}/{name}"
    for entry in log if isinstance(log, list) else []:
        for ch in (entry.get("changes") or []) if isinstance(entry, Mapping) else []:
            if not isinstance(ch, Mapping) or ch.get("name") != key:
                continue
            if str(ch.get("new_value")) != current:
                continue
            prev = ch.get("previous_value")
            return None if prev is None else str(prev)
    return None


def _health_codes(st: CephState, who: str, names: Sequence[str],
                  now: float | None = None) -> tuple[str, ...]:
    """The Ceph codes present now that these options raise."""
    from checks.ceph_config import causing_options, line_options

    codes = {c for o in causing_options(st) if o.who == who and o.name in names
             for c in o.codes}
    codes |= {o.code for o in line_options(st, now) if o.who == who and o.name in names}
    m = OSD_WHO_RE.match(who)
    if m and any("debug_inject" in n or n == "osd_op_complaint_time" for n in names):
        slow = next((h for h in st.health_checks if h.code == "SLOW_OPS"), None)
        if slow is not None and who in " ".join((slow.summary, *slow.detail)):
            codes.add("SLOW_OPS")
    return tuple(sorted(codes))


def _back(who: str, want: Mapping[str, str | None], codes: tuple[str, ...]) -> Probe:
    """The verify probe: ``config dump`` holds each option as planned (gone, or at its
    previous value) and Ceph's health none of ``codes`` (SLOW_OPS: not naming ``who``)."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        dump = env.ceph.mon("config dump") or []
        now = {str(e.get("name")): str(e.get("value")) for e in dump
               if isinstance(e, Mapping) and e.get("section") == who and not e.get("mask")}
        off = [f"{n}={now.get(n)}" for n, v in want.items()
               if (v is None and n in now) or (v is not None and now.get(n) != v)]
        if off:
            return False, f"config dump still has {', '.join(off)} for {who}"
        health = env.ceph.mon("health", detail="detail") or {}
        checks = health.get("checks") or {} if isinstance(health, Mapping) else {}
        left = []
        for c in codes:
            hc = checks.get(c)
            if not isinstance(hc, Mapping):
                continue
            text = str((hc.get("summary") or {}).get("message", "")) + " ".join(
                str(d.get("message", "")) for d in hc.get("detail") or []
                if isinstance(d, Mapping))
            if c != "SLOW_OPS" or re.search(rf"\b{re.escape(who)}\b", text):
                left.append(c)
        if left:
            return False, f"Ceph still warns {', '.join(left)}"
        return True, (f"config dump: {', '.join(want)} back for {who}; Ceph no longer "
                      f"warns {', '.join(codes) or '-'}")

    return probe


def _runtime_back(mon: str, want: Mapping[str, str], codes: tuple[str, ...]) -> Probe:
    """The verify probe of a runtime value put back: the monitor runs each option at its
    planned value (``ceph tell mon.X config get``) and Ceph's health has none of
    ``codes`` naming it."""

    def probe(env: StepEnv) -> tuple[bool, str]:
        off = []
        for name, value in want.items():
            got = env.ceph.tell_mon(mon, "config get", var=name) or {}
            now = str(got.get(name)) if isinstance(got, Mapping) else str(got)
            if now != value:
                off.append(f"{name}={now}")
        if off:
            return False, f"mon.{mon} still runs {', '.join(off)}"
        health = env.ceph.mon("health", detail="detail") or {}
        checks = health.get("checks") or {} if isinstance(health, Mapping) else {}
        left = [c for c in codes if isinstance(checks.get(c), Mapping) and re.search(
            rf"\bmon\.?{re.escape(mon)}\b", " ".join(
                str(d.get("message", "")) for d in checks[c].get("detail") or []
                if isinstance(d, Mapping)) + str(
                (checks[c].get("summary") or {}).get("message", "")))]
        if left:
            return False, f"Ceph still warns {', '.join(left)}"
        return True, (f"mon.{mon} runs {', '.join(f'{n}={v}' for n, v in want.items())}; "
                      f"Ceph no longer warns {', '.join(codes) or '-'}")

    return probe


@register
class ConfigRestore(Runbook):
    option_keys = ("option",)
    info = RunbookInfo(
        "config-restore",
        "Put back the options of one section of the monitors' configuration database "
        "(global, osd, osd.N) that a fault is made of: a warning line lowered under "
        "Ceph's default, a debug injection on (or the one named with -o option=NAME): "
        "to the previous value of ceph config log, else ceph config rm WHO NAME; for "
        "mon.X, a warning line set at runtime on that monitor back to what it overrode.",
        ("CONFIG_OPTION_CAUSE",), destructive=False,
        target_kind="config-section",
        target_help="a configuration database section: global, mon, mgr, osd, osd.N; "
                    "or mon.X for a value set at runtime")

    def lock_keys(self, target: str) -> list[str]:
        return [f"config {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        from checks.ceph_config import line_options, option_default, option_is_fault

        who = target.strip()
        if not WHO_RE.match(who):
            raise InvalidRequest(f"{who[:60]!r} is not a configuration section like "
                                 "global, osd or osd.3")
        ceph = need_ceph(snap)
        mine: dict[str, ConfigSetting] = {c.name: c for c in ceph.config_db
                                          if c.section == who and not c.mask}
        # values a monitor runs that were set at runtime (ceph tell mon.X config set) and
        # move a warning's line: put back to what they override (checks.ceph_config)
        runtime = [o for o in line_options(ceph, snap.taken_at)
                   if o.runtime and o.who == who]
        named = d.options.get("option")
        if named is not None:
            n = str(named).strip()
            if not NAME_RE.match(n):
                raise InvalidRequest(f"option {n[:60]!r} is not a Ceph option name")
            runtime = [o for o in runtime if o.name == n]
            if n not in mine and not runtime:
                raise Refused(f"{n} is not set for {who} in the configuration database "
                              "(ceph config dump): nothing to put back")
            chosen = [mine[n]] if n in mine else []
        else:
            chosen = [c for c in mine.values() if option_is_fault(c.name, c.value)]
            if not chosen and not runtime:
                shown = ", ".join(f"{c.name}={c.value}" for c in mine.values()) or "none"
                raise Refused(f"nothing set for {who} lowers a warning line or injects a "
                              f"fault (set: {shown[:200]}); one named option goes back "
                              f"with -o option=NAME")
        log: Any = []
        if chosen and not d.ctx.offline and d.ctx.target.ceph is not None:
            from storage.ceph import CephClient, CephError

            try:
                with CephClient(d.ctx.target.ceph) as client:
                    log = client.mon("config log", num=LOG_ENTRIES) or []
            except CephError as e:
                d.warnings.append(f"ceph config log not read ({e}): options are removed")
        want: dict[str, str | None] = {}
        for c in chosen:
            prev = previous_value(log, who, c.name, c.value)
            default = option_default(c.name)
            shown_default = f"Ceph's default {default:g}" if default is not None else \
                "ceph.conf or Ceph's default"
            if prev is not None and not option_is_fault(c.name, prev):
                want[c.name] = prev
                d.before_after[f"{who} {c.name}"] = (c.value, f"{prev} (ceph config log)")
                d.mon(f"{c.name} of {who} back to its previous value {prev}", "config set",
                      {"who": who, "name": c.name, "value": prev})
            else:
                if prev is not None:
                    d.warnings.append(f"{c.name}'s previous value {prev} (ceph config log) "
                                      "is itself the fault: removed instead")
                want[c.name] = None
                d.before_after[f"{who} {c.name}"] = (c.value, f"unset ({shown_default})")
                d.mon(f"remove {c.name} from {who} ({shown_default})", "config rm",
                      {"who": who, "name": c.name})
        if runtime:
            mon = who.split(".", 1)[1]
            back = {o.name: o.base for o in runtime}
            for o in runtime:
                d.before_after[f"{who} {o.name} (runtime)"] = (
                    o.value, f"{o.base} (what the runtime value overrode)")

                def set_back(env: StepEnv, name: str = o.name, value: str = o.base
                             ) -> tuple[bool, str]:
                    env.ceph.tell_mon(mon, "config set", var=name, val=[value])
                    return True, f"mon.{mon} {name} = {value}"

                d.local(f"{o.name} of {who} back to {o.base} (the value its runtime "
                        f"override {o.value} hid: ceph.conf, else Ceph's default)",
                        o.command, set_back)
            rcodes = tuple(sorted({o.code for o in runtime}))
            d.wait(f"wait until {who} runs {', '.join(back)} as before and Ceph's "
                   f"{', '.join(rcodes)} is gone", f"ceph tell {who} config get; ceph "
                   "health detail", _runtime_back(mon, back, rcodes),
                   timeout_s=240, interval_s=2.0)
        codes = _health_codes(ceph, who, list(want), snap.taken_at)
        d.params.update(who=who, options={c.name: c.value for c in chosen},
                        runtime={o.name: o.value for o in runtime},
                        ceph_codes=sorted({*codes, *(o.code for o in runtime)}))
        if want:
            d.wait(f"wait until {who}'s options read back and Ceph's warnings are gone",
                   "ceph config dump; ceph health detail", _back(who, want, codes),
                   timeout_s=240, interval_s=2.0)
        d.verify_codes = ("CONFIG_OPTION_CAUSE", "OSD_SLOW_OPS")
        d.verify_entities = (f"config {who}", who, *(
            ("ceph MON_DISK_LOW",) if any(o.code == "MON_DISK_LOW" for o in runtime) else ()))


__all__ = ["ConfigRestore", "MonOp", "previous_value"]
