"""The manager and the CRUSH placement facts of the Ceph snapshot (``CephState.mgr``,
``CephState.crush``): who manages the PG statistics, since when they are known, and where
CRUSH can put data. Filled by ``storage.ceph.parse_mgrmon``; judged by
``checks.managers`` and ``checks.placement``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FailedModule:
    """A manager module that cannot run (``mgr dump``'s ``available_modules``:
    ``can_run`` false) and why."""

    name: str
    error: str


@dataclass(frozen=True)
class MgrState:
    """``mgr dump`` (a monitor command: answered with the manager gone) and what this
    collection saw of the manager itself.

    ``available`` stays true for ``mon_mgr_beacon_grace`` (30 s) after the active manager
    died: the monitor drops it only then. ``answered`` tells what the map cannot: whether
    a manager command got an answer in this collection (None: none was sent).
    ``last_pg_report`` is the stamp of the manager's last ``pgmap vN`` line in the
    cluster log (``log last``, read only when no manager answered): when the PG
    statistics the monitors still serve were last true. ``log_oldest`` is the oldest
    entry read, so "before" it when the last report has scrolled out."""

    epoch: int = 0
    active: str = ""  # the active manager's name ("x"), "" when none
    active_gid: int = 0
    available: bool = False
    standbys: tuple[str, ...] = ()
    active_change: float | None = None  # when the active manager last changed (or left)
    answered: bool | None = None
    error: str | None = None  # why a manager command did not answer
    last_pg_report: float | None = None
    last_pg_report_line: str | None = None
    log_oldest: float | None = None
    failed_modules: tuple[FailedModule, ...] = ()
    enabled_modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class CrushRule:
    """One CRUSH rule: the buckets it takes (``default``, or ``default~ssd`` for a device
    class: the root and the class apart)."""

    id: int
    name: str
    takes: tuple[tuple[str, str | None], ...]  # (root, device class or None)


@dataclass(frozen=True)
class CrushPlacement:
    """Where CRUSH can place data: each OSD's root, the rules and the buckets' sizes."""

    osd_root: Mapping[int, str] = field(default_factory=dict)
    rules: tuple[CrushRule, ...] = ()
    roots: tuple[str, ...] = ()
    # host buckets with no OSD under them
    empty_hosts: tuple[str, ...] = ()
