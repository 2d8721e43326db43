"""A warning line moved by a config option is the warning's cause (issue 38.2), from the
saved snapshots of both releases: config-warn-lines (plain `ceph config set`: the scrub
intervals lowered for the manager, mon_max_pg_per_osd lowered for global) and
mon-disk-low (mon_data_avail_warn raised at runtime with `ceph tell`). Each section's
options are one CONFIG_OPTION_CAUSE incident with Ceph's codes folded in and
config-restore as its next step; the same saved JSON with the option at Ceph's default,
set for a section the manager does not read, or with a real low disk, blames no option."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checks.incidents import Incident
from core.service.snapshots import Replay, load
from runbooks.api import plan_from_snapshot
from runbooks.model import Refused
from runbooks.nextstep import planning_context
from tests.support.fixture_snapshots import FIXTURES

RELEASES = ("pacific", "reef")


def _copy(tmp_path: Path, release: str, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(FIXTURES / release / name, d)
    return d


def _edit(d: Path, file: str, fn: Any) -> None:
    p = d / "ceph" / file
    p.write_text(json.dumps(fn(json.loads(p.read_text()))))


def _folded(inc: Incident) -> set[str]:
    return {c.code if c.code != "CEPH_HEALTH" else c.entity for c in inc.consequences}


def _causes(rp: Replay) -> dict[str, Incident]:
    return {i.root.entity: i for i in rp.outcome.incidents
            if i.root.code == "CONFIG_OPTION_CAUSE"}


@pytest.mark.parametrize("release", RELEASES)
def test_lowered_warning_lines_are_one_incident_per_section(release: str) -> None:
    rp = load(str(FIXTURES / release / "config-warn-lines"))
    assert [i.root.entity for i in rp.outcome.incidents] == ["config global", "config mgr"]
    by = _causes(rp)
    glob, mgr = by["config global"], by["config mgr"]
    assert "mon_max_pg_per_osd 30 (Ceph's default 250) set for global" in glob.root.message
    assert "`ceph config rm global mon_max_pg_per_osd`" in glob.root.message
    assert _folded(glob) == {"ceph TOO_MANY_PGS", "PGS_PER_OSD_HIGH"}
    assert "osd_scrub_max_interval 10 (Ceph's default 604800)" in mgr.root.message
    assert "osd_deep_scrub_interval 10 (Ceph's default 604800)" in mgr.root.message
    assert _folded(mgr) == {"ceph PG_NOT_SCRUBBED", "ceph PG_NOT_DEEP_SCRUBBED"}
    assert glob.next_step is not None and \
        glob.next_step.command == "stordoc fix config-restore global"
    assert mgr.next_step is not None and \
        mgr.next_step.command == "stordoc fix config-restore mgr"
    # who set it, as Ceph's configuration database has it
    assert glob.root.evidence["who"] == "global" and mgr.root.evidence["who"] == "mgr"
    # config-restore mgr puts every lowered option of that section back
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "config-restore", "mgr")
    assert sorted(s.command for s in plan.steps if s.command.startswith("ceph config rm")) \
        == ["ceph config rm mgr osd_deep_scrub_interval",
            "ceph config rm mgr osd_scrub_max_interval"]
    assert plan.params["ceph_codes"] == ["PG_NOT_DEEP_SCRUBBED", "PG_NOT_SCRUBBED"]
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "config-restore", "global")
    assert [s.command for s in plan.steps][:1] == ["ceph config rm global mon_max_pg_per_osd"]
    assert plan.params["ceph_codes"] == ["TOO_MANY_PGS"]


@pytest.mark.parametrize("release", RELEASES)
def test_a_value_at_cephs_default_or_for_a_section_the_manager_skips_is_no_cause(
        tmp_path: Path, release: str) -> None:
    d = _copy(tmp_path, release, "config-warn-lines")

    def at_default(dump: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for e in dump:
            if e["name"] in ("osd_scrub_max_interval", "osd_deep_scrub_interval"):
                e["value"] = "604800.000000"
            if e["name"] == "mon_max_pg_per_osd":
                e["section"] = "osd"  # the manager does not read the osd section
        return dump

    _edit(d, "config_dump.json", at_default)
    rp = load(str(d))
    assert not _causes(rp), [i.root.message for i in rp.outcome.incidents]
    codes = {i.root.entity if i.root.code == "CEPH_HEALTH" else i.root.code
             for i in rp.outcome.incidents}
    assert {"ceph PG_NOT_SCRUBBED", "ceph PG_NOT_DEEP_SCRUBBED"} <= codes, codes


@pytest.mark.parametrize("release", RELEASES)
def test_scrubs_overdue_at_cephs_default_too_blame_no_option(tmp_path: Path,
                                                              release: str) -> None:
    """PGs not scrubbed for 20 days would warn at Ceph's 7-day line too: the lowered
    interval is not why."""
    d = _copy(tmp_path, release, "config-warn-lines")

    def old(h: dict[str, Any]) -> dict[str, Any]:
        for code in ("PG_NOT_SCRUBBED", "PG_NOT_DEEP_SCRUBBED"):
            for line in h["checks"][code]["detail"]:
                m = line["message"]
                if " since " in m:
                    line["message"] = m[:m.index(" since ") + 7] + \
                        "2000-01-01T00:00:00.000000+0000"
        return h

    _edit(d, "health_detail.json", old)
    rp = load(str(d))
    assert list(_causes(rp)) == ["config global"]


def _mon_disk(tmp_path: Path, release: str, avail: int | None = None,
              mon_data: Any = None, config_db: Any = None) -> Replay:
    d = _copy(tmp_path, release, "mon-disk-low")
    if avail is not None:
        def low(h: dict[str, Any]) -> dict[str, Any]:
            h["checks"]["MON_DISK_LOW"]["detail"] = [{"message": f"mon.a has {avail}% avail"}]
            return h
        _edit(d, "health_detail.json", low)
    if mon_data is not None:
        _edit(d, "mon_data.json", mon_data)
    if config_db is not None:
        _edit(d, "config_dump.json", config_db)
    return load(str(d))


@pytest.mark.parametrize("release", RELEASES)
def test_a_runtime_override_of_the_monitors_free_space_line_is_the_cause(
        tmp_path: Path, release: str) -> None:
    rp = load(str(FIXTURES / release / "mon-disk-low"))
    [inc] = rp.outcome.incidents
    assert (inc.root.code, inc.root.entity) == ("CONFIG_OPTION_CAUSE", "config mon.a")
    assert "mon_data_avail_warn 99 (overriding 2, Ceph's default 30) set at runtime on " \
        "mon.a" in inc.root.message
    assert _folded(inc) == {"ceph MON_DISK_LOW"}
    assert inc.next_step is not None and \
        inc.next_step.command == "stordoc fix config-restore mon.a"
    ctx = planning_context("lab", rp.target, rp.thresholds, offline=True)
    plan = plan_from_snapshot(ctx, rp.outcome.snapshot, "config-restore", "mon.a")
    assert [s.command for s in plan.steps][0] == \
        "ceph tell mon.a config set mon_data_avail_warn 2"
    assert plan.params["ceph_codes"] == ["MON_DISK_LOW"]
    # a real low disk: 1 % free is under the 2 % ceph.conf line too: the disk's problem
    rp = _mon_disk(tmp_path / "low", release, avail=1)
    assert not _causes(rp)
    [inc] = rp.outcome.incidents
    assert inc.root.entity == "ceph MON_DISK_LOW" and "free space" in inc.root.message
    with pytest.raises(Refused):
        plan_from_snapshot(ctx, rp.outcome.snapshot, "config-restore", "mon.a")


@pytest.mark.parametrize("release", RELEASES)
def test_the_same_value_from_the_database_is_judged_against_cephs_default(
        tmp_path: Path, release: str) -> None:
    """Not a runtime override (``config show`` source ``mon``): set in the configuration
    database, its line is compared with Ceph's default (30 %), not ceph.conf's 2."""

    def from_db(m: dict[str, Any]) -> dict[str, Any]:
        m["a"]["mon_data_avail_warn.source"] = "mon"
        return m

    def db(dump: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*dump, {"section": "mon", "name": "mon_data_avail_warn", "value": "99",
                        "level": "advanced", "can_update_at_runtime": True, "mask": ""}]

    # 27-29 % free: Ceph's default 30 warns too: the disk, not the option
    rp = _mon_disk(tmp_path / "a", release, avail=25, mon_data=from_db, config_db=db)
    assert not _causes(rp)
    rp = _mon_disk(tmp_path / "b", release, avail=60, mon_data=from_db, config_db=db)
    [inc] = rp.outcome.incidents
    assert (inc.root.code, inc.root.entity) == ("CONFIG_OPTION_CAUSE", "config mon")
    assert "`ceph config rm mon mon_data_avail_warn`" in inc.root.message
    assert _folded(inc) == {"ceph MON_DISK_LOW"}
