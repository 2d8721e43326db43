"""OSD deployment layouts on the real lab: a ceph-volume raw OSD (tmpfs data dir rebuilt from
its BlueStore label) beside ceph-disk style XFS OSDs. The tmpfs seed fault (daemon stopped,
tmpfs gone, OSD out) is detected with its cause and repaired end to end by
``stordoc fix --finding``, the TUI's Fix and the Slack Fix button, each verified by a fresh
check. A healthy lab of each layout gives no finding."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from checks.hostdiag import Flavour, osd_diagnoses
from checks.model import Finding
from lab import Lab
from runbooks.api import Refused, plan
from stordoc.env import Env
from stordoc.settings import load_settings
from tests.lab.test_runbooks import cli, findings, poll
from tests.lab.test_tui_lab import SIZE, _env, osd_row, plain, wait_until
from tests.support.fake_slack import BotHarness, all_text, buttons
from tests.unit.test_tui_app import sync
from tui import screens as S
from tui.app import StordocApp
from tui.backend import EnvBackend
from tui.table import VirtualTable

OPS, OPS2 = "UOPSLAY001", "UOPSLAY002"
HOST_CODES = {"OSD_DATA_UNMOUNTED", "OSD_NOT_ACTIVATED", "OSD_DAEMON_STOPPED",
              "OSD_DEVICE_IO_ERRORS", "OSD_FSTAB_DISABLED", "OSD_LABEL_FOREIGN",
              "OSD_UNIT_FAILED", "OSD_LV_INACTIVE"}


def _raw_osd(lab: Lab) -> int:
    raws = [i for i, k in enumerate(lab.kinds) if k == "raw"]
    if not raws:
        pytest.skip(f"the lab's layout {lab.layout} has no ceph-volume raw OSD")
    return raws[-1]


def _tmpfs_mounted(path: Path) -> bool:
    with open("/proc/self/mounts") as f:
        return any(ln.split()[1] == str(path) and ln.split()[2] == "tmpfs" for ln in f)


@pytest.fixture
def raw_not_activated(lab: Lab) -> Iterator[int]:
    """The raw OSD after a reboot whose activation did not run: stopped, tmpfs gone, out."""
    i = _raw_osd(lab)
    lab.break_("osd-not-activated", osd=i, out=True)
    try:
        yield i
    finally:
        if lab.osd_up(i) is not True or not _tmpfs_mounted(lab.osd_dir(i)) \
                or lab.osds_up_in()[1] != lab.n_osds:
            lab.heal("osd-not-activated", osd=i)


def _assert_back(lab: Lab, env: Env, i: int) -> None:
    """The OSD is up, in, on its tmpfs, and a fresh check says nothing about it."""
    assert lab.osd_up(i) is True
    assert _tmpfs_mounted(lab.osd_dir(i))
    assert (lab.osd_dir(i) / "whoami").read_text().strip() == str(i)
    poll(lambda: lab.osds_up_in() == (lab.n_osds, lab.n_osds), 60, f"osd.{i} in")
    left = [f for f in findings(env) if f.target == f"osd.{i}" or f.entity == f"osd.{i}"]
    assert left == [], [(f.code, f.message) for f in left]


def test_healthy_lab_gives_no_host_finding_and_names_each_flavour(lab: Lab, env: Env) -> None:
    out = env.check("lab", source="test")
    bad = [f for f in out.report.findings if f.code in HOST_CODES
           or f.entity.startswith("osd.")]
    assert bad == [], [(f.code, f.message) for f in bad]
    snap = out.snapshot
    assert snap.ceph is not None
    dg = osd_diagnoses(snap.hosts, snap.ceph.osds, snap.ceph.fsid, snap.taken_at)
    want = {i: Flavour.RAW if k == "raw" else Flavour.XFS for i, k in enumerate(lab.kinds)}
    assert {i: d.flavour for i, d in dg.items()} == want
    for i, k in enumerate(lab.kinds):
        if k == "raw":
            assert "tmpfs" in dg[i].evidence[0]


def test_tmpfs_seed_fault_named_with_its_cause_and_fixed_by_cli(
        lab: Lab, env: Env, cfg: Path, raw_not_activated: int) -> None:
    i = raw_not_activated
    ctx = env.run_context("lab", source="test")
    fs = findings(env)
    mine = {f.code: f for f in fs if f.entity == f"osd.{i}"}
    assert "OSD_DATA_UNMOUNTED" not in mine  # the old, causeless answer
    f = mine["OSD_NOT_ACTIVATED"]
    assert (f.runbook, f.target) == ("osd-activate", f"osd.{i}")
    assert f.evidence["flavour"] == "ceph-volume raw"
    assert f.evidence["device"] == lab.osd_device(i)
    assert f.evidence["device_ceph_fsid"] == lab.fsid and f.evidence["activate_safe"] is True
    assert str(lab.osd_dir(i)) in f.message and "BlueStore label" in f.message
    # the symptom points at the same runbook: no circle between remount and start
    assert mine["OSD_DOWN_OUT"].runbook == "osd-activate"
    for rb in ("osd-remount", "osd-start"):
        with pytest.raises(Refused, match="osd-activate"):
            plan(ctx, rb, f"osd.{i}")
    # check --json carries the flavour and its evidence
    r = cli(cfg, "check", "--json")
    assert '"flavour": "ceph-volume raw"' in r.stdout, r.stdout[-2000:]
    assert "BlueStore label" in r.stdout
    r = cli(cfg, "fix", "--finding", "OSD_NOT_ACTIVATED", "--yes")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "raw activate --device" in r.stdout and "verified" in r.stdout
    _assert_back(lab, env, i)


@sync
async def test_tui_fix_activates_the_raw_osd(lab: Lab, raw_not_activated: int,
                                             tmp_path: Path) -> None:
    i = raw_not_activated
    env = _env(lab, tmp_path)
    app = StordocApp(EnvBackend(env), "lab", refresh_s=0, refresh_timeout_s=120,
                     user="tui-test")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.state.outcome is not None, 120, "first data")
            await pilot.press("d")
            assert isinstance(app.screen, S.OsdScreen)
            row = osd_row(app, f"osd.{i}")
            assert row[1] == "down" and row[2] == "out"
            assert row[7].startswith("NOT ACTIVATED (/dev/loop")
            t = app.screen.query_one("#osds", VirtualTable)
            t.move_cursor(row=t.get_row_index(f"osd.{i}"))
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, S.OsdDetailScreen)
            detail = plain(app.screen.query_one("#detail"))
            assert "ceph-volume raw" in detail and "OSD_NOT_ACTIVATED" in detail
            await pilot.press("x")
            assert isinstance(app.screen, S.RunbookScreen)
            rb = app.screen
            assert (rb.runbook, rb.target_name) == ("osd-activate", f"osd.{i}")
            await wait_until(pilot, lambda: rb.plan is not None, 120, "the plan")
            await pilot.press("a")
            assert isinstance(app.screen, S.ConfirmModal)
            shown = plain(app.screen.query_one("#confirm-plan"))
            assert "raw activate --device /dev/loop" in shown and "ceph-osd" in shown
            await pilot.press("y")
            await wait_until(pilot, lambda: rb.done is not None, 300, "the runbook to end")
            assert rb.done is not None and rb.done.ok, rb.done
            log = "\n".join(str(line.text) for line in rb.query_one("#runlog").lines)
            assert "verified" in log
    finally:
        env.close()
    after = Env(load_settings(lab.config_path).model_copy(
        update={"journal": str(tmp_path / "after.db")}))
    try:
        _assert_back(lab, after, i)
    finally:
        after.close()


def test_slack_fix_button_activates_the_raw_osd(lab: Lab, raw_not_activated: int,
                                                tmp_path: Path, env: Env) -> None:
    i = raw_not_activated
    h = BotHarness(load_settings(lab.config_path),
                   {"lab": {"viewers": [], "operators": [OPS, OPS2], "two_person": True}},
                   str(tmp_path / "bot.db"), throttle_s=0.2)
    try:
        n = len(h.posts())
        h.slack.slash("health lab", OPS)
        msg = h.fake.wait_for(lambda f: [c for c in f.of("chat.postMessage")[n:]
                                         + f.of("chat.update")
                                         if "lab:" in str(c.params.get("text", ""))], 120)[0]
        text = all_text(msg)
        assert "OSD_NOT_ACTIVATED" in text and "ceph-volume raw" in text
        fixes = {h.bot.store.button(b["value"]).runbook: b["value"]  # type: ignore[union-attr]
                 for b in buttons(msg, "fix")}
        assert "osd-activate" in fixes and "osd-remount" not in fixes
        h.slack.press("fix", fixes["osd-activate"], OPS, msg.response["ts"])
        # a slow plan replaces the "still working" message: look at updates too
        planned = h.wait_post(f"Plan: osd-activate osd.{i}",
                              ("chat.postMessage", "chat.update"), timeout=120)
        assert "raw activate" in all_text(planned)
        confirm = buttons(planned, "confirm")[0]
        plan_ts = planned.params.get("ts") or planned.response["ts"]
        h.slack.press("confirm", confirm["value"], OPS2, plan_ts)
        closed = h.fake.wait_for(lambda f: [c for c in f.of("chat.update")
                                            if c.params.get("ts") == plan_ts
                                            and "verification" in all_text(c)], 300)[0]
        assert ":white_check_mark:" in all_text(closed), all_text(closed)
    finally:
        h.close()
    _assert_back(lab, env, i)


@pytest.mark.parametrize("layout", ["raw", "xfs"])
def test_other_layouts_come_up_healthy_with_no_finding(lab: Lab, layout: str) -> None:
    """A second, short-lived lab of another layout beside the session's one."""
    if layout == lab.layout:
        pytest.skip("the session's lab has this layout")
    base = Path("/var/tmp") / f"stordoc-lab-{layout}-{os.getpid()}"
    other = Lab(base, lab.ports.base + (300 if layout == "raw" else 500), layout,
                release=lab.release)
    try:
        other.up()
        assert other.kinds == (("raw",) * 3 if layout == "raw" else ("xfs",) * 3)
        e = Env(load_settings(other.config_path))
        try:
            deadline = time.monotonic() + 120
            while True:  # a fresh lab may still be peering: poll with a deadline
                fs = findings_of(e)
                if not fs or time.monotonic() > deadline:
                    break
                time.sleep(1)
            assert fs == [], [(f.code, f.message) for f in fs]
        finally:
            e.close()
    finally:
        other.down(quiet=True)
    assert not base.exists()
    assert not list(Path("/var/lib/ceph/osd").glob(f"{other.cv_cluster}-*"))


def findings_of(env: Env) -> list[Finding]:
    return list(env.check("lab", source="test").report.findings)
