"""A partial check (``--only CODES``) that could not look says so: unreachable (exit 3),
never OK, with the finding that says why (issue #37.3). Saved lab snapshots with one part
made unreadable, through the real CLI (text and JSON), the service the bot and the TUI
call, and a live check against monitors that do not answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checks.engine import Selection
from checks.model import Verdict
from core.service.snapshots import load
from tests.support.cli import cli, run_main, unreachable_config
from tests.support.fixture_snapshots import FIXTURES

PACIFIC = FIXTURES / "pacific"


def _copy(case: str, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    d = tmp_path / case
    shutil.copytree(PACIFIC / case, d)
    return d, json.loads((d / "snapshot.json").read_text())


def _write(d: Path, manifest: dict[str, Any]) -> str:
    (d / "snapshot.json").write_text(json.dumps(manifest))
    return str(d)


def ceph_down(tmp_path: Path, case: str = "healthy") -> str:
    """``case`` as if its monitors had not answered."""
    d, m = _copy(case, tmp_path)
    shutil.rmtree(d / "ceph")
    m.update(ceph=None, ceph_error="no monitor answered within 10 s")
    return _write(d, m)


def swift_down(tmp_path: Path, case: str = "swift-device-unmounted") -> str:
    d, m = _copy(case, tmp_path)
    (d / "swift.json").unlink()
    m.update(swift=None, swift_error="proxy 127.0.0.1:33010: connection refused")
    return _write(d, m)


def host_down(tmp_path: Path, host: str, case: str = "osd-unmounted-in") -> str:
    d, m = _copy(case, tmp_path)
    for rel in m["hosts"]:
        doc = json.loads((d / rel).read_text())
        if doc["name"] == host:
            doc.update(error="timed out after 10 s", facts=None, identity=None)
            (d / rel).write_text(json.dumps(doc))
    return _write(d, m)


def check_json(snap: str, only: str) -> tuple[int, dict[str, Any]]:
    rc, out, err = run_main("check", "--from", snap, "--only", only, "--json")
    assert err == ""
    return rc, json.loads(out)


def codes(doc: dict[str, Any]) -> set[str]:
    return {f["code"] for f in doc["findings"]}


def test_ceph_code_with_ceph_unreachable_is_unreachable(tmp_path: Path) -> None:
    snap = ceph_down(tmp_path)
    rc, doc = check_json(snap, "OSD_DOWN_OUT")
    assert (rc, doc["status"], doc["exit_code"]) == (3, "unreachable", 3)
    assert codes(doc) == {"CEPH_UNREACHABLE"}
    rc, out, _ = run_main("check", "--from", snap, "--only", "OSD_DOWN_OUT")
    assert rc == 3
    assert "OK" not in out.splitlines()[0] and "no incidents" not in out
    assert "CEPH_UNREACHABLE" in out and "no monitor answered" in out


def test_service_outcome_is_unreachable_for_every_front_end(tmp_path: Path) -> None:
    """The verdict is the core's (``CheckReport.verdict``): Slack's health reply and the
    TUI's headline render it, they decide nothing."""
    from bot import render as r
    from tui.clusters import VERDICT

    out = load(ceph_down(tmp_path), ["OSD_DOWN_OUT"]).outcome
    assert out.report.verdict is Verdict.UNREACHABLE
    assert VERDICT[int(out.report.verdict)] == "UNREACHABLE"
    text = str(r.health_reply("lab", out.report.verdict, out.incidents,
                              out.report.findings, lambda inc: None, None).messages)
    assert "CEPH_UNREACHABLE" in text and "All checks passed" not in text


def test_swift_code_with_swift_unreachable_is_unreachable(tmp_path: Path) -> None:
    rc, doc = check_json(swift_down(tmp_path), "SWIFT_DEVICE_UNMOUNTED")
    assert (rc, doc["status"]) == (3, "unreachable")
    assert codes(doc) == {"SWIFT_UNREACHABLE"}


def test_host_code_with_its_host_unreachable_is_unreachable(tmp_path: Path) -> None:
    rc, doc = check_json(host_down(tmp_path, "node3"), "OSD_DATA_UNMOUNTED")
    assert (rc, doc["status"]) == (3, "unreachable")
    assert codes(doc) == {"HOST_UNREACHABLE"}
    assert [f["entity"] for f in doc["findings"]] == ["host node3"]


def test_a_part_the_codes_do_not_read_leaves_the_verdict_alone(tmp_path: Path) -> None:
    """Ceph down says nothing about a Swift device, nor a silent host about a pool."""
    rc, doc = check_json(ceph_down(tmp_path, "swift-device-unmounted"),
                         "SWIFT_DEVICE_UNMOUNTED")
    assert (rc, doc["status"], codes(doc)) == (2, "crit", {"SWIFT_DEVICE_UNMOUNTED"})
    rc, doc = check_json(host_down(tmp_path, "node3", "healthy"), "POOL_PG_NUM_LOW")
    assert (rc, doc["status"], codes(doc)) == (0, "ok", set())


def test_what_could_not_look_and_what_was_found_are_both_shown(tmp_path: Path) -> None:
    """Another host silent: the unmounted OSD found on node3 is shown beside it."""
    rc, doc = check_json(host_down(tmp_path, "node1"), "OSD_DATA_UNMOUNTED")
    assert rc == 3
    assert {(f["code"], f["entity"]) for f in doc["findings"]} == {
        ("OSD_DATA_UNMOUNTED", "osd.2"), ("HOST_UNREACHABLE", "host node1")}


@pytest.mark.parametrize("only,part", [("OSD_DOWN_OUT", "ceph"),
                                       ("SWIFT_DEVICE_NO_DIR", "hosts"),
                                       ("FS_READONLY", "hosts")])
def test_selection_reads(only: str, part: str) -> None:
    assert part in Selection.of([only]).parts


def test_live_only_check_with_no_monitor_is_unreachable(tmp_path: Path) -> None:
    """The real CLI in its own process against monitors that do not answer."""
    cfg = unreachable_config(tmp_path)
    p = cli(cfg, "check", "--only", "OSD_DOWN_OUT", "--no-host-facts", "--json")
    assert p.returncode == 3, p.stderr
    doc = json.loads(p.stdout)
    assert doc["status"] == "unreachable" and "CEPH_UNREACHABLE" in codes(doc)
