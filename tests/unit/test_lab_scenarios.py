"""The lab's fault registry and its release seam, without daemons: a bad option is a
ValueError before anything is done, the CLI's options come from the registry, and every
Ceph/Swift command line the lab writes goes through ``Lab.system.argv``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lab import SCENARIOS, Lab, scenarios
from lab.config import config_text
from lab.swift_conf import start_script
from lab.system import System
from stordoc.cli import main


def test_registry_is_explicit_and_complete() -> None:
    assert SCENARIOS == tuple(scenarios.REGISTRY)
    assert SCENARIOS[:4] == ("osd-unmounted", "osd-not-activated", "cache-tier-misconfigured",
                             "pool-few-pgs")
    # + 3 disk, 3 manager/monitor/placement, 3 daemon scenarios, osd-slow-ops, 1 scrub,
    # 2 flap, 1 unfound, 2 fill/maintenance
    assert len(SCENARIOS) == 30
    assert SCENARIOS[20:23] == ("osd-crash", "osd-hung", "osd-restart-loop")
    assert {"osd-slow-ops", "pg-inconsistent", "osd-flapping", "pg-stuck", "pg-unfound",
            "cluster-nearfull", "maintenance-left"} <= set(SCENARIOS)
    for name, s in scenarios.REGISTRY.items():
        assert s.name == name and s.summary
        for opt in (*s.options, *s.heal_options):
            assert opt.name in scenarios.OPTION_NAMES


@pytest.mark.parametrize(("call", "message"), [
    (lambda lab: lab.break_("osd-unmounted", osd=3),
     r"osd-unmounted needs a xfs OSD; this lab's are osd.0, osd.1, osd.2 \(layout mixed\)"),
    (lambda lab: lab.break_("osd-not-activated", osd=0),
     r"osd-not-activated needs a raw OSD; this lab's are osd.3 \(layout mixed\)"),
    (lambda lab: lab.heal("osd-unmounted", osd=4), r"the lab has osd.0-osd.3, not osd.4"),
    (lambda lab: lab.break_("swift-device-full", device="d\u0662"),
     r"the lab's Swift devices are d1, d2, d3, d4"),
    (lambda lab: lab.heal("swift-device-unmounted", device="../d1"),
     r"the lab's Swift devices are d1, d2, d3, d4"),
    (lambda lab: lab.break_("swift-ring-stale", server="proxy"),
     r"the lab's Swift servers are object, container, account"),
    (lambda lab: lab.break_("swift-ring-bad", mode="bogus"), r"--mode must be one of"),
    (lambda lab: lab.break_("nope"), r"unknown scenario 'nope'; known: osd-unmounted"),
    (lambda lab: lab.break_("osd-slow-ops", osd=7), r"the lab has osd.0-osd.3, not osd.7"),
])
def test_bad_option_is_a_value_error_and_touches_nothing(tmp_path: Path, call: object,
                                                         message: str) -> None:
    lab = Lab(tmp_path / "lab", 29000, "mixed")  # never brought up: any action would fail
    with pytest.raises(ValueError, match=message):
        call(lab)  # type: ignore[operator]
    assert not (tmp_path / "lab").exists()


def test_cli_options_come_from_the_registry(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "lab"
    base.mkdir()
    (base / "lab.json").write_text('{"port_base": 29000, "osd_layout": "mixed"}')
    assert main(["lab", "break", "osd-unmounted", "--osd", "3", "--dir", str(base)]) == 64
    err = capsys.readouterr().err
    assert "needs a xfs OSD" in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1
    with pytest.raises(SystemExit) as e:
        main(["lab", "heal", "swift-ring-bad", "--mode", "drift", "--dir", str(base)])
    assert e.value.code == 64  # heal reads no --mode: no scenario's heal declares it
    with pytest.raises(SystemExit) as e:
        main(["lab", "break", "swift-device-full", "--device", "d9", "--dir", str(base)])
    assert e.value.code == 64
    err = capsys.readouterr().err
    assert "invalid choice: 'd9'" in err


class Chroot(System):
    name = "chroot"

    def argv(self, argv: Sequence[str]) -> list[str]:
        return ["chroot", "/srv/rootfs", *argv]


def test_every_ceph_and_swift_command_line_goes_through_the_release_seam(
        tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", 29000, "mixed", system=Chroot())
    on_host = str(lab.on_host_script)
    assert lab.ceph_cluster.osd_start_argv(host="node2")[:5] == [
        on_host, "node2", "chroot", "/srv/rootfs", "ceph-osd"]
    assert lab.ceph_cluster.ceph_volume_argv("raw", "list")[:4] == \
        ["chroot", "/srv/rootfs", "env", f"CEPH_CONF={lab.conf}"]
    cfg = config_text(lab)
    assert sum(cfg.count(f'osd_start = ["{on_host}", "node{n}", "chroot", "/srv/rootfs", '
                         '"ceph-osd"') for n in range(1, lab.n_hosts + 1)) == lab.n_hosts
    assert cfg.count('osd_activate_raw = ["chroot", "/srv/rootfs", "env"') == lab.n_hosts
    for role, n in (("server", 4), ("replicator", 3)):  # the servers (and the proxy)
        script = start_script(lab, role)
        assert script.count("setsid chroot /srv/rootfs /usr/bin/swift-") == n
    plain = Lab(tmp_path / "lab", 29000, "mixed")
    assert plain.ceph_cluster.osd_start_argv(3) == [
        str(plain.on_host_script), "node4", "ceph-osd", "-c", str(plain.conf), "-i", "3"]
    with pytest.raises(ValueError, match="needs its host"):
        plain.ceph_cluster.osd_start_argv()
