"""The TUI's row builders on captured Octopus data (plus a broken OSD, cache tier, Swift)."""

from __future__ import annotations

from dataclasses import replace

from checks.model import Severity
from tests.unit.test_tui_data import (
    broken_findings,
    broken_snapshot,
    healthy_snapshot,
    target,
)
from tui import views


def test_osd_rows_group_by_crush_host_and_show_the_unmounted_device() -> None:
    snap = broken_snapshot()
    rows = views.osd_rows(snap, target())
    keys = [r.key for r in rows]
    # the CRUSH tree of the capture: compute1 -> osd.1, compute2 -> osd.2, compute4 -> osd.0
    assert keys == ["host:compute1", "osd.1", "host:compute2", "osd.2", "host:compute4",
                    "osd.0"]
    osd1 = rows[1]
    assert osd1.cells[1:3] == ("down", "out")
    assert osd1.styles[1] == "bold red"
    assert osd1.cells[7] == "NOT MOUNTED (/dev/sdc1)"
    assert osd1.cells[8] == "stopped"
    osd2 = rows[3]
    assert osd2.cells[1:3] == ("up", "in")
    assert osd2.cells[7] == "mounted /dev/sdd1"
    assert rows[0].cells[1] == "0/1 up"


def test_osd_state_host_and_text_filters() -> None:
    snap = broken_snapshot()
    down = views.osd_rows(snap, target(), state="down")
    assert [r.key for r in down] == ["host:compute1", "osd.1"]
    up = views.osd_rows(snap, target(), state="up")
    assert [r.key for r in up if r.kind == "osd"] == ["osd.2", "osd.0"]
    only = views.osd_rows(snap, target(), host="compute2")
    assert [r.key for r in only] == ["host:compute2", "osd.2"]
    text = views.osd_rows(snap, target(), needle="NOT MOUNTED")
    assert [r.key for r in text] == ["host:compute1", "osd.1"]


def test_osd_detail_joins_host_facts_and_findings() -> None:
    lines = views.osd_detail(broken_snapshot(), target(), 1, broken_findings())
    d = {label: value for label, value, _ in lines}
    assert d["status"] == "down, out"
    assert d["mount"] == "NOT MOUNTED"
    assert d["matching device"] == "/dev/sdc1"
    assert d["daemon"] == "stopped"
    assert d["data dir"] == "/var/lib/ceph/osd/ceph-1"
    assert "osd-remount osd.1" in d["crit OSD_DATA_UNMOUNTED"]
    healthy = {k: v for k, v, _ in views.osd_detail(healthy_snapshot(), target(), 2, ())}
    assert healthy["mount"] == "mounted from /dev/sdd1"
    assert healthy["daemon"] == "running (pid 4002)"


def test_pool_rows_suggest_pg_num_by_the_seed_heuristic() -> None:
    ceph = healthy_snapshot().ceph
    assert ceph is not None
    # 3 in OSDs * 100 / 3 replicas -> 128, shared by target_size_ratio (0.05/0.4/0.3),
    # to the nearest power of two; the mgr's own pool gets no suggestion
    assert views.suggested_pg_nums(ceph) == {"glance": 8, "cinder-ceph": 64, "nova": 32}
    rows = {r.ref: r for r in views.pool_rows(ceph)}
    assert rows["device_health_metrics"].cells[6] == "-"
    assert rows["cinder-ceph"].cells[4:7] == ("32", "32", "64")
    assert rows["cinder-ceph"].styles[4] == "green"
    few = replace(ceph, pools=tuple(replace(p, pg_num=2, pgp_num=2)
                                    if p.name == "cinder-ceph" else p for p in ceph.pools))
    low = {r.ref: r for r in views.pool_rows(few)}["cinder-ceph"]
    assert low.cells[4] == "2" and low.styles[4] == "bold red"  # 2 < 64 / 4


def test_cache_rows_flag_missing_target_bad_ratio_order_and_no_hit_set() -> None:
    rows = views.cache_rows(broken_snapshot().ceph)
    assert len(rows) == 1
    r = rows[0]
    assert r.cells[:3] == ("lab-cache", "lab-base", "writeback")
    assert r.cells[5:8] == ("0.80", "0.90", "0.50")
    assert r.styles[3] == "bold red" and r.styles[5] == "bold red"
    assert r.cells[8] == "none" and r.styles[8] == "bold red"
    assert views.cache_rows(healthy_snapshot().ceph) == []


def test_ring_rows_by_zone_with_recon_state() -> None:
    rows = views.ring_rows(broken_snapshot().swift)
    rings = [r for r in rows if r.kind == "ring"]
    assert [r.ref for r in rings] == ["account", "container", "object"]
    obj = [r for r in rows if r.kind == "device" and r.ref[0] == "object"]
    assert [r.cells[2] for r in obj] == ["1", "2", "3", "4"]  # zones in order
    d2 = next(r for r in obj if r.ref[1].device == "d2")
    assert d2.cells[8] == "UNMOUNTED" and d2.styles[8] == "bold red"
    d1 = next(r for r in obj if r.ref[1].device == "d1")
    assert d1.cells[8].startswith("mounted")
    assert views.ring_rows(broken_snapshot().swift, needle="unmounted")[0].kind == "ring"


def test_findings_grouped_by_severity_crit_first() -> None:
    rows = views.finding_rows(broken_findings())
    heads = [r.cells[0] for r in rows if r.kind == "severity"]
    assert heads == ["▾ CRIT (2)", "▾ WARN (3)", "▾ INFO (1)"]
    crit = [r.ref.code for r in rows[1:3]]
    assert crit == ["OSD_DATA_UNMOUNTED", "SWIFT_DEVICE_UNMOUNTED"]
    assert all(r.ref.severity == Severity.CRIT for r in rows[1:3])
    only = views.finding_rows(broken_findings(), needle="cache-tier-tune")
    assert [r.ref.code for r in only if r.kind == "finding"] == ["CACHE_NO_TARGET",
                                                                 "CACHE_RATIO_ORDER"]


def test_overview_counts_and_human_formats() -> None:
    ov = {k: v for k, v, _ in views.overview(broken_snapshot(), broken_findings()).lines}
    assert ov["OSDs"] == "3 total, 2 up, 2 in"
    assert ov["Findings"] == "2 crit, 3 warn, 1 info"
    assert ov["Swift unmounted"] == "d2@compute1"  # the configured host at 127.0.0.3
    assert views.human_age(5) == "5s"
    assert views.human_age(185) == "3m05s"
    assert views.human_age(7300) == "2h01m"
    assert views.human_bytes(3 * 2**30) == "3.0 GiB"
