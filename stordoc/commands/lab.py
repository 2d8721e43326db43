"""``stordoc lab``: bring a real Ceph + Swift + SSH lab up on this machine, break and heal it.

The one door from the product into ``lab/`` (tests/unit/test_import_layers.py): no other
product module imports the lab; a running default lab's config reaches the settings as
the pointer file this command writes (``core.settings.LAB_POINTER``).
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.argtypes import int_range
from core.errors import UserError
from core.exitstatus import ExitStatus
from stordoc.commands.common import term_of

if TYPE_CHECKING:
    from rich.console import Console

    from lab import Lab


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             full: bool = True) -> None:
    """``full=False``: only the ``lab`` line of the top-level help, for an argv that does
    not name ``lab`` (its options come from the scenario registry, and importing the lab
    package costs more than every other command's parser together)."""
    here = importlib.util.find_spec("lab") is not None  # a path search, no import
    p = sub.add_parser("lab", help="a real local Ceph + Swift cluster for tests and demos"
                       if here else "not in this install: the lab runs from a source checkout")
    if not full:
        return
    try:
        import lab  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name != "lab":
            raise
        # an installed wheel has no lab (pyproject.toml): one line, not a traceback
        p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(func=_no_lab)
        return
    from lab import DEFAULT_DIR, DEFAULT_LAYOUT, DEFAULT_PORT_BASE, LAYOUTS
    from lab.rootfs import HOST_RELEASE, RELEASES

    lsub = p.add_subparsers(dest="lab_cmd", metavar="ACTION", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--dir", default=DEFAULT_DIR, help=f"base directory ({DEFAULT_DIR})")
        q.add_argument("--port-base", type=int_range(1024, 65535 - 200), default=None,
                       help=f"first port of the lab's range (default {DEFAULT_PORT_BASE})")

    up = lsub.add_parser("up", help="bring the lab up (cleans a stale lab of the same dir; "
                         "refuses on a running one unless --recreate)")
    common(up)
    up.add_argument("--recreate", action="store_true",
                    help="tear down a running lab of this dir first (its journal and audit "
                         "history go with it)")
    up.add_argument("--with-alerts", action="store_true",
                    help="also run the alert chain: the mgr prometheus module, Prometheus with "
                         "Ceph's alert rules and Alertmanager delivering to the bot's webhook "
                         "(port base + 19)")
    up.add_argument("--no-host-metrics", action="store_true",
                    help="without the node_exporter per lab host and the Prometheus scraping "
                         "them (ports base + 40.., base + 17; stordoc-prom.toml names it)")
    up.add_argument("--osd-layout", choices=LAYOUTS, default=DEFAULT_LAYOUT,
                    help="how OSDs are deployed: xfs (3 ceph-disk style XFS data dirs), raw "
                         "(3 ceph-volume raw OSDs, tmpfs data dirs), mixed (3 xfs + osd.3 "
                         f"raw on node4; default {DEFAULT_LAYOUT})")
    up.add_argument("--release", choices=RELEASES, default=HOST_RELEASE,
                    help="which Ceph/Swift release the lab runs: pacific (Ceph 16.2, Swift "
                         "2.30: this host's Debian 12 packages) or reef (Ceph 18.2, Swift 2.35 "
                         "from Debian 13, run through chroot from a root filesystem built "
                         f"once by mmdebstrap; default {HOST_RELEASE})")
    up.set_defaults(func=cmd_up)
    st = lsub.add_parser("status", help="what runs, where, on which ports; health")
    common(st)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)
    dn = lsub.add_parser("down", help="stop everything, unmount, detach, remove the dir")
    common(dn)
    dn.set_defaults(func=cmd_down)
    for name, fn in (("break", cmd_break), ("heal", cmd_heal)):
        _fault_parser(lsub, name, fn, common)


def _fault_parser(lsub: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
                  fn: Callable[[argparse.Namespace], int],
                  common: Callable[[argparse.ArgumentParser], None]) -> None:
    """``lab break|heal SCENARIO``: the scenarios and their options from the registry
    (lab/scenarios/): each option once, its help naming the scenarios that read it."""
    from lab import SCENARIOS, scenarios

    heal = name == "heal"
    listing = "; ".join(f"{s.name}: {s.summary}" for s in scenarios.REGISTRY.values())
    b = lsub.add_parser(name, help=f"{name} a fault scenario: {', '.join(SCENARIOS)}",
                        description=f"{name.capitalize()} a fault scenario. {listing}.")
    common(b)
    b.add_argument("scenario", choices=SCENARIOS)
    for opt_name in scenarios.OPTION_NAMES:
        users = scenarios.users(opt_name, heal=heal)
        if not users:
            continue
        opt = scenarios.option(opt_name)
        default = getattr(scenarios.DEFAULTS, opt_name)
        helptext = f"{opt.help} ({', '.join(users)})"
        # SUPPRESS: an option not given is absent, so one the scenario does not read can
        # be told from one left at its default (the scenario's defaults are lab.break_'s)
        if isinstance(default, bool):
            b.add_argument(f"--{opt_name}", action="store_true", help=helptext,
                           default=argparse.SUPPRESS)
        elif isinstance(default, int):
            b.add_argument(f"--{opt_name}", type=int_range(0, 999_999),
                           default=argparse.SUPPRESS, help=f"{helptext}; default {default}")
        else:
            b.add_argument(f"--{opt_name}", choices=opt.choices or None,
                           default=argparse.SUPPRESS, help=f"{helptext}; default {default}")
    b.set_defaults(func=fn)


def _lab(args: argparse.Namespace) -> Lab:
    from lab import Lab

    if args.port_base is not None and not 1024 <= args.port_base <= 65000:
        raise UserError("--port-base must be between 1024 and 65000")
    return Lab(args.dir, args.port_base, getattr(args, "osd_layout", None),
               release=getattr(args, "release", None))


def _no_lab(args: argparse.Namespace) -> int:
    raise UserError("stordoc lab: this install has no lab (the lab runs from a source "
                    "checkout of stordoc, set up with scripts/setup)")


def _is_default(lab: Lab) -> bool:
    from lab import DEFAULT_DIR

    return lab.base == Path(DEFAULT_DIR).resolve()


def _announce(lab: Lab) -> None:
    """The default lab tells the product where its config is (core.settings reads the
    pointer: the product never imports the lab)."""
    from core.settings import announce_lab

    pid = lab.pid("mon.a")
    if _is_default(lab) and pid:
        announce_lab(lab.config_path, pid)


def cmd_up(args: argparse.Namespace) -> int:
    from lab import LabError

    console = term_of(args).out
    if os.geteuid() != 0:  # before anything is made: loop devices, mounts, chroot
        raise PermissionError(errno.EPERM, "lab up needs root (loop devices, mounts, "
                              "chroot); nothing was made")
    lab = _lab(args)
    live = [n for n in lab.known_daemons() if lab.pid(n)]
    if live and not args.recreate:
        raise UserError(f"a lab is running under {lab.base} ({len(live)} daemons): use its "
                        f"config {lab.config_path} (--config or $STORDOC_CONFIG), or pass "
                        "--recreate to tear it down with its journal and audit history")
    try:
        took = lab.up(progress=lambda s: console.print(f"[dim]lab:[/] {s}"),
                      with_alerts=args.with_alerts, with_metrics=not args.no_host_metrics)
    except LabError as e:
        console.print(f"[bold red]lab up failed:[/] {e}")
        return ExitStatus.FAILED
    console.print(f"[green]lab up[/] in {took:.1f}s; config: {lab.config_path}")
    _announce(lab)
    _print_status(console, lab.status())
    return ExitStatus.OK


def _print_status(console: Console, st: dict) -> None:
    from rich.table import Table

    t = Table(title=f"lab {st['base']}")
    t.add_column("process")
    t.add_column("pid")
    t.add_column("port")
    ports = st["ports"]
    for name, pid in st["processes"].items():
        port = ports.get(name) or ports.get(name.split(".")[0]) or ""
        t.add_row(name, str(pid) if pid else "[red]not running[/]", str(port))
    console.print(t)
    console.print(f"Ceph health: {st['ceph_health']}   OSDs up/in: {st['osds_up_in']}")
    console.print(f"Swift healthcheck: {'OK' if st['swift_healthcheck'] is True else st['swift_healthcheck']}")
    console.print(f"mounts: {len(st['mounts'])}   loop devices: {len(st['loop_devices'])}   "
                  f"config: {st['config']}")


def cmd_status(args: argparse.Namespace) -> int:
    """Exit 0 when every process of the lab runs, 3 (unreachable) when it is missing or
    a process is down."""
    term = term_of(args)
    lab = _lab(args)
    st = lab.status()
    if args.json:
        term.line(json.dumps(st, indent=1, default=str))
    elif not st["exists"]:
        term.out.print(f"no lab under {lab.base}")
    else:
        _print_status(term.out, st)
    return ExitStatus.OK if st["exists"] and all(st["processes"].values()) \
        else ExitStatus.UNREACHABLE


def cmd_down(args: argparse.Namespace) -> int:
    from lab import LabError

    console = term_of(args).out
    lab = _lab(args)
    if _is_default(lab):
        from core.settings import forget_lab

        forget_lab()
    try:
        res = lab.down()
    except LabError as e:
        console.print(f"[bold red]lab down failed:[/] {e}")
        return ExitStatus.FAILED
    console.print(f"stopped {len(res['stopped'])} processes, unmounted {len(res['unmounted'])}, "
                  f"detached {len(res['detached'])} loop devices; removed {lab.base}")
    return ExitStatus.OK


def _fault(args: argparse.Namespace, heal: bool) -> int:
    from lab import LabError, scenarios

    console = term_of(args).out
    opts = {k: v for k, v in vars(args).items() if k in scenarios.OPTION_NAMES}
    sc = scenarios.get(args.scenario)
    takes = [o.name for o in (sc.heal_options if heal else sc.options)]
    extra = [k for k in opts if k not in takes]
    if extra:  # before anything is looked at or done
        verb = "heal" if heal else "break"
        raise UserError(f"lab {verb} {args.scenario} takes no --{extra[0]} ("
                        + (f"its options: {', '.join('--' + t for t in takes)}" if takes
                           else "it takes no options") + "): nothing done")
    lab = _lab(args)
    if not lab.state_path.exists():
        raise UserError(f"no lab under {lab.base}: run 'stordoc lab up' first")
    try:
        msg = lab.heal(args.scenario, **opts) if heal else lab.break_(args.scenario, **opts)
    except ValueError as e:
        raise UserError(str(e)) from None
    except LabError as e:
        console.print(f"[bold red]failed:[/] {e}")
        return ExitStatus.FAILED
    console.print(msg)
    return ExitStatus.OK


def cmd_break(args: argparse.Namespace) -> int:
    return _fault(args, heal=False)


def cmd_heal(args: argparse.Namespace) -> int:
    return _fault(args, heal=True)
