"""Swift's ring (``*.ring.gz``) and builder (``*.builder``) files read without Swift.

What a check needs of a ring is its device table, its replica -> partition -> device
table and its part shift; of a builder the same plus a few numbers (balance, dispersion,
min_part_hours, when partitions last moved). Swift's own ``RingData``/``RingBuilder``
come with Swift's import chain (eventlet, pkg_resources, ``swift.common.utils``: a third of
a check's start-up, and it turns logging's locks green: ``storage.swiftlib``), so this
module reads the same files with the standard library only. ``storage.swiftlib`` stays
for what writes rings (the runbooks that add, reweigh or remove devices).

Formats, as Swift 2.30 and 2.35 write and read them (``swift/common/ring/ring.py``,
``builder.py``):

- ring, format v1: gzip of ``b"R1NG"``, a big-endian 2-byte version (1), a big-endian
  4-byte JSON length, the JSON (``devs``, ``part_shift``, ``replica_count``,
  ``byteorder``, ``version``, ``next_part_power``), then ``replica_count`` arrays of
  ``2 ** (32 - part_shift)`` unsigned shorts (``'H'``) in ``byteorder``;
- ring, old format: a gzipped pickle of a ``RingData`` object or of its dict;
- builder: a pickle (protocol 2) of ``RingBuilder.to_dict()`` (or, very old, of the
  ``RingBuilder`` object itself).

Pickles are read with an unpickler that builds only arrays and stand-ins for those two
Swift classes (anything else is refused), and only files inside the configured
``swift_dir`` are ever read (``storage.swift``).
"""

from __future__ import annotations

import array
import copyreg
import gzip
import io
import json
import pickle
import struct
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from storage.safefile import read_regular

MAX_BALANCE = 999.99  # Swift's builder: a device with partitions but no weight
RING_MAGIC = b"R1NG"


class RingFileError(ValueError):
    """A ring or builder file this module cannot read (its message says why)."""


# --------------------------------------------------------------------------- pickles


class _Pickled:
    """Stand-in for a pickled Swift object (``RingData``, ``RingBuilder``): its state only."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if not isinstance(state, dict):
            raise RingFileError(f"unexpected pickled state {type(state).__name__}")
        self.__dict__.update(state)


class _RingDataStandIn(_Pickled):
    pass


class _RingBuilderStandIn(_Pickled):
    pass


_ALLOWED: dict[tuple[str, str], Any] = {
    ("array", "array"): array.array,
    ("array", "_array_reconstructor"): getattr(array, "_array_reconstructor", None),
    ("copyreg", "_reconstructor"): copyreg._reconstructor,  # type: ignore[attr-defined]
    ("copy_reg", "_reconstructor"): copyreg._reconstructor,  # type: ignore[attr-defined]
    ("__builtin__", "object"): object,
    ("builtins", "object"): object,
    ("swift.common.ring.ring", "RingData"): _RingDataStandIn,
    ("swift.common.ring.builder", "RingBuilder"): _RingBuilderStandIn,
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise RingFileError(f"refused pickled {module}.{name}: not a Swift ring or "
                                "builder")
        return found


def _unpickle(data: bytes) -> Any:
    try:
        return _Unpickler(io.BytesIO(data), encoding="latin1").load()
    except RingFileError:
        raise
    except Exception as e:  # noqa: BLE001 - any corrupt pickle is one kind of error
        raise RingFileError(f"not a valid pickle: {e}") from None


def _state(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    if isinstance(obj, _Pickled):
        return obj.__dict__
    raise RingFileError(f"unexpected pickled {type(obj).__name__}")


# --------------------------------------------------------------------------- rings


@dataclass
class RingFile:
    """What ``swift.common.ring.RingData.load`` gives, under the same attribute names."""

    devs: list[dict[str, Any] | None]
    _replica2part2dev_id: list[Sequence[int]]
    _part_shift: int
    next_part_power: int | None = None
    version: int | None = None

    @property
    def part_power(self) -> int:
        return 32 - self._part_shift

    @property
    def replica_count(self) -> float:
        """Swift's ``calc_replica_count``: whole rows plus the fraction of a short last one."""
        rows = self._replica2part2dev_id
        if not rows:
            return 0
        return len(rows) - 1 + 1.0 * len(rows[-1]) / len(rows[0])


def _normalize(devs: list[Any]) -> list[dict[str, Any] | None]:
    """``RingData``'s defaults in Swift 2.30 (what stordoc ran with): region 1. (Swift 2.35
    also fills ``replication_ip``/``_port`` from ``ip``/``port``; every reader of a ring
    device here takes ``replication_ip or ip``, so both read the same.)"""
    for dev in devs:
        if dev is None:
            continue
        if not isinstance(dev, dict):
            raise RingFileError(f"a device is a {type(dev).__name__}, not a dict")
        dev.setdefault("region", 1)
    return devs


def ring_from_bytes(gz: bytes) -> RingFile:
    """A ``*.ring.gz`` file's bytes as a :class:`RingFile`; :class:`RingFileError` if it
    is not one."""
    try:
        raw = gzip.decompress(gz)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise RingFileError(f"not a gzip file: {e}") from None
    if raw[:4] == RING_MAGIC:
        return _ring_v1(raw)
    st = _state(_unpickle(raw))
    try:
        rows = st["replica2part2dev_id"] if "replica2part2dev_id" in st \
            else st["_replica2part2dev_id"]  # a RingData's dict, or the object's state
        shift = st["part_shift"] if "part_shift" in st else st["_part_shift"]
        return RingFile(devs=_normalize(list(st["devs"])), _replica2part2dev_id=list(rows),
                        _part_shift=int(shift),
                        next_part_power=st.get("next_part_power"),
                        version=st.get("version"))
    except (KeyError, TypeError, ValueError) as e:
        raise RingFileError(f"pickled ring without {e}") from None


def _ring_v1(raw: bytes) -> RingFile:
    if len(raw) < 10:
        raise RingFileError("ring file cut short in its header")
    version, json_len = struct.unpack_from("!HI", raw, 4)
    if version != 1:
        raise RingFileError(f"Unknown ring format version {version}")
    start = 10 + json_len
    try:
        meta = json.loads(raw[10:start])
        part_shift = int(meta["part_shift"])
        replicas = int(meta["replica_count"])
        devs = meta["devs"]
    except (ValueError, KeyError, TypeError) as e:
        raise RingFileError(f"ring file header unreadable: {e}") from None
    if not 0 <= part_shift <= 32 or replicas < 0 or not isinstance(devs, list):
        raise RingFileError(f"ring file header out of range: part_shift {part_shift}, "
                            f"replica_count {replicas}")
    n = 1 << (32 - part_shift)
    swap = meta.get("byteorder", sys.byteorder) != sys.byteorder
    rows: list[Sequence[int]] = []
    for r in range(replicas):
        chunk = raw[start + 2 * n * r:start + 2 * n * (r + 1)]
        if len(chunk) % 2:  # as Swift's array('H', ...): a torn last short is an error
            raise RingFileError("ring file cut short in its partition table")
        row = array.array("H", chunk)
        if swap:
            row.byteswap()
        rows.append(row)
    return RingFile(devs=_normalize(devs), _replica2part2dev_id=rows, _part_shift=part_shift,
                    next_part_power=meta.get("next_part_power"), version=meta.get("version"))


# --------------------------------------------------------------------------- builders


@dataclass
class BuilderFile:
    """What ``RingBuilder.load`` gives, for reading: the same attribute names."""

    part_power: int
    replicas: float
    min_part_hours: int
    parts: int
    devs: list[dict[str, Any] | None]
    _replica2part2dev: list[Sequence[int]] | None
    _last_part_moves_epoch: float = 0
    dispersion: float | None = 0.0
    overload: float = 0.0
    version: int = 0
    next_part_power: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def _iter_devs(self) -> Iterator[dict[str, Any]]:
        return (d for d in self.devs if d is not None)

    def weight_of_one_part(self) -> float:
        total = sum(d["weight"] for d in self._iter_devs())
        if not total:
            raise RingFileError("There are no devices in this ring, or all devices have "
                                "been deleted")
        return float(self.parts * self.replicas / total)

    def get_balance(self) -> float:
        """Swift's ``RingBuilder.get_balance``: the largest percentage by which a device
        holds more (or fewer) partitions than its weight asks for."""
        one = self.weight_of_one_part()
        worst: float | None = None
        for dev in self._iter_devs():
            if not dev["weight"]:
                b = MAX_BALANCE if dev["parts"] else 0
            else:
                b = 100.0 * dev["parts"] / (dev["weight"] * one) - 100.0
            worst = abs(b) if worst is None else max(worst, abs(b))
        if worst is None:
            raise RingFileError("no devices")
        return worst


def builder_from_bytes(data: bytes) -> BuilderFile:
    """A ``*.builder`` file's bytes as a :class:`BuilderFile`."""
    st = _state(_unpickle(data))
    try:
        devs = list(st["devs"])
        for dev in devs:  # RingBuilder.load and copy_from's defaults
            if dev is None:
                continue
            if not isinstance(dev, dict):
                raise RingFileError(f"a device is a {type(dev).__name__}, not a dict")
            dev.setdefault("region", 1)
            dev.setdefault("meta", "")
            dev.setdefault("replication_ip", dev["ip"])
            dev.setdefault("replication_port", dev["port"])
        r2p2d = st["_replica2part2dev"]
        return BuilderFile(
            part_power=int(st["part_power"]), replicas=st["replicas"],
            min_part_hours=int(st["min_part_hours"]), parts=int(st["parts"]), devs=devs,
            _replica2part2dev=list(r2p2d) if r2p2d is not None else None,
            _last_part_moves_epoch=st.get("_last_part_moves_epoch") or 0,
            dispersion=st.get("dispersion"), overload=st.get("overload", 0.0),
            version=st.get("version", 0), next_part_power=st.get("next_part_power"),
            extra={k: v for k, v in st.items() if k in ("id", "_id", "devs_changed")})
    except (KeyError, TypeError, ValueError) as e:
        raise RingFileError(f"builder without {e}") from None


MAX_FILE_BYTES = 1 << 30  # a ring of part power 24 and 3 replicas is ~100 MB


def load_ring(path: str) -> RingFile:
    """``RingData.load(path)`` without Swift: a bounded regular file only (no FIFO)."""
    return ring_from_bytes(read_regular(path, MAX_FILE_BYTES))


def load_builder(path: str) -> BuilderFile:
    """``RingBuilder.load(path)`` for reading, without Swift."""
    return builder_from_bytes(read_regular(path, MAX_FILE_BYTES))
