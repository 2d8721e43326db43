"""The rest of Ceph's list of health codes, explained (``checks.ceph_codes`` calls
``EXPLAIN`` here): for each, who (the OSD, pool, monitor, client, object or option Ceph's
detail names), what it means, and the next step: a runbook where a safe one exists
(``pool-app-enable``, ``global-id-reclaim-off``, ``pool-pg-num``), else the exact command.

Ceph's message formats (Reef; BlueStore's alerts are summed by the manager as ``N OSD(s)
WHAT`` with one detail line per OSD): POOL_APP_NOT_ENABLED ``application not enabled on
pool 'NAME'``; MANY_OBJECTS_PER_PG ``pool NAME objects per pg (N) is more than X times
cluster average (M)``; POOL_TARGET_SIZE_BYTES_OVERCOMMITTED ``Pools ['a'] overcommit
available storage by 5.120x due to target_size_bytes 100T on pools ['a']``;
AUTH_INSECURE_GLOBAL_ID_RECLAIM ``client.x at ADDR is using insecure global_id reclaim``;
AUTH_BAD_CAPS ``client.x has invalid mon caps: ...``; PG_SLOW_SNAP_TRIMMING ``snap trim
queue for pg 2.1f at 40000``; MON_NETSPLIT ``Netsplit detected between mon.a and mon.b``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from checks.ceph_explained import CLUSTER, Explained, _osd_hosts, _where, daemons_named
from checks.model import CheckContext
from storage.model import CephState, HealthCheck

_QUOTED_POOL_RE = re.compile(r"pool '([^']+)'")
_LIST_POOLS_RE = re.compile(r"'([^']+)'")
_ENTITY_RE = re.compile(r"\b((?:client|osd|mon|mgr|mds)\.[A-Za-z0-9_.-]+?)(?=[ ,:']|$)")
_PG_OF_RE = re.compile(r"\bpg (\d+\.[0-9a-f]+)")


def _lines(hc: HealthCheck) -> tuple[str, ...]:
    return (hc.summary, *hc.detail)


def _pools(hc: HealthCheck, pattern: re.Pattern[str] = _QUOTED_POOL_RE) -> list[str]:
    out: dict[str, None] = {}
    for line in _lines(hc):
        for p in pattern.findall(line):
            out[p] = None
    return list(out)


def _osds(hc: HealthCheck) -> list[str]:
    return [d for d in daemons_named(hc) if d.startswith("osd.")]


def _mon(st: CephState) -> str:
    names = st.mon_quorum or st.mon_names
    return f"mon.{names[0]}" if names else "mon.a"


# ------------------------------------------------------------------ monitors and auth


def _msgr2(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    mons = [d for d in daemons_named(hc) if d.startswith("mon.")]
    todo = ("`ceph mon enable-msgr2` (a monitor on port 6789 then listens on 3300 for v2 "
            "as well; one on another port needs its monmap address set by hand)")
    return Explained(f"{', '.join(mons) or 'some monitors'} listen only with the old v1 "
                     f"protocol (no msgr2: no encryption, no secure mode): {todo}",
                     {"mons": mons, "manual": todo})


def _reclaim(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """Clients that still reclaim their global_id the insecure way (CVE-2021-20288): they
    must be upgraded before the monitors refuse them."""
    who = [m.group(1) for line in hc.detail if (m := _ENTITY_RE.search(line))]
    mon = _mon(st)
    todo = (f"upgrade or restart them on fixed client packages (librados, kernel), "
            f"see which they are with `ceph tell {mon} sessions`; only once this warning "
            "is gone may the monitors refuse insecure reclaim (global-id-reclaim-off)")
    return Explained(f"{len(who) or 'some'} client(s) reclaim their global_id insecurely "
                     f"(CVE-2021-20288): {', '.join(who[:8]) or hc.summary}: {todo}",
                     {"clients": who[:50], "manual": todo})


def _reclaim_allowed(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    clients = next((c for c in st.health_checks
                    if c.code == "AUTH_INSECURE_GLOBAL_ID_RECLAIM"), None)
    mons = [d for d in daemons_named(hc) if d.startswith("mon.")]
    todo = ("`ceph config set mon auth_allow_insecure_global_id_reclaim false` "
            "(stordoc fix global-id-reclaim-off, for this cluster)")
    if clients is not None:
        todo = ("not yet: clients still need it (AUTH_INSECURE_GLOBAL_ID_RECLAIM: "
                f"{clients.summary}); upgrade them first, then {todo}")
    return Explained(
        f"the monitors ({', '.join(mons) or 'all'}) allow insecure global_id reclaim "
        "(auth_allow_insecure_global_id_reclaim true: a client can take over another's "
        f"global_id, CVE-2021-20288): {todo}",
        {"mons": mons, "clients_need_it": clients is not None, "manual": todo},
        runbook="global-id-reclaim-off", target=CLUSTER)


def _bad_caps(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    who = [m.group(1) for line in hc.detail if (m := _ENTITY_RE.search(line))]
    first = who[0] if who else None
    todo = (f"read them with `ceph auth get {first}` and rewrite them with `ceph auth caps "
            f"{first} mon 'allow r' osd 'allow rw pool=...'` as that client needs" if first
            else "`ceph health detail` names the entities; `ceph auth get` shows their caps")
    return Explained(f"invalid capabilities on {', '.join(who[:8]) or 'some auth entities'}"
                     f" (Ceph ignores those caps): {todo}", {"entities": who, "manual": todo})


def _netsplit(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    mons = [d for d in daemons_named(hc) if d.startswith("mon.")]
    todo = ("`ceph mon dump` gives their addresses; they reach the others but not each "
            "other: check the network between their hosts (ports 3300 and 6789, firewalls, "
            "routes)")
    return Explained(f"network partition between {' and '.join(mons[:4]) or hc.summary}: "
                     f"{todo}", {"mons": mons, "manual": todo})


def _old_version(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    from checks.ceph_explained import _old_version as explained

    ex = explained(hc, st, ctx)
    todo = "`ceph versions` shows which daemons run which release"
    return Explained(f"{ex.message}; {todo}", {**ex.evidence, "manual": todo})


# ------------------------------------------------------------------ OSDs and CRUSH


_SUBTREE_RE = re.compile(r"^(\S+) (\S+) \((\d+) osds\) is down")


def _subtree_down(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    trees = [m.groups() for line in hc.detail if (m := _SUBTREE_RE.search(line))]
    what = ", ".join(f"{kind} {name} ({n} OSDs)" for kind, name, n in trees) or hc.summary
    todo = ("`ceph osd tree down` lists them; every OSD under it is down, the PGs mapped "
            "there only are inactive: a power or network outage of its hosts")
    return Explained(f"all OSDs of CRUSH {what} are down: {todo}",
                     {"subtrees": [{"type": k, "name": n, "osds": int(c)} for k, n, c in trees],
                      "manual": todo})


def _orphan(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = _osds(hc)
    gone = [d for d in ds if d[4:].isdigit() and st.osd(int(d[4:])) is None]
    todo = (f"remove it from the CRUSH map: `ceph osd crush rm {gone[0]}`" if gone else
            "it is in the osdmap now: `ceph osd tree` to look again")
    return Explained(f"{', '.join(ds) or 'an OSD'} in the CRUSH map but not in the osdmap "
                     f"(left from a removal): {todo}", {"osds": ds, "manual": todo})


_TUNABLES_RE = re.compile(r"require (\w+), min is (\w+)")


def _crush_tunables(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    m = _TUNABLES_RE.search(hc.summary)
    have, want = (m.group(1), m.group(2)) if m else ("legacy", "the minimum")
    todo = ("first see that no connected client is older than the new profile: `ceph "
            "features`; then `ceph osd crush tunables optimal` moves much data: plan it for "
            "a quiet hour")
    return Explained(f"the CRUSH map's tunables are {have}'s, older than "
                     f"mon_crush_min_required_version ({want}): {todo}",
                     {"tunables": have, "min": want, "manual": todo})


def _straw_calc(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    todo = ("`ceph osd crush set-tunable straw_calc_version 1` (moves some data where straw "
            "buckets have items of equal weight)")
    return Explained(f"the CRUSH map uses straw_calc_version 0 (uneven straw buckets): "
                     f"{todo}", {"manual": todo})


def _sortbitwise(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    # Pacific and Reef set the flag themselves and refuse `ceph osd set sortbitwise`
    # (EINVAL): what can still lack it is an OSD older than Luminous
    todo = ("`ceph osd versions` names each OSD's release: upgrade those older than "
            "Luminous, then Ceph sets the flag itself")
    return Explained(f"the osdmap flag sortbitwise is not set: {todo}",
                     {"flag": "sortbitwise", "manual": todo})


def _filestore(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = _osds(hc)
    todo = ("`ceph osd count-metadata osd_objectstore` counts them; redeploy each as "
            "BlueStore, one at a time (out, wait for safe-to-destroy, destroy, recreate with "
            "ceph-volume): Filestore is gone from Reef's successors")
    return Explained(f"{_where(st, ds) or 'some OSDs'} still run Filestore: {todo}",
                     {"osds": ds, "hosts": _osd_hosts(st, ds), "manual": todo})


def _unreachable(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = _osds(hc)
    first = ds[0] if ds else "osd.0"
    todo = (f"its address is outside public_network (stretch mode's subnets): compare "
            f"`ceph config get {first} public_network` with its address in `ceph osd dump`")
    return Explained(f"{_where(st, ds) or 'OSDs'} not reachable by the monitors' rule: "
                     f"{todo}", {"osds": ds, "hosts": _osd_hosts(st, ds), "manual": todo})


# BlueStore's own alerts: code -> (what it means, what to do); {first} is ``osd.N``,
# {id} its number, {hosts} its hosts
_BLUESTORE: Mapping[str, tuple[str, str]] = {
    "BLUEFS_AVAILABLE_SPACE": (
        "BlueFS (RocksDB's space) on {osds} has little room left to grow",
        "read `ceph tell {first} bluefs stats`; compact it (`ceph tell {first} compact`) "
        "or give it a larger DB device"),
    "BLUEFS_LOW_SPACE": (
        "BlueFS on {osds} is low on free space and BlueStore can give it little more",
        "read `ceph tell {first} bluefs stats`, then compact (`ceph tell {first} compact`)"
        " or move its DB to a larger device; a smaller bluefs_shared_alloc_size helps a "
        "fragmented disk"),
    "BLUESTORE_FRAGMENTATION": (
        "BlueStore's free space on {osds} is badly fragmented (slower writes, BlueFS may "
        "not get space)",
        "read the score on {hosts}: `ceph daemon {first} bluestore allocator score block`;"
        " a severe one is cured by redeploying the OSD"),
    "BLUESTORE_LEGACY_STATFS": (
        "{osds} count usage the pre-Nautilus way (ceph df is not exact)",
        "stop it and run `ceph-bluestore-tool repair --path /var/lib/ceph/osd/ceph-{id}` "
        "on {hosts}, then start it"),
    "BLUESTORE_NO_PER_POOL_OMAP": (
        "{osds} count omap usage the pre-Octopus way",
        "`ceph config set {first} bluestore_fsck_quick_fix_on_mount true`, then restart "
        "it on {hosts} (the conversion runs at mount)"),
    "BLUESTORE_NO_PER_PG_OMAP": (
        "{osds} keep omap in the pre-Pacific layout (slow PG removal)",
        "`ceph config set {first} bluestore_fsck_quick_fix_on_mount true`, then restart "
        "it on {hosts} (the conversion runs at mount)"),
    "BLUESTORE_DISK_SIZE_MISMATCH": (
        "BlueStore on {osds} disagrees with its device about the size (it may crash)",
        "redeploy it, one OSD at a time: `ceph osd out {id}`, wait until `ceph osd "
        "safe-to-destroy {first}` says yes, then destroy and recreate it"),
    "BLUESTORE_NO_COMPRESSION": (
        "{osds} cannot load a compression plugin (packages not matching the running "
        "ceph-osd, or not restarted after an upgrade)",
        "compare `ceph tell {first} version` with the packages on {hosts}, reinstall "
        "them and restart the OSD"),
    "BLOCK_DEVICE_STALLED_READ_ALERT": (
        "reads on the main device of {osds} stalled (a failing disk or controller)",
        "`ceph device ls-by-daemon {first}` names the disk; read its SMART and the kernel "
        "log on {hosts}"),
    "WAL_DEVICE_STALLED_READ_ALERT": (
        "reads on the WAL device of {osds} stalled (a failing disk or controller)",
        "`ceph device ls-by-daemon {first}` names the disk; read its SMART and the kernel "
        "log on {hosts}"),
    "DB_DEVICE_STALLED_READ_ALERT": (
        "reads on the DB device of {osds} stalled (a failing disk or controller)",
        "`ceph device ls-by-daemon {first}` names the disk; read its SMART and the kernel "
        "log on {hosts}"),
}


def _bluestore(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    ds = _osds(hc)
    hosts = _osd_hosts(st, ds)
    first = ds[0] if ds else "osd.0"
    words = {"osds": _where(st, ds) or "some OSDs", "first": first, "id": first[4:],
             "hosts": ", ".join(sorted({h for h in hosts.values() if h})) or "its host"}
    meaning, todo = (x.format(**words) for x in _BLUESTORE[hc.code])
    return Explained(f"{meaning}: {todo}",
                     {"daemons": ds, "osds": [int(d[4:]) for d in ds if d[4:].isdigit()],
                      "hosts": hosts, "manual": todo})


def _too_few_osds(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    up_in = sum(1 for o in st.osds if o.exists and o.in_)
    todo = ("`ceph osd stat` counts them; add OSDs: until then new pools cannot place all "
            "their copies (or lower osd_pool_default_size knowingly)")
    return Explained(f"fewer OSDs ({up_in} in) than osd_pool_default_size: {todo}",
                     {"osds_in": up_in, "manual": todo})


def _down_out_interval(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    where = next((s.section for s in st.config_db
                  if s.name == "mon_osd_down_out_interval" and not s.mask), None)
    todo = (f"`ceph config rm {where} mon_osd_down_out_interval` (Ceph's default, 600 s)"
            if where else "`ceph config set mon mon_osd_down_out_interval 600` (Ceph's "
            "default; a ceph.conf that sets 0 wins over it: remove it there)")
    return Explained(
        "mon_osd_down_out_interval is 0: a down OSD is never marked out, its data is "
        f"never rebuilt elsewhere: {todo}; a cluster that wants this mutes it with "
        "mon_warn_on_osd_down_out_interval_zero false",
        {"option": "mon_osd_down_out_interval", "section": where, "manual": todo})


# ------------------------------------------------------------------ pools and PGs


# the applications Ceph names, and the pool names their tools create
_APP_NAMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rgw", (".rgw", "rgw.", ".rgw.root")),
    ("cephfs", ("cephfs", "_metadata", "_data", "fs_")),
    ("rbd", ("rbd", "volumes", "images", "vms", "backups")),
)


def guess_app(pool: str) -> str:
    """The application a pool's name says (``default.rgw.log`` rgw, ``cephfs_data``
    cephfs, ``rbd``/``volumes`` rbd), else ``rados``: a pool written with librados itself
    (a freeform name, as Ceph's own text allows)."""
    low = pool.lower()
    for app, marks in _APP_NAMES:
        if any(m in low for m in marks):
            return app
    return "rados"


def _app_for(pool: str) -> str:
    return guess_app(pool)


def _app_not_enabled(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    pools = [p for p in _pools(hc) if "<" not in p]
    apps = {p: _app_for(p) for p in pools}
    first = pools[0] if pools else None
    todo = (f"tell Ceph which application uses it: `ceph osd pool application enable "
            f"{first} {apps[first]}` (stordoc fix pool-app-enable {first}; -o app=rbd|rgw|"
            "cephfs|NAME for another one)" if first else
            "`ceph health detail` names the pools")
    return Explained(
        f"no application enabled on pool(s) {', '.join(pools) or '?'} (clients that check "
        f"it refuse them; the pool works): {todo}",
        {"pools": pools, "apps": apps, "manual": todo},
        runbook="pool-app-enable" if first else None, target=first)


_MANY_RE = re.compile(r"\bpool (\S+) objects per pg \((\d+)\) is more than ([\d.]+) times "
                      r"cluster average \((\d+)\)")


def _many_objects(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    found = [m.groups() for line in hc.detail if (m := _MANY_RE.search(line))]
    pools = [f[0] for f in found]
    first = pools[0] if pools else None
    p = st.pool(first) if first else None
    todo = (f"give it more PGs: stordoc fix pool-pg-num {first} (pg_num {p.pg_num} to "
            f"{p.pg_num * 2}, `ceph osd pool set {first} pg_num {p.pg_num * 2}`)"
            if p is not None else "`ceph osd pool ls detail`: raise the named pool's pg_num")
    return Explained(
        ("; ".join(f"pool {n}: {o} objects per PG, {x}x the cluster's {a}"
                   for n, o, x, a in found) or hc.summary)
        + f": its PGs are too few for its objects (slow scrubs, recovery, uneven spread): "
        f"{todo}", {"pools": pools, "manual": todo},
        runbook="pool-pg-num" if p is not None else None, target=first)


def _target_size(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    if hc.code == "POOL_HAS_TARGET_SIZE_BYTES_AND_RATIO":
        pools = re.findall(r"\bPool (\S+) has target_size_bytes", "\n".join(hc.detail))
        why = "both target_size_bytes and target_size_ratio (the ratio wins)"
    else:
        pools = list(dict.fromkeys(
            p for line in hc.detail for p in _LIST_POOLS_RE.findall(line.split(" due to ")[-1]
                                                                    if " due to " in line
                                                                    else line)))
        why = "a target_size_bytes above what the cluster can hold (the autoscaler sizes "\
              "its PGs for data that cannot come)"
    first = pools[0] if pools else None
    p = st.pool(first) if first else None
    now = f" (now {p.target_size_bytes} bytes)" if p is not None and p.target_size_bytes else ""
    todo = (f"`ceph osd pool set {first} target_size_bytes 0`{now}, or set it to what the "
            "pool will really hold" if first else "`ceph osd pool autoscale-status`")
    return Explained(f"pool(s) {', '.join(pools) or '?'} have {why}: {todo}",
                     {"pools": pools, "manual": todo})


def _misplaced(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    held = [f for f in st.flags if f in ("norebalance", "nobackfill", "norecover", "pause",
                                          "pauserd", "pausewr")]
    todo = (f"they wait for the flag {held[0]}: `ceph osd unset "
            f"{'pause' if held[0].startswith('pause') else held[0]}`" if held else
            "nothing to do: Ceph moves them by itself (backfill); follow it with `ceph "
            "progress`")
    return Explained(f"objects misplaced ({hc.summary.split(' objects')[0]}), being moved "
                     f"to where CRUSH now puts them: {todo}",
                     {"flags": held, "manual": todo})


_TRIM_RE = re.compile(r"snap trim queue for pg (\d+)\.([0-9a-f]+) at (\d+)")


def _snap_trim(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    found = [m.groups() for line in hc.detail if (m := _TRIM_RE.search(line))]
    names = {str(p.id): p.name for p in st.pools}
    pgs = [f"{a}.{b}" for a, b, _ in found]
    where = ", ".join(f"pg {a}.{b} ({names.get(a, 'pool ' + a)}) {n} snaps"
                      for a, b, n in found[:8])
    todo = ((f"see what holds it: `ceph pg {pgs[0]} query` (snap_trimq); " if pgs else "")
            + "the OSDs trim slower than snapshots are deleted: lower osd_snap_trim_sleep "
            "or raise osd_pg_max_concurrent_snap_trims while clients allow it")
    return Explained(f"snapshot trimming lags on {where or hc.summary}: {todo}",
                     {"pgs": pgs, "manual": todo})


def _large_omap(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    """LARGE_OMAP_OBJECTS: the objects by name from the cluster log (an OSD's deep scrub
    wrote ``Large omap object found``); an RGW bucket index object names its bucket's
    instance id (``.dir.ID.SHARD``)."""
    from checks.ceph_explained import _large_omap as by_pool

    pools = _pools(hc)
    names = {p.id: p.name for p in st.pools}
    objs = [o for o in st.large_omap if not pools or names.get(o.pool_id) in pools]
    if not objs:
        return by_pool(hc, st, ctx)
    o = objs[-1]
    pool = names.get(o.pool_id, str(o.pool_id))
    said = "; ".join(f"{names.get(x.pool_id, x.pool_id)}/{x.name} in pg {x.pgid}"
                     + (f", {x.keys} keys" if x.keys is not None else "") for x in objs[-4:])
    ns = f" -N {o.namespace}" if o.namespace else ""
    index = o.name.startswith(".dir.")
    if index:
        bucket_id = ".".join(o.name.split(".")[2:-1]) or o.name[5:]
        todo = (f"an RGW bucket index: the bucket with instance id {bucket_id} "
                f"(`radosgw-admin bucket stats` names it), reshard it (`radosgw-admin bucket "
                "limit check`; radosgw is a daemon stordoc does not see)")
    else:
        todo = (f"count its keys: `rados -p {pool}{ns} listomapkeys {o.name}`; the "
                "application that writes it must split or trim it (or raise "
                "osd_deep_scrub_large_omap_object_key_threshold knowingly)")
    todo += f"; the warning clears at the next deep scrub: `ceph pg deep-scrub {o.pgid}`"
    return Explained(f"large omap object(s) {said}: {todo}",
                     {"pools": pools, "objects": [{"pool": names.get(x.pool_id),
                                                   "name": x.name, "pgid": x.pgid,
                                                   "keys": x.keys} for x in objs[-20:]],
                      "rgw_index": index, "manual": todo})


# ------------------------------------------------------------------ manager modules


def _telemetry(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    todo = ("the telemetry module collects more than was agreed: read what with `ceph "
            "telemetry show-all` (Pacific and Reef), then `ceph telemetry on --license "
            "sharing-1-0` to agree or `ceph telemetry off`")
    return Explained(f"telemetry needs a new opt-in: {todo}", {"module": "telemetry",
                                                                "manual": todo})


def _dashboard_debug(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    todo = "`ceph dashboard debug disable` (debug mode shows tracebacks to anyone)"
    return Explained(f"the dashboard runs in debug mode: {todo}",
                     {"module": "dashboard", "manual": todo})


Explainer = Callable[[HealthCheck, CephState, CheckContext], Explained]
EXPLAIN: Mapping[str, Explainer] = {
    "MON_MSGR2_NOT_ENABLED": _msgr2,
    "AUTH_INSECURE_GLOBAL_ID_RECLAIM": _reclaim,
    "AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED": _reclaim_allowed,
    "AUTH_BAD_CAPS": _bad_caps,
    "MON_NETSPLIT": _netsplit,
    "DAEMON_OLD_VERSION": _old_version,
    "OSD_ROOT_DOWN": _subtree_down,
    "OSD_ORPHAN": _orphan,
    "OLD_CRUSH_TUNABLES": _crush_tunables,
    "OLD_CRUSH_STRAW_CALC_VERSION": _straw_calc,
    "OSD_NO_SORTBITWISE": _sortbitwise,
    "OSD_FILESTORE": _filestore,
    "OSD_UNREACHABLE": _unreachable,
    **{code: _bluestore for code in _BLUESTORE},
    "TOO_FEW_OSDS": _too_few_osds,
    "OSD_NO_DOWN_OUT_INTERVAL": _down_out_interval,
    "POOL_APP_NOT_ENABLED": _app_not_enabled,
    "MANY_OBJECTS_PER_PG": _many_objects,
    "POOL_TARGET_SIZE_BYTES_OVERCOMMITTED": _target_size,
    "POOL_HAS_TARGET_SIZE_BYTES_AND_RATIO": _target_size,
    "OBJECT_MISPLACED": _misplaced,
    "PG_SLOW_SNAP_TRIMMING": _snap_trim,
    "LARGE_OMAP_OBJECTS": _large_omap,
    "TELEMETRY_CHANGED": _telemetry,
    "DASHBOARD_DEBUG": _dashboard_debug,
}


def explain(hc: HealthCheck, st: CephState, ctx: CheckContext) -> Explained:
    return EXPLAIN[hc.code](hc, st, ctx)
