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
    fill,
    managers,
    mounts,
    osd,
    pgblocks,
    pgs,
    placement,
    scrub,
    slow_ops,
    swift_dispersion,
    swift_recon,
    swift_rings,
    swift_servers,
)


def finding_codes() -> tuple[str, ...]:
    """Every code a finding can carry: the checks' above and the engine's own, sorted."""
    import checks.engine  # noqa: F401  (registers the engine's own codes)
    from checks.model import REGISTRY

    return tuple(sorted(REGISTRY.codes))
