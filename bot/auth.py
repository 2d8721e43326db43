"""Who may do what, by Slack user ID (never by name), per cluster.

Roles come from ``[slack.roles.CLUSTER]`` (``"*"`` applies to every cluster): viewers may
read, operators may also plan, fix and bench; ``admins`` are operators everywhere. An
entry starting with ``S`` is a Slack user group, expanded through ``usergroups.users.list``
(cached briefly). Nobody configured means nobody allowed: the safe default.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass


class Level(enum.IntEnum):
    NONE = 0
    VIEWER = 1
    OPERATOR = 2


@dataclass(frozen=True)
class RoleSpec:
    viewers: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    two_person: bool = False


GroupLookup = Callable[[str], Iterable[str]]


class Authorizer:
    def __init__(self, roles: Mapping[str, RoleSpec], admins: Sequence[str] = (),
                 group_members: GroupLookup | None = None, group_ttl_s: float = 60.0) -> None:
        self.roles = dict(roles)
        self.admins = tuple(admins)
        self._lookup = group_members
        self._ttl = group_ttl_s
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def _members(self, group: str) -> frozenset[str]:
        if self._lookup is None:
            return frozenset()
        with self._lock:
            hit = self._cache.get(group)
            if hit and time.monotonic() - hit[0] < self._ttl:
                return hit[1]
        try:
            users = frozenset(self._lookup(group))
        except Exception:  # an unanswered lookup grants nothing
            users = frozenset()
        with self._lock:
            self._cache[group] = (time.monotonic(), users)
        return users

    def _in(self, user: str, entries: Iterable[str]) -> bool:
        for e in entries:
            if e == user:
                return True
            if e.startswith("S") and user in self._members(e):
                return True
        return False

    def level(self, user: str, cluster: str) -> Level:
        if self._in(user, self.admins):
            return Level.OPERATOR
        best = Level.NONE
        for key in (cluster, "*"):
            r = self.roles.get(key)
            if r is None:
                continue
            if self._in(user, r.operators):
                return Level.OPERATOR
            if self._in(user, r.viewers):
                best = Level.VIEWER
        return best

    def two_person(self, cluster: str) -> bool:
        return any(r.two_person for k, r in self.roles.items() if k in (cluster, "*"))

    def refusal(self, user: str, cluster: str, need: Level) -> str | None:
        """None when allowed; otherwise the one-line refusal naming the role needed."""
        if self.level(user, cluster) >= need:
            return None
        role = "operator" if need == Level.OPERATOR else "viewer"
        return (f"<@{user}> is not allowed: this needs the *{role}* role on cluster "
                f"`{cluster}` (settings: slack.roles.{cluster}.{role}s)")
