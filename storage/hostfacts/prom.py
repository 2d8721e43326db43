"""Host facts of every host from Prometheus (node_exporter 1.5), SSH only where needed.

One instant query per fact family for ALL hosts of the job (``up`` and its sample time,
``node_uname_info``, the four ``node_filesystem_*`` families, ``node_systemd_unit_state``)
is mapped onto the same typed ``HostFacts`` the SSH path builds (``collect_one``), so every
check reads them unchanged:

- a series belongs to the configured host whose address is its ``instance``'s host part
  (``127.0.0.3:9100``, ``[::1]:9100``, ``node3.example:9100``), else whose name is its
  ``nodename`` (``node_uname_info``) or ``host`` label; an instance matching no host is
  named once (``PromStatus.unmatched``), never guessed;
- an OSD data dir or Swift device that is a mount point gives its ``Mount``, an ``FsProbe``
  (read-only flag, size, free space; no write probe) and its dir; one that is NOT a mount
  point is left out (unknown: a plain-directory OSD is not a mount either) and the host is
  looked at over SSH when Ceph or Swift name it;
- ``ceph-osd@N``-style units give ``UnitState`` and the OSD daemon's running state;
- the kernel log, where each host runs scripts/stordoc-kmsg-textfile (node_exporter's
  textfile collector): the same lines the SSH facts script reads, parsed the same way, so
  a shut-down XFS (which node_exporter's filesystem collector still reports healthy) and
  kernel I/O errors on a host's devices are seen; only the hosts whose log holds an error
  or a shutdown send their lines. A textfile that is stale or says the log is unreadable
  sends the host to SSH (HOST_KERNEL_LOG_STALE when SSH does not look); a host with none
  has its kernel log unknown (HOST_KERNEL_LOG_UNWATCHED, one line for all);
- what node_exporter cannot tell (fstab, device labels and identities, logs, crash dumps,
  admin sockets, SMART, listeners, ring md5s) stays empty: no check finds anything in an
  empty field.

A host is fresh when ``up == 1`` and its sample is at most ``stale_s`` old (by the
server's clock); else it is *stale* and Prometheus does not speak for it.

SSH, second pass, at most ``ssh_max_hosts`` hosts, in this order: the hosts the Ceph and
Swift pictures name (a down OSD's CRUSH host, a Swift server whose recon reports an
unmounted device or does not answer), the hosts Prometheus shows a problem on (a read-only
or failing filesystem under an OSD or Swift device, a Swift device not mounted, a failed
unit, an XFS shut down or kernel I/O errors, a stale kernel-log textfile), then the stale
hosts. Their SSH facts replace Prometheus's (the deep diagnosis:
labels, fstab, logs, crash dumps, sockets). A stale host that got no SSH has no facts: it
is left out of the snapshot (unknown, never healthy) and said by ``checks.prometheus``.
"""

from __future__ import annotations

import math
import os
import string
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

# imported with storage.collect, in the main thread: PromClient's requests must not be
# imported for the first time inside collect()'s pool (see storage/collect.py)
import requests  # noqa: F401

from storage.deploy import _osd_of_unit
from storage.hostfacts.collect import HostPlan, collect_host_facts, plan_for
from storage.hostfacts.disks import parse_xfs_events
from storage.hostfacts.parse import keep_io_errors, parse_io_errors
from storage.model import (
    CephState,
    Daemon,
    FsProbe,
    HostFacts,
    IoError,
    Mount,
    OsdDataDir,
    OsdState,
    PromProblem,
    PromStatus,
    RingDevice,
    StaleHost,
    SwiftDeviceDir,
    SwiftState,
    UnitState,
    XfsEvent,
)
from storage.prometheus import PromClient, PromError, Sample
from storage.runner import Runner
from storage.targets import ClusterTarget, HostTarget, host_key, ip_of
from storage.why import why

# the fact families, one instant query each ({job} is the settings' job, validated)
QUERIES: dict[str, str] = {
    "up": 'up{{job="{job}"}}',
    "up_ts": 'timestamp(up{{job="{job}"}})',
    "uname": 'node_uname_info{{job="{job}"}}',
    "fs_ro": 'node_filesystem_readonly{{job="{job}",mountpoint=~"{mp}"}}',
    "fs_err": 'node_filesystem_device_error{{job="{job}",mountpoint=~"{mp}"}}',
    "fs_size": 'node_filesystem_size_bytes{{job="{job}",mountpoint=~"{mp}"}}',
    "fs_avail": 'node_filesystem_avail_bytes{{job="{job}",mountpoint=~"{mp}"}}',
    # only each unit's current state (the series whose value is 1)
    "units": 'node_systemd_unit_state{{job="{job}",name=~"ceph.*|swift.*"}} == 1',
    # the kernel log (scripts/stordoc-kmsg-textfile): three numbers per host, and the
    # lines of the hosts whose log has an error or a shutdown in it, no other host's
    "kmsg": '{{__name__=~"stordoc_kmsg_readable|stordoc_kmsg_time|stordoc_kmsg_errors",'
            'job="{job}"}}',
    "kmsg_lines": 'stordoc_kmsg_line{{job="{job}"}} and on(instance) '
                  'stordoc_kmsg_errors{{job="{job}"}} > 0',
}
UNMATCHED_SHOWN = 20


# --------------------------------------------------------------------------- labels


def split_instance(instance: str) -> tuple[str, int | None]:
    """``host:port`` -> (host, port): ``127.0.0.2:9100``, ``[::1]:9100``, ``node1:9100``;
    a bare host or IPv6 address has no port. Never raises."""
    s = instance.strip()
    if s.startswith("["):
        end = s.find("]")
        if end > 0:
            host, rest = s[1:end], s[end + 1:]
            if rest.startswith(":") and _port(rest[1:]) is not None:
                return host, _port(rest[1:])
            return host, None
        return s, None
    if s.count(":") == 1:
        host, _, port = s.partition(":")
        if _port(port) is not None:
            return host, _port(port)
        return s, None
    return s, None  # a bare IPv6 address (no brackets, no port) or a plain name


def _port(text: str) -> int | None:
    if text.isascii() and text.isdigit() and len(text) <= 5 and 0 < int(text) <= 65535:
        return int(text)
    return None


@dataclass
class HostIndex:
    """Configured hosts by every spelling of their address, and by name."""

    by_addr: dict[str, str] = field(default_factory=dict)
    by_name: dict[str, str] = field(default_factory=dict)
    _cache: dict[tuple[str, str], str | None] = field(default_factory=dict)

    @classmethod
    def of(cls, hosts: Iterable[HostTarget]) -> HostIndex:
        ix = cls()
        for h in hosts:
            ix.by_addr.setdefault(host_key(h.address), h.name)
            ip = ip_of(h.address)
            if ip is not None:
                ix.by_addr.setdefault(str(ip), h.name)
            ix.by_name.setdefault(host_key(h.name), h.name)
        return ix

    def match(self, instance: str, nodename: str = "") -> str | None:
        """The configured host an ``instance`` (and its ``nodename``) means, or None."""
        key = (instance, nodename)
        if key in self._cache:
            return self._cache[key]
        host, _ = split_instance(instance)
        found = self.by_addr.get(host_key(host))
        if found is None:
            ip = ip_of(host)
            if ip is not None:
                found = self.by_addr.get(str(ip))
        if found is None and host and not ip_of(host):
            found = self.by_name.get(host_key(host))  # instance "node1:9100"
        if found is None and nodename:
            found = self.by_name.get(host_key(nodename))
        self._cache[key] = found
        return found


# --------------------------------------------------------------------------- queries


@dataclass
class Answers:
    """Each family's samples (None: its query failed) and the failures; ``odd``: each
    family's samples of a value Prometheus does not send (``odd_value``), kept out of
    ``families``; ``exprs``: each family's query."""

    families: dict[str, list[Sample] | None]
    problems: list[PromProblem]
    now: float  # the server's evaluation time of ``up``
    odd: dict[str, list[Sample]] = field(default_factory=dict)
    exprs: dict[str, str] = field(default_factory=dict)


# what each family's values may be: 0/1 flags, info and state series (1), a time in
# epoch seconds, a byte size, a count; anything else (NaN, +Inf, -1, 7 for a flag, a time
# in the year 3000, a value that is not a number) is not a value node_exporter exports
FLAG, ONE, TIME, BYTES, COUNT = "flag", "one", "time", "bytes", "count"
VALUE_KIND: dict[str, str] = {
    "up": FLAG, "up_ts": TIME, "uname": ONE, "fs_ro": FLAG, "fs_err": FLAG,
    "fs_size": BYTES, "fs_avail": BYTES, "units": ONE, "kmsg_lines": ONE,
    "stordoc_kmsg_readable": FLAG, "stordoc_kmsg_time": TIME, "stordoc_kmsg_errors": COUNT}
MAX_TIME = 1e10  # 2286-11-20: no later time is a sample's or a textfile's
MAX_BYTES = float(1 << 62)


def _shown(v: float) -> str:
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{v:g}"


def odd_value(family: str, s: Sample) -> str:
    """Why a sample of ``family`` holds no value node_exporter (or Prometheus's
    ``timestamp()``) sends, or "" when it is a fine one."""
    if s.odd:
        return s.odd
    v = s.value
    kind = VALUE_KIND.get(s.labels.get("__name__", "") if family == "kmsg" else family)
    if kind is None:
        return ""
    if not math.isfinite(v):
        return f"value {_shown(v)}"
    if kind == FLAG and v not in (0.0, 1.0):
        return f"value {_shown(v)} (0 or 1 expected)"
    if kind == ONE and v != 1.0:
        return f"value {_shown(v)} (1 expected)"
    if kind == TIME and not 0 <= v <= MAX_TIME:
        return f"value {_shown(v)} (a time in epoch seconds expected)"
    if kind in (BYTES, COUNT) and not 0 <= v < MAX_BYTES:
        return f"value {_shown(v)} (a size or count expected)"
    if kind == COUNT and not v.is_integer():
        return f"value {_shown(v)} (a whole count expected)"
    return ""


def screen(answers: Answers) -> Answers:
    """The answers with each family's odd samples moved to ``odd`` (in place)."""
    for k, samples in answers.families.items():
        if not samples:
            continue
        bad = [s for s in samples if odd_value(k, s)]
        if bad:
            answers.odd[k] = answers.odd.get(k, []) + bad
            answers.families[k] = [s for s in samples if not odd_value(k, s)]
    return answers


def _re2_literal(text: str) -> str:
    return "".join("\\" + c if c in _RE_SPECIAL else c for c in text)


_RE_SPECIAL = frozenset("\\.+*?()|[]{}^$")


def template_regex(template: str) -> str:
    """A path template (``/var/lib/ceph/osd/{cluster}-{id}``) as an RE2 regex matching
    every path it makes (a field is one path component's worth: ``[^/]+``)."""
    out = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(_re2_literal(literal))
        if name is not None:
            out.append("[^/]+")
    return "".join(out)


def mount_regex(target: ClusterTarget) -> str:
    """The mount points that matter (OSD data dirs, Swift devices) of every host, so
    Prometheus sends those filesystems only, not every host's /, /boot and /run."""
    pats: set[str] = set()
    for h in target.hosts:
        pats.add(template_regex(os.path.normpath(h.osd_data_dir)))
        if h.swift_devices_dir:
            pats.add(_re2_literal(os.path.normpath(h.swift_devices_dir)) + "/[^/]+")
    return "|".join(sorted(pats)) or ".*"


def promql_string(text: str) -> str:
    """``text`` inside a PromQL double-quoted string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


# a Prometheus evaluation time before 2001 or over a day ahead of this host's clock is no
# time at all (a replay's server runs at its snapshot's time, in the past: that is fine)
EVAL_TIME_MIN = 1e9
EVAL_TIME_AHEAD_S = 86400.0


def _shown_time(t: float) -> str:
    return f"{t:.0f}" if abs(t) < 1e12 else f"{t:.3g}"


def ask(client: PromClient, job: str, mounts: str = ".*") -> Answers:
    """``up`` first (one failure when Prometheus is down, not eight), then the others at
    once; every failure is one ``PromProblem``. ``mounts``: the mount points' regex."""
    exprs = {k: q.format(job=job, mp=promql_string(mounts)) for k, q in QUERIES.items()}
    fam: dict[str, list[Sample] | None] = dict.fromkeys(QUERIES)
    try:
        fam["up"] = _query(client, exprs["up"])
    except PromError as e:
        return Answers(fam, [PromProblem(e.kind, e.url, exprs["up"], e.reason)], time.time(),
                       exprs=exprs)
    # the evaluation time every sample of an instant vector carries (the most common one:
    # a sample of an odd time does not move it)
    times = Counter(s.ts for s in fam["up"] or () if not s.odd)
    now = times.most_common(1)[0][0] if times else time.time()
    if not EVAL_TIME_MIN <= now <= time.time() + EVAL_TIME_AHEAD_S:
        # every staleness is measured from it: a server time of -1 made every host fresh
        return Answers(dict.fromkeys(QUERIES), [PromProblem(
            "bad_answer", client.url, exprs["up"],
            f"its evaluation time {_shown_time(now)} cannot be now")], time.time(),
            exprs=exprs)
    problems: list[PromProblem] = []
    rest = [k for k in QUERIES if k != "up"]
    with ThreadPoolExecutor(max_workers=len(rest)) as pool:
        futs = {k: pool.submit(_query, client, exprs[k], now) for k in rest}
        for k, fut in futs.items():
            try:
                fam[k] = fut.result()
            except PromError as e:
                problems.append(PromProblem(e.kind, e.url, exprs[k], e.reason))
    return screen(Answers(fam, problems, now, exprs=exprs))


def _query(client: PromClient, expr: str, at: float | None = None) -> list[Sample]:
    try:
        return client.query(expr, at)
    except PromError:
        raise
    except Exception as e:  # never let a surprise end the check  # noqa: BLE001
        raise PromError("bad_answer", client.url, f"{why(e)}") from None


# --------------------------------------------------------------------------- mapping


@dataclass
class Fs:
    device: str
    fstype: str
    readonly: bool | None = None
    device_error: bool | None = None
    size: int | None = None
    avail: int | None = None


@dataclass
class HostSeries:
    """Everything the answers say about one configured host."""

    instances: set[str] = field(default_factory=set)
    up: float | None = None
    last: float | None = None  # the newest ``up`` sample's time
    fs: dict[str, Fs] = field(default_factory=dict)  # mount point -> filesystem
    units: dict[str, str] = field(default_factory=dict)  # unit -> state
    # the kernel-log textfile: readable / time / errors, and its lines by section
    kmsg: dict[str, float] = field(default_factory=dict)
    kmsg_lines: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    # samples of values Prometheus does not send: "up: value NaN" (left out: a host
    # Prometheus cannot vouch for, looked at over SSH)
    odd: dict[str, str] = field(default_factory=dict)


def _norm(p: str) -> str:
    # node_exporter's mount points are /proc/mounts's: normalized but for odd cases
    if not p or ("//" not in p and "/." not in p and (p == "/" or not p.endswith("/"))):
        return p
    return os.path.normpath(p)


def _num(v: float) -> int | None:
    return int(v) if v == v and abs(v) < 1 << 62 else None  # NaN, inf: unknown


def group(answers: Answers, index: HostIndex
          ) -> tuple[dict[str, HostSeries], dict[str, str]]:
    """The answers by configured host; the instances that match none (-> nodename)."""
    fam = answers.families
    nodename: dict[str, str] = {}
    for s in [*(fam["uname"] or ()), *answers.odd.get("uname", ())]:
        inst = s.labels.get("instance", "")
        nodename[inst] = s.labels.get("nodename", "")
    by_host: dict[str, HostSeries] = {}
    unmatched: dict[str, str] = {}

    seen: dict[tuple[str, str], HostSeries | None] = {}

    def host_of(s: Sample) -> HostSeries | None:
        inst = s.labels.get("instance", "")
        nn = nodename.get(inst, "") or s.labels.get("nodename", "") or \
            s.labels.get("host", "")
        key = (inst, nn)
        if key in seen:
            return seen[key]
        name = index.match(inst, nn)
        hs = None
        if name is None:
            unmatched.setdefault(inst or "(no instance label)", nn)
        else:
            hs = by_host.setdefault(name, HostSeries())
            hs.instances.add(inst)
        seen[key] = hs
        return hs

    ts = {s.labels.get("instance", ""): s.value for s in fam["up_ts"] or ()}
    for s in fam["up"] or ():
        hs = host_of(s)
        if hs is None:
            continue
        last = ts.get(s.labels.get("instance", ""))
        # several instances of one host: the freshest that is up speaks for it
        if hs.up is None or (s.value == 1 and (hs.up != 1 or (last or 0) > (hs.last or 0))):
            hs.up, hs.last = s.value, last
    if fam["fs_ro"] is not None:
        for s in fam["fs_ro"]:
            hs = host_of(s)
            if hs is None:
                continue
            mp = _norm(s.labels.get("mountpoint", ""))
            hs.fs[mp] = Fs(s.labels.get("device", ""), s.labels.get("fstype", ""),
                           readonly=s.value == 1)
        for key, attr in (("fs_err", "device_error"), ("fs_size", "size"),
                          ("fs_avail", "avail")):
            for s in fam[key] or ():
                hs = host_of(s)
                if hs is None:
                    continue
                mp = _norm(s.labels.get("mountpoint", ""))
                cur = hs.fs.get(mp)
                if cur is None:
                    continue  # only filesystems readonly knows of (one per mount point)
                if attr == "device_error":
                    cur.device_error = s.value == 1
                elif attr == "size":
                    cur.size = _num(s.value)
                else:
                    cur.avail = _num(s.value)
    for s in fam["units"] or ():
        hs = host_of(s)
        if hs is not None and s.labels.get("name"):
            hs.units[s.labels["name"]] = s.labels.get("state", "unknown")
    for s in fam["kmsg"] or ():
        hs = host_of(s)
        name = s.labels.get("__name__", "").removeprefix("stordoc_kmsg_")
        if hs is not None and name in ("readable", "time", "errors"):
            hs.kmsg[name] = s.value
    for s in fam["kmsg_lines"] or ():
        hs = host_of(s)
        sec, n = s.labels.get("section", ""), s.labels.get("n", "")
        if hs is not None and sec in ("kmsg", "xfslog") and n.isascii() and n.isdigit():
            hs.kmsg_lines.setdefault(sec, []).append((int(n), s.labels.get("line", "")))
    for k, odd in answers.odd.items():
        for s in odd:
            hs = host_of(s)
            if hs is not None:
                hs.odd.setdefault(k, odd_value(k, s))
    return by_host, unmatched


def unmatched_summary(unmatched: Mapping[str, str], shown: int = UNMATCHED_SHOWN
                      ) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """The first ``shown`` unmatched instances (sorted, with their nodename) and their
    number per port ("none": no port), most first: what PROMETHEUS_UNMATCHED keeps of a
    Prometheus that scrapes 200,000 other instances, not every name."""
    names = sorted(unmatched)[:shown]
    sample = tuple(f"{i} (nodename {unmatched[i]})" if unmatched[i] else i for i in names)
    ports = Counter(str(split_instance(i)[1] or "none") for i in unmatched)
    return sample, tuple(sorted(ports.items(), key=lambda kv: (-kv[1], kv[0])))


def staleness(hs: HostSeries | None, now: float, stale_s: float) -> str | None:
    """Why Prometheus does not speak for this host now, or None when it does."""
    if hs is None or hs.up is None:
        return "no series for its address"
    if hs.up != 1:
        return "its node_exporter does not answer Prometheus (up == 0)"
    if hs.last is None:
        return "the time of its last sample is unknown"
    age = now - hs.last
    if age > stale_s:
        return f"its last sample is {age:.0f} s old (stale after {stale_s:g} s)"
    return None


@dataclass(frozen=True)
class KernelLog:
    """A host's kernel log as its textfile (scripts/stordoc-kmsg-textfile) says it,
    parsed as the SSH path parses the same lines; or why it says nothing. ``absent``: the
    host exports no such textfile (the kernel log is simply not watched there); a stale or
    unreadable one is a host to look at over SSH."""

    known: bool
    why: str = ""
    absent: bool = False
    io_errors: tuple[IoError, ...] = ()
    xfs_events: tuple[XfsEvent, ...] = ()


NO_KMSG = "no stordoc_kmsg series (scripts/stordoc-kmsg-textfile not run there)"


def kernel_log(hs: HostSeries, now: float, stale_s: float, lines_known: bool,
               window_s: float = 86400.0) -> KernelLog:
    """The kernel log of one host from its ``stordoc_kmsg_*`` series (``now``: the
    server's time; ``lines_known``: the lines' query answered)."""
    k = hs.kmsg
    if not k:
        return KernelLog(False, NO_KMSG, absent=True)
    if k.get("readable") != 1:
        return KernelLog(False, "its kernel-log textfile says the kernel log is unreadable")
    t = k.get("time")
    if t is None or t != t or abs(t) == float("inf"):
        return KernelLog(False, "its kernel-log textfile has no time")
    if t - now > stale_s:  # a host clock far ahead: its lines' times are not to be trusted
        return KernelLog(False, f"its kernel-log textfile is dated {t - now:.0f} s ahead of "
                                "Prometheus's clock")
    if now - t > stale_s:
        return KernelLog(False, f"its kernel-log textfile is {now - t:.0f} s old "
                                f"(stale after {stale_s:g} s)")
    if k.get("errors", 0) > 0 and not lines_known:
        return KernelLog(False, "its kernel-log lines could not be read from Prometheus")
    lines = {sec: [ln for _, ln in sorted(v)] for sec, v in hs.kmsg_lines.items()}
    return KernelLog(True, io_errors=parse_io_errors(lines.get("kmsg", []), now, window_s),
                     xfs_events=parse_xfs_events(lines.get("xfslog", [])))


def _shut_down(events: Sequence[XfsEvent], device: str) -> bool:
    """Whether the last word of the kernel on this XFS since it was mounted is a
    shutdown (the rule of checks.disks)."""
    last = None
    for e in events:
        if e.device == device and e.kind in ("mount", "unmount", "shutdown"):
            last = e
    return last is not None and last.kind == "shutdown"


def _unit_name(h: HostTarget, cluster: str, osd_id: int, fsid: str) -> str | None:
    if not h.osd_unit:
        return None
    if h.osd_unit == "ceph-osd@{id}.service":  # the default, without str.format
        return f"ceph-osd@{osd_id}.service"
    return h.osd_unit.format(id=osd_id, cluster=cluster, fsid=fsid)


def facts_from_series(plan: HostPlan, hs: HostSeries, fs_known: bool, units_known: bool,
                      collected_at: float, fsid: str = "",
                      up_osds: frozenset[int] = frozenset(),
                      klog: KernelLog | None = None) -> tuple[HostFacts, list[str]]:
    """One host's facts from its series, and the problems Prometheus shows on it (the
    reasons to look over SSH). ``up_osds``: the OSDs Ceph says are up; ``klog``: its
    kernel log (None: the kernel-log queries failed)."""
    t = plan.target
    problems: list[str] = []
    mounts: list[Mount] = []
    probes: list[FsProbe] = []
    osd_data: dict[int, OsdDataDir] = {}
    swift: dict[str, SwiftDeviceDir] = {}

    def judge(kind: str, name: str, path: str) -> bool:
        fs = hs.fs.get(_norm(path))
        if fs is None:
            return False
        mounts.append(Mount(fs.device, path, fs.fstype, "ro" if fs.readonly else "rw"))
        probes.append(FsProbe(kind, name, path, mounted=True, source=fs.device or None,
                              fstype=fs.fstype or None, readonly=fs.readonly,
                              size=fs.size, avail=fs.avail,
                              df_error="statfs failed (node_exporter device_error)"
                              if fs.device_error else None))
        what = f"osd.{name}" if kind == "osd" else f"Swift device {name}"
        if fs.readonly:
            problems.append(f"{what} read-only")
        if fs.device_error:
            problems.append(f"{what}: statfs fails")
        return True

    for osd_id, path, _ in plan.osds:
        unit_name = _unit_name(t, plan.cluster_name, osd_id, fsid)
        runs_known = units_known and unit_name is not None and unit_name in hs.units
        # a down OSD whose daemon's state is unknown is left to SSH: its mount alone would
        # read as "data in place, daemon stopped", which may be a crash or a hang
        if fs_known and (osd_id in up_osds or runs_known) \
                and judge("osd", str(osd_id), path):
            osd_data[osd_id] = OsdDataDir(osd_id, path, exists=True)
    for name, path in plan.swift:
        if not fs_known:
            continue
        if judge("swift", name, path):
            swift[name] = SwiftDeviceDir(name, path, exists=True)
        else:
            problems.append(f"Swift device {name} not mounted")
    units: list[UnitState] = []
    daemons: list[Daemon] = []
    if units_known:
        mine = {o[0] for o in plan.osds}
        for unit, state in sorted(hs.units.items()):
            unit_osd = _osd_of_unit(unit)
            if unit_osd is not None and unit_osd in mine:
                units.append(UnitState(unit, unit_osd, state,
                                       sub_state="failed" if state == "failed" else ""))
            if state == "failed" and (unit_osd in mine or unit.startswith("swift")):
                problems.append(f"unit {unit} failed")
            # a replicator stopped beside its running server: recon looks healthy until
            # its pass ages, the process list over SSH tells at once
            if unit.startswith("swift-") and "-replicator" in unit and state != "active" \
                    and state != "failed" \
                    and hs.units.get(unit.replace("-replicator", "-server")) == "active":
                problems.append(f"unit {unit} {state} beside its running server")
        for osd_id, _, _ in plan.osds:
            unit_name = _unit_name(t, plan.cluster_name, osd_id, fsid)
            ustate = hs.units.get(unit_name) if unit_name else None
            if ustate is not None:  # no series for its unit: whether it runs is unknown
                daemons.append(Daemon("ceph-osd", str(osd_id), None, ustate == "active"))
    io: tuple[IoError, ...] = ()
    xfs: tuple[XfsEvent, ...] = ()
    if klog is not None and klog.known:
        # as the SSH path keeps them: the errors of this host's devices, every XFS line
        io = keep_io_errors(klog.io_errors, {os.path.basename(m.source) for m in mounts
                                            if m.source})
        xfs = klog.xfs_events
        for p in probes:
            if p.fstype == "xfs" and p.source and \
                    _shut_down(xfs, os.path.basename(p.source)):
                what = f"osd.{p.name}" if p.kind == "osd" else f"Swift device {p.name}"
                problems.append(f"{what}: its XFS shut down (kernel log)")
        if io:
            devs = sorted({e.device for e in io})
            problems.append(f"kernel I/O errors on {', '.join(devs)}")
    elif klog is not None and not klog.absent:
        problems.append(klog.why)
    facts = HostFacts(name=t.name, address=t.address, mounts=tuple(mounts),
                      daemons=tuple(daemons), osd_data=osd_data, swift_devices=swift,
                      units=tuple(units), fs_probes=tuple(probes), io_errors=io,
                      xfs_events=xfs, disks_collected=fs_known, collected_at=collected_at)
    return facts, problems


def named_hosts(target: ClusterTarget, ceph: CephState | None, swift: SwiftState | None
                ) -> dict[str, str]:
    """Hosts the Ceph and Swift pictures name, with why: a down OSD's CRUSH host, a Swift
    server whose recon reports an unmounted device or does not answer."""
    out: dict[str, str] = {}
    known = {h.name for h in target.hosts}
    if ceph is not None:
        for o in sorted(ceph.osds, key=lambda o: o.id):
            if o.exists and not o.up and not o.destroyed and not o.new and o.host in known:
                assert o.host is not None
                out.setdefault(o.host, f"osd.{o.id} down")
    if swift is not None:
        index = HostIndex.of(target.hosts)
        ring_devs = {(d.ip, d.device) for ring in swift.rings for d in ring.devices}
        for r in swift.recon:
            name = index.match(r.ip)
            if name is None:
                continue
            # only its own ring devices (recon lists every dir of its devices path)
            mine = [d for d in r.unmounted if (r.ip, d) in ring_devs]
            if mine:
                out.setdefault(name, f"recon: {', '.join(mine)} unmounted")
            elif r.error:
                out.setdefault(name, f"{r.server} server {r.ip}:{r.port} does not answer")
    return out


def per_host(target: ClusterTarget, ceph: CephState | None, swift: SwiftState | None
             ) -> dict[str, tuple[CephState | None, SwiftState | None]]:
    """Each host's part of the Ceph and Swift pictures (its OSDs, its ring devices), so
    ``plan_for`` reads a host's few OSDs, not the whole map a thousand times over."""
    osds: dict[str, list[OsdState]] = {}
    if ceph is not None:
        for o in ceph.osds:
            osds.setdefault(o.host or "", []).append(o)
    devs: dict[str, dict[str, list[RingDevice]]] = {}
    if swift is not None:
        for ring in swift.rings:
            for d in ring.devices:
                devs.setdefault(d.ip, {}).setdefault(ring.kind, []).append(d)
    out: dict[str, tuple[CephState | None, SwiftState | None]] = {}
    for h in target.hosts:
        c = replace(ceph, osds=tuple(osds.get(h.name, ()))) if ceph is not None else None
        mine = devs.get(h.address, {})
        s = replace(swift, rings=tuple(replace(r, devices=tuple(mine.get(r.kind, ())))
                                       for r in swift.rings)) if swift is not None else None
        out[h.name] = (c, s)
    return out


def _odd_words(hs: HostSeries) -> str:
    return "Prometheus sent values it does not send: " + "; ".join(
        f"{k} {why}" for k, why in sorted(hs.odd.items()))


def _odd_problem(url: str, expr: str, family: str, samples: Sequence[Sample],
                 by_host: Mapping[str, HostSeries]) -> PromProblem:
    """One family's odd samples as one bad answer, naming the hosts they were of."""
    eg = "; ".join(f"{s.labels.get('instance', '(no instance label)')[:60]}: "
                   f"{odd_value(family, s)}" for s in samples[:3])
    more = f" and {len(samples) - 3} more" if len(samples) > 3 else ""
    who = tuple(sorted(n for n, hs in by_host.items() if family in hs.odd))
    return PromProblem("bad_answer", url, expr,
                       f"{len(samples)} sample(s) of a value it does not send, left out: "
                       f"{eg}{more}", samples=len(samples), hosts=who)


SshCollect = Callable[[ClusterTarget, CephState | None, SwiftState | None],
                      Mapping[str, HostFacts]]


def collect_via_prometheus(target: ClusterTarget, ceph: CephState | None,
                           swift: SwiftState | None, client: PromClient | None = None,
                           runner: Runner | None = None,
                           ssh: SshCollect | None = None, answers: Answers | None = None,
                           ) -> tuple[dict[str, HostFacts], PromStatus]:
    """Every host's facts: Prometheus's for the fresh hosts, SSH's for the hosts in
    question (see the module's words). ``answers``: already asked (``collect`` asks
    while Ceph and Swift are read); ``runner``/``ssh``: tests and benchmarks give their
    own SSH."""
    pt = target.prometheus
    assert pt is not None
    t0 = time.monotonic()
    if answers is None:
        answers = ask(client or PromClient(pt.url, pt.timeout_s), pt.job,
                      mount_regex(target))
    index = HostIndex.of(target.hosts)
    by_host, unmatched = group(answers, index) if answers.families["up"] is not None \
        else ({}, {})
    fs_known = answers.families["fs_ro"] is not None
    units_known = answers.families["units"] is not None
    kmsg_known = answers.families["kmsg"] is not None
    lines_known = answers.families["kmsg_lines"] is not None
    klogs: dict[str, KernelLog] = {}
    fsid = ceph.fsid if ceph is not None else ""
    up_osds = frozenset(o.id for o in ceph.osds if o.up) if ceph is not None else frozenset()
    hosts: dict[str, HostFacts] = {}
    stale: dict[str, StaleHost] = {}
    problems: dict[str, str] = {}
    now_wall = time.time()
    split = per_host(target, ceph, swift)
    for h in target.hosts:
        hs = by_host.get(h.name)
        if hs is not None and ("up" in hs.odd or "up_ts" in hs.odd):
            # neither fresh nor stale: Prometheus cannot vouch for it, SSH looks
            problems[h.name] = _odd_words(hs)
            continue
        why = staleness(hs, answers.now, pt.stale_s) if answers.families["up"] is not None \
            else "Prometheus did not answer"
        if why is not None:
            stale[h.name] = StaleHost(h.name, h.address, why,
                                      hs.last if hs is not None else None,
                                      min(hs.instances) if hs and hs.instances else None)
            continue
        assert hs is not None
        plan = plan_for(target, h, *split.get(h.name, (None, None)))
        klog = kernel_log(hs, answers.now, pt.stale_s, lines_known) if kmsg_known else None
        if klog is not None:
            klogs[h.name] = klog
        facts, probs = facts_from_series(plan, hs, fs_known, units_known, now_wall, fsid,
                                         up_osds, klog)
        hosts[h.name] = facts
        if hs.odd:
            probs.append(_odd_words(hs))
        if probs:
            problems[h.name] = "; ".join(probs)
    # the second pass: SSH for the hosts in question, the named first
    want: dict[str, str] = {}
    for n, why in named_hosts(target, ceph, swift).items():
        want.setdefault(n, why)
    for n, why in problems.items():
        want.setdefault(n, why)
    for n, st in stale.items():
        want.setdefault(n, f"Prometheus: {st.why}")
    chosen = list(want)[:max(0, pt.ssh_max_hosts)]
    ssh_facts: Mapping[str, HostFacts] = {}
    if chosen:
        sub = replace(target, hosts=tuple(h for h in target.hosts if h.name in set(chosen)))
        if ssh is not None:
            ssh_facts = ssh(sub, ceph, swift)
        else:
            ssh_facts = collect_host_facts(sub, ceph, swift, runner=runner)
    said: list[str] = []
    from_prom = set(hosts)
    for n in chosen:
        f = ssh_facts.get(n)
        if f is None:
            continue
        if f.reachable or n not in hosts:
            hosts[n] = f  # SSH's deep facts; a stale host SSH cannot reach: HOST_UNREACHABLE
            from_prom.discard(n)
        said.append(f"{n} ({want[n]})" + ("" if f.reachable else f": SSH failed: {f.error}"))
        if n in stale:
            stale[n] = replace(stale[n], fallback="ssh" if f.reachable
                               else f"ssh failed: {f.error}")
    unknown = tuple(n for n in (h.name for h in target.hosts) if n not in hosts)
    # hosts Prometheus speaks for whose kernel log it cannot tell (the kernel-log queries
    # failed: PROMETHEUS_BAD_ANSWER says it once for all)
    klog_unknown = tuple(f"{n} ({klogs[n].why})" for n in sorted(from_prom)
                         if n in klogs and not klogs[n].known)
    shown_unmatched, ports = unmatched_summary(unmatched)
    odd = [_odd_problem(pt.url, answers.exprs.get(k, k), k, samples, by_host)
           for k, samples in answers.odd.items() if samples]
    status = PromStatus(
        url=pt.url, job=pt.job, problems=(*answers.problems, *odd),
        stale=tuple(stale[n] for n in sorted(stale)), unmatched=shown_unmatched,
        unmatched_count=len(unmatched), unmatched_ports=ports,
        from_prometheus=tuple(sorted(from_prom)),
        ssh_hosts=tuple(said), unknown=unknown, kernel_log_unknown=klog_unknown,
        duration_s=time.monotonic() - t0)
    return hosts, status


__all__: Sequence[str] = ("HostIndex", "QUERIES", "KernelLog", "ask", "mount_regex",
                          "collect_via_prometheus", "facts_from_series", "group",
                          "kernel_log", "named_hosts", "split_instance", "staleness")
