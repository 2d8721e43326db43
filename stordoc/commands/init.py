"""``stordoc init``: write a config whose hosts come from the cluster (``core.init`` does
the work; this parses the options and prints what was found, one line per problem)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from core.argtypes import float_range, int_range


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "init", help="write a config whose hosts come from the cluster (Ceph's CRUSH hosts "
        "and daemon metadata, Swift's rings, Prometheus's node_exporters)",
        description="Read the cluster and write a config: hosts_from (hosts are read again "
        "at each check), host_defaults for what every host shares, a host entry only "
        "where one differs. Never overwrites a file stordoc init did not write; one it "
        "wrote only with --force. Exit 0, 1 when something could not be read (each said "
        "in one line; the config is written for what works), 3 when no monitor answered, "
        "64 for bad input.")
    p.add_argument("--name", default="main", metavar="CLUSTER",
                   help="the cluster's name in the config (default: main)")
    p.add_argument("--ceph-conf", metavar="FILE", help="the cluster's ceph.conf")
    p.add_argument("--keyring", metavar="FILE", help="the Ceph user's keyring")
    p.add_argument("--client", default="client.admin", metavar="NAME",
                   help="the Ceph user (default client.admin)")
    p.add_argument("--swift-dir", metavar="DIR",
                   help="a copy of /etc/swift: rings and the servers' configs")
    p.add_argument("--prometheus", metavar="URL",
                   help="a Prometheus that scrapes node_exporter on the hosts")
    p.add_argument("--prometheus-job", default="node", metavar="JOB",
                   help="the node_exporters' scrape job (default node)")
    p.add_argument("--ssh-user", metavar="USER", help="SSH user on every host (default root)")
    p.add_argument("--ssh-key", metavar="FILE", help="SSH private key for every host")
    p.add_argument("--ssh-port", type=int_range(1, 65535), metavar="PORT", help="SSH port (default 22)")
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts with the hosts' keys")
    p.add_argument("--host", action="append", default=[], metavar="NAME=ADDRESS",
                   help="where SSH reaches a host the cluster names NAME when that is not "
                   "the address its daemons report (NAT, a management network, a "
                   "loopback lab); repeat per host")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="where to write (default: --config, $STORDOC_CONFIG or "
                   "~/.config/stordoc/config.toml)")
    p.add_argument("--force", action="store_true",
                   help="replace a config stordoc init wrote before (never another file)")
    p.add_argument("--no-probe", action="store_true",
                   help="do not try each host's SSH port")
    p.add_argument("--timeout", type=float_range(0.1, 300.0), default=10.0, metavar="S",
                   help="per Ceph/Prometheus request (default 10)")
    p.set_defaults(func=cmd_init)


def _output(args: argparse.Namespace) -> Path:
    if args.output:
        return Path(args.output)
    if getattr(args, "config", None):
        return Path(args.config)
    if os.environ.get("STORDOC_CONFIG"):
        return Path(os.environ["STORDOC_CONFIG"])
    return Path.home() / ".config" / "stordoc" / "config.toml"


def cmd_init(args: argparse.Namespace) -> int:
    from core.exitstatus import ExitStatus
    from core.init import InitError, InitRequest, parse_addresses, run_init

    term = args.term
    try:
        req = InitRequest(
            name=args.name, ceph_conf=args.ceph_conf, keyring=args.keyring,
            client=args.client, swift_dir=args.swift_dir, prometheus_url=args.prometheus,
            prometheus_job=args.prometheus_job, ssh_user=args.ssh_user,
            ssh_key=args.ssh_key, ssh_port=args.ssh_port, known_hosts=args.known_hosts,
            addresses=parse_addresses(args.host), probe=not args.no_probe,
            timeout_s=args.timeout)
        out = _output(args)
        plan = run_init(req, out, args.force)
    except InitError as e:
        term.error(str(e))
        return ExitStatus.USAGE
    for line in plan.notes:
        term.line(line)
    for line in plan.problems:
        term.line(f"warn: {line}")
    term.line(f"wrote {out} ({plan.lines} lines); next: stordoc --config {out} check")
    if any(p.startswith("Ceph: monitors unreachable") for p in plan.problems):
        return ExitStatus.UNREACHABLE
    return ExitStatus.WARN if plan.problems else ExitStatus.OK
