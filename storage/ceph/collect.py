"""Which commands a collection sends, which are required, and what a failure means.

``osd dump`` and ``osd tree`` are required: without them there is no picture, and their
failure aborts. Every other command is optional: its failure is recorded in
``raw["errors"]`` (-> ``CephState.errors``) and the rest is still read. A monitor that
times out anywhere means the cluster is unreachable; a manager that does not answer costs
one timeout, not one per manager command. Some commands run only when an earlier answer
asks for them: the osdmaps of the epochs down OSDs went down at, ``config show`` of one
up OSD, the daemons' metadata when more than one Ceph version runs, and whether the PGs
have reported on the current osdmap when every PG reads active+clean (``_settle``).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.ceph.client import ETIMEDOUT, CephClient, CephCommandError, CephUnreachable
from storage.ceph.parse import STUCK_OPS, as_int, as_list, as_map, down_epochs, parse_pg_stat
from storage.ceph.parse_daemons import parse_versions
from storage.ceph.parse_osdlog import (
    LOG_FLAPS,
    LOG_LINES,
    MAP_FLAPS,
    MAX_MAP_LOOKUPS,
    flap_suspects,
    osd_brief,
    walk_boots,
)
from storage.ceph.parse_pgquery import MAX_PG_QUERIES, blocked_candidates
from storage.ceph.parse_scrub import SCRUB_KEY, parse_pg_ls
from storage.ceph.parse_settle import OSDMAP_PGS, PGS_BRIEF, worth_comparing
from storage.ceph.quota_history import QUOTA_HISTORY, near_quota, read_quota_history
from storage.ceph.settle import SettleUnavailable, read_osdmap_pgs
from storage.ceph.state import build_state
from storage.model import CephState
from storage.targets import CephTarget
from storage.why import why


@dataclass(frozen=True)
class Command:
    """One command: its key in ``raw``, monitor or manager, prefix and arguments."""

    key: str
    prefix: str
    mgr: bool = False
    args: Mapping[str, Any] = field(default_factory=dict)


REQUIRED: tuple[Command, ...] = (
    Command("osd dump", "osd dump"),
    Command("osd tree", "osd tree"),
)
OPTIONAL: tuple[Command, ...] = (
    Command("osd pool ls detail", "osd pool ls", args={"detail": "detail"}),
    Command("df", "df"),
    Command("health detail", "health", args={"detail": "detail"}),
    Command("status", "status"),
    Command("quorum_status", "quorum_status"),
    Command("versions", "versions"),
    Command("time-sync-status", "time-sync-status"),
    Command("config dump", "config dump"),
    Command("pg stat", "pg stat", mgr=True),
    Command("pg dump_stuck", "pg dump_stuck", mgr=True, args={"stuckops": list(STUCK_OPS)}),
    Command("osd df", "osd df", mgr=True),
    Command("crash ls-new", "crash ls-new", mgr=True),  # RECENT_CRASH explained
    Command("osd pool autoscale-status", "osd pool autoscale-status", mgr=True),
    # the manager's device table with devicehealth's predictions (DEVICE_FAILING)
    Command("device ls", "device ls", mgr=True),
    # the manager map and CRUSH rules are the monitors': answered with the manager gone
    Command("mgr dump", "mgr dump"),
    Command("osd crush rule dump", "osd crush rule dump"),
)
# ``log last``: read when no manager answered, for the manager's last ``pgmap`` line
LOG_LAST = Command("log last", "log last",
                   args={"num": 200, "level": "debug", "channel": "cluster"})
# ``log last`` for OSD flaps (``storage.ceph.parse_osdlog``): info level, bounded
FLAP_LOG = Command(LOG_FLAPS, "log last",
                   args={"num": LOG_LINES, "level": "info", "channel": "cluster"})
# a ``pg query`` waits at most this long (a PG whose OSDs are all down never answers)
PG_QUERY_TIMEOUT_S = 5.0
MON_DISK_CODES = ("MON_DISK_LOW", "MON_DISK_CRIT", "MON_DISK_BIG")
# what each monitor runs with (its ceph.conf and runtime overrides included), asked of it
MON_DATA_KEYS = ("mon_data", "mon_data_avail_warn", "mon_data_avail_crit",
                 "mon_data_size_warn")
# ``config get mon KEY`` for each; defaults apply when one fails
# (osd_failsafe_full_ratio: the monitor orders the full ratios against its own value,
# OSD_OUT_OF_ORDER_FULL)
CONFIG_KEYS = ("mon_max_pg_per_osd", "mon_osd_down_out_interval",
               "osd_pool_default_pg_autoscale_mode", "osd_failsafe_full_ratio")
# At most this many old osdmaps are fetched to date down OSDs (one per distinct epoch).
MAX_EPOCH_LOOKUPS = 16
# ``osd metadata`` of a bigger cluster is tens of MB: versions are then counted, not named.
MAX_OSDS_FOR_METADATA = 1000
# Above this many PGs a check does not compare each PG's reported placement with the
# map (``pg dump pgs_brief`` is ~100 bytes a PG and osdmaptool maps them all): the stamp
# fallback then, said so. 50,000 PGs is ~5 MB and well under a second.
MAX_PGS_FOR_SETTLE = 50_000
# Ceph's codes of slow OSDs: ``osd perf`` and the named OSDs' ops are read only then
SLOW_CODES = ("SLOW_OPS", "OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT",
              "BLUESTORE_SLOW_OP_ALERT")
# the OSDs whose ops are asked (``ceph tell osd.N``), and the total time for them
MAX_SLOW_OSDS = 6
SLOW_BUDGET_TIMEOUTS = 2
_SLOW_OSD_RE = re.compile(r"\bosd\.(\d+)\b")


class _Session:
    """One collection's command runner: remembers a dead manager and the errors."""

    def __init__(self, client: CephClient) -> None:
        self.client = client
        self.errors: dict[str, str] = {}
        self.mgr_dead: str | None = None

    def required(self, cmd: Command) -> Any:
        return self._send(cmd)

    def optional(self, cmd: Command) -> tuple[bool, Any]:
        """(answered, JSON); a failure is recorded under ``cmd.key``."""
        if cmd.mgr and self.mgr_dead:
            self.errors[cmd.key] = f"skipped: {self.mgr_dead}"
            return False, None
        try:
            return True, self._send(cmd)
        except CephUnreachable as e:
            if not cmd.mgr:
                raise
            self.errors[cmd.key] = self.mgr_dead = f"manager did not answer: {e}"
        except CephCommandError as e:
            if abs(e.rc) == ETIMEDOUT:
                if not cmd.mgr:
                    raise CephUnreachable(str(e)) from e
                self.errors[cmd.key] = self.mgr_dead = f"manager did not answer: {e}"
            else:
                self.errors[cmd.key] = str(e)
        return False, None

    def _send(self, cmd: Command) -> Any:
        send = self.client.mgr if cmd.mgr else self.client.mon
        return send(cmd.prefix, **dict(cmd.args))


def collect_raw(client: CephClient,
                on_placement: Callable[[CephState], None] | None = None) -> dict[str, Any]:
    """Run every command once; optional failures land in ``raw["errors"]``.
    ``on_placement`` gets the state of the required commands alone (the OSDs, their hosts,
    the fsid: what the host facts are planned from) as soon as they answered, while the
    rest is still being read (storage.collect starts the hosts' facts with it)."""
    s = _Session(client)
    raw: dict[str, Any] = {}
    for cmd in REQUIRED:
        raw[cmd.key] = s.required(cmd)
    if on_placement is not None:
        try:
            on_placement(build_state({cmd.key: raw[cmd.key] for cmd in REQUIRED}))
        except Exception:  # noqa: BLE001, S110  (the full state follows; the plan waits for it)
            pass
    raw["osdmap_stamps"] = _down_epoch_stamps(s, as_map(raw["osd dump"]))
    for cmd in OPTIONAL:
        ok, value = s.optional(cmd)
        if ok:
            raw[cmd.key] = value
    _settle(s, raw)
    _scrub(s, raw)
    _mgr_gone(s, raw)
    _pg_queries(s, raw)
    ok, value = s.optional(FLAP_LOG)
    if ok:
        raw[LOG_FLAPS] = value
    _map_flaps(s, raw)
    _mon_data(s, raw)
    _slow_ops(s, raw)
    shown = _config_show(s, as_map(raw["osd dump"]))
    if shown is not None:
        raw["config show"] = shown
    for kind in _kinds_to_name(raw):
        ok, value = s.optional(Command(f"{kind} metadata", f"{kind} metadata"))
        if ok:
            raw[f"{kind} metadata"] = value
    cfg: dict[str, Any] = {}
    for name in CONFIG_KEYS:
        ok, value = s.optional(Command(f"config {name}", "config get",
                                       args={"who": "mon", "key": name}))
        if ok:
            cfg[name] = value
    raw["config"] = cfg
    _quota_history(s, raw)
    raw["errors"] = s.errors
    return raw


def _quota_history(s: _Session, raw: dict[str, Any]) -> None:
    """A quota at or near its pool's use: its previous value (storage.ceph.quota_history),
    read only then."""
    dump = as_map(raw["osd dump"])
    near = near_quota(dump, raw.get("df"))
    if not near:
        return

    def ask(epoch: int) -> tuple[bool, Any]:
        try:
            return True, s.client.mon("osd dump", epoch=epoch)
        except CephCommandError:  # trimmed from the monitor's store
            return False, None

    raw[QUOTA_HISTORY] = read_quota_history(str(dump.get("fsid") or ""),
                                            as_int(dump.get("epoch")), near, ask)


def _down_epoch_stamps(s: _Session, dump: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for ep in down_epochs(dump, MAX_EPOCH_LOOKUPS):
        ok, old = s.optional(Command(f"osd dump {ep}", "osd dump", args={"epoch": ep}))
        # a failure means trimmed from the monitor's store: the time stays unknown
        if ok and isinstance(old, Mapping) and old.get("modified"):
            out[str(ep)] = str(old["modified"])
    return out


def _settle(s: _Session, raw: dict[str, Any]) -> None:
    """Have the PGs reported on the current osdmap (``storage.ceph.settle``)? Asked only
    when ``pg stat`` reads every PG active+clean: a check of a healthy cluster (the usual
    case) pays 30-90 ms on the lab (``pg dump pgs_brief``, ``version``, ``osd getmap``: ~5
    ms; osdmaptool started for ``--version`` once per process and for the map: the rest),
    and when some PG reads otherwise the check reports that anyway, stale or not
    (``worth_comparing``)."""
    num, states = parse_pg_stat(raw["pg stat"]) if raw.get("pg stat") else (0, {})
    if not worth_comparing(states):
        return
    if num > MAX_PGS_FOR_SETTLE:
        s.errors[OSDMAP_PGS] = (f"not compared: {num} PGs, more than a check compares "
                                f"({MAX_PGS_FOR_SETTLE})")
        return
    ok, brief = s.optional(Command(PGS_BRIEF, "pg dump", mgr=True,
                                   args={"dumpcontents": ["pgs_brief"]}))
    if not ok:
        return
    raw[PGS_BRIEF] = brief
    t = s.client.target
    try:
        raw[OSDMAP_PGS] = read_osdmap_pgs(s.client, t.osdmaptool, t.timeout_s)
    except SettleUnavailable as e:
        s.errors[OSDMAP_PGS] = str(e)


SCRUB_CODES = ("PG_DAMAGED", "OSD_SCRUB_ERRORS")
# at most this many inconsistent PGs are listed object by object (one rados CLI each)
MAX_SCRUB_PGS = 16


def _scrub(s: _Session, raw: dict[str, Any]) -> None:
    """Which PGs are inconsistent (``pg ls inconsistent``) and, for each, which copy is
    bad and why (``rados list-inconsistent-obj``), asked only when Ceph reports scrub
    errors (PG_DAMAGED, OSD_SCRUB_ERRORS): a healthy check pays nothing."""
    checks = as_map(as_map(raw.get("health detail")).get("checks"))
    if not any(c in checks for c in SCRUB_CODES):
        return
    ok, pgs = s.optional(Command("pg ls inconsistent", "pg ls", mgr=True,
                                 args={"states": ["inconsistent"]}))
    if not ok:
        raw[SCRUB_KEY] = {"error": s.errors.get("pg ls inconsistent", "not read")}
        return
    objects: dict[str, Any] = {}
    t = s.client.target
    for pg in parse_pg_ls(pgs)[:MAX_SCRUB_PGS]:
        if not t.rados:
            break
        objects[pg.pgid] = list_inconsistent_obj(t, pg.pgid)
    raw[SCRUB_KEY] = {"pgs": pgs, "objects": objects}


def list_inconsistent_obj(t: CephTarget, pgid: str) -> Any:
    """``rados list-inconsistent-obj PGID --format=json`` through the target's rados argv
    (bounded by the target's timeout: the CLI waits for a PG of an unknown pool forever);
    ``{"error": ...}`` when it fails."""
    argv = [*t.rados, "-c", t.conf, "-n", t.client]
    if t.keyring:
        argv += ["--keyring", t.keyring]
    argv += ["list-inconsistent-obj", pgid, "--format=json"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=t.timeout_s,
                           check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{shlex.join(argv[:2])}: {e}"}
    if r.returncode != 0:
        lines = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]
        said = next((ln for ln in lines if "No scrub information" in ln), None)
        return {"error": said or (lines or [f"rc={r.returncode}"])[-1]}
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"error": f"not JSON: {r.stdout[:200]!r}"}
def _pg_queries(s: _Session, raw: dict[str, Any]) -> None:
    """``pg query`` of at most MAX_PG_QUERIES stuck PGs (down, incomplete, stale, inactive,
    with unfound objects; ``storage.ceph.parse_pgquery``), each within PG_QUERY_TIMEOUT_S:
    what blocks them. A query that fails is kept as its error."""
    pgids = blocked_candidates(raw.get("pg dump_stuck"), MAX_PG_QUERIES)
    if not pgids:
        return
    out: dict[str, Any] = {}
    for pgid in pgids:
        try:
            out[pgid] = s.client.pg(pgid, "query", timeout=PG_QUERY_TIMEOUT_S)
        except (CephCommandError, CephUnreachable) as e:
            out[pgid] = {"error": str(e)}
    raw["pg query"] = out


def _map_flaps(s: _Session, raw: dict[str, Any]) -> None:
    """The boots of OSDs Ceph remembers as laggy, walked back through old osdmaps
    (``storage.ceph.parse_osdlog.walk_boots``), at most MAX_MAP_LOOKUPS ``osd dump``s."""
    dump = as_map(raw["osd dump"])
    suspects = flap_suspects(dump, time.time())
    if not suspects:
        return
    cache: dict[int, Any] = {}

    def fetch(epoch: int) -> Any:
        if epoch not in cache:
            ok, old = s.optional(Command(f"osd dump {epoch}", "osd dump",
                                         args={"epoch": epoch}))
            cache[epoch] = osd_brief(old) if ok and isinstance(old, Mapping) else None
            s.errors.pop(f"osd dump {epoch}", None)  # trimmed from the store: the walk stops
        return cache[epoch]

    out: dict[str, Any] = {}
    budget = MAX_MAP_LOOKUPS
    for osd in suspects:
        rec = next((o for o in as_list(dump.get("osds"))
                    if isinstance(o, Mapping) and as_int(o.get("osd"), -1) == osd), None)
        if rec is None or not as_int(rec.get("up")):
            continue
        before = len(cache)
        out[str(osd)] = walk_boots(osd, as_int(rec.get("up_from")), fetch, budget)
        budget -= len(cache) - before
    raw[MAP_FLAPS] = out


def _mgr_gone(s: _Session, raw: dict[str, Any]) -> None:
    """No manager answered, or the map has none: the cluster log's last ``pgmap`` line
    of a manager says since when the PG statistics are stale (``checks.managers``)."""
    dump = as_map(raw.get("mgr dump"))
    if not s.mgr_dead and (not dump or dump.get("available")):
        return
    ok, value = s.optional(LOG_LAST)
    if ok:
        raw[LOG_LAST.key] = value


def _mon_data(s: _Session, raw: dict[str, Any]) -> None:
    """Each monitor's data directory, asked of the monitor itself (its ceph.conf may say
    what the configuration database does not), only when Ceph says its disk is low or
    its store big."""
    checks = as_map(as_map(raw.get("health detail")).get("checks"))
    if not any(c in checks for c in MON_DISK_CODES):
        return
    names = [str(n) for n in as_list(as_map(raw.get("quorum_status")).get("quorum_names"))]
    out: dict[str, Any] = {}
    for mon in names[:9]:
        got: dict[str, Any] = {}
        for var in MON_DATA_KEYS:
            try:
                got.update(as_map(s.client.tell_mon(mon, "config get", var=var)))
            except (CephCommandError, CephUnreachable) as e:
                s.errors[f"mon data {mon}"] = str(e)
                break
        if got and not s.mgr_dead:
            got.update(_runtime_sources(s, mon))
        if got:
            out[mon] = got
    if out:
        raw["mon data"] = out


def _runtime_sources(s: _Session, mon: str) -> dict[str, str]:
    """Where the monitor's MON_DATA_KEYS come from (``config show mon.X``, a manager
    command): ``NAME.source`` (``file``, ``mon``, ``override`` for a ``ceph tell ... config
    set`` at runtime) and ``NAME.SOURCE`` for each value it overrides (``NAME.file``:
    its ceph.conf value)."""
    try:
        shown = s.client.mgr("config show", who=f"mon.{mon}")
    except (CephCommandError, CephUnreachable) as err:
        s.errors[f"mon config show {mon}"] = str(err)
        return {}
    out: dict[str, str] = {}
    for entry in as_list(shown):
        name = str(as_map(entry).get("name", ""))
        if name not in MON_DATA_KEYS:
            continue
        out[f"{name}.source"] = str(as_map(entry).get("source", ""))
        for o in as_list(as_map(entry).get("overrides")):
            src = str(as_map(o).get("source", ""))
            if src:
                out[f"{name}.{src}"] = str(as_map(o).get("value", ""))
    return out


def _slow_ops(s: _Session, raw: dict[str, Any]) -> None:
    """Only when Ceph says some OSD is slow (``SLOW_OPS``, ``OSD_SLOW_PING_TIME_*``,
    ``BLUESTORE_SLOW_OP_ALERT``): ``osd perf`` (commit/apply latency per OSD), and of each
    OSD ``SLOW_OPS`` names (at most ``MAX_SLOW_OSDS``) its ops in flight and its historic
    slow ops (``ceph tell osd.N``), each call bounded by the target's timeout and all of
    them by ``SLOW_BUDGET_TIMEOUTS`` timeouts; an OSD that does not answer is said in
    its entry's ``error`` (``storage.ceph.parse_ops``)."""
    checks = as_map(as_map(raw.get("health detail")).get("checks"))
    if not any(c in checks for c in SLOW_CODES):
        return
    ok, perf = s.optional(Command("osd perf", "osd perf", mgr=True))
    if ok:
        raw["osd perf"] = perf
    summary = as_map(as_map(checks.get("SLOW_OPS")).get("summary")).get("message", "")
    osds = list(dict.fromkeys(int(x) for x in _SLOW_OSD_RE.findall(str(summary))))
    if not osds:
        return
    deadline = time.monotonic() + SLOW_BUDGET_TIMEOUTS * max(1.0, s.client.target.timeout_s)
    out: dict[str, Any] = {}
    for osd in osds[:MAX_SLOW_OSDS]:
        entry: dict[str, Any] = {}
        for key, prefix in (("in_flight", "dump_ops_in_flight"),
                            ("historic", "dump_historic_slow_ops")):
            if time.monotonic() > deadline:
                entry["error"] = "not asked: the time for reading slow ops ran out"
                break
            try:
                entry[key] = s.client.tell_osd(osd, prefix)
            except (CephCommandError, CephUnreachable) as e:
                entry["error"] = f"ceph tell osd.{osd} {prefix}: {e}"
                break
        out[f"osd.{osd}"] = entry
    if len(osds) > MAX_SLOW_OSDS:
        s.errors["osd slow ops"] = (f"read {MAX_SLOW_OSDS} of the {len(osds)} OSDs with "
                                    "slow ops")
    raw["osd slow ops"] = out


def _config_show(s: _Session, dump: Mapping[str, Any]) -> dict[str, Any] | None:
    """``config show osd.N`` of the lowest-numbered up OSD: its scheduler and recovery
    settings as it runs them (ceph.conf included, which ``config dump`` does not see)."""
    up = sorted(as_int(o.get("osd"), -1) for o in as_list(dump.get("osds"))
                if isinstance(o, Mapping) and as_int(o.get("up")))
    up = [i for i in up if i >= 0]
    if not up:
        return None
    daemon = f"osd.{up[0]}"
    ok, value = s.optional(Command("config show", "config show", mgr=True,
                                   args={"who": daemon}))
    return {daemon: value} if ok else None


def _kinds_to_name(raw: Mapping[str, Any]) -> list[str]:
    """Daemon kinds with a daemon behind the newest version running (their metadata names
    them); none when every daemon runs one version."""
    v = parse_versions(raw.get("versions"))
    newest = v.newest()
    if not v.mixed or newest is None:
        return []
    n_osds = len(as_list(as_map(raw.get("osd dump")).get("osds")))
    kinds = []
    for kind, counts in v.by_kind.items():
        if kind not in ("mon", "mgr", "osd", "mds") or not any(
                c.key < newest.key for c in counts):
            continue
        if kind == "osd" and n_osds > MAX_OSDS_FOR_METADATA:
            continue
        kinds.append(kind)
    return kinds


def collect_ceph(target: CephTarget, on_placement: Callable[[CephState], None] | None = None
                 ) -> tuple[CephState | None, str | None]:
    """One connection, every command, one ``CephState``; never raises.

    An unreachable monitor gives ``(None, message)`` within about ``target.timeout_s``.
    ``on_placement``: see ``collect_raw``.
    """
    t0 = time.time()
    client = CephClient(target)
    try:
        client.connect()
        raw = collect_raw(client, on_placement)
        return build_state(raw, collected_at=t0), None
    except CephUnreachable as e:
        return None, str(e)
    except CephCommandError as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001  (a parser surprise must not abort the run)
        return None, f"{why(e)}"
    finally:
        client.close()
