"""The fill of a Ceph cluster over time, one small table in the journal: at most one
sample per ``MIN_GAP_S`` of each check that saw the cluster, kept ``KEEP_S``. What
``checks.fill`` fits the days to full on (the fullest OSD, since the first OSD to reach
the full ratio stops the writes to its PGs)."""

from __future__ import annotations

from storage.journal import Journal

TABLE = "fill_history"
MIN_GAP_S = 300.0  # a watch every minute keeps a sample per 5 min: ~8000 rows a month
KEEP_S = 30 * 86400.0


def _ensure(journal: Journal) -> None:
    def create() -> None:
        journal.db.table(TABLE).create(
            {"id": int, "cluster": str, "at": float, "max_osd": float, "used": float},
            pk="id", if_not_exists=True)
        journal.db.table(TABLE).create_index(["cluster", "at"], if_not_exists=True)
    journal.ensure_schema(TABLE, create)


def record(journal: Journal, cluster: str, at: float, max_osd: float, used: float,
           min_gap_s: float = MIN_GAP_S) -> bool:
    """Keep this sample unless the last one is younger than ``min_gap_s``."""
    _ensure(journal)
    last = journal.db.execute(f"select max(at) from {TABLE} where cluster = ?",
                              [cluster]).fetchone()[0]
    if last is not None and at - float(last) < min_gap_s:
        return False
    with journal.lock, journal.db.atomic():
        journal.db.table(TABLE).insert({"cluster": cluster, "at": at, "max_osd": max_osd,
                                        "used": used})
        journal.db.execute(f"delete from {TABLE} where cluster = ? and at < ?",
                           [cluster, at - KEEP_S])
    return True


def samples(journal: Journal, cluster: str, before: float) -> tuple[tuple[float, float], ...]:
    """(epoch s, fill of the fullest OSD) before ``before``, oldest first."""
    if TABLE not in journal.db.table_names():
        return ()
    return tuple((float(a), float(m)) for a, m in journal.db.execute(
        f"select at, max_osd from {TABLE} where cluster = ? and at < ? and at >= ? "
        f"order by at", [cluster, before, before - KEEP_S]).fetchall())
