"""``stordoc snapshot save DIR``: everything one check collects, written to a directory
on-call can attach to a ticket; ``stordoc check --from DIR`` diagnoses from it (also
without any settings, on a machine that cannot reach the cluster)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from core.exitstatus import ExitStatus


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("snapshot", help="save what one check collects (diagnose it later "
                       "with 'stordoc check --from DIR')")
    ssub = p.add_subparsers(dest="snapshot_command", metavar="ACTION")
    s = ssub.add_parser("save", help="collect the cluster once and write it to DIR (a new "
                        "directory): Ceph's answers, Swift rings and recon, host facts, "
                        "the settings' cluster shape without secrets")
    s.add_argument("dir", metavar="DIR", help="a directory that does not exist yet (or is "
                   "empty)")
    s.add_argument("--cluster", help="cluster name from the settings (default: the default)")
    s.add_argument("--no-host-facts", dest="host_facts", action="store_false",
                   help="skip SSH: Ceph and Swift only")
    s.set_defaults(func=cmd_save)
    p.set_defaults(func=_usage(p))


def _usage(p: argparse.ArgumentParser):  # type: ignore[no-untyped-def]
    def show(args: argparse.Namespace) -> int:
        from core.errors import UserError

        raise UserError("snapshot: say what to do: 'stordoc snapshot save DIR' (see "
                        "'stordoc snapshot --help')")
    return show


def cmd_save(args: argparse.Namespace) -> int:
    from core.errors import UserError
    from core.service.snapshots import save
    from storage.snapshot import SnapshotError
    from stordoc.commands.common import env_from_args

    env = env_from_args(args)
    try:
        with _stop_as_interrupt():
            doc = save(env, args.cluster, args.dir, host_facts=args.host_facts)
    except SnapshotError as e:
        raise UserError(f"snapshot save: {e}") from None
    finally:
        env.close()
    files, size = _du(doc.directory)
    env.term.line(f"saved {doc.directory}: cluster {doc.cluster}, {files} files, "
                  f"{size / 1024:.0f} KiB, no secrets (keyrings, SSH keys and the Swift key "
                  "stay out)")
    env.term.line(f"diagnose it anywhere with: stordoc check --from {doc.directory}")
    return ExitStatus.OK


@contextlib.contextmanager
def _stop_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP (a dropped SSH session) stop a save as Ctrl-C does: what was
    written so far is removed (``storage.snapshot.write_snapshot``) and the exit status is
    130, interrupted (README's exit status table), not the signal's death (143)."""
    import signal
    import threading

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def _du(directory: str) -> tuple[int, int]:
    import os

    n = size = 0
    for root, _, names in os.walk(directory):
        for name in names:
            n += 1
            size += os.path.getsize(os.path.join(root, name))
    return n, size
