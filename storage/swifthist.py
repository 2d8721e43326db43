"""Swift recon numbers over time in the journal (table ``swift_samples``), so a check can
say "quarantines grew by 40 since yesterday": one row per (cluster, entity, metric) per
check run; rows older than twice the window are pruned when new ones are written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from storage.journal import Journal

Baseline = Mapping[str, Mapping[str, tuple[float, float]]]  # entity -> metric -> (t, value)


class SwiftHistory:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.db = journal.db
        with journal.lock:
            self.db.table("swift_samples").create(
                {"cluster": str, "taken_at": float, "entity": str, "metric": str,
                 "value": float}, if_not_exists=True)
            self.db.table("swift_samples").create_index(["cluster", "metric", "taken_at"],
                                                        if_not_exists=True)

    def record(self, cluster: str, taken_at: float,
               rows: Iterable[tuple[str, str, float]], window_s: float) -> None:
        with self.journal.lock, self.db.atomic():
            self.db.table("swift_samples").insert_all(
                {"cluster": cluster, "taken_at": taken_at, "entity": e, "metric": m,
                 "value": float(v)} for e, m, v in rows)
            self.db.execute("delete from swift_samples where cluster = ? and taken_at < ?",
                            [cluster, taken_at - 2 * window_s])

    def baseline(self, cluster: str, now: float, window_s: float) -> Baseline:
        """Per entity and metric: the newest sample at least ``window_s`` old, else the
        oldest one there is (then the growth is "within the window")."""
        out: dict[str, dict[str, tuple[float, float]]] = {}
        with self.journal.lock:
            old = self.db.execute(
                "select entity, metric, value, max(taken_at) from swift_samples "
                "where cluster = ? and taken_at <= ? group by entity, metric",
                [cluster, now - window_s]).fetchall()
            first = self.db.execute(
                "select entity, metric, value, min(taken_at) from swift_samples "
                "where cluster = ? and taken_at > ? and taken_at < ? group by entity, metric",
                [cluster, now - window_s, now]).fetchall()
        for e, m, v, t in first:
            out.setdefault(e, {})[m] = (float(t), float(v))
        for e, m, v, t in old:
            out.setdefault(e, {})[m] = (float(t), float(v))
        return out
