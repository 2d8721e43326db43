"""Dispersion: the partition and primary nodes stordoc computes agree with Swift's own
Ring.get_nodes, and the percentages and findings on copies found / missing / not asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from swift.common.ring import Ring, RingBuilder

from checks.model import CheckContext, Thresholds
from checks.swift_dispersion import dispersion_summary, part_findings
from storage.dispersion import hash_prefix_suffix, partition, primary_nodes
from storage.model import Copy, DispersionPart, DispersionState, SwiftState
from storage.swiftlib import RingData


def test_partition_and_nodes_agree_with_swift(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import swift.common.utils as su

    conf = tmp_path / "swift.conf"
    conf.write_text("[swift-hash]\nswift_hash_path_prefix = pre\n"
                    "swift_hash_path_suffix = suf\n")
    pre, suf = hash_prefix_suffix(str(conf))
    assert (pre, suf) == (b"pre", b"suf")
    monkeypatch.setattr(su, "HASH_PATH_PREFIX", pre)
    monkeypatch.setattr(su, "HASH_PATH_SUFFIX", suf)
    b = RingBuilder(8, 3, 1)
    for i in range(5):
        b.add_dev({"id": i, "region": 1, "zone": i, "ip": f"127.0.0.{i + 2}", "port": 6200,
                   "device": f"d{i}", "weight": 100})
    b.rebalance(seed=1)
    b.get_ring().save(str(tmp_path / "object.ring.gz"))
    ring = Ring(str(tmp_path), ring_name="object")
    data = RingData.load(str(tmp_path / "object.ring.gz"))
    for i in range(50):
        part, nodes = ring.get_nodes("AUTH_test", "stordoc_dispersion_objects", f"o-{i}")
        mine = partition(pre, suf, data._part_shift, "AUTH_test",
                         "stordoc_dispersion_objects", f"o-{i}")
        assert mine == part
        assert [d["id"] for d in primary_nodes(data, mine)] == [n["id"] for n in nodes]
    cpart, _ = ring.get_nodes("AUTH_test", "stordoc_dispersion_3")
    assert partition(pre, suf, data._part_shift, "AUTH_test", "stordoc_dispersion_3") == cpart


def test_hash_conf_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        hash_prefix_suffix(str(tmp_path / "nope.conf"))


def _copies(spec: list[tuple[str, str, int | None]]) -> tuple[Copy, ...]:
    return tuple(Copy("object", name, "127.0.0.3", 6200, dev, 7, status)
                 for name, dev, status in spec)


def test_missing_copy_names_the_device_and_percentage() -> None:
    copies = _copies([(f"o{i}", d, 200) for i in range(4) for d in ("d1", "d2", "d3")])
    copies = copies[:-1] + _copies([("o3", "d3", 404)])
    part = DispersionPart("object", 4, 3, copies)
    assert part.expected == 12 and part.found == 11 and part.missing == 1
    assert part.pct_found == pytest.approx(100 * 11 / 12)
    ctx = CheckContext(Thresholds(), 0.0)
    (f,) = part_findings(part, ctx)
    assert f.code == "SWIFT_DISPERSION_OBJECT_COPIES" and f.severity.label == "warn"
    assert f.entity == "object ring d3@127.0.0.3"  # no host configured: its address
    assert "91.7% of copies found (11 of 12" in f.message and "lacks 1 copy" in f.message
    assert f.evidence["names"] == ["o3"]
    # below the crit percentage
    (f,) = part_findings(part, CheckContext(Thresholds(swift_dispersion_copies_crit_pct=95),
                                            0.0))
    assert f.severity.label == "crit"


def test_a_lost_object_is_crit_and_not_asked_is_not_missing() -> None:
    lost = _copies([("o1", "d1", 404), ("o1", "d2", 404), ("o1", "d3", 404)])
    ok = _copies([(f"o{i}", d, 200) for i in range(2, 40) for d in ("d1", "d2", "d3")])
    part = DispersionPart("object", 39, 3, lost + ok)
    fs = part_findings(part, CheckContext(Thresholds(), 0.0))
    assert {f.severity.label for f in fs} == {"crit"} and len(fs) == 3
    assert "1 object(s) have no copy left" in fs[0].message
    down = DispersionPart("object", 2, 3, _copies([("o1", "d1", None), ("o1", "d2", 200),
                                                   ("o1", "d3", 200)]))
    assert down.errors == 1 and down.missing == 0 and down.pct_found == 100.0
    assert part_findings(down, CheckContext(Thresholds(), 0.0)) == []


def test_summary_lines() -> None:
    sw = SwiftState((), (), dispersion=None)
    assert "not sampled" in dispersion_summary(sw).line()
    sw = SwiftState((), (), dispersion=DispersionState(populated=False))
    assert "not populated" in dispersion_summary(sw).line()
    part = DispersionPart("object", 1, 3, _copies([("o", "d1", 200), ("o", "d2", 200),
                                                   ("o", "d3", 404)]))
    sw = SwiftState((), (), dispersion=DispersionState(True, "AUTH_t", part, None))
    s = dispersion_summary(sw)
    assert s.state == "missing copies" and s.missing == 1
    assert s.line() == "dispersion: objects 66.7% of copies (1 sampled), 1 missing"


def test_tui_note_and_slack_ring_show_the_figures() -> None:
    from bot.render import server_lines
    from tui.views import swift_note

    part = DispersionPart("object", 1, 3, _copies([("o", "d1", 200), ("o", "d2", 200),
                                                   ("o", "d3", 404)]))
    sw = SwiftState((), (), proxy_url="http://127.0.0.1:8080", proxy_healthy=True,
                    dispersion=DispersionState(True, "AUTH_t", part, None))
    assert swift_note(sw, None).splitlines() == [
        "proxy http://127.0.0.1:8080: healthy",
        "dispersion: objects 66.7% of copies (1 sampled), 1 missing"]
    assert swift_note(None, "boom") == "boom"
    lines = server_lines(sw, "object")
    assert lines[-1] == ":red_circle: dispersion: objects 66.7% of copies (1 sampled), 1 missing"
    assert server_lines(sw, "account") == []  # dispersion is about objects and containers
    assert server_lines(SwiftState((), ()), None) == []  # not sampled: nothing to say
