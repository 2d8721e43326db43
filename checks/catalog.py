"""The explicit list of check modules. Importing one registers its checks (no discovery
by name prefix): add a module here to add its checks."""

from checks import (  # noqa: F401
    cache,
    ceph_config,
    ceph_release,
    cluster,
    daemons,
    device_health,
    disks,
    engine_codes,
    fill,
    managers,
    mounts,
    osd,
    pgblocks,
    pgs,
    placement,
    pool_quota,
    prometheus,
    scrub,
    slow_ops,
    swift_dispersion,
    swift_recon,
    swift_rings,
    swift_servers,
)


def finding_codes() -> tuple[str, ...]:
    """Every code a finding can carry: the checks' above and the engine's own, sorted."""
    from checks.model import REGISTRY

    return tuple(sorted(REGISTRY.codes))


# A front end's area (the TUI's Cache and Swift screens) by the checks that cover it, not
# by a code's spelling: a code added to one of these checks is in its area.
AREAS: dict[str, tuple[str, ...]] = {
    "cache": ("ceph-cache-tiers",),
    "swift": ("swift-device-mounts", "swift-dispersion", "swift-servers", "swift-recon",
              "swift-rings"),
}


def area_codes(area: str) -> frozenset[str]:
    """The finding codes of an area's checks (``AREAS``); KeyError for an unknown area."""
    from checks.model import REGISTRY

    names = set(AREAS[area])
    return frozenset(c.code for chk in REGISTRY.checks if chk.name in names
                     for c in chk.codes)
