"""Parsers for how OSDs are deployed: ceph-volume (raw, lvm), LVM tags, cephadm, systemd.

Each takes the text a real command prints and returns typed values of ``storage.model``;
bad or empty input gives an empty result, never an exception (a host that prints garbage
is a fact, not a crash). Formats: ``ceph-volume raw list --format json`` (osd uuid ->
{ceph_fsid, device, osd_id, osd_uuid, type}), ``ceph-volume lvm list --format json`` (osd id
-> [LV with ``tags``]), ``lvs --reportformat json`` (``{"report": [{"lv": [...]}]}``),
``cephadm ls`` (list of daemons), ``systemctl show -p ...`` (key=value blocks) and
``journalctl -u UNIT -n N`` (lines).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from storage.model import DeviceIdentity, LvmVolume, UnitState


def _json(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return None


def parse_raw_list(text: str) -> dict[str, DeviceIdentity]:
    """``ceph-volume raw list --format json`` -> device -> identity (a raw OSD's label)."""
    data = _json(text)
    out: dict[str, DeviceIdentity] = {}
    if not isinstance(data, dict):
        return out
    for uuid, v in data.items():
        if not isinstance(v, dict) or not v.get("device"):
            continue
        oid = v.get("osd_id")
        out[str(v["device"])] = DeviceIdentity(
            device=str(v["device"]), whoami=int(oid) if isinstance(oid, int) else None,
            ceph_fsid=v.get("ceph_fsid") or None, osd_fsid=v.get("osd_uuid") or str(uuid),
            kind="bluestore", activatable=True)
    return out


def _tags(raw: str | Mapping[str, str] | None) -> dict[str, str]:
    if isinstance(raw, Mapping):
        return {str(k): str(v) for k, v in raw.items()}
    out: dict[str, str] = {}
    for part in (raw or "").split(","):
        k, sep, v = part.partition("=")
        if sep and k.startswith("ceph."):
            out[k] = v
    return out


def _volume(lv: Mapping[str, Any], tags: Mapping[str, str], devices: Iterable[str],
            active: bool) -> LvmVolume | None:
    if "ceph.osd_id" not in tags:
        return None
    oid = tags.get("ceph.osd_id", "")
    path = str(lv.get("lv_path") or lv.get("path") or "")
    return LvmVolume(
        lv_path=path, vg_name=str(lv.get("vg_name") or ""),
        lv_name=str(lv.get("lv_name") or lv.get("name") or ""),
        osd_id=int(oid) if oid.isdigit() else None,
        osd_fsid=tags.get("ceph.osd_fsid") or None,
        cluster_fsid=tags.get("ceph.cluster_fsid") or None,
        cluster_name=tags.get("ceph.cluster_name") or None,
        type=tags.get("ceph.type") or str(lv.get("type") or "block"),
        active=active, devices=tuple(devices))


def parse_lvm_list(text: str) -> tuple[LvmVolume, ...]:
    """``ceph-volume lvm list --format json`` -> the tagged LVs (active is not reported
    there: taken as active)."""
    data = _json(text)
    out: list[LvmVolume] = []
    if not isinstance(data, dict):
        return ()
    for lvs in data.values():
        for lv in lvs if isinstance(lvs, list) else []:
            if not isinstance(lv, dict):
                continue
            tags = _tags(lv.get("tags") or lv.get("lv_tags"))
            v = _volume(lv, tags, [str(d) for d in lv.get("devices") or []], True)
            if v is not None:
                out.append(v)
    return tuple(out)


_DEV_EXTENT_RE = re.compile(r"\(\d+\)$")


def parse_lvs(text: str) -> tuple[LvmVolume, ...]:
    """``lvs --reportformat json -o lv_path,lv_name,vg_name,lv_tags,lv_active,devices``:
    the LVs carrying ceph.* tags, with whether they are active."""
    data = _json(text)
    out: list[LvmVolume] = []
    if not isinstance(data, dict):
        return ()
    for rep in data.get("report") or []:
        for lv in (rep or {}).get("lv") or []:
            if not isinstance(lv, dict):
                continue
            tags = _tags(lv.get("lv_tags"))
            devs = [_DEV_EXTENT_RE.sub("", d) for d in str(lv.get("devices") or "").split(",")
                    if d]
            active = str(lv.get("lv_active", "active")).strip() == "active"
            v = _volume(lv, tags, devs, active)
            if v is not None:
                out.append(v)
    return tuple(out)


def _osd_of_unit(unit: str) -> int | None:
    for pat in (r"^ceph-osd@(\d+)(?:\.service)?$", r"^ceph-volume@lvm-(\d+)-",
                r"^ceph-[0-9a-f-]{36}@osd\.(\d+)(?:\.service)?$"):
        m = re.match(pat, unit)
        if m:
            return int(m.group(1))
    return None


def parse_cephadm_ls(text: str) -> tuple[UnitState, ...]:
    """``cephadm ls`` -> the OSD daemons' units (state running/stopped/error/unknown is
    mapped to systemd's active/inactive/failed)."""
    data = _json(text)
    out: list[UnitState] = []
    if not isinstance(data, list):
        return ()
    for d in data:
        if not isinstance(d, dict) or not str(d.get("name", "")).startswith("osd."):
            continue
        unit = str(d.get("systemd_unit") or "")
        state = str(d.get("state") or "unknown")
        active = {"running": "active", "error": "failed", "stopped": "inactive"}.get(
            state, "unknown")
        sid = str(d["name"])[4:]
        out.append(UnitState(unit=unit, osd_id=int(sid) if sid.isdigit() else None,
                             active_state=active, sub_state=state,
                             since=d.get("started") or None))
    return tuple(out)


def parse_systemd(lines: Iterable[str],
                  journals: Mapping[str, Iterable[str]] | None = None,
                  tail: int = 20) -> tuple[UnitState, ...]:
    """``systemctl show -p Id,ActiveState,SubState,Result,StateChangeTimestamp UNITS``
    (one block per unit, blank line between) plus ``journalctl -u`` tails per unit."""
    blocks: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    for ln in lines:
        s = ln.strip()
        if not s:
            if cur:
                blocks.append(cur)
                cur = {}
            continue
        k, sep, v = s.partition("=")
        if sep:
            cur[k] = v
    if cur:
        blocks.append(cur)
    out: list[UnitState] = []
    journals = journals or {}
    for b in blocks:
        unit = b.get("Id", "")
        if not unit:
            continue
        log = tuple(ln.rstrip() for ln in journals.get(unit, ()) if ln.strip())[-tail:]
        out.append(UnitState(unit=unit, osd_id=_osd_of_unit(unit),
                             active_state=b.get("ActiveState", "unknown"),
                             sub_state=b.get("SubState", ""), result=b.get("Result", ""),
                             since=b.get("StateChangeTimestamp") or None, log_tail=log))
    return tuple(out)
