"""``stordoc hostguard HOST``: what a host needs for stordoc's restricted SSH key, the
allowlist of the commands stordoc sends it (storage/hostallow.py), the forced-command
program that enforces it (storage/hostguard.py, `--program`), and the authorized_keys
line that ties the key to both (`--authorized-key PUB`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.errors import UserError
from stordoc.commands.common import env_from_args, term_of

PROGRAM_AT = "/usr/local/lib/stordoc/stordoc-host"
ALLOW_AT = "/etc/stordoc/host-allow.json"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hostguard", help="a host's allowlist for stordoc's restricted SSH key (and the "
        "forced command and authorized_keys line that enforce it)",
        description="Print (or write with --output) the JSON allowlist of every command "
        "stordoc's checks and runbooks send to HOST: install it on the host as "
        f"{ALLOW_AT}, the program (--program prints its path here) as {PROGRAM_AT}, and "
        "the key with the line --authorized-key prints. With it the key runs those "
        "commands only, never a shell; the multi-client benchmarks and the Swift ring "
        "distribution need a key without it.")
    p.add_argument("host", metavar="HOST", nargs="+",
                   help="a host of the cluster (name or address); several: one allowlist "
                   "for a machine that is all of them")
    p.add_argument("--cluster", help="cluster name from the settings (default: the default)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the allowlist there (only over an allowlist stordoc wrote)")
    p.add_argument("--access", choices=("checks", "repairs", "all"), default="repairs",
                   help="what the key may run: checks (the reads alone), repairs (and "
                   "every runbook but the disk replacement; the default), all (and the "
                   "disk replacement: mkfs and ceph-volume prepare on a device)")
    p.add_argument("--program", action="store_true",
                   help="print the path of the forced-command program to copy to the host")
    p.add_argument("--authorized-key", metavar="PUB",
                   help="print the authorized_keys line for this public key file")
    p.set_defaults(func=cmd_hostguard)


def _ours(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "rules" in doc and "host" in doc and "version" in doc


def cmd_hostguard(args: argparse.Namespace) -> int:
    import storage.hostguard
    from storage.hostallow import allowlist, write_allowlist

    term = term_of(args)
    if args.program:
        term.line(str(Path(storage.hostguard.__file__).resolve()))
        return 0
    if args.authorized_key:
        try:
            pub = Path(args.authorized_key).read_text(encoding="utf-8").strip()
        except OSError as e:
            raise UserError(f"{args.authorized_key}: {e.strerror}") from None
        parts = pub.split()
        if len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-", "sk-")) \
                or "\n" in pub or '"' in pub:
            raise UserError(f"{args.authorized_key}: not one OpenSSH public key")
        term.line(f'command="/usr/bin/python3 {PROGRAM_AT} {ALLOW_AT}",restrict {pub}')
        return 0
    env = env_from_args(args)
    try:
        target = env.target(args.cluster)
        hosts = []
        for spelling in args.host:
            found = target.hosts_named(spelling)
            if len(found) != 1:
                known = ", ".join(h.name for h in target.hosts) or "none"
                raise UserError(f"host {spelling!r} is "
                                f"{'ambiguous' if found else 'unknown'} in cluster "
                                f"{target.name} (hosts: {known})")
            if found[0] not in hosts:
                hosts.append(found[0])
        if args.output:
            out = Path(args.output)
            if out.exists() and not _ours(out):
                raise UserError(f"{out} exists and is not an allowlist stordoc wrote: "
                                "not overwritten")
            n = write_allowlist(str(out), target, hosts, args.access)
            term.line(f"wrote {out}: {n} rules ({args.access}) for "
                      f"{', '.join(h.name for h in hosts)}")
        else:
            term.line(json.dumps(allowlist(target, hosts, args.access), indent=1))
        return 0
    finally:
        env.close()
