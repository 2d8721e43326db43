"""The explicit list of check modules. Importing one registers its checks (no discovery
by name prefix): add a module here to add its checks."""

from checks import (  # noqa: F401
    cache,
    ceph_config,
    ceph_release,
    cluster,
    mounts,
    osd,
    pgs,
    swift_dispersion,
    swift_recon,
    swift_rings,
    swift_servers,
)
