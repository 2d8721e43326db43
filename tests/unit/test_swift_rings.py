"""storage.swift on the lab's real rings and builders (tests/fixtures/swift/<scenario>/).

Each scenario dir holds the ring.gz/builder files copied from the lab's swift_dir and the
recon answers collected at the same moment (recon.json, with the files' original mtimes,
which git does not keep: ``swift_dir`` restores them in a temp copy).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from storage.model import SwiftState
from storage.swift import collect_swift, read_ring, recon_from_raw, ring_kinds
from storage.targets import SwiftTarget

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "swift"


def swift_dir(scenario: str, tmp: Path) -> Path:
    src = FIX / scenario
    dst = tmp / scenario
    shutil.copytree(src, dst)
    meta = json.loads((src / "recon.json").read_text())
    for name, mtime in meta["mtimes"].items():
        os.utime(dst / name, (mtime, mtime))
    return dst


def swift_state(scenario: str, tmp: Path) -> SwiftState:
    """The SwiftState the collector built at capture time, from files + recorded recon."""
    d = swift_dir(scenario, tmp)
    meta = json.loads((d / "recon.json").read_text())
    now = meta["collected_at"]
    rings = tuple(read_ring(str(d), k, now) for k in ring_kinds(str(d)))
    recon = tuple(recon_from_raw(r["ip"], r["port"], r["server"], r["raw"], r["error"])
                  for r in meta["recon"])
    local = {r.ring_path: r.ring_md5 for r in rings if r.ring_path and r.ring_md5}
    # recon keys are the lab's paths; local ones are the temp copy: compared by file name
    return SwiftState(rings=rings, recon=recon, proxy_url="http://127.0.0.1:17410",
                      proxy_healthy=meta["proxy_healthy"], proxy_error=meta["proxy_error"],
                      local_ring_md5=local, local_swiftconf_md5=meta["local_swiftconf_md5"],
                      collected_at=now)


def test_healthy_rings(tmp_path: Path) -> None:
    d = swift_dir("healthy", tmp_path)
    assert ring_kinds(str(d)) == ["account", "container", "object"]
    r = read_ring(str(d), "object")
    assert r.error is None
    assert r.part_power == 9 and r.replicas == 3.0 and r.builder_replicas == 3.0
    assert [(x.device, x.zone, x.parts) for x in r.devices] == [
        ("d1", 1, 384), ("d2", 2, 384), ("d3", 3, 384), ("d4", 4, 384)]
    assert sum(x.parts for x in r.devices) == 512 * 3
    assert r.balance == 0.0 and r.dispersion == 0.0
    assert r.builder_matches_ring is True
    assert r.min_part_hours == 1 and r.last_rebalance_hours_ago is not None
    assert r.ring_md5 and len(r.ring_md5) == 32


def test_recon_md5_of_lab_matches_local_ring_file(tmp_path: Path) -> None:
    st = swift_state("healthy", tmp_path)
    obj = st.ring("object")
    assert obj is not None
    for rh in st.recon:
        served = {os.path.basename(p): m for p, m in rh.ringmd5.items()}
        assert served["object.ring.gz"] == obj.ring_md5
        assert rh.swiftconfmd5 == st.local_swiftconf_md5


def test_drift_builder_changed_without_ring(tmp_path: Path) -> None:
    d = swift_dir("ring-bad-drift", tmp_path)
    r = read_ring(str(d), "object")
    assert r.builder_matches_ring is False
    assert r.builder_mtime is not None and r.ring_mtime is not None
    assert r.builder_mtime > r.ring_mtime
    # the live ring still has d4 at 100, the builder at 50
    assert {x.device: x.weight for x in r.devices}["d4"] == 100.0
    assert r.balance is not None and r.balance > 5.0
    assert read_ring(str(d), "account").builder_matches_ring is True


def test_replicas_builder_plans_more_than_the_ring(tmp_path: Path) -> None:
    r = read_ring(str(swift_dir("ring-bad-replicas", tmp_path)), "object")
    assert r.builder_replicas == 5.0 and r.replicas == 3.0
    assert r.builder_matches_ring is False


def test_recon_unmounted_from_real_answers(tmp_path: Path) -> None:
    st = swift_state("d2-unmounted", tmp_path)
    on_node2 = [r for r in st.recon if r.ip == "127.0.0.3"]
    assert len(on_node2) == 3 and all(r.unmounted == ("d2",) for r in on_node2)
    assert {r.server for r in on_node2} == {"account", "container", "object"}


def test_missing_builder_and_corrupt_ring_are_errors_not_exceptions(tmp_path: Path) -> None:
    d = swift_dir("healthy", tmp_path)
    (d / "object.builder").unlink()
    (d / "container.ring.gz").write_bytes(b"not a ring")
    obj = read_ring(str(d), "object")
    assert obj.builder_path is None and obj.error is None and obj.builder_matches_ring is None
    assert obj.part_power == 9 and len(obj.devices) == 4
    cont = read_ring(str(d), "container")
    assert cont.error and "container.ring.gz" in cont.error


def test_collect_swift_unreachable_parts_become_errors(tmp_path: Path) -> None:
    d = swift_dir("healthy", tmp_path)
    # the ring's servers (127.0.0.2-4, lab ports) are not running for this test's port
    # range: use a proxy URL on a closed loopback port and a short timeout
    st, err = collect_swift(SwiftTarget(proxy_url="http://127.0.0.1:9", swift_dir=str(d),
                                        recon_timeout_s=0.5))
    assert err is None and st is not None
    assert st.proxy_healthy is False and st.proxy_error
    assert len(st.rings) == 3
    st2, err2 = collect_swift(SwiftTarget(swift_dir=str(tmp_path / "nope")))
    assert st2 is None and err2 and "does not exist" in err2


@pytest.mark.parametrize("scenario", ["healthy", "ring-bad-drift"])
def test_parts_per_device_from_ring_sum_to_partition_replicas(scenario: str,
                                                              tmp_path: Path) -> None:
    r = read_ring(str(swift_dir(scenario, tmp_path)), "object")
    assert sum(x.parts for x in r.devices) == int(2 ** r.part_power * r.replicas)
