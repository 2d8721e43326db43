"""The commands of the bot's grammar as typed values, and their one-line usage.

``bot.grammar.parse`` returns one of these and handlers dispatch on the type: a command
that parsed has every field it needs, typed (names are checked against the cluster later;
``ACTING`` ones need the operator role).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

COMMANDS = ("health", "osd", "pools", "cache", "ring", "findings", "history", "plan",
            "fix", "bench", "audit", "mute", "unmute", "silence", "silences", "maintenance", "help")


@dataclass(frozen=True)
class Health:
    cluster: str | None = None
    snapshot: str | None = None  # a saved snapshot's name under slack.snapshots_dir


@dataclass(frozen=True)
class Osd:
    cluster: str | None = None
    osd_id: int | None = None  # None: the tree


@dataclass(frozen=True)
class Pools:
    cluster: str | None = None


@dataclass(frozen=True)
class Cache:
    cluster: str | None = None


@dataclass(frozen=True)
class Ring:
    cluster: str | None = None
    kind: str | None = None  # None: all rings


@dataclass(frozen=True)
class Findings:
    cluster: str | None = None


@dataclass(frozen=True)
class History:
    cluster: str | None = None


@dataclass(frozen=True)
class Plan:
    runbook: str
    target: str
    cluster: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # the runbook's own (``mode`` ...), as typed


@dataclass(frozen=True)
class Fix:
    """``fix RUNBOOK TARGET [MODE] [key=value ...]``: shows the plan with Confirm/Cancel
    (never runs unasked)."""

    runbook: str
    target: str
    cluster: str | None = None
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class FixFinding:
    """``fix CODE [TARGET]``: the runbook comes from the current finding with that code."""

    code: str
    target: str | None = None
    cluster: str | None = None


@dataclass(frozen=True)
class Bench:
    kind: str
    options: Mapping[str, str] = field(default_factory=dict)
    cluster: str | None = None


@dataclass(frozen=True)
class Audit:
    cluster: str | None = None


@dataclass(frozen=True)
class Mute:
    """``mute CODE [ENTITY] for 4h REASON...``: a mute with expiry (storage/mutes.py)."""

    code: str
    entity: str | None
    for_s: float
    reason: str
    cluster: str | None = None


@dataclass(frozen=True)
class Silence:
    """``silence ALERTNAME [for=4h] [reason ...]``: an Alertmanager silence of that alert on
    the cluster, and a stordoc mute of the incident it was posted with, same expiry."""

    alertname: str
    duration_s: float = 4 * 3600.0
    reason: str = ""
    cluster: str | None = None


@dataclass(frozen=True)
class Unmute:
    code: str
    entity: str | None
    cluster: str | None = None


@dataclass(frozen=True)
class MuteList:
    cluster: str | None = None


@dataclass(frozen=True)
class Silences:
    cluster: str | None = None


@dataclass(frozen=True)
class Maintenance:
    """``maintenance start HOST for 2h`` / ``maintenance end HOST`` / ``maintenance list``:
    runbooks maintenance-start/-end (noout on the host's OSDs until a deadline)."""

    action: str  # start | end | list
    host: str | None = None
    window: str | None = None  # start: the window as typed (2h), checked by the runbook
    cluster: str | None = None


@dataclass(frozen=True)
class Help:
    topic: str | None = None
    cluster: str | None = None


Command = (Health | Osd | Pools | Cache | Ring | Findings | History | Plan | Fix | FixFinding
           | Bench | Audit | Mute | Unmute | MuteList | Silence | Silences | Maintenance
           | Help)

ACTING = (Plan, Fix, FixFinding, Bench, Mute, Unmute, Silence, Maintenance)  # need the operator role

USAGE: Mapping[str, str] = {
    "health": "health [CLUSTER] [from SNAPSHOT]  - run the checks and show the findings "
              "(from a saved snapshot: its diagnosis at that moment)",
    "osd": "osd [tree|OSD] [--cluster C]  - the OSD tree by host, or one OSD (osd.3)",
    "pools": "pools [--cluster C]  - pools with size, pg_num and usage",
    "cache": "cache [--cluster C]  - cache tiers and their settings",
    "ring": "ring [object|account|container] [--cluster C]  - Swift rings",
    "findings": "findings [--cluster C]  - findings of the last recorded check run",
    "history": "history [--cluster C]  - recent check runs",
    "plan": "plan RUNBOOK TARGET [MODE] [key=value ...] [--cluster C]  - show what a "
            "runbook would do",
    "fix": "fix RUNBOOK TARGET [MODE] [key=value ...] | fix FINDING_CODE [TARGET] "
           "[--cluster C]  - plan, then Confirm to run (MODE: e.g. `fix "
           "pg-mark-unfound-lost 3.0 revert`)",
    "bench": "bench KIND [key=value ...] [--cluster C]  - a quick benchmark",
    "audit": "audit [--cluster C]  - who ran what",
    "mute": "mute CODE [ENTITY] for 4h REASON... | mute list [--cluster C]  - hide a "
            "finding for a while (ENTITY: osd.1, pool:rbd, host:node2, d2@node2)",
    "unmute": "unmute CODE [ENTITY] [--cluster C]  - end a mute early",
    "silence": "silence ALERTNAME [for=4h] [reason ...] [--cluster C]  - silence an alert in "
               "Alertmanager and mute its incident in stordoc, until then",
    "silences": "silences [--cluster C]  - active Alertmanager silences and stordoc mutes",
    "maintenance": "maintenance start HOST for 2h | maintenance end HOST | maintenance list"
                   " [--cluster C]  - noout on a host's OSDs until a deadline",
    "help": "help [COMMAND]  - this help",
}


def grammar_words() -> tuple[str, ...]:
    """The ``name=placeholder`` words of the usage lines (``key=value``): the grammar's own
    words, which a redactor must not take for a secret assignment."""
    import re

    return tuple(sorted({w for u in USAGE.values()
                         for w in re.findall(r"[A-Za-z_-]+=[A-Za-z0-9_.-]+", u)}))
