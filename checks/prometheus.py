"""What Prometheus could not tell (``[clusters.X.prometheus]``, ``storage.hostfacts.prom``):
it did not answer or answered badly (one finding per failed query, the check goes on with
SSH's facts for the hosts in question), a host whose node_exporter stopped reporting
(unknown, never healthy), and series naming no configured host."""

from __future__ import annotations

import time
from collections.abc import Iterable

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.hostfacts.prom import NO_KMSG
from storage.model import ClusterSnapshot, PromStatus, StaleHost

CODES = (
    CodeInfo("PROMETHEUS_UNREACHABLE", Severity.WARN,
             "The Prometheus host facts come from did not answer (refused, timed out, too "
             "slow): the hosts in question were looked at over SSH, the others are unknown."),
    CodeInfo("PROMETHEUS_BAD_ANSWER", Severity.WARN,
             "Prometheus answered a query with an HTTP error, garbage, status error or an "
             "oversized body: that fact family is unknown for every host."),
    CodeInfo("HOST_FACTS_STALE", Severity.WARN,
             "A host's node_exporter stopped reporting (up == 0, no series, or its last "
             "sample is older than stale_s): its facts are SSH's or unknown, never healthy."),
    CodeInfo("HOST_KERNEL_LOG_STALE", Severity.WARN,
             "A host's kernel-log textfile (scripts/stordoc-kmsg-textfile) is stale, dated "
             "in the future or says the log is unreadable, and SSH did not look: a "
             "shut-down XFS or disk I/O errors there are unseen."),
    CodeInfo("HOST_KERNEL_LOG_UNWATCHED", Severity.INFO,
             "Hosts whose facts come from Prometheus export no kernel-log textfile: a "
             "shut-down XFS or disk I/O errors there show only when SSH looks."),
    CodeInfo("PROMETHEUS_UNMATCHED", Severity.INFO,
             "Series of the node_exporter job whose instance (and nodename) match no "
             "configured host: named, not guessed."),
)
SHOWN = 10


def _at(ts: float | None) -> str:
    if ts is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))


def _hosts(names: Iterable[str]) -> str:
    ns = list(names)
    more = f" and {len(ns) - SHOWN} more" if len(ns) > SHOWN else ""
    return ", ".join(ns[:SHOWN]) + more


def _stale(st: StaleHost, job: str) -> Finding:
    inst = f"node_exporter {st.instance}" if st.instance else f"no {job} instance"
    if st.fallback == "ssh":
        then = "its facts come from SSH this time"
    elif st.fallback:
        then = f"{st.fallback}: its facts are unknown"
    else:
        then = "its facts are unknown (not looked at over SSH)"
    since = f" since {_at(st.last_seen)}" if st.last_seen else ""
    return Finding("HOST_FACTS_STALE", Severity.WARN, f"host {st.host}",
                   f"host facts of {st.host} ({st.address}) are stale{since}: {inst}: "
                   f"{st.why}; {then}",
                   {"address": st.address, "instance": st.instance, "why": st.why,
                    "last_seen": st.last_seen, "fallback": st.fallback or None,
                    "manual": f"is prometheus-node-exporter running on {st.host} "
                              f"(systemctl status prometheus-node-exporter) and its port "
                              "reachable from Prometheus (Status > Targets)?"},
                   since=st.last_seen)


def _kernel_log(ps: PromStatus) -> list[Finding]:
    """Stale textfiles (a job that stopped: cannot look) apart from absent ones (a choice
    the team may mute)."""
    out = []
    manual = ("run scripts/stordoc-kmsg-textfile from cron every minute on each host "
              "(root), into node_exporter's --collector.textfile.directory")
    absent = [h for h in ps.kernel_log_unknown if NO_KMSG in h]
    stale = [h for h in ps.kernel_log_unknown if NO_KMSG not in h]
    for code, sev, which, words in (
            ("HOST_KERNEL_LOG_STALE", Severity.WARN, stale,
             "is not current (and SSH did not look)"),
            ("HOST_KERNEL_LOG_UNWATCHED", Severity.INFO, absent,
             "is not exported to Prometheus")):
        if not which:
            continue
        hosts = [h.split(" (", 1)[0] for h in which]
        shown = which if code == "HOST_KERNEL_LOG_STALE" else hosts
        out.append(Finding(
            code, sev, f"prometheus {ps.url} job {ps.job} kernel log",
            f"the kernel log of {len(hosts)} host(s) {words}: {_hosts(shown)}; a "
            "shut-down XFS or disk I/O errors there show only when SSH looks",
            {"hosts": hosts, "why": list(which), "manual": manual}))
    return out


@check("prometheus", codes=CODES, needs=("prometheus",))
def prometheus_facts(snap: ClusterSnapshot, ctx: CheckContext) -> Iterable[Finding]:
    """Prometheus's own troubles and the hosts it cannot speak for."""
    ps: PromStatus | None = snap.prometheus
    if ps is None:
        return []
    out: list[Finding] = []
    down = any(p.query.startswith("up{") for p in ps.problems)
    for p in ps.problems:
        ev: dict[str, object] = {
            "url": p.url, "query": p.query, "reason": p.reason,
            "manual": f"ask it by hand: curl -sG {p.url}/api/v1/query --data-urlencode "
                      f"'query={p.query}'; until it answers, the hosts in question are "
                      "looked at over SSH (ssh_max_hosts)"}
        if p.query.startswith("up{"):
            ssh = [h.split(" (Prometheus: ", 1)[0] for h in ps.ssh_hosts]
            ev.update(ssh_hosts=list(ps.ssh_hosts), unknown_hosts=list(ps.unknown))
            tail = (f"; over SSH: {_hosts(ssh)}" if ssh else "") + (
                f"; host facts unknown for {len(ps.unknown)}: {_hosts(ps.unknown)}"
                if ps.unknown else "")
        else:
            tail = "; that fact family is unknown for every host"
        code = "PROMETHEUS_UNREACHABLE" if p.kind == "unreachable" else "PROMETHEUS_BAD_ANSWER"
        verb = "did not answer" if p.kind == "unreachable" else "answered badly"
        what = "" if p.query.startswith("up{") else f" `{p.query}`"
        metric = p.query.removeprefix("timestamp(").split("{")[0]
        entity = f"prometheus {p.url}" + ("" if metric == "up" and not what
                                          else f" {metric}")
        out.append(Finding(code, Severity.WARN, entity,
                           f"Prometheus {p.url} {verb}{what}: {p.reason}{tail}", ev))
    if not down:
        out.extend(_stale(st, ps.job) for st in ps.stale)
    out.extend(_kernel_log(ps))
    if ps.unmatched:
        out.append(Finding(
            "PROMETHEUS_UNMATCHED", Severity.INFO, f"prometheus {ps.url} job {ps.job}",
            f"{len(ps.unmatched)} {ps.job} instance(s) match no configured host: "
            f"{_hosts(ps.unmatched)}", {"instances": list(ps.unmatched)}))
    return out
