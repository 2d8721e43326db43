"""Swift faults of a daemon: a storage server stopped, updates queued as async pendings
while container servers were away, a replicator stopped while objects change."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lab.procs import wait
from lab.scenarios.base import SERVER, FaultArgs, Scenario

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab

ASYNC_CONTAINER = "stordoc-lab-async"
ASYNC_OBJECTS = 40  # x 3 replicas = 120 async pendings, above the default warn (100)
STALLED_CONTAINER = "stordoc-lab-stalled"
STALLED_OBJECTS = 8


class SwiftServerStopped(Scenario):
    name = "swift-server-stopped"
    summary = "a Swift storage server stopped"
    options = (SERVER,)
    heal_options = (SERVER,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        server = args.server
        if not lab.stop(f"swift-{server}"):
            return f"the {server} server was not running"
        return (f"swift-{server}-server stopped (port {getattr(lab.ports, server)} on "
                "every lab host)")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        server = args.server
        step = f"heal swift-server-stopped {server}"
        if lab.pid(f"swift-{server}") is None:
            lab.swift_cluster.start_server(server)
        wait(lambda: lab.swift_cluster.server_answers(server), 30, step,
             f"the {server} server answering recon",
             str(lab.log_dir / f"swift-{server}.log"))
        lab.swift_cluster.settle_replication(step)
        return f"swift-{server}-server running and answering recon"


class SwiftAsyncPending(Scenario):
    """Container servers unreachable during PUTs: object servers queue the updates."""

    name = "swift-async-pending"
    summary = "the container server stopped during PUTs: async pendings queued"

    @staticmethod
    def _pendings(lab: Lab) -> set[str]:
        return {str(p) for p in lab.swift_node.glob("d*/async_pending*/*/*")}

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        step = "break swift-async-pending"
        before = self._pendings(lab)
        conn = lab.swift_cluster.conn()
        conn.put_container(ASYNC_CONTAINER)
        conn.head_container(ASYNC_CONTAINER)  # the proxy caches the container's info
        lab.stop("swift-container")
        try:
            for i in range(ASYNC_OBJECTS):
                conn.put_object(ASYNC_CONTAINER, f"obj-{i}", contents=b"async")
        finally:
            conn.close()
        lab.swift_cluster.recon_cron(step)
        now = self._pendings(lab)
        older = f", {len(now & before)} older ones still queued" if now & before else ""
        return (f"container server stopped during {ASYNC_OBJECTS} PUTs: {len(now - before)} "
                f"async pendings{older} (the container server stays stopped until heal)")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal swift-async-pending"
        swift = lab.swift_cluster
        if lab.pid("swift-container") is None:
            swift.start_server("container")
        wait(lambda: swift.server_answers("container"), 30, step,
             "the container server answering recon")
        # on a loaded machine one updater pass can find the fresh container server too slow
        # and keep its pendings: pass again until none is left (bounded), then recount
        for _ in range(10):
            swift.run_once("object-updater", "once", step=step, timeout=120, log=True)
            if not self._pendings(lab):
                break
            time.sleep(2)
        swift.recon_cron(step)
        swift.settle_replication(step)
        left = len(self._pendings(lab))
        swift.delete_container(ASYNC_CONTAINER)
        return f"container server started, object-updater run: {left} async pendings left"


class SwiftReplicationStalled(Scenario):
    """The replicator of a server stopped, then objects change (PUT into a container)."""

    name = "swift-replication-stalled"
    summary = "a Swift replicator stopped while objects change"
    options = (SERVER,)
    heal_options = (SERVER,)

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        server = args.server
        was = lab.stop(f"swift-{server}-replicator")
        last, _ = lab.replication_last(server)
        conn = lab.swift_cluster.conn()
        try:
            conn.put_container(STALLED_CONTAINER)
            for i in range(STALLED_OBJECTS):
                conn.put_object(STALLED_CONTAINER, f"obj-{i}", contents=b"stalled " * 32)
        finally:
            conn.close()
        return (f"swift-{server}-replicator " + ("stopped" if was else "was not running")
                + f" (last pass completed at {last}); {STALLED_OBJECTS} objects PUT since")

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        step = "heal swift-replication-stalled"
        lab.swift_cluster.delete_container(STALLED_CONTAINER)
        lab.swift_cluster.settle_replication(step)
        last, _ = lab.replication_last(args.server)
        return f"swift-{args.server}-replicator running, a pass completed at {last}"
