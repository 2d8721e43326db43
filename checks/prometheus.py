"""What Prometheus could not tell (``[clusters.X.prometheus]``, ``storage.hostfacts.prom``):
it did not answer or answered badly (one finding per failed query, the check goes on with
SSH's facts for the hosts in question), a host whose node_exporter stopped reporting
(unknown, never healthy), and series naming no configured host."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

from checks.model import CheckContext, CodeInfo, Finding, Severity, check
from storage.hostfacts.prom import NO_KMSG
from storage.model import ClusterSnapshot, PromProblem, PromStatus, StaleHost

CODES = (
    CodeInfo("PROMETHEUS_UNREACHABLE", Severity.WARN,
             "The Prometheus host facts come from did not answer (refused, timed out, too "
             "slow): the hosts in question were looked at over SSH, the others are unknown."),
    CodeInfo("PROMETHEUS_BAD_ANSWER", Severity.WARN,
             "Prometheus answered a query with an HTTP error, garbage, status error or an "
             "oversized body: that fact family is unknown for every host; or some samples "
             "held values it does not send (NaN, +Inf, a string, a flag of 7...): those "
             "are left out and their hosts looked at over SSH."),
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
SAMPLE = 20  # names kept in a finding's evidence: the journal keeps every run's findings


def _at(ts: float | None) -> str:
    if ts is None:
        return "never"
    if not math.isfinite(ts) or not 0 <= ts < 1e10:
        return f"an odd time ({ts!r})"
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


def _odd(ps: PromStatus, p: PromProblem, sshd: set[str]) -> Finding:
    """Samples of values Prometheus does not send: the rest of the answer was used, the
    hosts they were of looked at over SSH."""
    looked = [h for h in p.hosts if h in sshd]
    not_looked = [h for h in p.hosts if h not in sshd]
    tail = (f"; over SSH instead: {_hosts(looked)}" if looked else "") + (
        f"; not looked at over SSH (ssh_max_hosts): {_hosts(not_looked)}"
        if not_looked else "")
    metric = p.query.removeprefix("timestamp(").split("{")[0]
    return Finding("PROMETHEUS_BAD_ANSWER", Severity.WARN, f"prometheus {p.url} {metric}",
                   f"Prometheus {p.url} answered badly `{p.query}`: {p.reason}{tail}",
                   {"url": p.url, "query": p.query, "reason": p.reason,
                    "samples": p.samples, "hosts": list(p.hosts[:SAMPLE]),
                    "hosts_count": len(p.hosts), "ssh_hosts": looked[:SAMPLE],
                    "manual": f"ask it by hand: curl -sG {p.url}/api/v1/query "
                              f"--data-urlencode 'query={p.query}' and look for the "
                              "series' values; its exporters' /metrics say what they send"})


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
    down = any(p.query.startswith("up{") and not p.samples for p in ps.problems)
    sshd = {h.split(" (", 1)[0] for h in ps.ssh_hosts}
    for p in ps.problems:
        if p.samples:
            out.append(_odd(ps, p, sshd))
            continue
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
        # counts and a sample, never every name: a Prometheus scraping 200,000 other
        # instances made this one journal row 8.6 MB
        n = max(ps.unmatched_count, len(ps.unmatched))
        more = f" and {n - SHOWN} more" if n > SHOWN else ""
        out.append(Finding(
            "PROMETHEUS_UNMATCHED", Severity.INFO, f"prometheus {ps.url} job {ps.job}",
            f"{n} {ps.job} instance(s) match no configured host: "
            f"{', '.join(ps.unmatched[:SHOWN])}{more}",
            {"count": n, "job": ps.job, "by_port": dict(ps.unmatched_ports),
             "instances": list(ps.unmatched[:SAMPLE]),
             "instances_shown": min(n, SAMPLE, len(ps.unmatched))}))
    return out
