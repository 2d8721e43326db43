"""The one environment object every front end receives (httpie-style): settings, the
journal, who the user is, and how to reach clusters. Tests build their own."""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from checks.service import CheckOutcome, check_cluster
from storage.journal import Journal
from storage.targets import ClusterTarget
from stordoc.settings import Settings

if TYPE_CHECKING:
    from runbooks.api import RunContext


@dataclass
class Env:
    settings: Settings
    user: str = field(default_factory=lambda: os.environ.get("SUDO_USER") or getpass.getuser())
    _journal: Journal | None = None

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            self._journal = Journal(self.settings.journal)
        return self._journal

    def cluster_name(self, name: str | None) -> str:
        return self.settings.cluster_name(name)

    def target(self, name: str | None) -> ClusterTarget:
        n = self.cluster_name(name)
        return self.settings.clusters[n].target(n)

    def check(self, cluster: str | None, only: Iterable[str] | None = None,
              host_facts: bool = True, source: str = "cli", record: bool = True) -> CheckOutcome:
        n = self.cluster_name(cluster)
        cs = self.settings.clusters[n]
        return check_cluster(cs.target(n), self.settings.thresholds_for(n), cs.muted,
                             self.journal if record else None, only=only,
                             host_facts=host_facts, source=source)

    def run_context(self, cluster: str | None, source: str = "cli") -> RunContext:
        """What the runbooks need for one cluster: target, journal, limits, who acts."""
        from runbooks.api import RunContext

        n = self.cluster_name(cluster)
        cs = self.settings.clusters[n]
        rs = self.settings.runbooks
        return RunContext(
            cluster=n, target=cs.target(n), journal=self.journal,
            thresholds=self.settings.thresholds_for(n), muted=tuple(cs.muted),
            user=self.settings.user or self.user, source=source,
            verify_timeout_s=rs.verify_timeout_s, step_timeout_s=rs.step_timeout_s,
            bench_after_fix=rs.bench_after_fix, bench_limits=self.settings.bench.model_dump())

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
