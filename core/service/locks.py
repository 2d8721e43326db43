"""Runbook locks and what interrupted runs left, for every front end.

A lock names what a run changes (``osd.3``, ``pool rbd``, ``ring object``, ``flag
noout``); a person clears one by the name they know (``osd.02`` is ``osd.2``). A lock
whose process still runs is not cleared without ``force``. Runs whose process died are
marked interrupted here, and what they owned and never undid is returned to be shown;
undoing it is a separate, confirmed call.
"""

from __future__ import annotations

from core.env import Env
from core.service.errors import ActionRefused, InvalidAction
from runbooks.leftovers import Leftover, reconcile, undo_leftovers
from runbooks.model import Refused
from runbooks.targets import canonical_osd, canonical_target_on
from storage.audit import Audit, LockInfo

__all__ = ["Leftover", "LockInfo", "Locks"]

# the kinds of lock target a bare name may mean, in the order they are tried
_KINDS = ("", "pool ", "ring ", "flag ")


class Locks:
    def __init__(self, env: Env) -> None:
        self.env = env

    def locks(self, cluster: str | None) -> list[LockInfo]:
        """Every lock on ``cluster``, oldest first, each saying whether it is stale."""
        return Audit(self.env.journal).locks(self.env.cluster_name(cluster))

    def lock_named(self, cluster: str | None, name: str) -> LockInfo:
        """The lock a person means by ``name``; InvalidAction when there is none."""
        cl = self.env.cluster_name(cluster)
        bare = name.strip()
        try:
            bare = canonical_osd(bare)  # osd.02 names the lock on osd.2
        except Refused:
            pass
        if "@" in bare:  # d1@127.0.0.2 names the lock on d1@node1 (the configured host)
            try:
                bare = canonical_target_on("swift-device", bare, self.env.target(cl))
            except Refused:
                pass
        held = {lk.target: lk for lk in self.locks(cl)}
        for kind in _KINDS:
            if kind + bare in held:
                return held[kind + bare]
        raise InvalidAction(f"no lock on {name!r} in cluster {cl}")

    def clear(self, cluster: str | None, name: str, force: bool = False) -> LockInfo:
        """Clear the lock ``name`` means. A lock whose process still runs is refused
        unless ``force`` (the person says they are sure)."""
        lk = self.lock_named(cluster, name)
        if not lk.stale and not force:
            raise ActionRefused(f"the lock on {lk.target} is held by {lk.owner} (pid "
                                f"{lk.pid} on {lk.host}, still running): not cleared (use "
                                "--force only if you are sure)")
        Audit(self.env.journal).clear(lk.cluster, lk.target)
        return lk

    def interrupted(self, cluster: str | None, source: str) -> list[Leftover]:
        """Mark runs whose process died interrupted, free their locks, and return what
        they owned and never undid (nothing is undone here)."""
        return reconcile(self.env.run_context(cluster, source=source))

    def undo(self, cluster: str | None, left: list[Leftover], source: str,
             confirmed_by: str | None = None) -> list[str]:
        """Undo what interrupted runs left, confirmed by a person (by default the one
        running this process); audited as a run."""
        ctx = self.env.run_context(cluster, source=source)
        try:
            return undo_leftovers(ctx, left, confirmed_by=confirmed_by or ctx.user)
        except Refused as e:
            raise ActionRefused(str(e)) from None
