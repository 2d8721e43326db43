"""storage.ringfile reads what Swift's own RingData/RingBuilder read (issue 39.7).

Random rings are built with Swift's RingBuilder in the test (random part power, replica
count (fractional too), devices, weights, regions/zones, removed devices), rebalanced,
saved by Swift (ring format v1, the old pickled formats, a ring written on a machine of
the other byte order), then loaded both by Swift and by storage.ringfile: same devices,
same replica -> partition -> device table, same part shift, and for the builder the same
balance, dispersion, min_part_hours and last-move epoch. Nothing is mocked.
"""

from __future__ import annotations

import gzip
import json
import pickle
import struct
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from storage.ringfile import RingFileError, builder_from_bytes, load_builder, load_ring
from storage.swiftlib import RingBuilder, RingData

DEV = st.fixed_dictionaries({
    "region": st.integers(1, 2), "zone": st.integers(0, 3),
    "ip": st.sampled_from(["127.0.0.1", "127.0.0.2", "127.0.0.3", "10.1.2.3"]),
    "port": st.integers(6200, 6210), "weight": st.sampled_from([0.0, 1.0, 2.5, 100.0]),
    "device": st.sampled_from(["sda", "sdb", "d1", "nvme0n1"]),
    "meta": st.sampled_from(["", "rack 4"])})

RING = st.fixed_dictionaries({
    "part_power": st.integers(1, 8),
    "replicas": st.sampled_from([1, 2, 3, 1.5, 2.25]),
    "devs": st.lists(DEV, min_size=1, max_size=8),
    "remove": st.integers(0, 2),
    "form": st.sampled_from(["v1", "v1-other-byteorder", "pickled-object", "pickled-dict"]),
})


def _build(spec: dict) -> RingBuilder | None:
    b = RingBuilder(spec["part_power"], spec["replicas"], 1)
    for i, d in enumerate(spec["devs"]):
        b.add_dev({"id": i, **d})
    if not any(d["weight"] for d in spec["devs"]):
        return None
    try:
        b.rebalance(seed=7)
    except Exception:  # noqa: BLE001 - Swift refuses some random layouts: skip those
        return None
    for dev_id in range(min(spec["remove"], len(spec["devs"]) - 1)):
        b.remove_dev(dev_id)
    if spec["remove"]:
        try:
            b.pretend_min_part_hours_passed()
            b.rebalance(seed=8)
        except Exception:  # noqa: BLE001
            return None
    return b


def _other_byteorder(path: Path) -> None:
    """Rewrite a v1 ring as a machine of the other byte order would have written it."""
    raw = gzip.decompress(path.read_bytes())
    (json_len,) = struct.unpack_from("!I", raw, 6)
    meta = json.loads(raw[10:10 + json_len])
    meta["byteorder"] = "big" if sys.byteorder == "little" else "little"
    text = json.dumps(meta, sort_keys=True).encode()
    table = bytearray(raw[10 + json_len:])
    table[0::2], table[1::2] = table[1::2], table[0::2]  # every 'H' byteswapped
    path.write_bytes(gzip.compress(raw[:6] + struct.pack("!I", len(text)) + text + table))


def _write_ring(b: RingBuilder, path: Path, form: str) -> None:
    rd = b.get_ring()
    if form.startswith("v1"):
        rd.save(str(path))
        if form == "v1-other-byteorder":
            _other_byteorder(path)
    elif form == "pickled-object":  # what Swift wrote before format v1 (a RingData)
        path.write_bytes(gzip.compress(pickle.dumps(rd, protocol=2)))
    else:
        path.write_bytes(gzip.compress(pickle.dumps(rd.to_dict(), protocol=2)))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much])
@given(spec=RING)
def test_same_ring_and_builder_as_swift(spec: dict, tmp_path: Path) -> None:
    b = _build(spec)
    assume(b is not None)
    assert b is not None
    ring_path, builder_path = tmp_path / "object.ring.gz", tmp_path / "object.builder"
    _write_ring(b, ring_path, spec["form"])
    b.save(str(builder_path))

    theirs, ours = RingData.load(str(ring_path)), load_ring(str(ring_path))
    assert ours.devs == theirs.devs
    assert [list(r) for r in ours._replica2part2dev_id] == \
        [list(r) for r in theirs._replica2part2dev_id]
    assert ours._part_shift == theirs._part_shift
    assert ours.replica_count == pytest.approx(theirs.replica_count)

    tb, ob = RingBuilder.load(str(builder_path)), load_builder(str(builder_path))
    assert ob.devs == tb.devs
    assert (ob.part_power, ob.replicas, ob.min_part_hours, ob.parts) == \
        (tb.part_power, tb.replicas, tb.min_part_hours, tb.parts)
    assert ob.dispersion == tb.dispersion
    assert ob._last_part_moves_epoch == tb._last_part_moves_epoch
    assert [list(r) for r in ob._replica2part2dev or []] == \
        [list(r) for r in tb._replica2part2dev or []]
    assert ob.get_balance() == pytest.approx(tb.get_balance())


def test_builder_pickle_with_other_globals_is_refused(tmp_path: Path) -> None:
    """A builder is a pickle: anything but arrays and Swift's two classes is refused,
    where Swift's own loader would run it."""
    class Evil:
        def __reduce__(self) -> tuple:
            return (print, ("ran",))

    with pytest.raises(RingFileError, match=r"refused pickled (__builtin__|builtins)\.print"):
        builder_from_bytes(pickle.dumps({"devs": [Evil()]}, protocol=2))


@pytest.mark.parametrize("data,why", [
    (b"not gzip at all", "not a gzip file"),
    (gzip.compress(b"R1NG\x00\x02\x00\x00\x00\x02{}"), "Unknown ring format version 2"),
    (gzip.compress(b"R1NG\x00\x01\x00\x00\x00\x02{}"), "header unreadable"),
])
def test_unreadable_rings_say_why(tmp_path: Path, data: bytes, why: str) -> None:
    p = tmp_path / "object.ring.gz"
    p.write_bytes(data)
    with pytest.raises(RingFileError, match=why):
        load_ring(str(p))
    with pytest.raises(Exception):  # noqa: B017 - Swift refuses the same file too
        RingData.load(str(p))
