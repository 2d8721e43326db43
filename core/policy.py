"""Who may do what, and who must be a second person: every role and two-person decision,
for every front end (the bot's commands and buttons, the CLI's ``--approval``).

Roles come from ``[slack.roles.CLUSTER]`` (``"*"`` applies to every cluster), by user ID
(never by name): viewers may read, operators may also plan, fix and bench; ``admins`` are
operators everywhere. An entry starting with ``S`` is a Slack user group, expanded through
``usergroups.users.list`` (cached briefly; the CLI has no lookup: a group grants nothing
there). Nobody configured means nobody allowed: the safe default.

One call per question, so the front ends cannot disagree:

- ``Authorizer.refusal(user, cluster, need)``: may this person read (``VIEWER``) or plan,
  fix and bench (``OPERATOR``) on this cluster? None, or the one-line refusal;
- ``Authorizer.is_admin(user)``: may this person act outside a channel's bound cluster;
- ``Authorizer.second_person(cluster, runbook, second, requester, approver)``: does this
  run need a second person (a runbook that always does, ``RunbookInfo.two_people``; or one
  whose plan asks for one, ``second``, on a cluster whose role sets ``two_person``), and
  if so, is ``approver`` (the Confirm button's presser in Slack, the signer of the CLI's
  ``--approval``) someone else with the operator role? A ``SecondPerson`` answer, which
  each front end words its own way.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class Level(enum.IntEnum):
    NONE = 0
    VIEWER = 1
    OPERATOR = 2


class SecondPerson(enum.Enum):
    """The answer to "does it need a second person, and has someone else given it?"."""

    NOT_NEEDED = "not needed"  # one person runs it
    MISSING = "missing"  # needed, and nobody has approved yet
    SAME_PERSON = "same person"  # needed, and the approver is the one who asked
    NOT_AUTHORIZED = "not authorized"  # needed, and the approver is no operator here
    GIVEN = "given"  # needed, and another operator approved

    @property
    def ok(self) -> bool:
        """May it run now (as far as the second person goes)?"""
        return self in (SecondPerson.NOT_NEEDED, SecondPerson.GIVEN)


def two_people_runbook(runbook: str) -> bool:
    """A runbook that always needs a second person (``RunbookInfo.two_people``:
    pg-mark-unfound-lost), whatever the cluster's two_person setting."""
    from runbooks.catalog import registry

    rb = registry().get(runbook)
    return bool(rb is not None and rb.info.two_people)


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

    @classmethod
    def from_settings(cls, settings: Any, group_members: GroupLookup | None = None
                      ) -> Authorizer:
        """The roles of ``settings.slack`` (the bot adds the Slack group lookup)."""
        s = settings.slack
        roles = {k: RoleSpec(tuple(v.viewers), tuple(v.operators), v.two_person)
                 for k, v in s.roles.items()}
        return cls(roles, tuple(s.admins), group_members)

    def is_admin(self, user: str) -> bool:
        return self._in(user, self.admins)

    def two_person(self, cluster: str) -> bool:
        """Does the cluster's role (or "*") set the two-person rule?"""
        return any(r.two_person for k, r in self.roles.items() if k in (cluster, "*"))

    def second_person(self, cluster: str, runbook: str, second: bool, requester: str,
                      approver: str | None) -> SecondPerson:
        """The two-person rule, the one place it is decided. ``second``: the plan asks for
        a second person (``ActionPlan.second_person``; a runbook that always needs two
        people asks for one anyway); ``approver``: who approved (None: nobody yet)."""
        if not (two_people_runbook(runbook) or (second and self.two_person(cluster))):
            return SecondPerson.NOT_NEEDED
        if approver is None:
            return SecondPerson.MISSING
        if approver == requester:
            return SecondPerson.SAME_PERSON
        if self.level(approver, cluster) < Level.OPERATOR:
            return SecondPerson.NOT_AUTHORIZED
        return SecondPerson.GIVEN

    def refusal(self, user: str, cluster: str, need: Level) -> str | None:
        """None when allowed; otherwise the one-line refusal naming the role needed."""
        if self.level(user, cluster) >= need:
            return None
        role = "operator" if need == Level.OPERATOR else "viewer"
        return (f"<@{user}> is not allowed: this needs the *{role}* role on cluster "
                f"`{cluster}` (settings: slack.roles.{cluster}.{role}s)")
