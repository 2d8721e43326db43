"""Checks whose answer depends on the Ceph release the cluster runs.

- Daemons on different versions: an upgrade in progress or stalled. Ceph itself only warns
  (``DAEMON_OLD_VERSION``) after ``mon_warn_older_version_delay`` (a week); the order
  matters (monitors, then managers, then OSDs), so a monitor or manager behind the OSDs is
  called out.
- The OSD op scheduler: from Quincy on OSDs schedule with mClock, which ignores
  ``osd_max_backfills``, ``osd_recovery_max_active*`` and ``osd_recovery_sleep*`` unless
  ``osd_mclock_override_recovery_settings`` is true. A runbook or a habit from wpq days that
  raises them does nothing there; and while PGs recover, the mClock profile decides how
  fast.

The scheduler is read from ``config show`` of one up OSD (what it runs, ceph.conf
included) and the monitors' ``config dump``; an option at its default is not listed, so
the default of the running release counts (wpq up to Pacific, mClock from Quincy).
"""

from __future__ import annotations

from collections.abc import Iterator

from checks.ceph_config import RELEASES
from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import cluster_entity
from storage.model import ClusterSnapshot
from storage.model.ceph import CephState

RELEASE_CODES = (
    CodeInfo("CEPH_VERSIONS_MIXED", Severity.WARN,
             "Daemons run different Ceph versions: an upgrade in progress or stalled."),
    CodeInfo("OSD_RECOVERY_SETTINGS_IGNORED", Severity.WARN,
             "Recovery/backfill limits are set but the OSDs schedule with mClock, which "
             "ignores them."),
    CodeInfo("OSD_RECOVERY_MCLOCK_PROFILE", Severity.INFO,
             "PGs are recovering under mClock's profile: the profile, not "
             "osd_max_backfills, sets the pace."),
)

# what mClock ignores unless osd_mclock_override_recovery_settings is true
MCLOCK_IGNORED = ("osd_max_backfills", "osd_recovery_max_active",
                  "osd_recovery_max_active_hdd", "osd_recovery_max_active_ssd",
                  "osd_recovery_sleep", "osd_recovery_sleep_hdd", "osd_recovery_sleep_ssd",
                  "osd_recovery_sleep_hybrid")
UPGRADE_ORDER = ("mon", "mgr", "osd", "mds", "rgw")
RECOVERING = ("degraded", "recovering", "recovery_wait", "backfilling", "backfill_wait")


def default_op_queue(release: str) -> str:
    """``osd_op_queue``'s default: mClock from Quincy on, wpq before."""
    rel = release.lower()
    if rel in RELEASES and RELEASES.index(rel) >= RELEASES.index("quincy"):
        return "mclock_scheduler"
    return "wpq"


# who set a value: ``default`` is nobody, ``override`` is mostly the OSD itself (mClock
# writes its own recovery values that way; a ``ceph tell ... config set`` does too, and
# then the ceph.conf or database value it shadows shows in ``overrides``)
SET_BY_SOMEONE = ("file", "mon", "cmdline", "env")


def _setting(st: CephState, name: str) -> tuple[str, str] | None:
    """(value, where) of an OSD option someone set: the running OSD's own view first
    (ceph.conf included), else the monitors' database for the ``osd`` or ``global``
    section. A value at its default or written by the OSD itself is not a setting."""
    if st.osd_config is not None:
        s = st.osd_config.get(name)
        if s is not None:
            if s.source in SET_BY_SOMEONE:
                return s.value, f"{st.osd_config.daemon} ({s.source})"
            for src, value in s.overrides:
                if src in SET_BY_SOMEONE:
                    return value, f"{st.osd_config.daemon} ({src})"
    for s in st.config_db:
        if s.name == name and s.section in ("osd", "global") and not s.mask:
            return s.value, f"config db [{s.section}]"
    return None


def _running(st: CephState, name: str) -> str | None:
    """The value an OSD runs an option with, whoever set it (a ``ceph tell osd.N config
    set`` included); None when it runs the default."""
    if st.osd_config is not None:
        s = st.osd_config.get(name)
        if s is not None and s.source != "default":
            return s.value
    found = _setting(st, name)
    return found[0] if found else None


def op_queue(st: CephState) -> str:
    return _running(st, "osd_op_queue") or default_op_queue(st.release)


def _true(v: str) -> bool:
    return v.strip().lower() in ("true", "1", "yes", "on")


@check("ceph-release", codes=RELEASE_CODES, needs=("ceph",))
def check_release(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    yield from _versions(snap, st)
    yield from _scheduler(snap, st)


def _versions(snap: ClusterSnapshot, st: CephState) -> Iterator[Finding]:
    v = st.versions
    if not v.mixed:
        return
    newest, lowest = v.newest(), v.lowest()
    assert newest is not None and lowest is not None
    per_kind = {k: sorted({c.version for c in cs}) for k, cs in v.by_kind.items() if cs}
    behind = [f"{d.name} ({d.version})" for d in v.daemons if d.version != newest.version]
    # an upgrade goes mon -> mgr -> osd: a kind whose newest is older than a later kind's
    order = [k for k in UPGRADE_ORDER if k in per_kind]
    wrong = [(a, b) for i, a in enumerate(order) for b in order[i + 1:]
             if (n_a := v.newest(a)) and (n_b := v.newest(b)) and n_a.key < n_b.key]
    msg = (f"daemons run {len(v.all())} Ceph versions ("
           + "; ".join(f"{k}: {', '.join(vs)}" for k, vs in per_kind.items())
           + f"): an upgrade from {lowest.version} to {newest.version} is in progress or "
           "stalled")
    if behind:
        msg += f"; behind: {', '.join(behind[:8])}{' ...' if len(behind) > 8 else ''}"
    if wrong:
        a, b = wrong[0]
        msg += (f"; the {a}s are older than the {b}s: upgrade {a}s before {b}s "
                f"(order {' -> '.join(UPGRADE_ORDER[:3])})")
    else:
        msg += "; restart the daemons still on the old version on the new packages"
    yield Finding("CEPH_VERSIONS_MIXED", Severity.WARN, cluster_entity(snap), msg,
                  {"versions": per_kind, "newest": newest.version, "lowest": lowest.version,
                   "behind": behind, "wrong_order": [list(w) for w in wrong]})


def _scheduler(snap: ClusterSnapshot, st: CephState) -> Iterator[Finding]:
    queue = op_queue(st)
    if queue != "mclock_scheduler":
        return
    override = _running(st, "osd_mclock_override_recovery_settings")
    overridden = override is not None and _true(override)
    prof = _running(st, "osd_mclock_profile") or ("balanced" if st.release.lower() in (
        "reef", "squid", "tentacle") else "high_client_ops")
    ent = cluster_entity(snap)
    if not overridden:
        set_ = {n: s for n in MCLOCK_IGNORED if (s := _setting(st, n)) is not None}
        if set_:
            yield Finding(
                "OSD_RECOVERY_SETTINGS_IGNORED", Severity.WARN, ent,
                "OSDs schedule with mClock, which ignores "
                + ", ".join(f"{n} = {v} ({w})" for n, (v, w) in set_.items())
                + ": to change the recovery pace pick a profile (`ceph config set osd "
                "osd_mclock_profile high_recovery_ops`), or set "
                "osd_mclock_override_recovery_settings true to use these limits",
                {"op_queue": queue, "profile": prof,
                 "ignored": {n: v for n, (v, _) in set_.items()}})
    recovering = {s: n for s, n in st.pgs.by_state.items()
                  if any(r in s.split("+") for r in RECOVERING)}
    if recovering and prof != "high_recovery_ops" and not overridden:
        n = sum(recovering.values())
        yield Finding(
            "OSD_RECOVERY_MCLOCK_PROFILE", Severity.INFO, ent,
            f"{n} PGs recovering or backfilling under mClock profile {prof}: the profile "
            "sets the pace (osd_max_backfills does not); to favour recovery over client "
            "I/O for a while: `ceph config set osd osd_mclock_profile high_recovery_ops`, "
            "and back to balanced afterwards",
            {"op_queue": queue, "profile": prof, "pgs": n, "states": recovering})
