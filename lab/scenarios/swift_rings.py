"""Swift ring faults: a builder that drifted from its ring (or asks for too many replicas),
one server left with an older ring, a ring whose replication addresses no replicator has."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lab.layout import SWIFT_SERVERS
from lab.scenarios.base import MODE, SERVER, FaultArgs, Scenario
from lab.swift_conf import SWIFT_REPLICATION_IP

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

# swift-replication-lost: the ring's replication address for every device, somewhere no
# lab replicator finds itself (as after a ring built for a replication network the hosts
# are not on)
SWIFT_LOST_REPLICATION_IP = "127.0.0.99"


class SwiftRingBad(Scenario):
    name = "swift-ring-bad"
    summary = "object.builder changed without writing its ring, or set to 5 replicas"
    options = (MODE,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = f"break swift-ring-bad ({args.mode})"
        swift = lab.swift_cluster
        bak = lab.base / "swift" / "ring-backup"
        swift.backup_rings(bak, [f.name for f in (*sorted(lab.swift_etc.glob("*.builder")),
                                                  *sorted(lab.swift_etc.glob("*.ring.gz")))])
        if args.mode == "replicas":
            # more replicas than zones and devices: the builder takes the setting, its
            # rebalance then refuses ("requires more than 4 devices"), so ring.gz keeps 3
            swift.ring_builder("object", "set_replicas", "5", step=step)
            return "object.builder set to 5 replicas over 4 devices in 4 zones"
        swift.ring_builder("object", "set_weight", "/d4", "50", step=step)
        return "object.builder changed (d4 weight 50) without writing object.ring.gz"

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        lab.swift_cluster.restore_rings(lab.base / "swift" / "ring-backup")
        return "rings and builders restored"


class SwiftRingStale(Scenario):
    """The object ring changes (device meta, written with write_ring) and reaches every
    server but one, which keeps the older ring.gz."""

    name = "swift-ring-stale"
    summary = "the object ring changed and copied to every server but one"
    options = (SERVER,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        server = args.server
        step = "break swift-ring-stale"
        swift = lab.swift_cluster
        swift.backup_rings(lab.base / "swift" / "ring-stale-backup",
                           ("object.builder", "object.ring.gz"))
        swift.ring_builder("object", "set_info", "--device", "d1", "--change-meta",
                           f"stordoc-lab-{int(time.time())}", "--yes", step=step)
        swift.ring_builder("object", "write_ring", step=step, check=False)
        swift.sync_server_rings([k for k in SWIFT_SERVERS if k != server])
        return (f"object ring changed and copied to every server but the {server} server "
                f"({lab.ring_dir(server) / 'object.ring.gz'} is the older ring)")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        lab.swift_cluster.restore_rings(lab.base / "swift" / "ring-stale-backup")
        return "object ring and builder restored and copied to every server"


class SwiftReplicationLost(Scenario):
    """The server's ring gets replication address 127.0.0.99 on every device (written and
    copied to every server): its replicator keeps completing passes that do nothing."""

    name = "swift-replication-lost"
    summary = f"a ring replicating at {SWIFT_LOST_REPLICATION_IP}, where no replicator is"
    options = (SERVER,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        server = args.server
        step = "break swift-replication-lost"
        swift = lab.swift_cluster
        swift.backup_rings(lab.base / "swift" / "ring-lost-backup",
                           (f"{server}.builder", f"{server}.ring.gz"))
        swift.ring_builder(server, "set_info", "--replication-ip", SWIFT_REPLICATION_IP,
                           "--change-replication-ip", SWIFT_LOST_REPLICATION_IP, "--yes",
                           step=step)
        swift.ring_builder(server, "write_ring", step=step, check=False)
        swift.sync_server_rings()
        return (f"{server} ring: every device replicates at {SWIFT_LOST_REPLICATION_IP}, an "
                f"address no lab replicator has (swift-{server}-replicator replicates nothing)")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        t0 = time.time()
        lab.swift_cluster.restore_rings(lab.base / "swift" / "ring-lost-backup")
        # the replicators reload a changed ring by its mtime within ring_check_interval:
        # healed once a pass after the restore attempted partitions again (an idle pass
        # attempts none), then every kind's next pass counts no failure of the fault
        lab.swift_cluster.wait_replication_working(args.server, t0,
                                                   "heal swift-replication-lost")
        lab.swift_cluster.settle_replication("heal swift-replication-lost")
        return "ring and builder restored and copied to every server, a pass completed"
