"""The one environment object every front end receives (httpie-style): settings, the
journal, who the user is, and how to reach clusters. Tests build their own."""

from __future__ import annotations

import errno
import getpass
import os
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from core.settings import ClusterSettings, Settings, SettingsError
from core.settings_clusters import MAX_SECRET_BYTES
from core.terminal import Terminal

# imported with the Env, in the main thread, before collect() starts its thread pool:
# Swift's eventlet must not arrive first in a worker (tests/unit/test_cli_startup.py)
from storage.collect import collect
from storage.journal import Journal
from storage.model import ClusterSnapshot
from storage.safefile import (
    MAX_CEPH_CONF_BYTES,
    MAX_KEYRING_BYTES,
    MAX_KNOWN_HOSTS_BYTES,
    MAX_SSH_KEY_BYTES,
    FileRefused,
    check_named,
)
from storage.targets import ClusterTarget

if TYPE_CHECKING:
    from runbooks.api import RunContext
    from storage.ssh import SSHPool


_POOL_LOCK = threading.Lock()
# how long the hosts found from a cluster are reused before they are read again
DISCOVERY_TTL_S = 60.0


def _denied(path: str) -> PermissionError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)


def need_readable(path: str | None) -> None:
    """A file stordoc must read (keyring, SSH key, known_hosts): unreadable is a
    PermissionError naming it, not 'monitors unreachable' later on."""
    if path and os.path.exists(path) and not os.access(path, os.R_OK):
        raise _denied(path)


def need_writable_db(path: str) -> None:
    """The journal (SQLite, WAL): the file and its directory must be writable."""
    p = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(p):
        if not os.access(p, os.R_OK | os.W_OK):
            raise _denied(p)
        d = os.path.dirname(p)
    else:
        d = os.path.dirname(p)
        while d and not os.path.exists(d):  # the first directory that exists is created in
            d = os.path.dirname(d)
    if d and not os.access(d, os.W_OK | os.X_OK):
        raise _denied(d)


def cluster_files(cs: ClusterSettings) -> list[tuple[str, str | None, int]]:
    """Every local file a cluster's settings name and stordoc (or librados, paramiko)
    reads whole: (the key naming it, path, size limit)."""
    files: list[tuple[str, str | None, int]] = []
    if cs.ceph:
        files += [("ceph.conf", cs.ceph.conf, MAX_CEPH_CONF_BYTES),
                  ("ceph.keyring", cs.ceph.keyring, MAX_KEYRING_BYTES)]
    if cs.swift and cs.swift.key and cs.swift.key.file:
        files.append(("swift.key.file", cs.swift.key.file, MAX_SECRET_BYTES))
    for h in cs.hosts:
        files += [(f"hosts.{h.name}.key_file", h.key_file, MAX_SSH_KEY_BYTES),
                  (f"hosts.{h.name}.known_hosts", h.known_hosts, MAX_KNOWN_HOSTS_BYTES)]
    return files


def preflight_cluster(cs: ClusterSettings) -> None:
    """Every local file a cluster's settings name and stordoc reads: a FIFO, a device, a
    directory or a file over its size limit is a SettingsError (exit 64) before anything
    opens it (nothing is opened here: a FIFO cannot block); an unreadable one is a
    PermissionError naming it (exit 77), not 'monitors unreachable' later on."""
    files = cluster_files(cs)
    try:
        check_named(files)
    except FileRefused as e:
        raise SettingsError(str(e)) from None
    for _, path, _ in files:
        need_readable(path)


def missing_change_key(cs: ClusterSettings, cluster: str) -> str | None:
    """Why this stordoc cannot change the cluster (None: it can): a separate Ceph user for
    changes is configured (``ceph.fix_client``) but its keyring is not here (a bot host
    given only the read-only key, issue 40.3). One line naming the key."""
    c = cs.ceph
    if c is None or not c.separate_fix_user or not c.fix_keyring:
        return None
    path = c.fix_keyring
    try:
        check_named([("ceph.fix_keyring", path, MAX_KEYRING_BYTES)])
    except FileRefused as e:
        return f"no usable key for changes to {cluster}: {e}"
    if not os.path.isfile(path):
        why = "no such file"
    elif not os.access(path, os.R_OK):
        why = "permission denied"
    else:
        return None
    return (f"this stordoc holds no key for changes to {cluster}: {c.fix_client}'s keyring "
            f"{path} ({why}; clusters.{cluster}.ceph.fix_keyring); it checks as "
            f"{c.client} (read-only) and changes nothing")


@dataclass
class Env:
    """Settings, the journal, who acts, and the terminal (the CLI's one I/O boundary:
    the bot and the TUI never write to it)."""

    settings: Settings
    user: str = field(default_factory=lambda: os.environ.get("SUDO_USER") or getpass.getuser())
    _journal: Journal | None = None
    term: Terminal = field(default_factory=Terminal.from_sys)
    # what the last sweeps of expired temporary changes did (runbooks.expiry), one line
    # each: ``stordoc watch`` and ``check`` print them, the audit keeps them
    reverted: list[str] = field(default_factory=list)
    _sweeping: bool = False
    _ssh_pool: SSHPool | None = None  # opened on the first check with hosts
    # hosts found from each cluster (``hosts_from``): (monotonic time, target, problems),
    # read again after DISCOVERY_TTL_S so a host that joined is checked within a minute
    _found: dict[str, tuple[float, ClusterTarget, list[str]]] = field(default_factory=dict)

    @property
    def ssh_pool(self) -> SSHPool:
        """SSH connections kept across this process's checks (``watch``, the bot): one
        handshake per host, not one per check; closed by ``close()``."""
        with _POOL_LOCK:  # check --all asks from several threads at once
            if self._ssh_pool is None:
                from storage.ssh import SSHPool

                self._ssh_pool = SSHPool()
            return self._ssh_pool

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            need_writable_db(self.settings.journal)
            self._journal = Journal(self.settings.journal)
        return self._journal

    def cluster_name(self, name: str | None) -> str:
        return self.settings.cluster_name(name)

    def target(self, name: str | None, discover: bool = True,
               changes: bool = False) -> ClusterTarget:
        """The cluster's target, its hosts found from the cluster with ``hosts_from``
        (read at most every DISCOVERY_TTL_S; an unreachable Ceph leaves the configured
        hosts, and the check says Ceph is unreachable). ``discover`` False: no I/O, the
        hosts found last time if any (a front end's start-up). ``changes``: Ceph as the
        user that makes changes (``ceph.fix_client``)."""
        n = self.cluster_name(name)
        if changes:
            found = self.target(n, discover)
            return replace(found, ceph=self.settings.clusters[n].target(n, True).ceph)
        preflight_cluster(self.settings.clusters[n])
        t = self.settings.clusters[n].target(n)
        if t.discovery is None:
            return t
        now = time.monotonic()
        hit = self._found.get(n)
        if hit is not None and (now - hit[0] < DISCOVERY_TTL_S or not discover):
            return hit[1]
        if not discover:
            return t
        from storage.discover import resolve_hosts

        resolved, problems = resolve_hosts(t)
        self._found[n] = (now, resolved, problems)
        return resolved

    def discovery_problems(self, name: str | None) -> list[str]:
        """What the last look for the cluster's hosts could not read (``hosts_from``)."""
        hit = self._found.get(self.cluster_name(name))
        return list(hit[2]) if hit else []

    def collect(self, target: ClusterTarget, host_facts: bool = True) -> ClusterSnapshot:
        """Read a cluster (Ceph, Swift, the hosts over SSH): the one place a check reaches
        it, so a test or a benchmark gives its own snapshot by overriding this."""
        return collect(target, host_facts=host_facts,
                       ssh_pool=self.ssh_pool if host_facts and target.hosts else None)

    def sweep_expired(self, cluster: str, source: str = "cli",
                      remember: bool = True) -> list[str]:
        """Revert the cluster's temporary changes whose deadline has passed (a raised
        full ratio, a maintenance window's noout): its own audited step, run by ``watch``
        at each deadline, the bot's timer and ``stordoc maintenance sweep``, never by a
        check or a fix (a read never writes; issue 39.3). Also after stordoc was restarted
        or killed: the changes are in the journal. Cheap when nothing is due."""
        if self._sweeping or not os.path.exists(os.path.expanduser(self.settings.journal)):
            return []
        from storage.expiring import due

        if not due(self.journal, cluster):
            return []
        n = self.cluster_name(cluster)
        lacking = missing_change_key(self.settings.clusters[n], n)
        if lacking:  # a read-only instance: the one holding the key reverts them
            if lacking not in self.reverted and remember:
                self.reverted.append(f"not reverted: {lacking}")
            return []
        from runbooks.expiry import sweep

        self._sweeping = True
        try:
            lines = sweep(self.run_context(cluster, source=source))
        finally:
            self._sweeping = False
        if remember:  # for take_reverted (watch, the CLI); the bot's timer logs its own
            self.reverted.extend(lines)
        return lines

    def take_reverted(self) -> list[str]:
        """The sweeps' lines not shown yet (and forget them)."""
        lines, self.reverted[:] = list(self.reverted), []
        return lines

    def run_context(self, cluster: str | None, source: str = "cli",
                    discover: bool = True) -> RunContext:
        """What the runbooks need for one cluster: target (Ceph as the user that makes
        changes), journal, limits, who acts. ``discover`` False: a read of the journal
        (history, the audit), which needs no hosts looked up from the cluster."""
        from runbooks.api import RunContext

        n = self.cluster_name(cluster)
        cs = self.settings.clusters[n]
        preflight_cluster(cs)
        rs = self.settings.runbooks
        return RunContext(
            cluster=n, target=self.target(n, discover, changes=True), journal=self.journal,
            thresholds=self.settings.thresholds_for(n), muted=tuple(cs.muted),
            user=self.settings.user or self.user, source=source,
            verify_timeout_s=rs.verify_timeout_s, step_timeout_s=rs.step_timeout_s,
            bench_after_fix=rs.bench_after_fix, bench_limits=self.settings.bench.model_dump())

    def close(self) -> None:
        if self._ssh_pool is not None:
            self._ssh_pool.close()
            self._ssh_pool = None
        if self._journal is not None:
            self._journal.close()
            self._journal = None
