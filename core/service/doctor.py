"""``stordoc doctor``: which access works, one typed result per access (issue 40.2).

Each access stordoc uses for a cluster is tried as stordoc itself uses it, read-only:
the Ceph user (connected, its caps asked with ``auth get`` when the caps allow, else the
reads tried), each host's SSH (host key known, connected with the configured key, a
command run), Prometheus (``up`` by job), Swift (recon of every ring server, the proxy's
healthcheck, auth) and the Slack tokens (``auth.test``). Each result says what works and,
when something is missing, what stordoc will not do without it. Nothing is changed.

The front ends print these (``stordoc doctor``); ``worst`` is the exit status.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Literal

from core.exitstatus import ExitStatus
from core.settings import ClusterSettings, Settings

Status = Literal["ok", "warn", "fail", "off"]
WIDTH = 80
# a result's weight in the exit status: "off" (not configured, nothing lost that the
# configuration asked for) counts as ok
_EXIT: Mapping[str, ExitStatus] = {"ok": ExitStatus.OK, "off": ExitStatus.OK,
                                   "warn": ExitStatus.WARN, "fail": ExitStatus.CRIT}


@dataclass(frozen=True)
class Access:
    """One access: ``status`` ok|warn|fail|off, its name (``ceph client.admin``, ``ssh
    node1``), what works, and what stordoc will not do without the missing part."""

    status: Status
    access: str
    works: str
    without: str = ""

    def lines(self, width: int = WIDTH) -> list[str]:
        """``ok    ssh node1: ... — without it stordoc will not: ...``, wrapped to
        ``width`` columns (continuation lines indented under the access)."""
        text = f"{self.status:<5} {self.access}: {self.works}"
        if self.without:
            text += f" — without it stordoc will not: {self.without}"
        return textwrap.wrap(text, width, subsequent_indent=" " * 6, break_on_hyphens=False,
                             break_long_words=False) or [text[:width]]  # a path stays whole

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def worst(results: Iterable[Access]) -> ExitStatus:
    """0 all ok, 1 a warning (something optional missing), 2 something required fails."""
    return max((_EXIT[r.status] for r in results), default=ExitStatus.OK)


# ------------------------------------------------------------------ Ceph caps

_PERMS = frozenset("rwx")


def cap_perms(cap: str) -> frozenset[str]:
    """The permissions a Ceph cap string grants a service, at most: ``allow *`` ->
    rwx; ``allow rw pool=x, allow r`` -> rw; ``profile rbd`` / ``allow profile crash``
    -> r (the profiles stordoc could use read, the write ones name their pools or
    commands); ``allow command "..."`` grants single commands, not a permission."""
    out: set[str] = set()
    for grant in cap.split(","):
        words = grant.replace("=", " = ").split()
        if words and words[0] == "allow":
            words = words[1:]
        if not words:
            continue
        if words[0] == "*":
            out |= _PERMS
        elif words[0] == "profile":
            out.add("r")
        elif set(words[0]) <= _PERMS:
            out |= set(words[0])
    return frozenset(out)


@dataclass(frozen=True)
class RunbookNeeds:
    """The runbooks of the catalog by what they need: Ceph writes (monitor commands),
    the hosts' SSH (host facts and host argv), Swift."""

    ceph: tuple[str, ...]
    hosts: tuple[str, ...]
    swift: tuple[str, ...]


def runbook_needs() -> RunbookNeeds:
    """From the registry: a runbook on a Ceph target plans monitor commands (a flag, a
    map change; a read-only user runs none of them); one that needs host facts runs
    argv on a host; a Swift one needs the rings and recon."""
    from runbooks.catalog import registry

    ceph: list[str] = []
    hosts: list[str] = []
    swift: list[str] = []
    for name, rb in registry().items():
        (swift if rb.info.target_kind.startswith("swift") else ceph).append(name)
        if rb.needs_host_facts:
            hosts.append(name)
    return RunbookNeeds(tuple(ceph), tuple(hosts), tuple(swift))


def _names(names: Sequence[str], most: int = 4) -> str:
    if len(names) <= most:
        return ", ".join(names)
    return ", ".join(names[:most]) + f" and {len(names) - most} more"


READ_ONLY_CAPS = "mon 'allow r, allow command \"config get\"' mgr 'allow r' osd 'allow r'"


def read_only_user_line(user: str = "client.stordoc-ro",
                        keyring: str = "/etc/stordoc/ceph.client.stordoc-ro.keyring") -> str:
    """The command that makes the read-only Ceph user checks need (issue 40.3)."""
    return f"ceph auth get-or-create {user} {READ_ONLY_CAPS} -o {keyring}"


def ceph_access(cs: ClusterSettings, needs: RunbookNeeds) -> list[Access]:
    """The Ceph user of checks, and the one of changes when configured apart
    (``ceph.fix_client``): each connected and its caps read; a check user that can write
    gets the line that makes a read-only one."""
    if cs.ceph is None:
        return [Access("off", "ceph", "not configured",
                       "check or fix Ceph")]
    if not cs.ceph.separate_fix_user:
        got = _ceph_user(cs.target("doctor").ceph, needs, "both")
        return [got, *_least_privilege(got)]
    reads = _ceph_user(cs.target("doctor").ceph, needs, "checks")
    changes = _ceph_user(cs.target("doctor", changes=True).ceph, needs, "changes")
    return [reads, changes]


def _least_privilege(got: Access) -> list[Access]:
    if got.status == "fail" or "runs every Ceph runbook" not in got.works:
        return []
    return [Access("off", "least privilege", f"checks run as a user that can change the "
                   f"cluster; give them a read-only one: {read_only_user_line()}, then "
                   f"ceph.client/keyring = it and ceph.fix_client/fix_keyring = the "
                   f"present user (on the host that fixes only)")]


def _ceph_user(t: Any, needs: RunbookNeeds, role: str) -> Access:
    """One Ceph user as stordoc uses it for ``role``: checks, changes or both."""
    from storage.ceph.client import CephClient, CephCommandError, CephError

    assert t is not None
    name = f"ceph {t.client}" + ("" if role == "both" else f" ({role})")
    lost = ("run any Ceph runbook or benchmark, or revert a temporary change"
            if role == "changes" else "check Ceph or run any Ceph runbook")
    for what, path in (("ceph config", t.conf), ("keyring", t.keyring)):
        # librados says nothing of a missing keyring: it waits out its timeout
        if path and not os.path.isfile(path):
            return Access("warn" if role == "changes" else "fail", name,
                          f"{what} {path}: no such file", lost)
        if path and not os.access(path, os.R_OK):
            return Access("warn" if role == "changes" else "fail", name,
                          f"{what} {path}: permission denied", lost)
    try:
        c = CephClient(t)
        c.connect()
    except CephError as e:
        return Access("fail", name, f"monitors unreachable: {e}", lost)
    except OSError as e:
        return Access("fail", name, f"cannot connect: {e}", lost)
    try:
        caps: dict[str, str] | None = None
        try:
            got = c.mon("auth get", entity=t.client)
            entry = got[0] if isinstance(got, list) and got else got
            if isinstance(entry, dict) and isinstance(entry.get("caps"), dict):
                caps = {str(k): str(v) for k, v in entry["caps"].items()}
        except CephCommandError:
            caps = None
        if caps is not None:
            return _from_caps(name, caps, needs, role)
        reads: list[str] = []
        for what, to_mgr in (("health", False), ("mon_status", False), ("pg stat", True)):
            try:
                c.mgr(what) if to_mgr else c.mon(what)
                reads.append(what)
            except CephError:
                pass
        if "health" not in reads:
            return Access("fail", name, "connected, cannot read health", lost)
        if role == "checks":
            return Access("ok", name, f"caps not readable ('auth get' refused, as a "
                          f"read-only user's is); reads work: {', '.join(reads)}")
        return Access("warn", name, f"caps not readable ('auth get' refused); reads "
                      f"work: {', '.join(reads)}",
                      f"know beforehand whether Ceph runbooks will be refused "
                      f"({_names(needs.ceph)})")
    finally:
        c.close()


def _from_caps(name: str, caps: Mapping[str, str], needs: RunbookNeeds,
               role: str = "both") -> Access:
    mon, mgr, osd = (cap_perms(caps.get(s, "")) for s in ("mon", "mgr", "osd"))
    shown = " ".join(f"{s} '{caps[s]}'" for s in ("mon", "mgr", "osd") if s in caps)
    if "r" not in mon:
        return Access("fail", name, f"caps {shown or 'none'}: no monitor reads",
                      "check Ceph or run any Ceph runbook")
    missing: list[str] = []
    reads = ["health, maps"]
    if "r" in mgr:
        reads.append("PG and usage stats")
    else:
        missing.append("read PG and usage stats (mgr 'allow r')")
    if "r" in osd:
        reads.append("objects")
    else:
        missing.append("list inconsistent objects (osd 'allow r')")
    if "x" not in osd or "w" not in osd:  # tell osd.N and pg query want osd 'allow *'
        missing.append("read slow-op details and PG queries (osd 'allow *')")
    if role == "checks":
        works = f"caps {shown}; reads {', '.join(reads)}; changes through the fix user"
        if "w" in mon or "w" in osd:
            return Access("warn", name, works, "keep checks read-only: this user can "
                          f"change the cluster ({read_only_user_line()})")
        return Access("ok", name, works, "; ".join(missing))
    if "w" in mon:
        runs = f"every Ceph runbook ({len(needs.ceph)})"
    else:
        runs = "no Ceph runbook (read-only)"
        missing.append(f"run {_names(needs.ceph)} (mon 'allow rw')")
    if "w" not in osd:
        missing.append("RADOS/RBD benchmarks (osd 'allow rw')")
    works = f"caps {shown}; reads {', '.join(reads)}; runs {runs}"
    return Access("warn" if missing else "ok", name, works, "; ".join(missing))


# ------------------------------------------------------------------ hosts

def host_access(cs: ClusterSettings, needs: RunbookNeeds,
                timeout_s: float | None = None) -> list[Access]:
    from storage.discover import resolve_hosts
    from storage.hostguard import MARK, REFUSED
    from storage.runner import HostUnreachable
    from storage.ssh import FabricRunner, SSHPool

    target, problems = resolve_hosts(cs.target("doctor"))
    if not target.hosts:
        return [Access("warn", "ssh", "no hosts configured" + (
                           f" ({'; '.join(problems)})" if problems else ""),
                       f"read host facts (mounts, disks, daemons) or run "
                       f"{_names(needs.hosts)}")]
    without = f"read its host facts or run {_names(needs.hosts)} there"
    pool = SSHPool(retry=False)
    runner = FabricRunner(target.hosts, pool=pool)

    def one(h: Any) -> Access:
        name = f"ssh {h.name}"
        where = f"{h.user}@{h.address}:{h.port}"
        known = _host_key_known(h.known_hosts, h.address, h.port)
        if known is False:
            return Access("fail", name, f"{where}: host key not in "
                          f"{h.known_hosts}", without)
        try:
            res = runner.run(h.name, ["true"], timeout_s=timeout_s or h.timeout_s)
        except HostUnreachable as e:
            return Access("fail", name, f"{where}: {e.reason}", without)
        except Exception as e:  # noqa: BLE001  (an SSH library error is a line)
            return Access("fail", name, f"{where}: {type(e).__name__}: {e}", without)
        key = "host key known" if known else "host key from the system's known_hosts"
        if res.rc != 0:
            return Access("fail", name, f"{where} reachable, {key}; 'true' exited "
                          f"{res.rc}", without)
        # which commands the key runs: stordoc-host (storage/hostguard.py) refuses a shell
        # with its mark; a key without a forced command runs it (a harmless `true`)
        try:
            sh = runner.run(h.name, ["sh", "-c", "true"], timeout_s=timeout_s or h.timeout_s)
        except Exception:  # noqa: BLE001  (the first command ran: say what is known)
            sh = None
        if sh is not None and sh.rc == REFUSED and sh.stderr.startswith(MARK):
            return Access("ok", name, f"{where} reachable, {key}, stordoc's commands only "
                          "(stordoc-host)")
        return Access("ok", name, f"{where} reachable, {key}, commands run (any command: "
                      "no stordoc-host forced command on this key)")

    try:
        with ThreadPoolExecutor(max_workers=min(16, len(target.hosts))) as ex:
            return list(ex.map(one, target.hosts))
    finally:
        runner.close()
        pool.close()


def _host_key_known(known_hosts: str | None, address: str, port: int) -> bool | None:
    """Whether ``known_hosts`` lists the host (None: none named, the system's is used)."""
    if not known_hosts:
        return None
    import paramiko

    try:
        keys = paramiko.HostKeys(known_hosts)
    except (OSError, paramiko.SSHException):
        return False
    name = address if port == 22 else f"[{address}]:{port}"
    return bool(keys.lookup(name))


# ------------------------------------------------------------------ Prometheus

def prometheus_access(cs: ClusterSettings) -> list[Access]:
    from storage.prometheus import PromClient, PromError

    if cs.prometheus is None:
        return [Access("off", "prometheus", "not configured (host facts over SSH)")]
    p = cs.prometheus
    without = "take host facts from node_exporter (SSH reads every host instead)"
    try:
        samples = PromClient(p.url, p.timeout_s).query('up{job!=""}')
    except PromError as e:
        return [Access("warn", "prometheus", f"{p.url}: {e.reason}", without)]
    jobs: dict[str, list[float]] = {}
    for s in samples:
        jobs.setdefault(s.labels.get("job", "?"), []).append(s.value)

    def count(job: str) -> str:
        vals = jobs.get(job, [])
        return f"{job} {sum(1 for v in vals if v == 1)}/{len(vals)} up"

    shown = [count(p.job)] + [count(j) for j in sorted(jobs) if "ceph" in j and j != p.job]
    node = jobs.get(p.job, [])
    if not node:
        return [Access("warn", "prometheus", f"{p.url}: no targets of job {p.job!r} "
                       f"(jobs: {', '.join(sorted(jobs)) or 'none'})", without)]
    down = sum(1 for v in node if v != 1)
    return [Access("warn" if down else "ok", "prometheus", f"{p.url}: {'; '.join(shown)}",
                   f"take those {down} hosts' facts from node_exporter" if down else "")]


# ------------------------------------------------------------------ Swift

def swift_access(cs: ClusterSettings, needs: RunbookNeeds) -> list[Access]:
    from storage.swift import fetch_recon, proxy_health, read_ring, ring_kinds, ring_server

    if cs.swift is None:
        return [Access("off", "swift", "not configured", "check or fix Swift")]
    target = cs.target("doctor").swift
    assert target is not None
    out: list[Access] = []
    try:
        kinds = ring_kinds(target.swift_dir)
        rings = [read_ring(target.swift_dir, k) for k in kinds]
    except Exception as e:  # noqa: BLE001  (a broken swift_dir is a line)
        kinds, rings = [], []
        out.append(Access("fail", "swift rings", f"{target.swift_dir}: {e}",
                          f"check Swift or run {_names(needs.swift)}"))
    if not kinds and not out:
        out.append(Access("fail", "swift rings", f"no rings in {target.swift_dir}",
                          f"check Swift or run {_names(needs.swift)}"))
    eps: dict[tuple[str, int], str] = {}
    for ring in rings:
        for d in ring.devices:
            eps.setdefault((d.ip, d.port), ring_server(ring.kind))
    if eps:
        def one(ep: tuple[tuple[str, int], str]) -> Any:
            (ip, port), server = ep
            return fetch_recon(ip, port, server, target.recon_timeout_s, full=False)

        with ThreadPoolExecutor(max_workers=min(16, len(eps))) as ex:
            recon = list(ex.map(one, sorted(eps.items())))
        bad = [r for r in recon if r.error_kind]
        if not bad:
            out.append(Access("ok", "swift recon", f"{len(recon)}/{len(recon)} ring "
                              "servers answer"))
        else:
            first = bad[0]
            out.append(Access("fail" if len(bad) == len(recon) else "warn", "swift recon",
                              f"{len(recon) - len(bad)}/{len(recon)} ring servers answer; "
                              f"{first.ip}:{first.port} {first.error_kind}",
                              "see replication, async pendings or drives of the "
                              "servers that do not answer"))
    if target.proxy_url:
        healthy, err = proxy_health(target.proxy_url, target.recon_timeout_s)
        out.append(Access("ok", "swift proxy", f"{target.proxy_url} healthcheck OK")
                   if healthy else
                   Access("warn", "swift proxy", f"{target.proxy_url}: {err}",
                          "tell whether the proxy serves"))
    else:
        out.append(Access("off", "swift proxy", "no proxy_url",
                          "tell whether the proxy serves"))
    out.append(_swift_auth(target))
    return out


def _swift_auth(target: Any) -> Access:
    without = "sample dispersion or populate it (swift dispersion)"
    if not (target.auth_url and target.user and target.key):
        return Access("off", "swift auth", "no auth_url, user and key", without)
    from storage import swiftclient_lib

    sc = swiftclient_lib.client()
    ClientException, get_auth = sc.ClientException, sc.get_auth  # noqa: N806
    try:
        url, _ = get_auth(target.auth_url, target.user, target.key,
                          timeout=target.recon_timeout_s)
    except ClientException as e:
        return Access("fail", "swift auth", f"{target.user} at {target.auth_url}: "
                      f"{e.http_status or ''} {e.msg}".strip(), without)
    except Exception as e:  # noqa: BLE001  (refused, timeout: a line)
        return Access("fail", "swift auth", f"{target.user} at {target.auth_url}: {e}",
                      without)
    return Access("ok", "swift auth", f"{target.user} at {target.auth_url}: {url}")


# ------------------------------------------------------------------ Slack

def slack_access(settings: Settings) -> list[Access]:
    s = settings.slack
    out: list[Access] = []
    bot = s.bot_token.resolve()
    if not bot:
        return [Access("off", "slack", "no bot token",
                       "answer in Slack or post alerts (stordoc bot)")]
    out.append(_slack_call("slack bot token", bot, "auth.test", s.api_base_url,
                           "answer in Slack or post alerts (stordoc bot)"))
    app = s.app_token.resolve()
    if app:
        out.append(_slack_call("slack app token", app, "apps.connections.open",
                               s.api_base_url, "connect over Socket Mode"))
    if not s.signing_secret.resolve() and not app:
        out.append(Access("warn", "slack signing secret", "not set",
                          "accept slash commands over HTTP"))
    return out


def _slack_call(name: str, token: str, method: str, base_url: str | None,
                without: str) -> Access:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    kw: dict[str, Any] = {"token": token, "timeout": 10}
    if base_url:
        kw["base_url"] = base_url
    try:
        resp = WebClient(**kw).api_call(method)
    except SlackApiError as e:
        return Access("fail", name, f"{method}: {e.response.get('error', e)}", without)
    except Exception as e:  # noqa: BLE001  (refused, DNS, TLS: a line)
        return Access("fail", name, f"{method}: {type(e).__name__}: {e}", without)
    if method == "auth.test":
        return Access("ok", name, f"auth.test: {resp.get('user')} in team "
                      f"{resp.get('team')}")
    return Access("ok", name, f"{method}: ok")


# ------------------------------------------------------------------ all of it

def diagnose(settings: Settings, cluster: str | None = None,
             progress: Callable[[Access], None] | None = None) -> list[Access]:
    """Every access of ``cluster`` (default: the default cluster) and the Slack tokens,
    in a fixed order: Ceph, the hosts, Prometheus, Swift, Slack. Never raises for an
    access that does not work (that is its line)."""
    name = settings.cluster_name(cluster)
    cs = settings.clusters[name]
    needs = runbook_needs()
    out: list[Access] = []
    parts: list[Callable[[], list[Access]]] = [
        lambda: ceph_access(cs, needs), lambda: host_access(cs, needs),
        lambda: prometheus_access(cs), lambda: swift_access(cs, needs),
        lambda: slack_access(settings)]
    for part in parts:
        for a in part():
            out.append(a)
            if progress is not None:
                progress(a)
    return out

