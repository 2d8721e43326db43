"""``stordoc runbooks|plan|fix|audit|locks``: list, plan, run and audit the runbooks.

``fix`` never runs without a confirmation: ``--yes``, or typing ``yes`` on a terminal.
Without a terminal and without ``--yes`` it refuses and runs nothing. Ctrl-C during a run
cancels between steps (the cleanup steps, like clearing ``noout``, still run); so do
SIGTERM, SIGHUP (a dropped SSH session) and a closed stdout (``| tee log``, then Ctrl-C:
tee is gone), after which what the run says goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import threading
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from core.argtypes import duration, int_range
from core.errors import UserError
from core.exitstatus import ExitStatus
from core.service.task import Task
from stordoc.commands.common import (
    cancel_when_stdout_lost,
    env_from_args,
    finding_code,
    term_of,
)

if TYPE_CHECKING:  # the handlers import what they use (the parser stays light)
    from rich.console import Console
    from rich.text import Text

    from core.env import Env
    from core.service import Service
    from core.service.actions import ActionPlan, RunReport
    from core.terminal import Terminal
    from runbooks.aftermath import Aftermath
    from runbooks.model import Plan, RunEvent
    from storage.model import ClusterSnapshot


FIX_CEPH_HINT = "--finding CEPH_HEALTH --entity 'ceph CODE'"


def exit_status(outcome: str) -> ExitStatus:
    """A runbook run's exit status by its ``Outcome``."""
    from runbooks.model import Outcome

    exits: dict[str, ExitStatus] = {
        Outcome.SUCCESS: ExitStatus.OK, Outcome.VERIFY_FAILED: ExitStatus.FAILED,
        Outcome.FAILED: ExitStatus.FAILED, Outcome.CANCELLED: ExitStatus.INTERRUPTED}
    return exits.get(outcome, ExitStatus.FAILED)


def _fix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("runbook", nargs="?")
    p.add_argument("target", nargs="?")
    p.add_argument("--finding", metavar="CODE",
                   help="fix the current finding with this code (runs a fresh check)")
    p.add_argument("--entity", help="with --finding: which entity or target when several")
    p.add_argument("--yes", "-y", action="store_true", help="confirm without asking")
    p.add_argument("--approval", metavar="FILE",
                   help="a run that needs two people (pg-mark-unfound-lost; destructive "
                   "runbooks under two_person): this plan signed by a second admin or "
                   "operator (`stordoc approve` on their machine)")
    p.add_argument("--approved-by", metavar="ID",
                   help="with --approval: who must have signed it (checked)")
    p.add_argument("--show-scripts", action="store_true",
                   help="print the whole script a step runs (the plan names it)")
    p.add_argument("--follow", type=duration(0, 3600), default=300.0, metavar="DURATION",
                   help="after a successful OSD/pool fix, report what the cluster still does "
                   "(peering, recovery, Ceph's ETA) until clean or this long (default 5m; "
                   "0 = do not follow)")
    _common(p)


def fix_namespace(args: argparse.Namespace, **over: Any) -> argparse.Namespace:
    """``args`` with every option of ``stordoc fix`` at its default, then ``over``: for a
    command that runs a runbook through ``cmd_fix`` (``maintenance``), so an option
    added to ``fix`` later is never missing there."""
    tmp = argparse.ArgumentParser(add_help=False)
    _fix_args(tmp)
    ns = tmp.parse_args([])
    for k, v in vars(args).items():
        setattr(ns, k, v)
    for k, v in over.items():
        setattr(ns, k, v)
    return ns


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("runbooks", help="list the runbooks and the finding codes each fixes")
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="one runbook: its target, what it does, how to plan and run it")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runbooks)

    p = sub.add_parser("plan", help="show what a runbook would do (changes nothing)")
    p.add_argument("runbook")
    p.add_argument("target", help="osd.N, a pool name, DEVICE@HOST, or a ring kind")
    _common(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--approval-request", metavar="FILE",
                   help="a run that needs two people: write the text the approver signs "
                   "(`stordoc approve FILE` on their machine)")
    p.add_argument("--show-scripts", action="store_true",
                   help="print the whole script a step runs (the plan names it)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("approve", help="on the approver's own machine: sign a plan that "
                       "needs a second person with your SSH key (reads no settings)")
    p.add_argument("request", help="the request file (`stordoc plan ... --approval-request`)")
    p.add_argument("--as", dest="as_", required=True, metavar="ID",
                   help="your user id as the settings name you (e.g. your Slack user id)")
    p.add_argument("--key", required=True, metavar="FILE",
                   help="your SSH private key (ssh-keygen -Y sign; the agent or a passphrase)")
    p.add_argument("--for", dest="for_", type=duration(60, 86400), default=3600.0,
                   metavar="DURATION", help="valid for (default 1h, at most 1d)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="where the approval goes (default: REQUEST.approval)")
    p.add_argument("--yes", "-y", action="store_true", help="sign without asking")
    p.set_defaults(func=cmd_approve)

    p = sub.add_parser("fix", help="plan, confirm, run and verify a runbook")
    _fix_args(p)
    p.set_defaults(func=cmd_fix)

    p = sub.add_parser("audit", help="runbook runs from the journal")
    p.add_argument("--last", type=int_range(1, 100_000), default=20, metavar="N")
    p.add_argument("--run", type=int_range(1, 2**63 - 1), metavar="ID",
                   help="one run with its steps")
    p.add_argument("--show-scripts", action="store_true",
                   help="with --run: print the whole script a step ran (the step names it)")
    p.add_argument("--cluster")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("locks", help="runbook locks held now (and stale ones)")
    p.add_argument("--cluster")
    p.add_argument("--clear", metavar="TARGET", help="remove a stale lock on TARGET")
    p.add_argument("--force", action="store_true",
                   help="with --clear: also remove a lock whose process still runs")
    p.add_argument("--yes", "-y", action="store_true",
                   help="undo what interrupted runs left (e.g. noout) without asking")
    p.set_defaults(func=cmd_locks)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", help="cluster name from the settings")
    p.add_argument("--apply", action="store_true",
                   help="swift-ring-rebalance: really write the ring (plan-only otherwise)")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="runbook option, e.g. headroom=0.7, pg_num=64, dirty_ratio=0.5")
    p.add_argument("--mode", metavar="MODE",
                   help="pg-mark-unfound-lost: revert or delete (the same as -o mode=MODE)")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in args.option or []:
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--option wants KEY=VALUE, not {item!r}")
        out[key.strip()] = val.strip()
    if getattr(args, "apply", False):
        out["apply"] = True
    if getattr(args, "mode", None) is not None:
        if out.get("mode", args.mode) != args.mode:
            raise UserError(f"--mode {args.mode} and -o mode={out['mode']}: give one")
        out["mode"] = args.mode
    return out


# ------------------------------------------------------------------ rendering


def render_plan(console: Console, plan: Any, show_scripts: bool = False) -> None:
    from rich.table import Table
    from rich.text import Text

    from core.fmt import inline_script
    from runbooks.api import Plan

    assert isinstance(plan, Plan)
    head = Text(f"Plan: {plan.runbook} {plan.target}", style="bold")
    head.append(f"  (cluster {plan.cluster})", style="dim")
    if plan.destructive:
        head.append("  moves data", style="yellow")
    console.print(head)
    if plan.summary:
        hanging(console, "", Text(plan.summary, style="dim"), 0)
    if plan.params:
        from runbooks.model import value_text  # words, never a Python repr

        # a long value a step's command shows whole (a path, a crash id) is not repeated
        pairs = [f"{k}={val}" for k, v in plan.params.items()
                 if not (len(val := value_text(v)) > 24
                         and any(val in s.command for s in plan.steps))]
        if pairs:
            hanging(console, "Parameters:", "; ".join(pairs), 12)
    if plan.before_after:
        t = Table(title="Changes", title_justify="left", show_edge=False)
        t.add_column("setting")
        t.add_column("before", justify="right")
        t.add_column("after", justify="right", style="green")
        for k, (b, a) in plan.before_after.items():
            t.add_row(k, value_text(b), value_text(a))
        console.print(t)
    console.print(Text("Steps:", style="bold"))
    scripts: list[tuple[int, str, str]] = []  # (step, name, body)
    for s in plan.steps:
        title = f"[{s.where}] {s.title}"
        if s.cleanup_of is not None:
            title += " (also runs after a failure)"
        hanging(console, f"  {s.index}.", title, 2 + len(f"{s.index}. "))
        # a script is named, not inlined (its body on request: --show-scripts); the
        # command that runs, is signed and audited is the whole one
        shown = inline_script(s.command)
        if shown is not None:
            scripts.append((s.index, shown[1], shown[2]))
        hanging(console, "       $", Text(shown[0] if shown else s.command, style="bold"), 9)
    hanging(console, "Verify:", Text(f"{', '.join(plan.verify_codes)} cleared for "
                                     f"{', '.join(plan.verify_entities) or plan.target}",
                                     style="dim"), 8)
    for w in plan.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    if scripts and not show_scripts:
        names = ", ".join(dict.fromkeys(name for _, name, _ in scripts))
        console.print(Text(f"scripts ({names}): --show-scripts prints them", style="dim"))
    for index, name, body in scripts if show_scripts else ():
        console.print(Text(f"script {name} (step {index}), run with sh:", style="bold"))
        for ln in body.splitlines():
            console.print(Text(f"    {ln}"), soft_wrap=True)  # code: never re-wrapped


def _event_printer(console: Console, ev: RunEvent) -> None:
    from rich.text import Text

    from runbooks.model import EventKind

    k = ev.kind
    if k == EventKind.STEP_STARTED:
        console.print(Text(f"  -> {ev.index}. {ev.title}", style="bold"))
    elif k == EventKind.STEP_DONE:
        console.print(Text(f"     ok: {ev.message}", style="green"))
    elif k == EventKind.STEP_FAILED:
        console.print(Text(f"     FAILED: {ev.message}", style="bold red"))
    elif k == EventKind.CANCELLED:
        console.print(Text(f"  cancelled: {ev.message}", style="yellow"))
    elif k == EventKind.VERIFY_STARTED:
        console.print(Text(f"  verifying: {ev.message}", style="bold"))
    elif k == EventKind.VERIFY_DONE:
        console.print(Text(f"     {ev.message}", style="green" if ev.ok else "red"))


# ------------------------------------------------------------------ commands


def _info_dict(i: Any) -> dict[str, Any]:
    return {"name": i.name, "summary": i.summary, "fixes": list(i.fixes),
            "destructive": i.destructive, "needs_second_person": i.needs_second_person,
            "target_kind": i.target_kind, "target": i.target_help}


def hanging(console: Console, label: Text | str, text: Text | str, indent: int) -> None:
    """``label`` padded to ``indent`` columns, then ``text`` wrapped on spaces to the
    console's width, its next rows indented as far: a code or a name is never cut or
    split (only a word wider than a row, a long path, is broken: ``fmt.wrap_words``), no
    row has trailing blanks."""
    from rich.text import Text

    from core.fmt import wrap_words

    label = label if isinstance(label, Text) else Text(label)
    text = text if isinstance(text, Text) else Text(text)
    room = max(20, console.width - indent)
    rows = wrap_words(text.plain, room)
    for n, row in enumerate(rows):
        head = label.copy() if n == 0 else Text()
        if head.cell_len < indent:
            head.pad_right(indent - head.cell_len)
        elif head.cell_len:
            head.append(" ")
        console.print(Text.assemble(head, (row, text.style)), soft_wrap=True)


def cmd_runbooks(args: argparse.Namespace) -> int:
    """The catalogue at a glance (one row per runbook, its codes whole, wrapped between
    them), or one runbook (``stordoc runbooks NAME``): target, what it does, how to run."""
    from rich.text import Text

    from runbooks.api import list_runbooks

    term = term_of(args)
    console = term.out
    infos = list_runbooks()
    if args.name is not None:
        name = runbook_name(args.name)
        info = next((i for i in infos if i.name == name), None)
        if info is None:  # a benchmark's name: planned by `stordoc bench`
            raise UserError(f"{args.name} is a benchmark, not a runbook: see "
                            "`stordoc bench --help`")
        if args.json:
            term.line(json.dumps(_info_dict(info), indent=2))
            return 0
        head = Text(info.name, style="bold")
        if info.destructive:
            head.append("  moves data or changes placement", style="yellow")
        if info.needs_second_person:
            head.append("  needs a second person (--approval)", style="yellow")
        console.print(head)
        for label, text in (("target", info.target_help or "-"),
                            ("fixes", ", ".join(info.fixes) or "no finding code: by hand"),
                            ("does", info.summary),
                            ("plan", f"stordoc plan {info.name} TARGET  (changes nothing)"),
                            ("run", f"stordoc fix {info.name} TARGET")):
            hanging(console, label, text, 8)
        return 0
    if args.json:
        term.line(json.dumps([_info_dict(i) for i in infos], indent=2))
        return 0
    names = [i.name + (" *" if i.destructive else "") for i in infos]
    indent = max(map(len, names)) + 2
    hanging(console, Text("runbook", style="bold"), Text("fixes", style="bold"), indent)
    for name, i in zip(names, infos):
        hanging(console, Text(name, style="bold"),
                ", ".join(i.fixes) or Text("(by hand: no finding code)", style="dim"), indent)
    console.print(Text("* moves data or changes placement; details: stordoc runbooks NAME",
                       style="dim"))
    return 0


def _plan(env: Env, args: argparse.Namespace, runbook: str, target: str,
          snapshot: ClusterSnapshot | None = None, svc: Service | None = None
          ) -> tuple[Service, ActionPlan, Plan]:
    """A refusal (unknown runbook, a target the cluster does not have, a safety gate)
    reaches main() as ActionRefused: one line, exit 4 (a misspelt request: 64).
    ``snapshot``: the check that chose the finding, planned on without collecting again."""
    from core.service import Service

    svc = svc or Service(env)
    ap = svc.actions.plan(env.cluster_name(args.cluster), runbook, target, source="cli",
                          options=_options(args), snapshot=snapshot)
    assert ap.runbook_plan is not None  # a runbook's plan, not a benchmark's
    return svc, ap, ap.runbook_plan


def cmd_plan(args: argparse.Namespace) -> int:
    from rich.text import Text

    runbook_name(args.runbook)
    if not args.target.strip():
        raise UserError(empty_target(args.runbook))
    env = env_from_args(args)
    try:
        _, _, p = _plan(env, args, args.runbook, args.target)
        if args.json:
            env.term.line(json.dumps(p.to_dict(), indent=2, default=str))
        else:
            render_plan(env.term.out, p, args.show_scripts)
        _approval_hint(env, args, p.cluster, p)
        if not args.json:
            env.term.out.print(Text("Nothing was changed (plan only).", style="dim"))
        return 0
    finally:
        env.close()


def empty_target(runbook: str) -> str:
    """The one line for a target typed empty (``''``): which target the runbook takes."""
    name = runbook_name(runbook)
    from runbooks.catalog import registry

    rb = registry().get(name)
    what = rb.info.target_help if rb is not None and rb.info.target_help else "a target"
    return f"{name}: the target is empty: it takes {what}"


def runbook_name(name: str) -> str:
    """A runbook's name as typed, if it is one (a benchmark is planned by the service);
    else one line and exit 64 with the closest name (``unknown runbook osd-remout: did you
    mean osd-remount?``), before anything is collected or changed."""
    from core.service.actions import is_bench
    from runbooks.model import InvalidRequest
    from runbooks.planning import runbook_named

    if is_bench(name):
        return name
    try:
        return runbook_named(name).info.name
    except InvalidRequest as e:
        raise UserError(str(e)) from None


def _pick_finding(svc: Service, args: argparse.Namespace
                  ) -> tuple[str, str, ClusterSnapshot]:
    """``--finding CODE [--entity E]``: a fresh check, then the one rule of
    ``core.service.fixes``; its refusals become Refused (exit 4) or UserError (64).
    A code no check reports is a typo (64), not "no such finding"; a known code with no
    finding says so with the cluster, never in words that read like all clear."""
    from rich.text import Text

    from core.service import fixes
    from runbooks.model import Refused

    code = finding_code(args.finding, FIX_CEPH_HINT)
    entity = args.entity or None
    # the core's one call (Service.fix_for): the whole check, then the fix an incident's
    # next step (core.service.fixes); this front end only words its refusals
    cluster = svc.env.cluster_name(args.cluster)
    try:
        out, choice = svc.fix_for(cluster, code, entity, "cli-fix")
    except fixes.NotReportedFor as e:
        raise Refused(f"no {code} finding for {entity} on cluster {cluster} right now "
                      f"(checked just now; it is reported for "
                      f"{', '.join(str(f.entity) for f in e.reported)})") from None
    except fixes.NoSuchFinding:
        extra = f" for {entity}" if entity else ""
        raise Refused(f"no {code} finding{extra} on cluster {cluster} right now "
                      "(checked just now)") from None
    except fixes.NoRunbook as e:
        if e.manual:  # the runbook exists and refuses now: say why, as the check did
            raise Refused(f"{code} {e.findings[0].entity}: no runbook runs now: {e.manual}"
                          ) from None
        raise Refused(f"{code} has no runbook that fixes it ({e.findings[0].message})"
                      ) from None
    except fixes.Ambiguous as e:
        listing = "; ".join(f"{f.entity} (target {f.target})" for f in e.candidates)
        raise UserError(f"{len(e.candidates)} {code} findings: pick one with --entity: "
                        f"{listing}") from None
    f = choice.finding
    svc.env.term.out.print(Text(f"{f.code} {f.entity}: {f.message}", style="yellow"))
    if choice.root is not None:
        r = choice.root
        svc.env.term.out.print(Text(f"a consequence of {r.code} {r.entity}: its fix is the "
                                f"root's, {choice.runbook} {choice.target}", style="yellow"))
    return choice.runbook, choice.target, out.snapshot


def _follow(term: Terminal, svc: Service, cluster: str, runbook: str,
            timeout_s: float) -> None:
    """The truth after "success": what the cluster still does, until clean or timeout;
    Ctrl-C (SIGTERM, SIGHUP, a closed stdout) stops following (the cluster carries on)."""
    from rich.text import Text

    console = term.out

    def show(am: Aftermath) -> None:
        console.print(Text(f"  {am.line}", style="green" if am.clean else "yellow"))

    task = Task(lambda cancel: svc.actions.follow(cluster, runbook, show, cancel,
                                                  source="cli", timeout_s=timeout_s),
                name="follow")
    with cancel_when_stdout_lost(term, task.cancel):
        am = task.wait()
    if am is None:
        return
    if task.cancelled:
        console.print(Text("  stopped following (the cluster carries on)", style="dim"))
        return
    if not am.clean and not am.error:
        console.print(Text(f"  still not clean after {int(timeout_s)} s: run `stordoc check`",
                           style="yellow"))


def cmd_fix(args: argparse.Namespace) -> int:
    from rich.text import Text

    from core.confirm import confirm

    if args.finding:
        if args.runbook or args.target:
            raise UserError("give either RUNBOOK TARGET or --finding CODE, not both")
    elif args.runbook and args.target is not None and not args.target.strip():
        raise UserError(empty_target(args.runbook))
    elif not (args.runbook and args.target):
        raise UserError("fix needs RUNBOOK TARGET, or --finding CODE")
    if args.finding:  # a typo is one line before anything is read or changed
        finding_code(args.finding, FIX_CEPH_HINT)
    else:
        runbook_name(args.runbook)
    env = env_from_args(args)
    try:
        _settle_interrupted(env, args)
        snap = None
        from core.service import Service

        svc = Service(env)  # one service: the check that picks the finding, then the plan
        if args.finding:  # the check that found it is planned on: one collection fewer
            runbook, target, snap = _pick_finding(svc, args)
        else:
            runbook, target = args.runbook, args.target
        svc, ap, plan = _plan(env, args, runbook, target, snap, svc)
        console = env.term.out
        confirmed_by = _second_person(env, args, ap.cluster, plan, ap.user)
        render_plan(console, plan, args.show_scripts)
        confirm(env.term, "Run this plan?", args.yes)

        term = env.term

        def interrupted(n: int) -> None:
            term.tell(Text("  cancelling after the current step (cleanup steps still run)..."
                           if n == 1 else "  still cancelling: the cleanup steps finish first",
                           style="yellow"))

        def stdout_lost() -> None:  # `| tee log` and Ctrl-C: tee is gone first
            if task.cancel():
                term.note("stdout closed: cancelling after the current step (cleanup steps "
                          "still run); what follows goes to stderr")

        def work(cancel: threading.Event) -> RunReport:
            return svc.actions.execute(ap, confirmed_by, lambda ev: _event_printer(
                term.err if term.stdout_lost else console, ev), cancel)

        task: Task[RunReport] = Task(work, name="runbook")
        with cancel_when_stdout_lost(term, stdout_lost):
            res = task.wait(interrupted)
        style = "bold green" if res.ok else "bold red"
        term.tell(Text(f"{res.outcome}: {res.message}", style=style))
        term.tell(Text(f"audit: stordoc audit --run {res.run_id}", style="dim"))
        if res.ok and args.follow > 0 and not term.stdout_lost:
            _follow(term, svc, ap.cluster, plan.runbook, args.follow)
        return exit_status(res.outcome)
    finally:
        env.close()


def _second_person(env: Env, args: argparse.Namespace, cluster: str, plan: Plan,
                   user: str) -> str:
    """Who confirms: the runner, or for a run that needs two people (the policy's answer:
    ``core.policy``) the second authorized person whose SSH signature over this very plan
    ``--approval`` gives (``core.approvals``); one line and exit 64 otherwise (nothing
    runs)."""
    from core import approvals
    from core.policy import Authorizer, SecondPerson

    pol = Authorizer.from_settings(env.settings)

    def second_person(approver: str | None) -> SecondPerson:
        return pol.second_person(cluster, plan.runbook, plan.needs_second_person, user,
                                 approver)

    if second_person(None) is SecondPerson.NOT_NEEDED:
        if args.approved_by or args.approval:
            raise UserError(f"{plan.runbook} needs no second person here: drop "
                            f"--approval/--approved-by")
        return user
    if not args.approval:
        raise UserError(f"{plan.runbook} needs two people: --approval FILE, this plan signed "
                        f"by another admin or operator (`stordoc plan ... --approval-request "
                        f"FILE`, then `stordoc approve FILE` on their machine)")
    text = _read_small(args.approval, "approval")
    try:
        return approvals.verify(text, approvals.request_for(plan), second_person,
                                env.settings.approver_keys, approved_by=args.approved_by)
    except approvals.ApprovalRefused as e:
        raise UserError(f"{plan.runbook} not run: {e}") from None


def _read_small(path: str, what: str, limit: int = 64 * 1024) -> str:
    from storage.safefile import FileRefused, read_regular

    try:  # a FIFO or a device is refused unopened (a FIFO hung `approve` for good)
        data = read_regular(path, limit)
    except FileRefused as e:
        raise UserError(f"the {what} file {e}") from None
    except OSError as e:
        raise UserError(f"cannot read the {what} file {path}: {e.strerror or e}") from None
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a {what} file (not text)") from None


def _approval_hint(env: Env, args: argparse.Namespace, cluster: str, plan: Plan) -> None:
    """After a plan that needs two people in the CLI: the request the approver signs
    (printed, and written to ``--approval-request FILE``)."""
    from rich.text import Text

    from core import approvals
    from core.policy import Authorizer, SecondPerson

    need = Authorizer.from_settings(env.settings).second_person(
        cluster, plan.runbook, plan.needs_second_person, env.settings.user or env.user, None)
    if need is SecondPerson.NOT_NEEDED:
        if args.approval_request:
            raise UserError(f"{plan.runbook} needs no second person here: no approval "
                            "request to write")
        return
    req = approvals.request_for(plan)
    out = env.term.out
    if args.approval_request:
        try:
            with open(args.approval_request, "x") as f:
                f.write(req)
        except OSError as e:
            raise UserError(f"cannot write {args.approval_request}: {e.strerror or e}"
                            ) from None
        where = args.approval_request
    elif args.json:
        return  # the JSON alone: the request is in a file with --approval-request
    else:
        where = "FILE"
        out.print(Text("approval request (the approver signs this text):", style="bold"))
        for line in req.splitlines():
            out.print(Text(f"  {line}"), soft_wrap=True)
    if args.json:
        return
    out.print(Text(f"two people: a second admin or operator of {cluster} runs `stordoc "
                   f"approve {where} --as THEIR_ID --key ~/.ssh/id_ed25519` on their own "
                   f"machine (write the request with --approval-request FILE) and sends "
                   f"back {where}.approval; then `stordoc fix ... --approval "
                   f"{where}.approval`", style="yellow"), soft_wrap=True)


def cmd_approve(args: argparse.Namespace) -> int:
    """``stordoc approve REQUEST --as ID --key KEY``: show the plan, sign it with
    ssh-keygen (argv, no shell) and write the approval file; reads no settings."""
    from rich.text import Text

    from core import approvals
    from core.confirm import confirm

    term = term_of(args)
    req = _read_small(args.request, "approval request")
    if not req.startswith(approvals.HEADER + "\n"):
        raise UserError(f"{args.request} is not a stordoc approval request (what `stordoc "
                        "plan ... --approval-request FILE` writes)")
    term.out.print(Text("You approve, as " + args.as_ + ", this plan:", style="bold"))
    for line in req.splitlines():
        term.out.print(Text(f"  {line}"), soft_wrap=True)
    confirm(term, "Sign it with your key?", args.yes, what="not signed")
    out = args.output or f"{args.request}.approval"
    try:
        text = approvals.sign(req, args.as_, args.key, args.for_)
    except approvals.ApprovalRefused as e:
        raise UserError(str(e)) from None
    try:
        with open(out, "x") as f:
            f.write(text)
    except OSError as e:
        raise UserError(f"cannot write {out}: {e.strerror or e}") from None
    term.out.print(Text(f"approval written to {out} (valid {args.for_ / 3600:g} h): send it "
                        "to the one who runs the plan (`stordoc fix ... --approval FILE`)",
                        style="green"))
    return 0


def _when(ts: float | None) -> str:
    if not ts:
        return ""
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def cmd_audit(args: argparse.Namespace) -> int:
    from rich.text import Text

    from core.fmt import inline_script, wrap_words
    from core.service import Service

    env = env_from_args(args)
    console = env.term.out
    try:
        recs = Service(env).records
        if args.run is not None:
            run, steps = recs.audit_run(args.run)
            if run is None:
                raise UserError(f"no runbook run {args.run} in {env.settings.journal}")
            if args.json:
                env.term.line(json.dumps({"run": asdict(run), "steps": [asdict(s) for s in steps]},
                                         indent=2, default=str))
                return 0
            hanging(console, "", Text(f"run {run.id}: {run.runbook} {run.target} on "
                                      f"{run.cluster} by {run.user} ({run.source}), "
                                      f"confirmed by {run.confirmed_by}", style="bold"), 0)
            hanging(console, "", f"started {_when(run.started_at)}, finished "
                    f"{_when(run.finished_at)}: {run.outcome}", 0)
            hanging(console, "", run.message, 0)
            scripts: dict[str, str] = {}
            for s in steps:  # a block per step: head, command, the end of its output
                what = f"{s.status}  [{s.host}]" + ("" if s.rc is None else f"  rc {s.rc}") \
                    + f"  {s.duration_s:.1f} s  {s.title}"
                hanging(console, f"{s.idx:>3}.", what, 5)
                shown = inline_script(s.command)
                if shown is not None:
                    scripts.setdefault(shown[1], shown[2])
                hanging(console, "       $", Text(shown[0] if shown else s.command,
                                                 style="bold"), 9)
                outp = (s.stderr or s.stdout).strip()
                if outp:
                    hanging(console, "", Text(" | ".join(outp[-300:].splitlines()),
                                              style="dim"), 9)
            if scripts and not args.show_scripts:
                console.print(Text(f"scripts ({', '.join(scripts)}): --show-scripts prints "
                                   "them", style="dim"))
            for name, body in scripts.items() if args.show_scripts else ():
                console.print(Text(f"script {name}, run with sh:", style="bold"))
                for ln in body.splitlines():
                    console.print(Text(f"    {ln}"), soft_wrap=True)  # code: as it ran
            return 0
        runs = recs.audit(args.cluster, limit=max(1, args.last))
        if args.json:
            env.term.line(json.dumps([asdict(r) for r in runs], indent=2, default=str))
            return 0
        if not runs:
            console.print("no runbook runs recorded")
            return 0
        # a block per run: its id, when, what, on what, by whom, how it ended (never cut
        # or split), then its message wrapped on spaces, at most two rows
        clusters = {r.cluster for r in runs}
        width = max(len(str(r.id)) for r in runs)
        for r in runs:
            style = {"success": "green", "running": "cyan"}.get(r.outcome, "red")
            head = Text(f"{r.id:>{width}}  {_when(r.started_at)[:16]}  ")
            head.append(r.runbook, style="bold")
            head.append(f" {r.target}")
            if len(clusters) > 1:
                head.append(f" on {r.cluster}")
            head.append("  ")
            head.append(r.outcome, style=style)
            head.append(f"  by {r.user}" if r.user else "")
            hanging(console, "", head, 0)
            if r.message:
                rows = wrap_words(r.message, max(20, console.width - width - 2))
                if len(rows) > 2:  # cut between words, never inside one
                    rows = [rows[0], wrap_words(rows[1], console.width - width - 4)[0] + " …"]
                for row in rows:
                    console.print(Text(" " * (width + 2) + row, style="dim"), soft_wrap=True)
        if len(clusters) == 1:
            console.print(Text(f"cluster {next(iter(clusters))}; one run with its steps: "
                               "stordoc audit --run ID", style="dim"))
        else:
            console.print(Text("one run with its steps: stordoc audit --run ID", style="dim"))
        return 0
    finally:
        env.close()


def _settle_interrupted(env: Env, args: argparse.Namespace, ask: bool = True) -> None:
    """Runs whose process died are marked interrupted; what they owned and left (a flag
    they set) is shown and undone only after a yes (``--yes`` counts). With ``ask`` off
    (listing locks) it is only shown, unless ``--yes``."""
    from rich.text import Text

    from core.confirm import confirm
    from core.service import Service

    locks = Service(env).locks
    left = locks.interrupted(args.cluster, source="cli")
    if not left:
        return
    console = env.term.out
    for x in left:
        console.print(Text(x.line(), style="yellow"))
    if not ask and not args.yes:
        console.print("undo it with: stordoc locks --yes")
        return
    confirm(env.term, "Undo what the interrupted run(s) left?", args.yes,
            what="left as it is; nothing was run")
    for line in locks.undo(args.cluster, left, source="cli"):
        console.print(line)


def cmd_locks(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from core.service import Service

    env = env_from_args(args)
    console = env.term.out
    try:
        cluster = env.cluster_name(args.cluster)
        locks = Service(env).locks
        if args.clear:
            lk = locks.clear(cluster, args.clear, force=args.force)
            console.print(f"cleared the lock on {lk.target} ({lk.purpose}, {lk.owner}, "
                          f"pid {lk.pid} on {lk.host})")
            _settle_interrupted(env, args)
            return 0
        _settle_interrupted(env, args, ask=False)
        held = locks.locks(cluster)
        if not held:
            console.print(f"no runbook locks on cluster {cluster}")
            return 0
        t = Table(show_edge=False)
        for c in ("target", "purpose", "owner", "pid", "host", "since", "state"):
            t.add_column(c)
        for lk in held:
            t.add_row(lk.target, lk.purpose, lk.owner, str(lk.pid), lk.host, _when(lk.since),
                      Text("stale", style="red") if lk.stale else "held")
        console.print(t)
        return 0
    finally:
        env.close()
