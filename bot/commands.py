"""The bot's commands: parse, authorize (``core.policy``), answer through the command table.

``run_text`` turns a text into a parsed, authorized command; ``answer`` looks its class up
in ``_COMMANDS`` and calls that ``_cmd_*`` handler, which returns the reply.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from typing import Any, ClassVar

from bot import grammar as g
from bot import render as r
from bot.actions import Actions
from bot.core import BotCore, BotError, Where, log
from checks.incidents import Incident
from checks.model import Finding
from checks.outcome import CheckOutcome
from core.alerts.alertmanager import AlertmanagerError
from core.policy import Level
from core.service import fixes
from core.service.actions import BENCH_PREFIX
from core.service.inspect import RecordPolicy
from core.service.records import MuteRefused, UnknownCode
from core.slack.redact import hide_paths
from storage.audit import secrets_in
from storage.model import CephState

# a command handler: (bot, where, cluster, the parsed command) -> the reply
Handler = Callable[["Commands", Where, str, Any], r.Reply]


class Commands:
    """Commands from the slash command and mentions; holds the bot's ``BotCore`` and its
    ``Actions`` (the plans' buttons) by composition."""

    def __init__(self, core: BotCore, actions: Actions) -> None:
        self.core = core
        self.actions = actions

    def run_text(self, where: Where, text: str) -> None:
        """Parse, authorize and answer one command (runs in the worker pool)."""
        where = replace(where, pasted=secrets_in(text))
        said = self.core.redactor.text(text, where.pasted)  # scrubbed, then cut: never half of one
        try:
            cmd = g.parse(text, self.core.backend.actions.runbooks() or None)
        except g.GrammarError as e:
            self.core.audit(where, None, "command", "bad input", said[:200])
            self.core.refuse(where, r.esc(str(e)))  # it quotes the user's words
            return
        if isinstance(cmd, g.Help) and cmd.cluster is None:
            self.core.post(where, r.help_reply(self.core.command, g.USAGE, cmd.topic))
            return
        if isinstance(cmd, g.Health) and cmd.cluster == "all" and cmd.snapshot is None and \
                "all" not in self.core.backend.clusters():
            self._health_all(where, said)
            return
        bound = self.core.channels.get(where.channel)
        try:
            cluster = g.resolve_cluster(cmd.cluster, self.core.backend.clusters(),
                                        bound or self.core.backend.default_cluster())
        except g.GrammarError as e:
            self.core.audit(where, cmd.cluster, "command", "bad input", said[:200])
            self.core.refuse(where, r.esc(str(e)))  # it quotes the user's words
            return
        if bound and cluster != bound and not self.core.auth.is_admin(where.user):
            self.core.audit(where, cluster, type(cmd).__name__.lower(), "refused",
                        f"channel bound to {bound}: {said[:180]}")
            self.core.refuse(where, f"this channel is bound to cluster `{bound}`: commands for "
                                f"`{cluster}` from here need an admin (slack.channels); use "
                                "that cluster's channel")
            return
        need = Level.VIEWER if _read_only(cmd) else Level.OPERATOR
        refusal = self.core.auth.refusal(where.user, cluster, need)
        if refusal:
            self.core.audit(where, cluster, type(cmd).__name__.lower(), "refused", said[:200])
            self.core.refuse(where, refusal)
            return
        self.core.audit(where, cluster, type(cmd).__name__.lower(), "accepted", said[:200])
        self.core.answer_in_time(where, lambda: self.answer(where, cluster, cmd))

    def _health_all(self, where: Where, text: str) -> None:
        """``health all``: every cluster the user may view, checked in parallel, one
        verdict line each (clusters without a viewer role are left out, not named)."""
        visible = [c for c in self.core.backend.clusters()
                   if self.core.auth.refusal(where.user, c, Level.VIEWER) is None]
        if not visible:
            self.core.audit(where, None, "health", "refused", text[:200])
            self.core.refuse(where, "you have no viewer role on any cluster (slack.roles)")
            return
        self.core.audit(where, None, "health", "accepted", f"all: {', '.join(visible)}"[:200])

        def compute() -> r.Reply:
            from checks.incidents import headline

            # its own small pool: waiting on the bot's pool from inside it could deadlock
            with ThreadPoolExecutor(max_workers=min(8, len(visible))) as ex:
                outs = list(ex.map(lambda c: self.core.backend.check(c, "slack", since=where.at),
                                   visible))
            return r.all_clusters_reply([
                (o.report.verdict, headline(o.report.cluster, o.report.verdict,
                                              o.incidents, len(o.report.findings)))
                for o in outs])
        self.core.answer_in_time(where, compute)

    def _views(self, cluster: str) -> CheckOutcome:
        """A snapshot for read-only views: no host facts, not recorded as a check run."""
        return self.core.backend.check(cluster, "slack", RecordPolicy.NEVER, host_facts=False)

    def token_for(self, cluster: str, user: str, incidents: Iterable[Incident]
                  ) -> Callable[[Finding], str | None]:
        """A Fix button on a finding that is its incident's root, for that incident's fix
        (``core.service.fixes``: a consequence's fix is its root's button)."""
        incs = tuple(incidents)

        def make(f: Finding) -> str | None:
            fx = fixes.fix_for_finding(incs, f)
            return self._fix_button(cluster, user, fx) if fx is not None else None
        return make

    def incident_token_for(self, cluster: str, user: str) -> Callable[[Incident], str | None]:
        """A Fix button for an incident's fix (its next step: planned, never refused)."""
        def make(inc: Incident) -> str | None:
            fx = fixes.incident_fix(inc)
            return self._fix_button(cluster, user, fx) if fx is not None else None
        return make

    def _fix_button(self, cluster: str, user: str, fx: fixes.FixChoice) -> str:
        return self.core.store.new_button("fix", cluster, fx.runbook, fx.target, user, self.core.ttl,
                                     {"code": fx.finding.code, "entity": fx.finding.entity})

    def mute_reply(self, where: Where, cluster: str,
                   cmd: g.Mute | g.Unmute | g.MuteList) -> r.Reply:
        """Mutes with expiry from chat (operators only for mute/unmute), by Slack user ID,
        in the same journal table as the CLI's (storage/mutes.py)."""
        recs = self.core.backend.records
        if isinstance(cmd, g.MuteList):
            return r.mutes_reply(cluster, recs.mutes(cluster, 20), time.time())
        if isinstance(cmd, g.Unmute):
            try:
                gone = recs.unmute(cluster, cmd.code, cmd.entity, where.user)
            except UnknownCode as e:
                raise BotError(f"unknown code `{cmd.code}`{g.suggest(cmd.code, e.known)}"
                               ) from None
            if not gone:
                raise BotError(f"no active mute of `{cmd.code}"
                               f"{' ' + cmd.entity if cmd.entity else ''}` on {cluster}")
            return r.text_reply(f":bell: unmuted {', '.join(m.what for m in gone)} on "
                                f"{cluster} by <@{where.user}>")
        try:
            m = recs.mute(cluster, cmd.code, cmd.entity, cmd.for_s,
                          self.core.redactor.text(cmd.reason, where.pasted), where.user)
        except UnknownCode as e:
            raise BotError(f"unknown code `{cmd.code}`{g.suggest(cmd.code, e.known)}") from None
        except MuteRefused as e:
            raise BotError(str(e)) from None
        return r.text_reply(f":no_bell: muted `{m.what}` on {cluster} until {_utc(m.until)} "
                            f"by <@{where.user}>: {r.esc(m.reason)}")

    def answer(self, where: Where, cluster: str, cmd: g.Command) -> r.Reply:
        """One parsed, authorized command's reply: the handler the command table names
        for its class (``_COMMANDS``, at the end of this class)."""
        for klass in type(cmd).__mro__:  # isinstance's rule: a subclass finds its base's
            handler = self._COMMANDS.get(klass)
            if handler is not None:
                return handler(self, where, cluster, cmd)
        raise BotError("not implemented")

    # ------------------------------------------------------------------ command handlers
    def _cmd_health(self, where: Where, cluster: str, cmd: g.Health) -> r.Reply:
        if cmd.snapshot is not None:
            return self._health_from(cluster, cmd.snapshot)
        # a run under way when the person asked answers them: 20 at once are one run,
        # even when the pool takes them up in batches (core.service.inspect)
        out = self.core.backend.check(cluster, "slack", since=where.at)
        note = None
        if out.delta is not None and out.delta.previous_run_id is not None:
            note = (f"check run #{out.run_id}: {len(out.delta.new)} new, "
                    f"{len(out.delta.resolved)} resolved since run "
                    f"#{out.delta.previous_run_id}")
        ceph = out.snapshot.ceph
        return r.health_reply(cluster, out.report.verdict, out.incidents,
                              out.report.findings,
                              self.incident_token_for(cluster, where.user),
                              ceph.health_status if ceph else None, note=note)

    def _health_from(self, cluster: str, name: str) -> r.Reply:
        """``health [CLUSTER] from NAME``: a saved snapshot's diagnosis, read-only (no Fix
        button: the snapshot is the past), only of the cluster the user may view."""
        from core.service.snapshots import load_named
        from storage.snapshot import SnapshotError

        try:
            rp = load_named(self.core.backend.env.settings.slack.snapshots_dir, name)
        except SnapshotError as e:  # its text can name the bot's snapshots_dir: not said
            log.info("snapshot %r not served: %s", name, e)
            return r.text_reply(f":x: snapshot `{r.esc(name)}`: {r.esc(hide_paths(str(e)))}")
        except PermissionError:
            return r.text_reply(f":x: snapshot `{r.esc(name)}`: the bot may not read it")
        if rp.doc.cluster != cluster:
            return r.text_reply(f":x: snapshot `{r.esc(name)}` is of cluster "
                                f"`{r.esc(rp.doc.cluster)}`, not `{cluster}`: ask for it "
                                "there")
        out = rp.outcome
        ceph = out.snapshot.ceph
        taken = dt.datetime.fromtimestamp(rp.doc.taken_at, dt.UTC)
        note = (f"from snapshot {name}, taken {taken:%Y-%m-%d %H:%M} UTC: the cluster as it "
                "was then, nothing runs from here")
        return r.health_reply(cluster, out.report.verdict, out.incidents, out.report.findings,
                              lambda inc: None, ceph.health_status if ceph else None,
                              note=note)

    def _cmd_findings(self, where: Where, cluster: str, cmd: g.Findings) -> r.Reply:
        run, fs = self.core.backend.records.last_findings(cluster)
        if run is None:
            return r.text_reply(f"no check run recorded for {cluster} yet: try "
                                f"`{self.core.command} health {cluster}`")
        # recorded findings: no snapshot to plan on; the core proposes the root's runbook,
        # which the plan still guards when pressed
        incs = fixes.recorded_incidents(fs)
        return r.findings_reply(cluster, fs, self.token_for(cluster, where.user, incs),
                                note=f"from check run #{run.id}")

    def _cmd_history(self, where: Where, cluster: str, cmd: g.History) -> r.Reply:
        return r.history_reply(cluster, [asdict(x) for x in
                                          self.core.backend.records.history(cluster, 15)])

    def _cmd_silence(self, where: Where, cluster: str, cmd: g.Silence) -> r.Reply:
        try:
            return r.text_reply(self.core.desk.silence(  # Alertmanager keeps the comment
                cluster, cmd.alertname, cmd.duration_s, where.user,
                self.core.redactor.text(cmd.reason, where.pasted)))
        except AlertmanagerError as e:
            raise BotError(str(e)) from None

    def _cmd_silences(self, where: Where, cluster: str, cmd: g.Silences) -> r.Reply:
        return self._silences(cluster)

    def _cmd_audit(self, where: Where, cluster: str, cmd: g.Audit) -> r.Reply:
        rows = [{**asdict(x), "when": _utc(x.started_at)}
                for x in self.core.backend.records.audit(cluster, 15)]
        return r.rows_reply(f"{cluster}: last {len(rows)} runbook runs", rows,
                            ("id", "when", "runbook", "target", "user", "confirmed_by",
                             "source", "outcome", "message"))

    def _ceph_view(self, cluster: str) -> tuple[CheckOutcome, CephState]:
        """A read-only snapshot whose Ceph part is there (else the refusal)."""
        out = self._views(cluster)
        ceph = out.snapshot.ceph
        if ceph is None:
            raise BotError(f"Ceph on {cluster} is not reachable: "
                           f"{hide_paths(out.snapshot.ceph_error or 'no Ceph configured')}")
        return out, ceph

    def _cmd_osd(self, where: Where, cluster: str, cmd: g.Osd) -> r.Reply:
        out, ceph = self._ceph_view(cluster)
        if cmd.osd_id is None:
            return r.osd_tree_reply(cluster, ceph)
        g.check_osd(cmd.osd_id, (o.id for o in ceph.osds))
        return r.osd_reply(cluster, ceph, cmd.osd_id, out.report.findings,
                           self.token_for(cluster, where.user, out.incidents))

    def _cmd_pools(self, where: Where, cluster: str, cmd: g.Pools) -> r.Reply:
        return r.pools_reply(cluster, self._ceph_view(cluster)[1])

    def _cmd_cache(self, where: Where, cluster: str, cmd: g.Cache) -> r.Reply:
        return r.cache_reply(cluster, self._ceph_view(cluster)[1])

    def _cmd_ring(self, where: Where, cluster: str, cmd: g.Ring) -> r.Reply:
        out = self._views(cluster)
        if out.snapshot.swift is None:
            raise BotError(f"Swift on {cluster} is not reachable: "
                           f"{hide_paths(out.snapshot.swift_error or 'no Swift configured')}")
        from checks.swift_names import host_names

        return r.ring_reply(cluster, out.snapshot.swift, cmd.kind, host_names(out.snapshot))

    def _cmd_plan(self, where: Where, cluster: str, cmd: g.Plan | g.Fix) -> r.Reply:
        """``plan``/``fix RUNBOOK TARGET``: the plan; ``fix`` adds Confirm/Cancel."""
        self._check_target(cluster, cmd.runbook, cmd.target)
        return self.actions.plan_reply(where, cluster, cmd.runbook, cmd.target,
                               buttons=isinstance(cmd, g.Fix), options=dict(cmd.options))

    def _cmd_fix_finding(self, where: Where, cluster: str, cmd: g.FixFinding) -> r.Reply:
        """``fix CODE [TARGET]``: a fresh check, then core.service.fixes' one rule;
        only the wording of its refusals is the bot's."""
        try:
            _, choice = self.core.backend.fix_for(cluster, cmd.code, cmd.target, "slack")
        except fixes.NoSuchFinding as e:
            raise BotError(f"no current finding `{cmd.code}` on {cluster}"
                           f"{g.suggest(cmd.code, e.current)} (current: "
                           f"{', '.join(e.current) or 'none'})") from None
        except fixes.NotReportedFor:
            raise BotError(f"`{cmd.code}` is not reported for `{cmd.target}`") from None
        except fixes.NoRunbook as e:
            if e.manual:
                raise BotError(f"`{cmd.code}`: no runbook runs now: {e.manual}") from None
            raise BotError(f"`{cmd.code}` has no runbook that fixes it: see the "
                           "finding's message") from None
        except fixes.Ambiguous as e:
            raise BotError(f"`{cmd.code}` is reported for several targets ("
                           f"{', '.join(e.targets)}): name one, e.g. "
                           f"`fix {cmd.code} {e.targets[0]}`") from None
        reply = self.actions.plan_reply(where, cluster, choice.runbook, choice.target, buttons=True)
        if choice.root is not None and reply.messages and reply.messages[0].blocks:
            f, root = choice.finding, choice.root
            reply.messages[0].blocks.insert(1, r.context(
                f"`{f.code} {r.esc(f.entity)}` is a consequence of `{root.code} "
                f"{r.esc(root.entity)}`: its fix is the root's"))
        return reply

    def _cmd_bench(self, where: Where, cluster: str, cmd: g.Bench) -> r.Reply:
        kinds = self.core.backend.actions.bench_kinds()
        if not kinds:
            raise BotError("benchmarks are not available in this installation yet")
        if cmd.kind not in kinds:
            raise BotError(f"unknown benchmark `{cmd.kind}`{g.suggest(cmd.kind, kinds)} "
                           f"(kinds: {', '.join(kinds)})")
        for k, v in cmd.options.items():  # never run with, show or store a pasted secret
            if isinstance(v, str) and self.core.redactor.text(v) != v:
                raise BotError(f"bench option `{k}=…`: the value looks like a secret; "
                               "refused (nothing stored)")
        return self.actions.plan_reply(where, cluster, BENCH_PREFIX + cmd.kind, "bench",
                               buttons=True, options=dict(cmd.options))

    def _cmd_maintenance(self, where: Where, cluster: str, cmd: g.Maintenance) -> r.Reply:
        """``maintenance start HOST for 2h`` / ``end HOST``: the runbook's plan with
        Confirm/Cancel, like ``fix``; ``list``: the temporary changes stordoc holds."""
        if cmd.action == "list":
            from runbooks.expiry import describe_open

            env = self.core.backend.env
            lines = describe_open(env.journal, cluster) or [
                f"no temporary change held on {cluster}"]
            return r.text_reply(f"{cluster}: temporary changes\n" + "\n".join(lines))
        assert cmd.host is not None
        opts = {"for": cmd.window} if cmd.action == "start" and cmd.window else {}
        return self.actions.plan_reply(where, cluster, f"maintenance-{cmd.action}", cmd.host,
                               buttons=True, options=opts)

    def _cmd_help(self, where: Where, cluster: str, cmd: g.Help) -> r.Reply:
        return r.help_reply(self.core.command, g.USAGE, cmd.topic)

    # the command table: grammar class -> handler (self, where, cluster, cmd) -> Reply
    _COMMANDS: ClassVar[Mapping[type, Handler]] = {
        g.Health: _cmd_health,
        g.Findings: _cmd_findings,
        g.History: _cmd_history,
        g.Mute: mute_reply,
        g.Unmute: mute_reply,
        g.MuteList: mute_reply,
        g.Silence: _cmd_silence,
        g.Silences: _cmd_silences,
        g.Audit: _cmd_audit,
        g.Osd: _cmd_osd,
        g.Pools: _cmd_pools,
        g.Cache: _cmd_cache,
        g.Ring: _cmd_ring,
        g.Plan: _cmd_plan,
        g.Fix: _cmd_plan,
        g.FixFinding: _cmd_fix_finding,
        g.Bench: _cmd_bench,
        g.Maintenance: _cmd_maintenance,
        g.Help: _cmd_help,
    }

    def _check_target(self, cluster: str, runbook: str, target: str) -> None:
        """Name the OSDs/pools the cluster really has instead of a bare refusal."""
        kind = g.RUNBOOK_TARGETS.get(runbook)
        if kind not in ("osd", "pool"):
            return
        ceph = self._views(cluster).snapshot.ceph
        if ceph is None:
            return  # the runbook's own plan reports the unreachable cluster
        if kind == "osd":
            g.check_osd(g.parse_osd(target), (o.id for o in ceph.osds))
        else:
            g.check_name("pool", target, (p.name for p in ceph.pools))

    def _silences(self, cluster: str) -> r.Reply:
        lines: list[str] = []
        api = self.core.desk.api
        if api is None:
            lines.append("Alertmanager: not configured (alerts.alertmanager_url)")
        else:
            try:
                sils = api.silences(self.core.desk.config.cluster_label,
                                    self.core.desk.config.label_value(cluster))
            except AlertmanagerError as e:
                raise BotError(str(e)) from None
            for sil in sils:
                ms = ", ".join(f"{m.get('name')}={m.get('value')}"
                               for m in sil.get("matchers") or [])
                lines.append(f"silence {str(sil.get('id', ''))[:8]}: {ms} until "
                             f"{sil.get('endsAt', '?')} by {sil.get('createdBy', '?')}: "
                             f"{sil.get('comment', '')}")
            if not sils:
                lines.append("no active Alertmanager silence")
        now = time.time()
        for m in (m for m in self.core.backend.records.mutes(cluster) if m.active(now)):
            lines.append(r.mute_line(m, now))
        return r.text_reply(f"{cluster}: silences and mutes\n" + "\n".join(lines))


def _utc(ts: Any) -> str:
    try:
        return f"{dt.datetime.fromtimestamp(float(ts), dt.UTC):%Y-%m-%d %H:%M}Z"
    except (TypeError, ValueError):
        return "-"


def _read_only(cmd: object) -> bool:
    """A command that only reads (``health``, ``maintenance list``...): the viewer role
    is enough; the acting ones (``g.ACTING``) need the operator role."""
    if isinstance(cmd, g.Maintenance):
        return cmd.action == "list"
    return not isinstance(cmd, g.ACTING)
