"""``Service``: one object per process holding the service's parts for one ``Env``."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from checks.outcome import CheckOutcome
from core.env import Env
from core.service.fixes import FixChoice, choose_fix
from core.service.inspect import Inspector, RecordPolicy
from core.service.locks import Locks
from core.service.records import Records
from storage.targets import ClusterTarget

if TYPE_CHECKING:
    from core.service.actions import Actions


class Service:
    def __init__(self, env: Env) -> None:
        self.env = env
        self.inspector = Inspector(env)
        self.records = Records(env)
        self.locks = Locks(env)
        self._actions: Actions | None = None
        self._actions_lock = threading.Lock()

    @property
    def actions(self) -> Actions:
        """Runbooks and benchmarks: made on first use, so that a check never loads the
        runbook machinery (nor, through the ring runbooks, Swift's library)."""
        with self._actions_lock:
            if self._actions is None:
                from core.service.actions import Actions

                self._actions = Actions(self.env)
            return self._actions

    @actions.setter
    def actions(self, actions: Actions) -> None:  # a test's stand-in
        with self._actions_lock:
            self._actions = actions

    def clusters(self) -> list[str]:
        return sorted(self.env.settings.clusters)

    def default_cluster(self) -> str | None:
        return self.env.settings.default_cluster

    def target(self, cluster: str | None) -> ClusterTarget:
        """The settings' target, no I/O (hosts found from the cluster once a check ran)."""
        return self.env.target(cluster, discover=False)

    def check(self, cluster: str | None, source: str,
              record: RecordPolicy = RecordPolicy.ALWAYS, since: float | None = None,
              only: Iterable[str] | None = None, host_facts: bool = True) -> CheckOutcome:
        """The one way a front end, ``watch`` or the bot checks a cluster
        (``core.service.pipeline``, through the inspector's sharing and recording)."""
        return self.inspector.check(cluster, source, record, since, only, host_facts)

    def fix_for(self, cluster: str | None, code: str, target: str | None, source: str
                ) -> tuple[CheckOutcome, FixChoice]:
        """Check the cluster now and choose the runbook for the finding ``code`` (on
        ``target``); raises a ``FixRefused`` subclass when there is none to run."""
        out = self.check(cluster, source, RecordPolicy.ALWAYS)
        return out, choose_fix(out.report.findings, code, target, out.incidents)
