"""Host facts over SSH: the root cause of a down OSD or an unmounted Swift drive is on its
host. ``scripts`` (the read-only facts script, one round trip per host), ``parse`` (its
sections), ``identity`` (the identity script for unmounted devices), ``collect`` (every
host in parallel). The SSH runner itself is ``storage.ssh.FabricRunner``.
"""

from storage.hostfacts.collect import (
    HostPlan,
    collect_host_facts,
    collect_one,
    facts_from_raw,
    osd_data_dir,
    plan_for,
)
from storage.hostfacts.identity import (
    IDENTITY_SCRIPT,
    identity_argv,
    parse_bluestore_label,
    parse_identities,
)
from storage.hostfacts.parse import (
    parse_addrs,
    parse_findmnt,
    parse_fstab,
    parse_io_errors,
    parse_listeners,
    parse_losetup,
    parse_lsblk,
    parse_md5sums,
    parse_osd_section,
    parse_proc_mounts,
    parse_ps_osds,
    parse_ps_swift,
    parse_swift_parts,
    parse_swift_section,
    split_sections,
)
from storage.hostfacts.scripts import FACTS_SCRIPT, facts_argv

__all__ = [
    "FACTS_SCRIPT", "IDENTITY_SCRIPT", "HostPlan", "collect_host_facts", "collect_one",
    "facts_argv", "facts_from_raw", "identity_argv", "osd_data_dir", "plan_for", "parse_addrs", "parse_bluestore_label",
    "parse_findmnt", "parse_fstab", "parse_identities", "parse_io_errors", "parse_listeners",
    "parse_losetup", "parse_lsblk", "parse_md5sums", "parse_osd_section",
    "parse_proc_mounts", "parse_ps_osds", "parse_ps_swift", "parse_swift_parts",
    "parse_swift_section", "split_sections",
]
