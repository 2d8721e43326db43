"""The release-aware checks (checks/ceph_release.py, the autoscaler sentence of
POOL_PG_NUM_LOW) on captured Pacific and Reef JSON and variations of it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from checks.ceph_release import default_op_queue
from checks.engine import run_checks
from checks.model import Finding
from storage.ceph import build_state, load_raw_dir
from storage.model import ClusterSnapshot

FIX = Path(__file__).resolve().parent.parent / "fixtures"
NOW = 1_800_000_000.0
PAC = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"
REEF = "ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)"
RELEASES = [d.name.removeprefix("ceph-") for d in sorted(FIX.glob("ceph-*"))
            if (d / "healthy" / "osd_dump.json").exists()]


def raw_of(release: str, capture: str = "healthy") -> dict[str, Any]:
    return copy.deepcopy(load_raw_dir(str(FIX / f"ceph-{release}" / capture)))


def findings(raw: dict[str, Any]) -> list[Finding]:
    snap = ClusterSnapshot("lab", NOW, ceph=build_state(raw, collected_at=NOW))
    return list(run_checks(snap, now=NOW).findings)


def codes(raw: dict[str, Any]) -> set[str]:
    return {f.code for f in findings(raw)}


def test_both_releases_are_captured() -> None:
    assert {"pacific", "reef"} <= set(RELEASES)


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_healthy_captures_have_no_release_findings(release: str) -> None:
    raw = raw_of(release)
    st = build_state(raw, collected_at=NOW)
    assert st.release == release and not st.versions.mixed
    assert not codes(raw) & {"CEPH_VERSIONS_MIXED", "OSD_RECOVERY_SETTINGS_IGNORED",
                             "OSD_RECOVERY_MCLOCK_PROFILE", "REQUIRE_OSD_RELEASE_BEHIND"}


def test_reef_capture_runs_mclock_and_pacific_wpq() -> None:
    for release, queue in (("pacific", "wpq"), ("reef", "mclock_scheduler")):
        st = build_state(raw_of(release), collected_at=NOW)
        shown = st.osd_config.get("osd_op_queue") if st.osd_config else None
        running = shown.value if shown else default_op_queue(st.release)
        assert running == queue, release


def _mixed(raw: dict[str, Any], mon: str, osd_old: int) -> None:
    raw["versions"] = {"mon": {mon: 1}, "mgr": {REEF: 1},
                       "osd": {PAC: osd_old, REEF: 3 - osd_old}, "mds": {}}


def test_mixed_versions_named_and_wrong_order_called_out() -> None:
    raw = raw_of("pacific")
    _mixed(raw, mon=PAC, osd_old=1)
    f = next(f for f in findings(raw) if f.code == "CEPH_VERSIONS_MIXED")
    assert f.evidence["newest"] == "18.2.7" and f.evidence["lowest"] == "16.2.15"
    assert ["mon", "mgr"] in f.evidence["wrong_order"]
    assert "upgrade mons before mgrs" in f.message
    raw2 = raw_of("pacific")
    _mixed(raw2, mon=REEF, osd_old=2)
    f2 = next(f for f in findings(raw2) if f.code == "CEPH_VERSIONS_MIXED")
    assert f2.evidence["wrong_order"] == [] and "restart the daemons" in f2.message


def _show(raw: dict[str, Any], **settings: tuple[str, str]) -> None:
    raw["config show"] = {"osd.0": [{"name": k, "value": v, "source": src}
                                    for k, (v, src) in settings.items()]}


def test_recovery_limits_under_mclock_are_ignored_unless_overridden() -> None:
    raw = raw_of("reef")
    _show(raw, osd_max_backfills=("4", "file"), osd_recovery_sleep_hdd=("0", "file"))
    f = next(f for f in findings(raw) if f.code == "OSD_RECOVERY_SETTINGS_IGNORED")
    assert f.evidence["ignored"] == {"osd_max_backfills": "4", "osd_recovery_sleep_hdd": "0"}
    assert "osd.0 (file)" in f.message and "high_recovery_ops" in f.message
    _show(raw, osd_max_backfills=("4", "file"),
          osd_mclock_override_recovery_settings=("true", "file"))
    assert "OSD_RECOVERY_SETTINGS_IGNORED" not in codes(raw)
    # the same limits on wpq (Pacific's default, or wpq chosen on Reef) are honoured
    pac = raw_of("pacific")
    _show(pac, osd_max_backfills=("4", "file"))
    assert "OSD_RECOVERY_SETTINGS_IGNORED" not in codes(pac)
    _show(raw, osd_max_backfills=("4", "file"), osd_op_queue=("wpq", "file"))
    assert "OSD_RECOVERY_SETTINGS_IGNORED" not in codes(raw)


def test_limits_in_the_config_db_count_too() -> None:
    raw = raw_of("reef")
    _show(raw)
    raw["config dump"] = [{"section": "osd", "name": "osd_max_backfills", "value": "16",
                           "mask": ""},
                          {"section": "osd.3", "name": "osd_recovery_max_active",
                           "value": "9", "mask": ""}]
    f = next(f for f in findings(raw) if f.code == "OSD_RECOVERY_SETTINGS_IGNORED")
    assert f.evidence["ignored"] == {"osd_max_backfills": "16"}  # osd.3 alone: not read


def test_recovery_under_mclock_profile_says_what_sets_the_pace() -> None:
    raw = raw_of("reef", "osd1-down-in")
    _show(raw)
    # captured as soon as osd.1 was down: its PGs were still "stale"; a few seconds later
    # they peer as undersized+degraded, which is what this variation says
    assert "OSD_RECOVERY_MCLOCK_PROFILE" not in codes(raw)
    raw["pg stat"]["pg_summary"]["num_pg_by_state"] = [
        {"name": "active+undersized+degraded", "num": 19}, {"name": "active+clean", "num": 46}]
    f = next(f for f in findings(raw) if f.code == "OSD_RECOVERY_MCLOCK_PROFILE")
    assert f.evidence["profile"] == "balanced" and f.evidence["pgs"] > 0
    _show(raw, osd_mclock_profile=("high_recovery_ops", "mon"))
    assert "OSD_RECOVERY_MCLOCK_PROFILE" not in codes(raw)


@pytest.mark.parametrize("release", ["pacific", "reef"])
def test_few_pgs_says_whether_the_autoscaler_fixes_it(release: str) -> None:
    raw = raw_of(release, "pool-few-pgs")
    f = next(f for f in findings(raw) if f.code == "POOL_PG_NUM_LOW")
    assert f.evidence["autoscale_mode"] == "off"
    assert "autoscaler is off" in f.message and f.runbook == "pool-pg-num"
    for p in raw["osd pool ls detail"]:
        if p["pool_name"] == f.evidence["pool"]:
            p["pg_autoscale_mode"] = "on"
            p["pg_num_target"] = p["pg_num"]
    f_on = next(f for f in findings(raw) if f.code == "POOL_PG_NUM_LOW")
    assert "will not fix this by itself" in f_on.message and f_on.runbook is None
    for p in raw["osd pool ls detail"]:
        if p["pool_name"] == f.evidence["pool"]:
            p["pg_num_target"] = 64  # the autoscaler is on its way: nothing to say
    assert "POOL_PG_NUM_LOW" not in codes(raw)
