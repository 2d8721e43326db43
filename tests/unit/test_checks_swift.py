"""checks.swift_rings on the lab's captured rings/recon, and on rings built with the real
swift RingBuilder for the cases the lab does not break (zero weight, empty device, ...)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from swift.common.ring import RingBuilder

from checks.engine import run_checks
from checks.model import CheckContext, Thresholds
from checks.swift_rings import ring_findings
from storage.model import ClusterSnapshot, ReconHost, SwiftState
from storage.swift import read_ring
from tests.unit.test_swift_rings import swift_state

SWIFT_CODES_PREFIX = "SWIFT_"


def check(st: SwiftState, th: Thresholds | None = None) -> list:
    snap = ClusterSnapshot(cluster="lab", taken_at=st.collected_at, swift=st)
    rep = run_checks(snap, th, now=st.collected_at)
    return [f for f in rep.findings if f.code.startswith(SWIFT_CODES_PREFIX)]


def codes(findings: list) -> set[tuple[str, str]]:
    return {(f.code, f.entity) for f in findings}


def test_healthy_lab_rings_give_no_findings(tmp_path: Path) -> None:
    # 2^9 = 512 partitions over 4 drives = 128 per drive (>= 100), 3 replicas in 4 zones
    assert check(swift_state("healthy", tmp_path)) == []


def test_drift_builder_newer_than_ring(tmp_path: Path) -> None:
    f = check(swift_state("ring-bad-drift", tmp_path))
    c = codes(f)
    assert ("SWIFT_BUILDER_NEWER_THAN_RING", "object ring") in c
    assert ("SWIFT_RING_UNBALANCED", "object ring") in c
    newer = next(x for x in f if x.code == "SWIFT_BUILDER_NEWER_THAN_RING")
    assert newer.runbook == "swift-ring-rebalance" and newer.target == "object"
    # the rebalance it wants is blocked for a while by min_part_hours 1: told as info
    mph = [x for x in f if x.code == "SWIFT_MIN_PART_HOURS"]
    assert len(mph) == 1 and mph[0].severity.label == "info"
    assert not any(x.entity.startswith(("account", "container")) for x in f)


def test_replicas_exceed_devices_and_zones(tmp_path: Path) -> None:
    c = codes(check(swift_state("ring-bad-replicas", tmp_path)))
    assert ("SWIFT_REPLICAS_EXCEED_DEVICES", "object ring") in c
    assert ("SWIFT_REPLICAS_EXCEED_ZONES", "object ring") in c


def test_part_power_rule_uses_threshold(tmp_path: Path) -> None:
    st = swift_state("healthy", tmp_path)
    f = check(st, Thresholds(swift_min_parts_per_device=200))
    low = [x for x in f if x.code == "SWIFT_PART_POWER_LOW"]
    assert {x.entity for x in low} == {"object ring", "account ring", "container ring"}
    assert low[0].evidence["partitions_per_device"] == 128.0
    high = check(st, Thresholds(swift_max_parts_per_device=300))
    assert {x.code for x in high} == {"SWIFT_PART_POWER_HIGH"}  # 384 replicas per drive


def test_md5_mismatch_between_servers(tmp_path: Path) -> None:
    st = swift_state("healthy", tmp_path)
    r0 = st.recon[0]
    stale = dict(r0.ringmd5)
    key = next(k for k in stale if k.endswith("object.ring.gz"))
    stale[key] = "0" * 32
    bad = dataclasses.replace(r0, ringmd5=stale, swiftconfmd5="f" * 32)
    st2 = dataclasses.replace(st, recon=(bad,) + st.recon[1:])
    f = check(st2)
    ep = f"{r0.ip}:{r0.port}"
    assert codes(f) == {("SWIFT_RING_MD5_MISMATCH", f"object ring {ep}"),
                        ("SWIFT_CONF_MD5_MISMATCH", f"swift server {ep}")}


def test_proxy_unhealthy(tmp_path: Path) -> None:
    st = dataclasses.replace(swift_state("healthy", tmp_path), proxy_healthy=False,
                             proxy_error="HTTP 503: Service Unavailable")
    f = check(st)
    assert [(x.code, x.severity.label) for x in f] == [("SWIFT_PROXY_UNHEALTHY", "crit")]


def _builder(tmp: Path, weights: list[float], replicas: int = 3, part_power: int = 8,
             rebalance: bool = True) -> RingBuilder:
    b = RingBuilder(part_power, replicas, 1)
    for i, w in enumerate(weights):
        b.add_dev({"id": i, "region": 1, "zone": i + 1, "ip": "127.0.0.2", "port": 6200,
                   "device": f"d{i + 1}", "weight": w})
    if rebalance:
        b.rebalance(seed=1)
    return b


def _write(tmp: Path, b: RingBuilder, kind: str = "object") -> None:
    b.save(str(tmp / f"{kind}.builder"))
    b.get_ring().save(str(tmp / f"{kind}.ring.gz"))


def test_zero_weight_device_and_weighted_device_without_partitions(tmp_path: Path) -> None:
    b = _builder(tmp_path, [100, 100, 100, 100])
    b.set_dev_weight(3, 0)  # being drained (not rebalanced yet: still holds partitions)
    b.add_dev({"id": 4, "region": 1, "zone": 5, "ip": "127.0.0.3", "port": 6200,
               "device": "d5", "weight": 100})  # added, ring written without a rebalance
    _write(tmp_path, b)
    r = read_ring(str(tmp_path), "object")
    f = ring_findings(r, CheckContext(now=0.0))
    by = {(x.code, x.entity): x for x in f}
    z = by[("SWIFT_DEVICE_ZERO_WEIGHT", "object ring d4@127.0.0.2")]
    assert z.severity.label == "info" and z.evidence["parts"] > 0
    n = by[("SWIFT_DEVICE_NO_PARTITIONS", "object ring d5@127.0.0.3")]
    assert n.runbook == "swift-ring-rebalance" and n.target == "object"
    # with the settings' host names: one spelling per device, the ring entry as evidence
    named = {x.code: x for x in ring_findings(r, CheckContext(now=0.0),
                                              {"127.0.0.2": "node1", "127.0.0.3": "node2"})}
    z = named["SWIFT_DEVICE_ZERO_WEIGHT"]
    assert z.entity == "object ring d4@node1" and z.message.startswith("d4@node1 has weight 0")
    assert z.evidence["ring_entry"] == "d4@127.0.0.2:6200"
    assert named["SWIFT_DEVICE_NO_PARTITIONS"].entity == "object ring d5@node2"
    assert r.builder_matches_ring is True  # ring written from this very builder


def test_unbalanced_and_dispersion_from_builder(tmp_path: Path) -> None:
    # 2 zones with very different weights and 3 replicas: Swift cannot both balance and
    # disperse; the builder's own figures drive the findings
    b = RingBuilder(8, 3, 1)
    for i, (z, w) in enumerate([(1, 1000), (2, 10), (2, 10)]):
        b.add_dev({"id": i, "region": 1, "zone": z, "ip": "127.0.0.2", "port": 6200,
                   "device": f"d{i + 1}", "weight": w})
    b.rebalance(seed=1)
    _write(tmp_path, b)
    r = read_ring(str(tmp_path), "object")
    assert r.balance is not None and r.balance > 5
    f = ring_findings(r, CheckContext(thresholds=Thresholds(swift_dispersion_max=-1.0),
                                      now=0.0))
    c = {x.code for x in f}
    assert {"SWIFT_RING_UNBALANCED", "SWIFT_DISPERSION_HIGH",
            "SWIFT_REPLICAS_EXCEED_ZONES"} <= c


def test_ring_without_builder_is_reported(tmp_path: Path) -> None:
    b = _builder(tmp_path, [100, 100, 100], part_power=9)
    b.get_ring().save(str(tmp_path / "object.ring.gz"))
    r = read_ring(str(tmp_path), "object")
    f = ring_findings(r, CheckContext(now=0.0))
    assert [(x.code, x.message) for x in f] == [
        ("SWIFT_BUILDER_RING_MISMATCH", "object: builder missing")]


def test_recon_only_unmounted_without_host_facts(tmp_path: Path) -> None:
    st = swift_state("d2-unmounted", tmp_path)
    f = check(st)
    assert [(x.code, x.entity, x.target, x.runbook) for x in f] == [
        ("SWIFT_DEVICE_UNMOUNTED", "d2@127.0.0.3", "d2@127.0.0.3",
         "swift-device-remount")]
    assert sorted(f[0].evidence["recon_unmounted_on"]) == [
        "account@17411", "container@17412", "object@17413"]


def test_recon_error_host_does_not_invent_findings(tmp_path: Path) -> None:
    st = swift_state("healthy", tmp_path)
    dead = ReconHost(ip="127.0.0.3", port=17413, server="object",
                     error="http://127.0.0.3:17413/recon/unmounted: ConnectionError")
    st2 = dataclasses.replace(st, recon=tuple(r for r in st.recon
                                              if (r.ip, r.port) != ("127.0.0.3", 17413))
                              + (dead,))
    assert check(st2) == []
