"""Snapshots for every front end: save what one check collects, and diagnose from a saved
one exactly as a live check would (same parsers, checks, incidents and next steps), with
the settings, thresholds and mutes the cluster had when it was saved.

A snapshot names its cluster's shape (hosts, paths, command templates) but no secret: no
keyring, SSH key, known_hosts path or Swift key. What it holds is validated by the same
settings model a config file goes through, so a hostile ``cluster.json`` is refused like a
hostile config (one line), and its command templates are never run: a replay only plans.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from checks.model import Thresholds
from checks.outcome import CheckOutcome
from core.env import Env
from core.service.pipeline import CheckRequest, run_check, with_swift_history
from core.settings import ClusterSettings, ThresholdSettings
from storage.snapshot import SnapshotDoc, SnapshotError, read_snapshot, replay, write_snapshot
from storage.targets import ClusterTarget

SECRET_FIELDS: dict[str, set[str]] = {"ceph": {"keyring"}, "swift": {"key"},
                                      "hosts": {"key_file", "known_hosts"}}


def written_by() -> str:
    try:
        from importlib.metadata import version

        return f"stordoc {version('stordoc')}"
    except Exception:  # noqa: BLE001  (not installed: a checkout)
        return "stordoc (checkout)"


def settings_doc(name: str, cs: ClusterSettings, thresholds: Thresholds,
                 mute_rules: list[tuple[str, str | None]]) -> dict[str, Any]:
    """The cluster's settings as ``cluster.json`` holds them: no secret, the thresholds in
    force (every one the settings may set), the mutes with expiry in force."""
    d = cs.model_dump(mode="json", exclude={
        "ceph": SECRET_FIELDS["ceph"], "swift": SECRET_FIELDS["swift"],
        "hosts": True, "host_defaults": True, "thresholds": True})
    # each host as it is checked (on host_defaults), the defaults as written: a host found
    # from the cluster (hosts_from) is replayed from them and the address it was read at
    d["hosts"] = [h.model_dump(mode="json", exclude=SECRET_FIELDS["hosts"])
                  for h in cs.host_settings()]
    d["host_defaults"] = cs.host_defaults.model_dump(mode="json", exclude_unset=True,
                                                     exclude=SECRET_FIELDS["hosts"])
    d["thresholds"] = {k: getattr(thresholds, k) for k in ThresholdSettings.model_fields
                       if hasattr(thresholds, k)}
    return {"name": name, "cluster": d, "mute_rules": [[c, e] for c, e in mute_rules]}


@dataclass(frozen=True)
class Replay:
    """A check made from a snapshot: its document, the outcome, what it was judged by."""

    doc: SnapshotDoc
    outcome: CheckOutcome
    target: ClusterTarget
    thresholds: Thresholds


def save(env: Env, cluster: str | None, directory: str, host_facts: bool = True,
         metrics: Sequence[tuple[str, str, str]] = ()) -> SnapshotDoc:
    """Collect ``cluster`` once, as ``stordoc check`` does, and write it to ``directory``
    (which must not exist yet). Reads the journal (recon history, mutes) but records no run.
    ``metrics``: (source, URL, Prometheus job) of each Prometheus target to scrape right
    after (the mgr ``prometheus`` module, node_exporters): saved under ``metrics/``
    (storage/snapshot/metrics.py), a target that does not answer saved as such."""
    from storage.collect import collect
    from storage.mutes import active_mutes
    from storage.snapshot.files import check_new_directory

    name = env.cluster_name(cluster)
    cs = env.settings.clusters[name]
    target = env.target(name)
    thresholds = env.settings.thresholds_for(name)
    check_new_directory(directory)  # a name it cannot write: said before collecting
    snap = collect(target, host_facts=host_facts, keep_raw=True)
    rules: list[tuple[str, str | None]] = []
    if os.path.exists(os.path.expanduser(env.settings.journal)):
        from storage.swifthist import SwiftHistory

        rules = [(m.code, m.entity) for m in active_mutes(env.journal, name)]
        snap = with_swift_history(snap, SwiftHistory(env.journal), name,
                                  thresholds.swift_history_window_s)
    doc = write_snapshot(directory, snap, settings_doc(name, cs, thresholds, rules),
                         written_by())
    if metrics:
        from storage.snapshot.metrics import scrape, write_metrics

        write_metrics(doc.directory, [scrape(src, url, job) for src, url, job in metrics])
    return doc


def _validated(doc: SnapshotDoc) -> tuple[str, ClusterSettings, list[tuple[str, str | None]]]:
    """The snapshot's cluster settings through the settings model; format 0 (a capture of
    Ceph's answers) gets an empty Ceph-only shape."""
    if doc.version == 0:
        return doc.cluster, ClusterSettings.model_validate({"ceph": {"conf": "(capture)"}}), []
    s = doc.settings
    name = s.get("name")
    if not isinstance(name, str) or not name or name != doc.cluster:
        raise SnapshotError("cluster.json names another cluster than snapshot.json")
    try:
        cs = ClusterSettings.model_validate(s.get("cluster") or {})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise SnapshotError(f"cluster.json: {where}: {first.get('msg')}") from None
    rules: list[tuple[str, str | None]] = []
    for r in s.get("mute_rules") or []:
        if not (isinstance(r, list) and len(r) == 2 and isinstance(r[0], str)
                and (r[1] is None or isinstance(r[1], str))):
            raise SnapshotError("cluster.json: mute_rules holds something else than "
                                "[code, entity] pairs")
        rules.append((r[0], r[1]))
    return name, cs, rules


def load(directory: str, only: list[str] | None = None) -> Replay:
    """Diagnose from a snapshot: SnapshotError (one line) for anything it cannot take."""
    from runbooks.nextstep import planning_context

    doc = read_snapshot(directory)
    name, cs, rules = _validated(doc)
    target = cs.target(name)
    thresholds = cs.thresholds.apply(Thresholds())
    snap = replay(doc, target)
    out = run_check(CheckRequest(target, thresholds, cs.muted, None, only=only, snapshot=snap,
                    mute_rules=rules, now=doc.taken_at, source="snapshot",
                    planning=planning_context(name, target, thresholds, offline=True)))
    return Replay(doc, out, target, thresholds)


def load_named(snapshots_dir: str | None, name: str) -> Replay:
    """A snapshot by its directory name under ``snapshots_dir`` (the bot's ``health from
    NAME``): a plain name only, never a path, and nothing outside that directory."""
    import re

    if not snapshots_dir:
        raise SnapshotError("no snapshots are served here (slack.snapshots_dir is not set)")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name, flags=re.ASCII):
        raise SnapshotError("not a snapshot name")
    path = os.path.join(snapshots_dir, name)
    if os.path.islink(path):
        raise SnapshotError("a symlink: refused (only snapshots saved into "
                            "slack.snapshots_dir are served)")
    try:
        return load(path)
    except SnapshotError as e:  # said in chat: the snapshot's name, never the server's path
        raise SnapshotError(str(e).replace(path, name).replace(snapshots_dir, "")) from None
