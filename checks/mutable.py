"""What a mute may hide, and what it never hides (issue #26.3).

A mute covers a *finding*, never the ability to look: a code that says stordoc cannot see
(part of) the cluster is refused by every front end (CLI, Slack, TUI) and, when an older
version left such a mute in the journal or the config's static ``muted`` list names one,
the engine shows the finding anyway ("muted (ignored: cannot see the cluster)") so the
verdict stays UNREACHABLE/CRIT instead of "OK, 2 muted".

A mute also never hides an escalation: a finding raised above its code's usual severity
(``PGS_NOT_ACTIVE_CLEAN`` turning CRIT because PGs went inactive, a stale replication
turning CRIT) is shown again, like ``ceph health mute`` drops a mute whose alert worsens.
"""

from __future__ import annotations

from collections.abc import Mapping

from checks.model import CodeInfo, Finding

# each means "stordoc could not look", not "something is wrong that we know of"
CANNOT_LOOK = frozenset({
    "CEPH_UNREACHABLE",      # the monitors did not answer: no Ceph finding can be trusted
    "SWIFT_UNREACHABLE",     # the rings/servers could not be read
    "HOST_UNREACHABLE",      # SSH failed: that host's mounts, daemons, disks are unseen
    "SWIFT_SERVER_TIMEOUT",  # a storage server's recon does not answer: its devices unseen
    "CHECK_INTERNAL_ERROR",  # a check raised: what it would have found is unknown
    "PROMETHEUS_UNREACHABLE",  # host facts from Prometheus: none this time
    "PROMETHEUS_BAD_ANSWER",   # a fact family unknown for every host
    "HOST_FACTS_STALE",      # a host's node_exporter stopped: its facts unseen or SSH's
    "HOST_KERNEL_LOG_STALE",  # a host's kernel-log textfile stopped: its disks' log unseen
})

CANNOT_LOOK_WHY = "cannot see the cluster"


def mute_refusal(code: str) -> str | None:
    """The one-line refusal of a mute of ``code``, or None when it may be muted."""
    c = code.strip().upper()
    if c in CANNOT_LOOK:
        return (f"{c} cannot be muted: it says stordoc {CANNOT_LOOK_WHY}, and a mute "
                "covers a finding, not the ability to look")
    return None


def mute_ignored(f: Finding, codes: Mapping[str, CodeInfo]) -> str | None:
    """Why a mute that matches ``f`` does not hide it, or None when it does."""
    if f.code in CANNOT_LOOK:
        return CANNOT_LOOK_WHY
    info = codes.get(f.code)
    if info is not None and f.severity > info.severity:
        return f"escalated to {f.severity.label} (usually {info.severity.label})"
    return None
