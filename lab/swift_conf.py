"""The text of the lab's Swift configuration: storage server, proxy, rsyncd and swift.conf,
and the start scripts stordoc's runbooks run on a lab host (a real host uses systemd).

Paths a Swift daemon reads go through ``lab.system.daemon_path`` and the programs the
start scripts run through ``lab.system.argv`` (the release seam, lab/system.py).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from lab.layout import SWIFT_KEY, SWIFT_SERVERS

if TYPE_CHECKING:
    from lab.site import LabSite

# replicators run as daemons so replication age stays small on a healthy lab;
# `swift-replication-stalled` stops one of them while objects change. A pass every minute:
# once the benchmarks have written to every partition, an object pass is ~8 s of CPU (1,536
# partition replicas, two REPLICATE requests each): every 10 s it took 45% of a core per
# lab, a third of CI's CPU. Where the lab needs a pass now it runs one
# (lab/swift.py ``kick_replication``)
SWIFT_REPLICATOR_INTERVAL_S = 60
SWIFT_REPLICATION_IP = "127.0.0.1"
# the lab's auditor runs once, on demand (swift-quarantine): at Swift's default 20 files/s
# and 10 MB/s a lab that earlier tests filled outlasts any sane timeout; 0 = no rate limit,
# and no zero-byte-file child to wait for
AUDITOR_UNLIMITED = ("files_per_second = 0\nbytes_per_second = 0\n"
                     "zero_byte_files_per_second = 0")
SWIFT_CONF = "/etc/swift/swift.conf"  # Swift reads the hash prefix/suffix here, always
SWIFT_CONF_TEXT = ("[swift-hash]\nswift_hash_path_suffix = stordoc-lab\n"
                   "swift_hash_path_prefix = stordoc-lab\n\n[storage-policy:0]\n"
                   "name = Policy-0\ndefault = yes\n")


def rsyncd_conf(lab: LabSite) -> str:
    """A DB replicator sends a whole DB a primary lacks by rsync (objects go by ssync):
    one daemon for the lab's devices, on the replication address and the lab's port."""
    mods = "".join(f"""
[{kind}]
path = {lab.swift_node}
read only = false
lock file = {lab.base / 'swift' / f'rsync-{kind}.lock'}
max connections = 8
""" for kind in SWIFT_SERVERS)
    return f"""# stordoc lab: rsync for the Swift replicators of the lab under {lab.base}
uid = root
gid = root
use chroot = no
hosts allow = {SWIFT_REPLICATION_IP}
address = {SWIFT_REPLICATION_IP}
port = {lab.ports.rsync}
log file = {lab.log_dir / 'rsyncd.log'}
{mods}"""


def server_conf(lab: LabSite, kind: str, port: int) -> str:
    p = lab.system.daemon_path
    return f"""[DEFAULT]
bind_ip = 0.0.0.0
bind_port = {port}
workers = 0
user = root
swift_dir = {p(lab.ring_dir(kind))}
devices = {p(lab.swift_node)}
mount_check = true
# every daemon run on this conf (auditor, updater, recon-cron) writes the lab's cache
recon_cache_path = {p(lab.base / 'swift' / 'cache')}
log_name = {kind}-server
log_level = WARNING

[pipeline:main]
pipeline = healthcheck recon {kind}-server

[app:{kind}-server]
use = egg:swift#{kind}

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:recon]
use = egg:swift#recon
recon_cache_path = {p(lab.base / 'swift' / 'cache')}

[{kind}-replicator]
interval = {SWIFT_REPLICATOR_INTERVAL_S}
rsync_module = rsync://{SWIFT_REPLICATION_IP}:{lab.ports.rsync}/{kind}
{"sync_method = ssync" if kind == "object" else ""}

[{kind}-auditor]
{AUDITOR_UNLIMITED if kind == "object" else ""}
[{kind}-updater]
"""


def proxy_conf(lab: LabSite) -> str:
    return f"""[DEFAULT]
bind_ip = 127.0.0.1
bind_port = {lab.ports.proxy}
workers = 0
user = root
swift_dir = {lab.system.daemon_path(lab.swift_etc)}
log_level = WARNING

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache tempauth proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
allow_account_management = true
account_autocreate = true

[filter:tempauth]
use = egg:swift#tempauth
user_admin_admin = admin .admin .reseller_admin
user_test_tester = {SWIFT_KEY} .admin

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:{lab.ports.memcached}

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging
"""


def server_argv(lab: LabSite, kind: str, role: str = "server") -> list[str]:
    """``swift-KIND-ROLE CONF -v`` (``-v``: log to stdout, not syslog); ``kind`` is a
    storage server or ``proxy``, ``role`` ``server`` or ``replicator``."""
    conf = lab.swift_etc / f"{kind}-server.conf"
    return lab.system.argv([f"/usr/bin/swift-{kind}-{role}", lab.system.daemon_path(conf),
                            "-v"])


def rsyncd_argv(lab: LabSite) -> list[str]:
    """The lab's rsync daemon in the foreground (its pid is the one its starter records)."""
    return ["rsync", "--daemon", "--no-detach", f"--config={lab.swift_etc / 'rsyncd.conf'}"]


def start_script(lab: LabSite, role: str) -> str:
    """The lab's ``swift_server_start`` (role ``server``: a storage server, the proxy or
    the rsync daemon) or ``swift_replicator_start`` (``replicator``): start one daemon
    detached, with the pid file ``lab down`` stops it by (and the host's daemon settings
    name: lab/config.py)."""
    suffix = "" if role == "server" else "-replicator"
    kinds = (*SWIFT_SERVERS, "proxy") if role == "server" else SWIFT_SERVERS
    runs = [(kind, server_argv(lab, kind, role), f"swift-{kind}{suffix}") for kind in kinds]
    if role == "server":
        runs.append(("rsyncd", rsyncd_argv(lab), "rsyncd"))
    cases = "".join(
        f"{kind}) setsid {shlex.join(argv)} \\\n"
        f"  >>{shlex.quote(str(lab.log_dir / f'{name}.log'))} 2>&1 </dev/null &\n"
        f"  echo $! >{shlex.quote(str(lab.pids / f'{name}.pid'))};;\n"
        for kind, argv, name in runs)
    what = "one Swift storage server, the proxy or rsyncd" if role == "server" \
        else "the replicator of one Swift storage server"
    return f"""#!/bin/sh
# stordoc lab: start {what} of the lab under {lab.base}
set -e
case "$1" in
{cases}*) echo "unknown server: $1" >&2; exit 64;;
esac
"""
