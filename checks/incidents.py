"""Incidents: findings grouped by the cause they share, so one problem is one incident.

A pure step after the checks. The rules are an explicit table (``RULES``): a root cause
code, the scope it lives in (an OSD, a Swift device, a Swift server, a pool) and the codes
that are its consequences on the *same* entity of that scope; OSD roots that take their OSD
down also take Ceph's own codes naming that OSD or its host (``OSD_DOWN``,
``OSD_HOST_DOWN``) and the cluster-wide PG findings (PGs undersized, peering, stuck, Ceph's
``PG_DEGRADED``/``PG_AVAILABILITY``). Nothing is guessed from message text: entities come
from the finding's fields, Ceph's codes from their ``health detail`` lines in Ceph's own
format (``osd.1 (root=default,host=node2) is down``).

An incident's severity is its impact (PGs that block client I/O make it critical, whatever
the root's own severity). Findings stay the unit of the JSON, the journal and mutes;
incidents are added beside them. To add a rule for a new cause, add one line to ``RULES``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checks.model import Finding, Severity, Verdict
from storage.model import ClusterSnapshot

# Consequences of an OSD being down, on that OSD.
OSD_DOWN_CODES = ("OSD_DOWN_IN", "OSD_DOWN_OUT", "OSD_NEVER_UP", "OSD_HOST_DOWN")
# Ceph health codes that name OSDs or hosts in their detail lines.
CEPH_OSD_CODES = ("OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN", "OSD_FLAPPING",
                  "SLOW_OPS", "RECENT_CRASH")
CEPH_FULL_CODES = ("OSD_NEARFULL", "OSD_BACKFILLFULL", "OSD_FULL", "POOL_NEARFULL",
                   "POOL_BACKFILLFULL", "POOL_FULL")
# Ceph health codes about PGs: a consequence of OSDs that are down (or just came back).
CEPH_PG_CODES = ("PG_DEGRADED", "PG_AVAILABILITY", "PG_RECOVERY_FULL",
                 "PG_BACKFILL_FULL", "PG_NOT_SCRUBBED", "PG_NOT_DEEP_SCRUBBED",
                 "OBJECT_MISPLACED", "OBJECT_UNFOUND", "SLOW_OPS")
# Our cluster-wide PG findings.
PG_CODES = ("PGS_NOT_ACTIVE_CLEAN", "PGS_STUCK")
# Swift recon findings about one device of a server.
SWIFT_DEVICE_CONSEQUENCES = ("SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR",
                             "SWIFT_FSTAB_DISABLED", "SWIFT_DEVICE_FULL")


@dataclass(frozen=True)
class Rule:
    """``cause`` is a root; ``consequences`` on the same entity of ``scope`` fold into it;
    ``fold_any`` codes (ours or Ceph's own) fold in from anywhere in the cluster (the
    first incident of a rule with them takes them: PGs are cluster-wide). ``when`` limits
    the rule to roots whose evidence has that (key, value).

    Scopes: ``osd`` (the OSD ids a finding names, its host's OSDs, Ceph's detail lines),
    ``swift-device`` (ip, device), ``swift-server`` (server kind and port: one process per
    kind and port, a stopped kind is one cause on every node), ``pool`` (the pool, and
    Ceph's codes whose detail names it), ``entity`` (the same entity string).
    """

    cause: str
    scope: str
    consequences: tuple[str, ...] = ()
    fold_any: tuple[str, ...] = ()
    when: tuple[str, str] | None = None
    ceph: tuple[str, ...] = ()  # Ceph's own codes that fold in when they name the entity


OSD_FOLD = (*PG_CODES, *CEPH_PG_CODES)
CACHE_CODES = ("CACHE_NO_TARGET", "CACHE_RATIO_ORDER", "CACHE_NO_HIT_SET",
               "CACHE_PROMOTE_RECENCY", "CACHE_TARGET_TOO_BIG", "CACHE_NEAR_TARGET")
RING_CODES = ("SWIFT_REPLICAS_EXCEED_DEVICES", "SWIFT_REPLICAS_EXCEED_ZONES",
              "SWIFT_BUILDER_RING_MISMATCH", "SWIFT_BUILDER_NEWER_THAN_RING",
              "SWIFT_RING_UNBALANCED", "SWIFT_DISPERSION_HIGH")
SWIFT_REPL_FOLD = ("SWIFT_REPLICATION_FAILURES",)
SERVER_CODES = ("SWIFT_SERVER_DOWN", "SWIFT_SERVER_TIMEOUT", "SWIFT_SERVER_HTTP_ERROR",
                "SWIFT_REPLICATION_STALE", "SWIFT_REPLICATION_FAILURES")


def _after(codes: tuple[str, ...], code: str) -> tuple[str, ...]:
    """The codes a root of ``code`` explains: those listed after it (worse ones first)."""
    return codes[codes.index(code) + 1:]


# Order is priority: a finding that is a consequence of an earlier rule's root is never a
# root itself. The OSD layouts issue adds its OSD_NOT_ACTIVATED with one line here.
RULES: tuple[Rule, ...] = (
    Rule("OSD_DEVICE_IO_ERRORS", "osd",
         ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", "OSD_FSTAB_DISABLED",
          *OSD_DOWN_CODES), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_FSTAB_DISABLED", "osd",
         ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_NOT_ACTIVATED", "osd",
         ("OSD_DATA_UNMOUNTED", "OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DATA_UNMOUNTED", "osd", ("OSD_DAEMON_STOPPED", *OSD_DOWN_CODES), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DAEMON_STOPPED", "osd", OSD_DOWN_CODES, OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_HOST_DOWN", "osd", OSD_DOWN_CODES, OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DOWN_IN", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_DOWN_OUT", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_NEVER_UP", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_UP_OUT", "osd", (), OSD_FOLD, ceph=CEPH_OSD_CODES),
    Rule("OSD_IS_FULL", "osd", ("OSD_NEAR_FULL",), ceph=CEPH_FULL_CODES),
    Rule("OSD_NEAR_FULL", "osd", (), ceph=CEPH_FULL_CODES),
    Rule("POOL_NEAR_FULL", "pool", (), ceph=CEPH_FULL_CODES),
    *(Rule(c, "pool", _after(CACHE_CODES, c) + ("CACHE_TIER_DEPRECATED",),
           ceph=("CACHE_POOL_NO_HIT_SET", "CACHE_POOL_NEAR_FULL"))
      for c in CACHE_CODES),
    # a device that answers 507 fails every other node's replication pass towards it
    Rule("SWIFT_DEVICE_IO_ERRORS", "swift-device",
         ("SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR", "SWIFT_FSTAB_DISABLED"),
         SWIFT_REPL_FOLD),
    Rule("SWIFT_FSTAB_DISABLED", "swift-device",
         ("SWIFT_DEVICE_UNMOUNTED", "SWIFT_DEVICE_NO_DIR"), SWIFT_REPL_FOLD),
    Rule("SWIFT_DEVICE_NO_DIR", "swift-device", (), SWIFT_REPL_FOLD),
    Rule("SWIFT_DEVICE_UNMOUNTED", "swift-device", (), SWIFT_REPL_FOLD),
    Rule("SWIFT_DEVICE_FULL", "swift-device", (), ("SWIFT_FILL_SPREAD", *SWIFT_REPL_FOLD)),
    # container servers down: object servers queue their container updates
    Rule("SWIFT_SERVER_DOWN", "swift-server", SERVER_CODES, ("SWIFT_ASYNC_PENDING",),
         when=("server", "container")),
    *(Rule(c, "swift-server", SERVER_CODES) for c in SERVER_CODES),
    # one stale ring file on every server of a kind: one push fixes them all
    Rule("SWIFT_RING_MD5_MISMATCH", "swift-ring", ()),
    *(Rule(c, "entity", _after(RING_CODES, c)) for c in RING_CODES),
    # PGs in trouble with no OSD cause found (peering after a restart, recovery, ...): one
    Rule("PGS_NOT_ACTIVE_CLEAN", "entity", (), OSD_FOLD),
    Rule("PGS_STUCK", "entity", (), OSD_FOLD),
)
# Cluster-wide codes about one pool's settings: grouped per pool, the worst first.
POOL_SCOPE = "pool"

_OSD_RE = re.compile(r"\bosd\.(\d+)\b")
_HOST_RE = re.compile(r"^host (\S+)")
_SWIFT_SERVER_RE = re.compile(r"^(?P<kind>\w+) server (?P<ip>\S+):(?P<port>\d+)$")
_POOL_NAME_RE = re.compile(r"'([^']+)'")
_SWIFT_RING_RE = re.compile(r"^(?P<kind>object|container|account)(?:-\d+)? ring\b")
_SWIFT_DEV_RE = re.compile(r"^(?:\S+ )?ring (?P<ip>[0-9.:\[\]a-f]+?):(?P<port>\d+)/(?P<dev>\S+)$")


@dataclass(frozen=True)
class NextStep:
    """The one runbook to run first, and what to pass it (decided by the runbooks layer)."""

    runbook: str
    target: str

    @property
    def command(self) -> str:
        return f"stordoc fix {self.runbook} {self.target}"


@dataclass(frozen=True)
class Incident:
    id: str  # stable across runs: "ROOT_CODE entity"
    root: Finding
    consequences: tuple[Finding, ...]
    severity: Severity
    impact: str  # one line: what the problem does to clients/data
    next_step: NextStep | None = None
    manual: str | None = None  # when no runbook is safe: what to do by hand
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return (self.root, *self.consequences)

    @property
    def headline(self) -> str:
        """The first line a tired reader sees: cause, where, and what it does."""
        if self.root.code == "CEPH_HEALTH":  # "ceph SLOW_OPS: ...", not the code twice
            code = self.root.entity.removeprefix("ceph ")
            return f"{self.root.entity}: {self.impact.removeprefix(f'Ceph {code}: ')}"
        return f"{self.root.code} {self.root.entity}: {self.impact}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "severity": self.severity.label,
            "root": {"code": self.root.code, "entity": self.root.entity,
                     "message": self.root.message},
            "consequences": [{"code": f.code, "entity": f.entity}
                             for f in self.consequences],
            "impact": self.impact,
            "next_step": ({"runbook": self.next_step.runbook,
                           "target": self.next_step.target,
                           "command": self.next_step.command}
                          if self.next_step else None),
            "manual": self.manual,
            "since": self.root.since,
        }


def ceph_code(f: Finding) -> str | None:
    """Ceph's own code of a CEPH_HEALTH finding."""
    if f.code != "CEPH_HEALTH":
        return None
    c = f.evidence.get("ceph_code")
    return str(c) if c else None


def _detail_lines(f: Finding) -> list[str]:
    d = f.evidence.get("detail") or ()
    return [str(x) for x in d] if isinstance(d, (list, tuple)) else []


def osds_named(f: Finding, snap: ClusterSnapshot | None) -> set[int]:
    """OSD ids a finding is about: its own entity, its host's OSDs, or Ceph's detail lines."""
    out: set[int] = set()
    m = re.fullmatch(r"osd\.(\d+)", f.entity)
    if m:
        out.add(int(m.group(1)))
    hosts: set[str] = set()
    hm = _HOST_RE.match(f.entity)
    if hm and f.code != "CEPH_HEALTH":
        hosts.add(hm.group(1))
    code = ceph_code(f)
    if code is not None:
        for line in [str(f.evidence.get("summary") or ""), *_detail_lines(f)]:
            out |= {int(x) for x in _OSD_RE.findall(line)}
            hl = _HOST_RE.match(line)
            if hl:
                hosts.add(hl.group(1))
    if hosts and snap is not None and snap.ceph is not None:
        for h in snap.ceph.hosts:
            if h.name in hosts:
                out |= set(h.osd_ids)
    return out


def swift_device_key(f: Finding) -> tuple[str, str] | None:
    """(ip, device) of a finding about one Swift ring device, from its entity/evidence."""
    ev = f.evidence
    if ev.get("device") and ev.get("ip"):
        return (str(ev["ip"]), str(ev["device"]))
    m = _SWIFT_DEV_RE.match(f.entity)
    if m:
        return (m.group("ip"), m.group("dev"))
    return None


def _is_pg_consequence(f: Finding) -> bool:
    return f.code in PG_CODES or ceph_code(f) in CEPH_PG_CODES


def pg_impact(findings: Iterable[Finding]) -> tuple[int, int]:
    """(PGs blocking client I/O, PGs not active+clean) from the PG finding, if any."""
    for f in findings:
        if f.code == "PGS_NOT_ACTIVE_CLEAN":
            ev = f.evidence
            total = sum(int(n) for n in (ev.get("not_clean") or {}).values())
            return int(ev.get("blocking") or 0), total
    return 0, 0


def _impact(root: Finding, cons: Sequence[Finding]) -> tuple[Severity, str]:
    sev = max([root.severity, *(c.severity for c in cons)])
    blocking, unclean = pg_impact([root, *cons])
    if blocking:
        return Severity.CRIT, f"{blocking} PGs inactive: client I/O blocked"
    if unclean:
        return sev, f"{unclean} PGs short of copies or moving (I/O still served)"
    codes = {root.code: root, **{c.code: c for c in cons}}
    kind = swift_server_kind(root)
    if kind is not None:
        n = 1 + sum(1 for c in cons if c.code == root.code)
        what = {"SWIFT_SERVER_DOWN": "down", "SWIFT_SERVER_TIMEOUT": "not answering"}.get(
            root.code)
        if what:
            pend = sum(float(c.evidence.get("async_pending") or 0) for c in cons
                       if c.code == "SWIFT_ASYNC_PENDING")
            return sev, (f"{kind[0]} server {what} on {n} node(s)"
                         + (f"; {pend:.0f} container updates queued" if pend else ""))
        if root.code == "SWIFT_REPLICATOR_IDLE":
            return sev, (f"{kind[0]} replication does nothing on {n} node(s): handoffs stay "
                         "where they are and lost copies are not rebuilt")
        if n > 1:
            return sev, f"on {n} {kind[0]} servers: {root.message}"
    if "OSD_DOWN_IN" in codes:
        return sev, f"{codes['OSD_DOWN_IN'].entity} down but still in: its PGs are degraded"
    if "OSD_DOWN_OUT" in codes:
        return sev, f"{codes['OSD_DOWN_OUT'].entity} down and out: one disk fewer"
    alike = 1 + sum(1 for c in cons if c.code == root.code)
    if alike > 1:
        return sev, f"on {alike} servers alike: {root.message}"
    return sev, root.message


def swift_server_kind(f: Finding) -> tuple[str, str] | None:
    """(server kind, port) of a finding about a Swift server process."""
    m = _SWIFT_SERVER_RE.match(f.entity)
    return (m.group("kind"), m.group("port")) if m else None


def pools_named(f: Finding) -> set[str]:
    """The pool of a ``pool X`` finding, or the pools a Ceph code's detail names."""
    if f.entity.startswith("pool "):
        return {f.entity[5:]}
    if ceph_code(f):
        return {m for line in _detail_lines(f) for m in _POOL_NAME_RE.findall(line)}
    return set()


class _Index:
    """Each finding's keys per scope, computed once, and findings by key: correlating
    thousands of findings (a rack down) stays linear, not one scan per root."""

    def __init__(self, todo: Sequence[Finding], snap: ClusterSnapshot | None) -> None:
        self.keys: list[dict[str, frozenset[Any]]] = []
        self.by: dict[tuple[str, Any], list[int]] = {}
        self.by_code: dict[str, list[int]] = {}
        for i, f in enumerate(todo):
            dev = swift_device_key(f)
            kind = swift_server_kind(f)
            ring = _SWIFT_RING_RE.match(f.entity)
            k = {"osd": frozenset(osds_named(f, snap)),
                 "swift-ring": frozenset([ring.group("kind")] if ring else []),
                 "swift-device": frozenset([dev] if dev else []),
                 "swift-server": frozenset([kind] if kind else []),
                 "pool": frozenset(pools_named(f)),
                 "entity": frozenset([f.entity])}
            self.keys.append(k)
            for scope, vals in k.items():
                for v in vals:
                    self.by.setdefault((scope, v), []).append(i)
            self.by_code.setdefault(f.code, []).append(i)
            cc = ceph_code(f)
            if cc:
                self.by_code.setdefault(cc, []).append(i)

    def related(self, scope: str, root: int) -> list[int]:
        """Findings sharing a key of ``scope`` with the root, in their original order."""
        out: set[int] = set()
        for v in self.keys[root][scope]:
            out.update(self.by.get((scope, v), ()))
        return sorted(out)


def _folds(rule: Rule, f: Finding) -> bool:
    return f.code in rule.fold_any or ceph_code(f) in rule.fold_any


def correlate(findings: Sequence[Finding], snap: ClusterSnapshot | None = None) -> \
        tuple[Incident, ...]:
    """Group findings into incidents, worst impact first. INFO findings stay out."""
    todo = [f for f in findings if f.severity > Severity.INFO]
    idx = _Index(todo, snap)
    used: set[int] = set()
    incidents: list[Incident] = []
    folded: set[str] = set()  # fold_any codes already taken by an earlier incident
    for rule in RULES:
        for i in list(idx.by_code.get(rule.cause, ())):
            root = todo[i]
            if i in used or root.code != rule.cause:
                continue
            if rule.when is not None and \
                    str(root.evidence.get(rule.when[0])) != rule.when[1]:
                continue
            used.add(i)
            take: set[int] = set()
            for j in idx.related(rule.scope, i):
                if j in used:
                    continue
                f = todo[j]
                same = f.code in rule.consequences or f.code == rule.cause
                # Ceph's own codes naming the same OSD / pool fold into it
                if same or ceph_code(f) in rule.ceph:
                    take.add(j)
            for code in rule.fold_any:
                if code in folded:
                    continue
                for j in idx.by_code.get(code, ()):
                    if j not in used and _folds(rule, todo[j]):
                        take.add(j)
            cons = [todo[j] for j in sorted(take)]
            used |= take
            folded |= {ceph_code(f) or f.code for f in cons if _folds(rule, f)}
            incidents.append(_make(root, cons))
    # what no rule claims: one incident per entity (a pool's settings, a ring), worst
    # first; one code on every server of a Swift kind (quarantines grew on each) is one
    by_entity: dict[str, list[Finding]] = {}
    for i, f in enumerate(todo):
        if i not in used:
            kind = swift_server_kind(f)
            group = f"{f.code} {kind[0]} servers" if kind else f.entity
            by_entity.setdefault(group, []).append(f)
    for fs in by_entity.values():
        fs.sort(key=lambda f: (-f.severity, f.runbook is None, f.code))
        incidents.append(_make(fs[0], fs[1:]))
    incidents.sort(key=lambda x: (-x.severity, _rank(x.root.code), x.root.code,
                                  x.root.entity))
    return tuple(incidents)


def _rank(code: str) -> int:
    """Root causes before symptoms when severities tie."""
    for n, r in enumerate(RULES):
        if r.cause == code:
            return n
    return len(RULES)


def _make(root: Finding, cons: Sequence[Finding]) -> Incident:
    sev, impact = _impact(root, cons)
    cand = (NextStep(root.runbook, root.target)
            if root.runbook and root.target else None)
    return Incident(f"{root.code} {root.entity}", root, tuple(cons), sev, impact, cand)


def incident_of(incidents: Iterable[Incident], f: Finding) -> Incident | None:
    for inc in incidents:
        if any(x.key == f.key for x in inc.findings):
            return inc
    return None


def headline(cluster: str, verdict_: Verdict, incidents: Sequence[Incident],
             n_findings: int) -> str:
    """The first line of every front end: stordoc's verdict, then the top incident's
    cause and impact; Ceph's own health comes after it, as one fact among others."""
    verdict = verdict_.name
    if not incidents:
        tail = "no incidents" if not n_findings else f"{n_findings} info finding(s)"
        return f"{verdict} {cluster}: {tail}"
    more = (f" (+{len(incidents) - 1} more incident{'s' if len(incidents) > 2 else ''})"
            if len(incidents) > 1 else "")
    return f"{verdict} {cluster}: {incidents[0].headline}{more}"
