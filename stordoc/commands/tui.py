"""``stordoc tui [--cluster NAME] [--read-only]``: the k9s-style terminal UI."""

from __future__ import annotations

import argparse

from core.argtypes import float_range
from core.errors import UserError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("tui", help="interactive terminal UI (k9s-style)")
    p.add_argument("--cluster", metavar="NAME", help="cluster to open (default: the only "
                   "or the default one)")
    p.add_argument("--read-only", action="store_true",
                   help="hide every action that changes the cluster")
    p.add_argument("--refresh", type=float_range(0, 86400, lo_open=True), metavar="SECONDS", default=None,
                   help="auto-refresh interval (default: settings tui.refresh_s)")
    p.add_argument("--from", dest="from_dir", metavar="DIR",
                   help="show a saved snapshot ('stordoc snapshot save DIR'), read-only; no "
                        "settings or network needed")
    p.set_defaults(func=cmd_tui)


def cmd_tui(args: argparse.Namespace) -> int:
    if args.from_dir is not None:
        return _tui_from(args)
    from stordoc.commands.common import env_from_args
    from tui.app import StordocApp
    from tui.backend import EnvBackend

    env = env_from_args(args)
    name = env.cluster_name(args.cluster)
    refresh = args.refresh if args.refresh is not None else env.settings.tui.refresh_s
    if refresh < 1:
        raise UserError("--refresh must be at least 1 second")
    try:
        app = StordocApp(EnvBackend(env), name, read_only=args.read_only, refresh_s=refresh,
                         bindings=env.settings.tui.bindings,
                         thresholds=env.settings.thresholds_for(name),
                         user=env.settings.user or env.user)
    except ValueError as e:
        raise UserError(str(e)) from None
    from storage.swiftlib import restore_real_threading
    restore_real_threading()  # the TUI's workers are OS threads: no green locks in logging
    try:
        app.run()
    finally:
        env.close()
    return 0


def _tui_from(args: argparse.Namespace) -> int:
    """The TUI on a saved snapshot: every screen that reads, none that acts."""
    from stordoc.commands.common import load_snapshot
    from tui.app import StordocApp
    from tui.saved import SavedSnapshotBackend

    if args.cluster:
        raise UserError("--from shows one snapshot: it names its own cluster (no --cluster)")
    rp = load_snapshot(args.from_dir)
    app = StordocApp(SavedSnapshotBackend(rp), rp.doc.cluster, read_only=True, refresh_s=0,
                     thresholds=rp.thresholds, user="snapshot")
    from storage.swiftlib import restore_real_threading
    restore_real_threading()  # the TUI's workers are OS threads: no green locks in logging
    app.run()
    return 0
