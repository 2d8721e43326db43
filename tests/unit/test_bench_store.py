"""Results and baselines in the journal (a real SQLite file)."""

from __future__ import annotations

from pathlib import Path

from runbooks.bench.model import BenchResult, fingerprint_fields, parse_size
from storage.benchstore import BenchStore
from storage.journal import Journal


def _result(group: str, rep: int, ops_s: float, workload: str = "write",
            versions: tuple[str, ...] = ("16.2.15",)) -> BenchResult:
    return BenchResult(
        cluster="lab", kind="rados", engine="native", workload=workload, group_id=group,
        rep=rep, params={"size": 4096}, started_at=1000.0 + rep,
        fingerprint_fields=fingerprint_fields("lab", "rados", "native", workload,
                                              "stordoc-bench", 4096, 16, "client1",
                                              list(versions)),
        ops=int(ops_s * 5), ops_s=ops_s, mb_s=ops_s * 4096 / 2**20, lat_avg_ms=16000 / ops_s,
        series=[{"t": 1.0, "ops_s": ops_s, "mb_s": 1.0, "lat_ms": 1.0, "partial": 0.0}],
        state={"health": "HEALTH_OK"}, error_kinds={"ETIMEDOUT": 1}, errors=1)


def test_save_roundtrip_and_fingerprint_lookup(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db")
    st = BenchStore(j)
    ids = [st.save(_result("g1", r, 1000 + r).to_row()) for r in (1, 2, 3)]
    st.save(_result("g2", 1, 900).to_row())
    st.save(_result("g3", 1, 900, versions=("17.2.0",)).to_row())  # other fingerprint
    row = st.get(ids[0])
    assert row is not None
    back = BenchResult.from_row(row)
    assert back.error_kinds == {"ETIMEDOUT": 1} and back.series[0]["ops_s"] == 1001
    assert back.fingerprint == _result("x", 1, 1).fingerprint
    same = st.same_fingerprint("lab", back.fingerprint, "write", exclude_group="g2")
    assert {r["group_id"] for r in same} == {"g1"}
    assert [r["rep"] for r in st.group("g1")] == [1, 2, 3]
    assert st.last_group("lab") == "g3"
    # a second store on the same file sees the same rows (tables created once)
    assert len(BenchStore(Journal(tmp_path / "journal.db")).history("lab", 10)) == 5


def test_baseline_set_and_replace(tmp_path: Path) -> None:
    st = BenchStore(Journal(tmp_path / "j.db"))
    st.save(_result("g1", 1, 1000).to_row())
    st.save(_result("g2", 1, 1100).to_row())
    st.set_baseline("lab", "before-upgrade", "g1", "alice")
    assert st.baseline("lab", "before-upgrade")["group_id"] == "g1"
    st.set_baseline("lab", "before-upgrade", "g2", "bob")
    assert st.baseline("lab", "before-upgrade")["group_id"] == "g2"
    assert len(st.baselines("lab")) == 1
    assert st.baseline("lab", "nope") is None


def test_parse_size() -> None:
    assert parse_size("4k") == 4096
    assert parse_size("4M") == 4 * 2**20
    assert parse_size("64KiB") == 65536
    assert parse_size("1G") == 2**30
    assert parse_size("512") == 512
    for bad in ("", "x", "-4k", "0"):
        try:
            parse_size(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} accepted")
