"""Populate stordoc's dispersion objects and containers through the proxy, so that checks
can sample whether every copy exists."""

from __future__ import annotations

from checks.swift_names import device_name, host_names
from runbooks.base import Draft, Runbook, register
from runbooks.model import Refused, RunbookInfo, StepEnv
from runbooks.swift.common import need_swift
from storage.model import ClusterSnapshot

DISPERSION_CODES = ("SWIFT_DISPERSION_OBJECT_COPIES", "SWIFT_DISPERSION_CONTAINER_COPIES")


def _count_option(d: Draft, key: str, default: int) -> int:
    from storage.dispersion import MAX_COUNT

    raw = d.options.get(key, default)
    text = str(raw).strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_COUNT:
        raise Refused(f"{key} must be a whole number from 1 to {MAX_COUNT}, not {raw!r}")
    return int(text)


@register
class SwiftDispersionPopulate(Runbook):
    option_keys = ("objects", "containers")
    info = RunbookInfo(
        "swift-dispersion-populate",
        "Create stordoc's dispersion container, objects and containers through the proxy "
        "(existing ones are left as they are), so that checks can sample whether every "
        "copy exists.",
        (), destructive=False, target_kind="swift-dispersion",
        target_help="dispersion")

    def lock_keys(self, target: str) -> list[str]:
        return ["swift dispersion"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        from storage.dispersion import (
            CONTAINER_PREFIX,
            DEFAULT_CONTAINERS,
            DEFAULT_OBJECTS,
            OBJECT_CONTAINER,
            OBJECT_PREFIX,
            populate,
        )

        if target != "dispersion":
            raise Refused(f"{target!r}: the target of swift-dispersion-populate is "
                          "'dispersion'")
        need_swift(snap)
        st = d.ctx.target.swift
        if st is None or not (st.auth_url and st.user and st.key):
            raise Refused("dispersion needs auth_url, user and key in the cluster's Swift "
                          "settings")
        objects = _count_option(d, "objects", DEFAULT_OBJECTS)
        containers = _count_option(d, "containers", DEFAULT_CONTAINERS)
        disp = snap.swift.dispersion if snap.swift else None
        if disp is not None and disp.populated and disp.objects is not None:
            d.warnings.append(f"already populated ({disp.objects.sampled} objects): only "
                              "missing names are created")
        d.params.update(container=OBJECT_CONTAINER, objects=objects, containers=containers,
                        account=disp.account if disp else None)

        def run(env: StepEnv) -> tuple[bool, str]:
            made = populate(st, objects, containers)
            return True, (f"account {made.get('account')}: {made['objects']} object(s) "
                          f"created ({made['existing_objects']} already there), "
                          f"{made['containers']} container(s) ensured")

        d.local(f"create {OBJECT_CONTAINER} with {objects} objects and {containers} "
                "containers",
                f"swift post {OBJECT_CONTAINER}; swift upload {OBJECT_CONTAINER} "
                f"{OBJECT_PREFIX}0..{objects - 1} (only those missing); swift post "
                f"{CONTAINER_PREFIX}0..{containers - 1}", run)
        d.verify_codes = DISPERSION_CODES
        names = host_names(snap)
        rings = snap.swift.rings if snap.swift else ()
        d.verify_entities = tuple(f"{r.kind} ring {device_name(dev.device, dev.ip, names)}"
                                  for r in rings if r.kind in ("object", "container")
                                  for dev in r.devices)
