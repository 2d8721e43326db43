"""``stordoc mute CODE [ENTITY] --for 4h --reason ...``, ``mute --list``, ``unmute``:
mutes with expiry in the journal (storage/mutes.py), audited (who, why, until), expired
automatically. The config's static ``muted = [...]`` list stays as it is."""

from __future__ import annotations

import argparse
import time

from checks.mutable import CANNOT_LOOK_WHY, mute_refusal
from core.argtypes import duration
from core.errors import UserError
from stordoc.commands.common import env_from_args, finding_code

MAX_MUTE_S = 30 * 86400.0
CEPH_HINT = "stordoc mute CEPH_HEALTH 'ceph CODE'"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mute", help="hide a finding code (on one entity or all) for a while")
    p.add_argument("code", nargs="?", help="finding code, e.g. OSD_DOWN_OUT (see docs/checks.md)")
    p.add_argument("entity", nargs="?", help="only this entity, e.g. osd.1 (default: all)")
    p.add_argument("--for", dest="for_s", type=duration(60, MAX_MUTE_S), metavar="DURATION",
                   help="how long: 30m, 4h, 2d (1 minute to 30 days)")
    p.add_argument("--reason", help="why (kept in the audit)")
    p.add_argument("--cluster", help="cluster name from the settings (default: the default)")
    p.add_argument("--list", action="store_true", help="list mutes (active, expired, removed)")
    p.set_defaults(func=cmd_mute)
    u = sub.add_parser("unmute", help="end a mute before it expires")
    u.add_argument("code", help="finding code")
    u.add_argument("entity", nargs="?", help="the entity the mute names (none: the all-mute)")
    u.add_argument("--cluster", help="cluster name from the settings (default: the default)")
    u.set_defaults(func=cmd_unmute)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def cmd_mute(args: argparse.Namespace) -> int:
    from rich.table import Table

    from core.service import Service
    from core.service.records import MuteRefused, UnknownCode

    env = env_from_args(args)
    recs = Service(env).records
    try:
        if args.list:
            if args.code or args.for_s or args.reason:
                raise UserError("mute --list takes no code, --for or --reason")
            cluster = env.cluster_name(args.cluster)
            now = time.time()
            t = Table("id", "what", "state", "until", "by", "reason", box=None)
            for m in recs.mutes(cluster):
                state = ("removed by " + str(m.removed_by)) if m.removed_at else (
                    "active" if m.active(now) else "expired")
                if state == "active" and mute_refusal(m.code):  # an older version's mute
                    state = f"active (ignored: {CANNOT_LOOK_WHY})"
                t.add_row(str(m.id), m.what, state, _when(m.until), m.by, m.reason)
            env.term.out.print(t)
            return 0
        if not args.code:
            raise UserError("mute needs a CODE (or --list)")
        finding_code(args.code, CEPH_HINT)  # a typo would mute nothing, silently
        refused = mute_refusal(args.code)  # cannot-see codes, whatever --for/--reason say
        if refused:
            raise UserError(refused)
        if args.for_s is None:
            raise UserError("mute needs --for DURATION (e.g. --for 4h)")
        if not (args.reason or "").strip():
            raise UserError("mute needs --reason (kept in the audit)")
        cluster = env.cluster_name(args.cluster)
        try:
            m = recs.mute(cluster, args.code, args.entity, args.for_s,
                          args.reason, env.settings.user or env.user)
        except UnknownCode:
            raise UserError(f"unknown code {args.code!r}; see docs/checks.md") from None
        except MuteRefused as e:
            raise UserError(str(e)) from None
        env.term.line(f"muted {m.what} on {cluster} until {_when(m.until)} by {m.by}: "
                      f"{m.reason}")
        return 0
    finally:
        env.close()


def cmd_unmute(args: argparse.Namespace) -> int:
    from core.service import Service
    from core.service.records import UnknownCode

    finding_code(args.code, CEPH_HINT.replace("mute", "unmute"))
    env = env_from_args(args)
    try:
        cluster = env.cluster_name(args.cluster)
        try:
            gone = Service(env).records.unmute(cluster, args.code, args.entity,
                                               env.settings.user or env.user)
        except UnknownCode:
            raise UserError(f"unknown code {args.code!r}; see docs/checks.md") from None
        if not gone:
            code = args.code.strip().upper()
            what = f"{code} {args.entity}" if args.entity else f"{code} (all)"
            raise UserError(f"no active mute of {what} on {cluster} (see mute --list)")
        env.term.line(f"unmuted {', '.join(m.what for m in gone)} on {cluster}")
        return 0
    finally:
        env.close()
