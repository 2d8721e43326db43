"""Ceph's own device view (``ceph device ls``, checks/device_health.py): the manager's
device table in the shape ``DeviceState::dump`` (src/mgr/DaemonState.cc) writes it --
``location`` [{host, dev, path}], ``daemons``, the devicehealth prediction as utime_t
stamps only when one was made, ``wear_level`` only when the device reports one -- its
collection, its judgement and its one incident with the host's disk findings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from checks.device_health import check_device_health
from checks.disks import check_disks
from checks.incidents import correlate
from checks.model import CheckContext, Severity, Thresholds
from storage.ceph.captures import load_raw_dir
from storage.ceph.client import CephCommandError
from storage.ceph.parse_devices import parse_device_ls
from storage.ceph.state import build_state
from storage.model import CephDevice, CephState, ClusterSnapshot, HostFacts
from tests.unit.test_disks import NOW, SHUT, _sdb_host
from tests.unit.test_hosts_facts import ceph_state

FIX = Path(__file__).resolve().parents[1] / "fixtures"
DEVICE_LS = json.loads((FIX / "ceph-devicehealth" / "device_ls.json").read_text())
DAY = 86400.0


def _ceph(devices: Any = DEVICE_LS) -> CephState:
    """The captured lab state (osd.1 on node2) with this ``device ls`` answer."""
    return dataclasses.replace(ceph_state("healthy"), devices=parse_device_ls(devices))


def _snap(ceph: CephState, *facts: HostFacts) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="lab", taken_at=NOW, ceph=ceph, swift=None,
                           hosts={f.name: f for f in facts},
                           host_facts_collected=bool(facts))


def _predicted(max_days: float, min_days: float = 7.0) -> list[dict[str, Any]]:
    def stamp(days: float) -> str:
        import time
        return time.strftime("%Y-%m-%dT%H:%M:%S.000000+0000", time.gmtime(NOW + days * DAY))
    return [{"devid": "WDC_X", "location": [{"host": "node2", "dev": "sdb", "path": ""}],
             "daemons": ["osd.1"], "life_expectancy_min": stamp(min_days),
             "life_expectancy_max": stamp(max_days), "life_expectancy_stamp": stamp(-1)}]


def test_device_ls_parses_the_real_shape() -> None:
    mon, osd1, osd0 = parse_device_ls(DEVICE_LS)
    assert mon == CephDevice("QEMU_HARDDISK_QM00001", (("node1", "sda"),), ("mon.a",))
    assert osd1.location == (("node2", "sdb"),) and osd1.daemons == ("osd.1",)
    assert osd1.life_expectancy_min == 1_796_428_800.0  # 2026-12-05T00:00:00Z
    assert osd1.life_expectancy_max == 1_797_638_400.0  # 2026-12-19T00:00:00Z
    assert osd1.life_expectancy_stamp is not None and osd1.wear_level is None
    assert osd0.life_expectancy_max is None and osd0.wear_level is not None
    assert round(osd0.wear_level, 2) == 0.93
    # the module's "no prediction" forms, and junk, are no prediction
    (d,) = parse_device_ls([{"devid": "x", "life_expectancy_max": "0.000000",
                             "life_expectancy_min": "", "location": "junk", "daemons": None}])
    assert (d.life_expectancy_max, d.life_expectancy_min, d.location) == (None, None, ())
    assert parse_device_ls({"not": "a list"}) == ()


def test_a_snapshot_from_before_has_no_devices_and_still_loads() -> None:
    raw = load_raw_dir(FIX / "ceph-pacific" / "healthy")
    assert "device ls" not in raw
    st = build_state(raw)
    assert st.devices == () and st.osds
    assert list(check_device_health(_snap(st), CheckContext(now=NOW))) == []
    raw["device ls"] = DEVICE_LS
    assert len(build_state(raw).devices) == 3


def test_a_predicted_failure_is_device_failing_on_the_disk_naming_its_osds() -> None:
    (f,) = [f for f in check_device_health(_snap(_ceph()), CheckContext(now=NOW))
            if "sdb" in f.entity]
    assert (f.code, f.entity) == ("DEVICE_FAILING", "disk /dev/sdb@node2")
    # max 2026-12-19 is within mark_out_threshold (4 weeks) of now (2026-11-27): crit
    assert f.severity == Severity.CRIT
    assert ("/dev/sdb on node2 (osd.1): Ceph's devicehealth predicts failure between "
            "2026-12-05 and 2026-12-19 (predicted 2026-11-26)") == f.message
    assert f.evidence["osds"] == [1] and f.evidence["disk_key"] == "node2:/dev/sdb"
    assert "`ceph osd out 1`" in f.evidence["manual"]
    assert f.evidence["devid"] == "WDC_WD30EFRX-68EUZN0_WD-WCC4N1KPRKPX"


def test_thresholds_wear_and_no_prediction() -> None:
    ctx = CheckContext(now=NOW)

    def got(devices: Any, c: CheckContext = ctx) -> list[tuple[Severity, str]]:
        return [(f.severity, f.message) for f in check_device_health(_snap(_ceph(devices)), c)]

    ((sev, _),) = got(_predicted(35))  # 5 weeks: within warn_threshold only
    assert sev == Severity.WARN
    assert got(_predicted(60, 50)) == []  # beyond 6 weeks: Ceph raises nothing either
    assert got(_predicted(60, 50), CheckContext(Thresholds(device_health_warn_s=61 * DAY),
                                                NOW))
    # no prediction at all (most devices) says nothing: unknown is not failing
    assert got([{"devid": "a", "location": [{"host": "node1", "dev": "sdc"}],
                 "daemons": ["osd.0"]}]) == []
    worn = [m for s, m in got(DEVICE_LS) if "sdc" in m]
    assert worn == ["/dev/sdc on node1 (osd.0): Ceph reports it 93% worn"]
    assert got([{**DEVICE_LS[2], "wear_level": 0.5}]) == []


def test_one_incident_with_the_hosts_disk_findings() -> None:
    h = _sdb_host(SHUT)  # osd.1's and Swift d2's disk: the XFS shut down, SMART unknown
    s = _snap(_ceph(), h)
    ctx = CheckContext(now=NOW)
    ceph = [f for f in check_device_health(s, ctx) if "sdb" in f.entity]
    disk = list(check_disks(s, ctx))
    assert "DEVICE_FAILING" not in {f.code for f in disk}  # SMART unknown: not its word
    incs = correlate([*disk, *ceph], s)
    top = incs[0]
    assert (top.root.code, top.root.entity) == ("FS_SHUTDOWN", "disk /dev/sdb@node2")
    assert ("DEVICE_FAILING", "disk /dev/sdb@node2") in {f.key for f in top.consequences}
    # SMART failing too: one DEVICE_FAILING of the disk, saying both
    bad = _sdb_host(SHUT, smart="smartctl-ata-failing.json")
    s2 = _snap(_ceph(), bad)
    assert [f for f in check_device_health(s2, ctx) if "sdb" in f.entity] == []
    (f,) = [f for f in check_disks(s2, ctx) if f.code == "DEVICE_FAILING"]
    assert "SMART: FAILED" in f.message and "devicehealth predicts failure" in f.message
    assert f.evidence["ceph_prediction"]["life_expectancy_max"] == "2026-12-19"


class _Client:
    """``collect_raw``'s view of a cluster whose manager cannot answer ``device ls``."""

    def __init__(self) -> None:
        self.raw = load_raw_dir(FIX / "ceph-pacific" / "healthy")

    def mon(self, prefix: str, **args: Any) -> Any:
        if prefix not in self.raw and prefix != "osd pool ls":
            raise CephCommandError(prefix, -22, "unknown")
        return self.raw.get(prefix if prefix != "osd pool ls" else "osd pool ls detail")

    def mgr(self, prefix: str, **args: Any) -> Any:
        if prefix in ("device ls", "pg dump"):
            raise CephCommandError(prefix, -22, "unrecognized command")
        return self.raw.get(prefix)


def test_a_failed_device_ls_is_an_error_not_a_failed_collection() -> None:
    from storage.ceph.collect import collect_raw

    raw = collect_raw(_Client())  # type: ignore[arg-type]
    assert "unrecognized command" in raw["errors"]["device ls"]
    assert raw.get("osd df") and "device ls" not in raw  # the manager was not given up on
    assert not any("did not answer" in e for e in raw["errors"].values())
    st = build_state(raw)
    assert st.devices == () and st.mgr is not None
    assert list(check_device_health(_snap(st), CheckContext(now=NOW))) == []
