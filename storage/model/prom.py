"""What Prometheus said about the hosts in one check (``storage.hostfacts.prom``): its
errors, the hosts it cannot speak for (stale), the series naming no configured host, and
which hosts got SSH instead. ``checks.prometheus`` turns it into findings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromProblem:
    """One query that failed: ``kind`` is ``unreachable`` or ``bad_answer``. ``samples``:
    0 when the whole answer was unusable; else the number of samples in it of a value
    Prometheus does not send (NaN, +Inf, a string, a missing field...), left out, the rest
    of the answer used; ``hosts``: the configured hosts those samples were of (looked at
    over SSH instead)."""

    kind: str
    url: str
    query: str
    reason: str
    samples: int = 0
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class StaleHost:
    """A configured host whose node_exporter does not speak for it now."""

    host: str
    address: str
    why: str  # "no series for its address", "up == 0", "last sample 612 s old"
    last_seen: float | None = None  # the newest sample's time (epoch s), when any
    instance: str | None = None
    # what was done instead: "ssh" (facts from SSH), "ssh failed: ...", "" (not tried:
    # its facts are unknown)
    fallback: str = ""


@dataclass(frozen=True)
class PromStatus:
    url: str
    job: str
    problems: tuple[PromProblem, ...] = ()
    stale: tuple[StaleHost, ...] = ()
    # instances (with their nodename) matching no host: a sample of them, sorted, and
    # their number in all and per instance port ("9100": 199000, "none": 12): a fleet's
    # Prometheus may scrape 200,000 instances that are not this cluster's
    unmatched: tuple[str, ...] = ()
    unmatched_count: int = 0
    unmatched_ports: tuple[tuple[str, int], ...] = ()
    from_prometheus: tuple[str, ...] = ()  # hosts whose facts are Prometheus's
    ssh_hosts: tuple[str, ...] = ()  # hosts that got SSH, and why, "node2 (osd.2 down)"
    unknown: tuple[str, ...] = ()  # hosts with no facts at all (neither source)
    # hosts with Prometheus's facts whose kernel log is unknown, and why: "node3 (no
    # stordoc_kmsg series ...)", "node4 (its kernel-log textfile is 900 s old ...)"
    kernel_log_unknown: tuple[str, ...] = ()
    duration_s: float = 0.0
