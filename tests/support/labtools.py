"""What lab tests share: a config file with a journal of the test's own, clearing
stordoc's dispersion objects, the OSD map's flags, and a remount run's audit read back.
(The poll: tests/support/poll.py; the CLI in a subprocess: tests/support/cli.py; a break
healed afterwards: tests/support/broken.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def config_with_journal(lab_config: Path, journal: Path, out: Path) -> Path:
    """A copy of the lab's config whose journal is ``journal``."""
    out.write_text("\n".join(f'journal = "{journal}"' if ln.startswith("journal =") else ln
                             for ln in lab_config.read_text().splitlines()) + "\n")
    return out


def drop_dispersion(lab: Any) -> None:
    """Remove stordoc's dispersion containers and objects (a test that populated them)."""
    conn = lab.swift_cluster.conn()
    try:
        for c in conn.get_account(prefix="stordoc_dispersion_", full_listing=True)[1]:
            for o in conn.get_container(c["name"], full_listing=True)[1]:
                conn.delete_object(c["name"], o["name"])
            conn.delete_container(c["name"])
    finally:
        conn.close()


def osd_flags(lab: Any) -> set[str]:
    """The OSD map's flags (``noout``, ...) as the monitor reports them now."""
    dump = lab.ceph("osd", "dump")
    return set(dump.get("flags_set", []) or str(dump.get("flags", "")).split(","))


def remount_run_at_mount(journal: Path, done: bool) -> int | None:
    """The id of the journal's osd-remount run once its mount step is audited as started
    (``done=False``: noout is set by then) or as done (``done=True``); None before."""
    from storage.audit import Audit
    from storage.journal import Journal

    if not journal.exists():
        return None
    j = Journal(str(journal))
    try:
        a = Audit(j)
        runs = [r for r in a.runs(cluster="lab") if r.runbook == "osd-remount"]
        if runs and any(s.title.lower().startswith("mount") and (s.status == "done" or not done)
                        for s in a.steps(int(runs[0].id))):
            return int(runs[0].id)
        return None
    finally:
        j.close()


def cancelled_and_undone(journal: Path, run_id: int) -> tuple[str, list[tuple[str, str]]]:
    """Assert a cancelled run left nothing behind (no lock, no leftover, no dead run, what
    it owned undone); its audit message and its steps as (title, status)."""
    from storage.audit import Audit
    from storage.journal import Journal

    j = Journal(str(journal))
    try:
        a = Audit(j)
        run = a.run(run_id)
        assert run is not None and run.outcome == "cancelled", run
        assert not a.locks("lab")  # the run's locks are released
        assert not a.leftovers("lab") and not a.dead_runs("lab")  # nothing to undo
        owned = j.db.execute("select state from runbook_owned where run_id = ?",
                             [run_id]).fetchall()
        assert owned == [("undone",)], owned
        return run.message, [(s.title, s.status) for s in a.steps(run_id)]
    finally:
        j.close()


def wait_osds_up_pgs_clean(ceph: Any, n_osds: int, timeout: float = 180) -> None:
    """Until every one of the lab's ``n_osds`` OSDs is up and every PG active+clean, read
    through stordoc's own librados reader (``RadosIO.state``) on ``ceph`` (a CephTarget):
    a freshly started lab is still peering, and a benchmark's gate would refuse it."""
    from storage.rados_io import RadosIO
    from tests.support.poll import wait_until

    def clean() -> bool:
        with RadosIO(ceph) as io:
            st = io.state()
        return st["num_up_osds"] == n_osds and \
            st["pgs_by_state"].get("active+clean") == st["num_pgs"]

    wait_until(clean, timeout, "lab OSDs up and PGs active+clean", 0.5)
