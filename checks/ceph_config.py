"""Cheap checks on data already collected: settings that look fine until the day they
bite. Pools whose ``size`` equals ``min_size`` (one OSD down blocks their I/O), full
ratios raised above Ceph's defaults or out of order, ``require_osd_release`` behind the
running release (new features stay off; the upgrade is unfinished), OSDs without a device
class (CRUSH rules by class skip them).

Ratios in the osdmap are float32: compared with a tolerance.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from checks.osd import cluster_entity
from storage.model import ClusterSnapshot

TOL = 1e-6
# Ceph's defaults (mon_osd_nearfull_ratio, mon_osd_backfillfull_ratio, mon_osd_full_ratio)
DEFAULT_RATIOS = {"nearfull": 0.85, "backfillfull": 0.90, "full": 0.95}
RELEASES = ("luminous", "mimic", "nautilus", "octopus", "pacific", "quincy", "reef",
            "squid", "tentacle")

CONFIG_CODES = (
    CodeInfo("POOL_SIZE_EQ_MIN_SIZE", Severity.WARN,
             "A replicated pool has size == min_size: one OSD down blocks its I/O."),
    CodeInfo("FULL_RATIOS_RAISED", Severity.WARN,
             "nearfull/backfillfull/full ratios are above Ceph's defaults: less headroom "
             "before writes stop."),
    CodeInfo("FULL_RATIOS_ORDER", Severity.CRIT,
             "The full ratios are out of order (nearfull <= backfillfull <= full fails)."),
    CodeInfo("REQUIRE_OSD_RELEASE_BEHIND", Severity.WARN,
             "require_osd_release is older than the release the OSDs run."),
    CodeInfo("OSD_NO_DEVICE_CLASS", Severity.WARN,
             "An OSD has no device class: CRUSH rules that select a class skip it."),
)


@check("ceph-config", codes=CONFIG_CODES, needs=("ceph",))
def check_config(snap: ClusterSnapshot, ctx: CheckContext) -> Iterator[Finding]:
    st = snap.ceph
    assert st is not None
    for p in st.pools:
        if p.type == "replicated" and p.size > 1 and p.min_size >= p.size:
            yield Finding("POOL_SIZE_EQ_MIN_SIZE", Severity.WARN, f"pool {p.name}",
                          f"pool {p.name} has size {p.size} and min_size {p.min_size}: one "
                          f"OSD down blocks I/O to its PGs (use min_size {p.size - 1}: "
                          f"`ceph osd pool set {p.name} min_size {p.size - 1}`)",
                          {"pool": p.name, "size": p.size, "min_size": p.min_size})
    ratios = {"nearfull": st.nearfull_ratio, "backfillfull": st.backfillfull_ratio,
              "full": st.full_ratio}
    ent = f"{cluster_entity(snap)} full ratios"
    if all(ratios.values()):
        raised = {k: round(v, 4) for k, v in ratios.items() if v > DEFAULT_RATIOS[k] + TOL}
        if not (ratios["nearfull"] <= ratios["backfillfull"] + TOL
                and ratios["backfillfull"] <= ratios["full"] + TOL):
            yield Finding("FULL_RATIOS_ORDER", Severity.CRIT, ent,
                          "full ratios out of order: nearfull "
                          f"{ratios['nearfull']:.2f}, backfillfull {ratios['backfillfull']:.2f}"
                          f", full {ratios['full']:.2f} (must rise in that order): Ceph "
                          "blocks backfill or writes before it warns",
                          {k: round(v, 4) for k, v in ratios.items()})
        elif raised:
            yield Finding("FULL_RATIOS_RAISED", Severity.WARN, ent,
                          "full ratios raised above Ceph's defaults ("
                          + ", ".join(f"{k} {v:.2f} > {DEFAULT_RATIOS[k]:.2f}"
                                      for k, v in raised.items())
                          + "): fine for an emergency, lower them when space is back",
                          {"ratios": {k: round(v, 4) for k, v in ratios.items()},
                           "defaults": DEFAULT_RATIOS, "raised": raised})
    req = st.require_osd_release
    if req in RELEASES and st.release in RELEASES and \
            RELEASES.index(req) < RELEASES.index(st.release):
        yield Finding("REQUIRE_OSD_RELEASE_BEHIND", Severity.WARN, cluster_entity(snap),
                      f"require_osd_release is {req} but the OSDs run {st.release}: the "
                      f"upgrade is unfinished (`ceph osd require-osd-release {st.release}` "
                      "once every OSD runs it)",
                      {"require_osd_release": req, "running": st.release,
                       "version": st.version})
    for o in st.osds:
        if o.exists and not o.destroyed and o.host and not o.device_class:
            yield Finding("OSD_NO_DEVICE_CLASS", Severity.WARN, o.name,
                          f"{o.name} on {o.host} has no device class: CRUSH rules that "
                          f"select hdd/ssd skip it (`ceph osd crush set-device-class CLASS "
                          f"{o.name}`)", {"osd": o.id, "host": o.host})
