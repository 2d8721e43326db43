"""Benchmark results and named baselines in the journal (tables ``bench_runs`` and
``bench_baselines``), so ``--compare`` can find earlier runs of the same fingerprint and
any front end can list history. Rows are plain JSON-able dicts: the result types live in
``runbooks.bench`` and ``storage`` imports nothing of ours but ``storage.*``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from storage.audit import redact_obj
from storage.journal import Journal

_JSON_COLS = ("params", "fingerprint_fields", "state", "error_kinds", "series", "extra",
              "notes")
_SCRUBBED = ("params", "state", "error_kinds", "extra", "notes")  # not the series
_COLS: dict[str, type] = {
    "id": int, "group_id": str, "rep": int, "cluster": str, "kind": str, "engine": str,
    "workload": str, "fingerprint": str, "started_at": float, "duration_s": float,
    "status": str, "user": str, "ops": int, "bytes": int, "ops_s": float, "mb_s": float,
    "lat_avg_ms": float, "lat_p50_ms": float, "lat_p90_ms": float, "lat_p99_ms": float,
    "lat_p999_ms": float, "lat_max_ms": float, "errors": int, "stordoc_version": str,
    "params": str, "fingerprint_fields": str, "state": str, "error_kinds": str,
    "series": str, "extra": str, "notes": str,
}


class BenchStore:
    """Read and write benchmark rows; safe to share between threads (journal lock)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.db = journal.db
        journal.ensure_schema("bench", self._create)

    def _create(self) -> None:
        self.db.table("bench_runs").create(_COLS, pk="id", if_not_exists=True)
        self.db.table("bench_runs").create_index(["cluster", "fingerprint"], if_not_exists=True)
        self.db.table("bench_runs").create_index(["group_id"], if_not_exists=True)
        self.db.table("bench_baselines").create(
            {"name": str, "cluster": str, "fingerprint": str, "group_id": str,
             "created_at": float, "user": str, "note": str},
            pk=("cluster", "name"), if_not_exists=True)

    def save(self, row: Mapping[str, Any]) -> int:
        # what a person typed (options, notes) or a tool printed (errors) goes in scrubbed
        rec = {k: (json.dumps(redact_obj(v) if k in _SCRUBBED else v, default=str)
                   if k in _JSON_COLS else v)
               for k, v in row.items() if k in _COLS and k != "id"}
        with self.journal.lock, self.db.atomic():
            return int(self.db.table("bench_runs").insert(rec).last_pk or 0)

    @staticmethod
    def _decode(r: Mapping[str, Any]) -> dict[str, Any]:
        d = dict(r)
        for k in _JSON_COLS:
            v = d.get(k)
            d[k] = json.loads(v) if isinstance(v, str) and v else ({} if k != "notes" and
                                                                   k != "series" else [])
        return d

    def get(self, run_id: int) -> dict[str, Any] | None:
        rows = list(self.db.table("bench_runs").rows_where("id = ?", [run_id]))
        return self._decode(rows[0]) if rows else None

    def group(self, group_id: str) -> list[dict[str, Any]]:
        return [self._decode(r) for r in
                self.db.table("bench_runs").rows_where("group_id = ?", [group_id], order_by="id")]

    def history(self, cluster: str | None = None, limit: int = 20,
                kind: str | None = None) -> list[dict[str, Any]]:
        where, args = [], []
        if cluster:
            where.append("cluster = ?")
            args.append(cluster)
        if kind:
            where.append("kind = ?")
            args.append(kind)
        return [self._decode(r) for r in self.db.table("bench_runs").rows_where(
            " and ".join(where) or None, args, order_by="id desc", limit=limit)]

    def same_fingerprint(self, cluster: str, fingerprint: str, workload: str | None = None,
                         exclude_group: str | None = None, limit: int = 10,
                         status: str = "ok") -> list[dict[str, Any]]:
        """Most recent runs of one fingerprint (newest first), other groups only."""
        where = "cluster = ? and fingerprint = ? and status = ?"
        args: list[str] = [cluster, fingerprint, status]
        if workload:
            where += " and workload = ?"
            args.append(workload)
        if exclude_group:
            where += " and group_id != ?"
            args.append(exclude_group)
        return [self._decode(r) for r in self.db.table("bench_runs").rows_where(
            where, args, order_by="id desc", limit=limit)]

    def last_group(self, cluster: str, kind: str | None = None) -> str | None:
        where, args = "cluster = ? and status = ?", [cluster, "ok"]
        if kind:
            where += " and kind = ?"
            args.append(kind)
        rows = list(self.db.table("bench_runs").rows_where(where, args, order_by="id desc",
                                                     limit=1, select="group_id"))
        return str(rows[0]["group_id"]) if rows else None

    def set_baseline(self, cluster: str, name: str, group_id: str, user: str = "",
                     note: str = "") -> dict[str, Any]:
        runs = self.group(group_id)
        if not runs:
            raise KeyError(group_id)
        rec = {"name": name, "cluster": cluster, "fingerprint": runs[0]["fingerprint"],
               "group_id": group_id, "created_at": time.time(), "user": user, "note": note}
        with self.journal.lock, self.db.atomic():
            self.db.table("bench_baselines").upsert(rec, pk=("cluster", "name"))
        return rec

    def baseline(self, cluster: str, name: str) -> dict[str, Any] | None:
        rows = list(self.db.table("bench_baselines").rows_where(
            "cluster = ? and name = ?", [cluster, name]))
        return dict(rows[0]) if rows else None

    def baselines(self, cluster: str | None = None) -> list[dict[str, Any]]:
        where, args = ("cluster = ?", [cluster]) if cluster else (None, [])
        return [dict(r) for r in self.db.table("bench_baselines").rows_where(
            where, args, order_by="created_at desc")]

    def latest(self, cluster: str, kind: str) -> dict[str, Any] | None:
        found = self.history(cluster, limit=1, kind=kind)
        return found[0] if found else None
