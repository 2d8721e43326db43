"""The slack-bolt App: listeners for the slash command, mentions and buttons.

Every listener acknowledges at once (Slack wants an answer within 3 s) and hands the work
to a thread pool; a command still running after ``working_after_s`` posts "still
working…" and later replaces it with the answer. The grammar decides what a text means,
the authorizer who may do it, the store makes buttons server-side tokens and dedupes
retried deliveries, the renderer makes Block Kit within Slack's limits, and the backend
is the only door to checks and runbooks.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from slack_bolt import App, BoltResponse
from slack_sdk import WebClient

from bot import grammar as g
from bot import render as r
from bot.alerts import AlertConfig, AlertDesk, AlertmanagerError
from bot.auth import Authorizer, Level, RoleSpec
from bot.backend import Backend, BotError, PlanView
from bot.redact import Redactor
from bot.store import BotStore, Button
from checks.incidents import Incident, correlate
from checks.model import Finding, Severity
from checks.service import CheckOutcome
from storage.model import CephState
from stordoc.service import fixes

log = logging.getLogger("stordoc.bot")

_USER_RE = re.compile(r"[UW][A-Z0-9]{2,30}")  # always re.fullmatch: `$` allows a "\n"
_CHANNEL_RE = re.compile(r"[CDG][A-Z0-9]{2,30}")
_MENTION_RE = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")

# a command handler: (bot, where, cluster, the parsed command) -> the reply
Handler = Callable[["StordocBot", "Where", str, Any], r.Reply]


@dataclass(frozen=True)
class Where:
    """Where an answer goes and who asked."""

    channel: str
    user: str
    thread_ts: str | None = None
    via: str = "command"  # "command" | "mention" | "button"


class ChannelThrottle:
    """About one message per second per channel (Slack's rate for chat.postMessage)."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval = interval_s
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def reserve(self, channel: str) -> float:
        """Reserve the next slot; returns how long the caller must wait for it."""
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next.get(channel, 0.0))
            self._next[channel] = at + self.interval
            return at - now

    def wait(self, channel: str, stop: threading.Event | None = None) -> None:
        delay = self.reserve(channel)
        if delay > 0:
            (stop or threading.Event()).wait(delay)


class ThreadFeed:
    """Progress lines into one Slack thread: queued, coalesced, sent at the channel's rate."""

    def __init__(self, send: Callable[[str], None], throttle: ChannelThrottle,
                 channel: str) -> None:
        self._send = send
        self._q: queue.Queue[str | None] = queue.Queue()
        self._throttle = throttle
        self._channel = channel
        self.sent: list[str] = []
        self._t = threading.Thread(target=self._loop, name="stordoc-bot-feed", daemon=True)
        self._t.start()

    def push(self, line: str) -> None:
        self._q.put(line)

    def close(self, timeout: float = 60.0) -> None:
        self._q.put(None)
        self._t.join(timeout)

    def _loop(self) -> None:
        done = False
        while not done:
            item = self._q.get()
            lines = [] if item is None else [item]
            done = item is None
            while not done:
                try:
                    nxt = self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    done = True
                else:
                    lines.append(nxt)
            if not lines:
                continue
            self._throttle.wait(self._channel)
            text = "\n".join(lines)
            try:
                self._send(text)
                self.sent.append(text)
            except Exception as e:  # progress is best effort; the audit has every step
                log.warning("progress post failed: %s", e)


def _finding_from_row(row: Mapping[str, Any]) -> Finding:
    ev = row.get("evidence") or "{}"
    try:
        evd = json.loads(ev) if isinstance(ev, str) else dict(ev)
    except ValueError:
        evd = {}
    return Finding(row["code"], Severity[str(row["severity"]).upper()], row["entity"],
                   row["message"], evd, row.get("runbook"), row.get("target"),
                   row.get("since"))


class StordocBot:
    """The bot: one bolt App, its listeners, a worker pool and the server-side state."""

    def __init__(self, backend: Backend, *, bot_token: str, signing_secret: str,
                 command: str = "/stordoc", api_base_url: str | None = None,
                 button_ttl_s: int = 900, roles: Mapping[str, RoleSpec] | None = None,
                 admins: Iterable[str] = (), workers: int = 8, working_after_s: float = 2.5,
                 throttle_s: float = 1.0, secrets: Iterable[str] = (),
                 channels: Mapping[str, str] | None = None,
                 alerts: AlertConfig | None = None) -> None:
        self.backend = backend
        self.command = command
        self.ttl = button_ttl_s
        self.working_after_s = working_after_s
        self.redactor = Redactor([bot_token, signing_secret, *secrets])
        self.signing_secret = signing_secret
        self.store = BotStore(backend.env.journal)
        kwargs: dict[str, Any] = {"token": bot_token}
        if api_base_url:
            kwargs["base_url"] = api_base_url.rstrip("/") + "/"
        self.client = WebClient(**kwargs)
        self.auth = Authorizer(roles or {}, tuple(admins), self._group_members)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stordoc-bot")
        self.throttle = ChannelThrottle(throttle_s)
        self._plans: dict[str, tuple[PlanView, float]] = {}
        self._plans_lock = threading.Lock()
        self.runs: list[threading.Thread] = []
        self._closing = threading.Event()  # ends follow-ups when the bot stops
        self.channels = dict(channels or {})  # channel ID -> the cluster bound to it
        self.desk = AlertDesk(self, self.channels, alerts)
        self.app = App(client=self.client, signing_secret=signing_secret,
                       process_before_response=True)  # listeners only ack + submit
        self.app.middleware(self._dedupe)
        self.app.command(command)(self._on_command)
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(lambda: None)  # plain channel messages: not for us
        self.app.action("fix")(self._on_fix)
        self.app.action("confirm")(self._on_confirm)
        self.app.action("cancel")(self._on_cancel)
        self.app.action("silence")(self._on_silence)
        # Anything else Slack may deliver (unknown buttons, events we are not subscribed to,
        # shortcuts, views): 200 and nothing done. Slack retries anything else, and bolt's
        # own answer to an unhandled request is a 404 plus a warning with sample code.
        everything = re.compile(".*", re.DOTALL)
        self.app.action(everything)(_ack_only)
        self.app.event(everything)(_ack_only)
        self.app.shortcut(everything)(_ack_only)
        self.app.view(everything)(_ack_only)
        self.app.options(everything)(_ack_only)

    # ------------------------------------------------------------------ plumbing
    def _group_members(self, group: str) -> list[str]:
        resp = self.client.usergroups_users_list(usergroup=group)
        return list(resp.get("users") or [])

    @staticmethod
    def request_key(body: Mapping[str, Any]) -> tuple[str, str] | None:
        """The id that stays the same when Slack delivers the same request again."""
        if body.get("type") == "event_callback" and body.get("event_id"):
            return f"evt:{body['event_id']}", "event"
        if body.get("type") == "block_actions":
            acts = body.get("actions") or [{}]
            key = (f"act:{body.get('trigger_id')}:{acts[0].get('action_ts')}:"
                   f"{acts[0].get('action_id')}")
            return key, "action"
        if body.get("command") and body.get("trigger_id"):
            return f"cmd:{body['trigger_id']}", "command"
        return None

    def _dedupe(self, body: dict[str, Any], next: Callable[[], None],
                request: Any) -> BoltResponse | None:
        key = self.request_key(body)
        if key is not None and not self.store.first_time(*key):
            retry = (request.headers.get("x-slack-retry-num") or ["-"])[0]
            log.info("duplicate delivery ignored: %s (retry %s)", key[1], retry)
            return BoltResponse(status=200, body="")
        next()
        return None

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        def guarded() -> None:
            try:
                fn(*args)
            except Exception:
                log.error("bot worker failed: %s", self.redactor.text(_fmt_exc()))
        self.pool.submit(guarded)

    def post(self, where: Where, reply: r.Reply, replace_ts: str | None = None,
             thread_ts: str | None = None) -> list[str]:
        """Send a reply: validated against the limits, split or uploaded; returns ts list."""
        tts = thread_ts if thread_ts is not None else where.thread_ts
        out: list[str] = []
        for m in reply.messages:
            m.text = self.redactor.text(m.text)
            m.blocks = self._scrub(m.blocks)
            r.validate_message(m)
        if reply.ephemeral:  # never via chat.update: that would show it to the channel
            for m in reply.messages:
                kw: dict[str, Any] = {"thread_ts": tts} if tts else {}
                self.client.chat_postEphemeral(channel=where.channel, user=where.user,
                                               text=m.text, blocks=m.blocks, **kw)
            return out
        for i, m in enumerate(reply.messages):
            if i == 0 and replace_ts:
                self.client.chat_update(channel=where.channel, ts=replace_ts, text=m.text,
                                        blocks=m.blocks)
                out.append(replace_ts)
                continue
            kw = {"thread_ts": tts} if tts else {}
            resp = self.client.chat_postMessage(channel=where.channel, text=m.text,
                                                blocks=m.blocks, **kw)
            out.append(str(resp.get("ts")))
        if reply.upload is not None:
            up = reply.upload
            kw = {"thread_ts": tts} if tts else {}
            self.client.files_upload_v2(channel=where.channel, content=up.content,
                                        filename=up.filename, title=up.title,
                                        initial_comment=up.comment, **kw)
        return out

    def _scrub(self, obj: Any) -> Any:
        """Secrets out of every text in a message (evidence and step output can hold them)."""
        if isinstance(obj, dict):
            return {k: (self.redactor.text(v) if k == "text" and isinstance(v, str)
                        else self._scrub(v)) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._scrub(v) for v in obj]
        return obj

    def _refuse(self, where: Where, text: str) -> None:
        self.post(where, r.error_reply(text))

    def _audit(self, where: Where, cluster: str | None, action: str, outcome: str,
               detail: str = "") -> None:
        # a cluster name comes from chat until resolved: a secret pasted there must not be
        # stored; configured names are kept, anything else only redacted
        if cluster is not None and cluster not in self.backend.clusters():
            cluster = self.redactor.text(cluster)
        self.store.audit(where.user, cluster, action, outcome, self.redactor.text(detail))

    # ------------------------------------------------------------------ listeners
    def _on_command(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        user, channel = str(body.get("user_id", "")), str(body.get("channel_id", ""))
        if not valid_ids(user, channel):
            return
        self.submit(self.run_text, Where(channel, user, None, "command"),
                    str(body.get("text", "")))

    def _on_mention(self, ack: Callable[..., None], event: dict[str, Any]) -> None:
        ack()
        user, channel = str(event.get("user", "")), str(event.get("channel", ""))
        if not valid_ids(user, channel):
            return
        text = _MENTION_RE.sub(" ", str(event.get("text", ""))).strip()
        thread = str(event.get("thread_ts") or event.get("ts") or "") or None
        self.submit(self.run_text, Where(channel, user, thread, "mention"), text)

    def _button_where(self, body: Mapping[str, Any]) -> tuple[Where, str, str] | None:
        user = str((body.get("user") or {}).get("id", ""))
        channel = str((body.get("channel") or {}).get("id", ""))
        msg = body.get("message") or {}
        acts = body.get("actions") or [{}]
        if not valid_ids(user, channel):
            return None
        return (Where(channel, user, msg.get("thread_ts"), "button"), str(msg.get("ts", "")),
                str(acts[0].get("value", "")))

    def _on_fix(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        w = self._button_where(body)
        if w:
            self.submit(self.press_fix, *w)

    def _on_confirm(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        w = self._button_where(body)
        if w:
            self.submit(self.press_confirm, *w)

    def _on_cancel(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        w = self._button_where(body)
        if w:
            self.submit(self.press_cancel, *w)

    def _on_silence(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        w = self._button_where(body)
        if w:
            self.submit(self.press_silence, *w)

    # ------------------------------------------------------------------ commands
    def run_text(self, where: Where, text: str) -> None:
        """Parse, authorize and answer one command (runs in the worker pool)."""
        try:
            cmd = g.parse(text, self.backend.runbook_names())
        except g.GrammarError as e:
            self._audit(where, None, "command", "bad input", text[:200])
            self._refuse(where, str(e))
            return
        if isinstance(cmd, g.Help) and cmd.cluster is None:
            self.post(where, r.help_reply(self.command, g.USAGE, cmd.topic))
            return
        if isinstance(cmd, g.Health) and cmd.cluster == "all" and \
                "all" not in self.backend.clusters():
            self._health_all(where, text)
            return
        bound = self.channels.get(where.channel)
        try:
            cluster = g.resolve_cluster(cmd.cluster, self.backend.clusters(),
                                        bound or self.backend.default_cluster())
        except g.GrammarError as e:
            self._audit(where, cmd.cluster, "command", "bad input", text[:200])
            self._refuse(where, str(e))
            return
        if bound and cluster != bound and not self.auth._in(where.user, self.auth.admins):
            self._audit(where, cluster, type(cmd).__name__.lower(), "refused",
                        f"channel bound to {bound}: {text[:180]}")
            self._refuse(where, f"this channel is bound to cluster `{bound}`: commands for "
                                f"`{cluster}` from here need an admin (slack.channels); use "
                                "that cluster's channel")
            return
        need = Level.OPERATOR if isinstance(cmd, g.ACTING) else Level.VIEWER
        refusal = self.auth.refusal(where.user, cluster, need)
        if refusal:
            self._audit(where, cluster, type(cmd).__name__.lower(), "refused", text[:200])
            self._refuse(where, refusal)
            return
        self._audit(where, cluster, type(cmd).__name__.lower(), "accepted", text[:200])
        self._answer(where, lambda: self.answer(where, cluster, cmd))

    def _health_all(self, where: Where, text: str) -> None:
        """``health all``: every cluster the user may view, checked in parallel, one
        verdict line each (clusters without a viewer role are left out, not named)."""
        visible = [c for c in self.backend.clusters()
                   if self.auth.refusal(where.user, c, Level.VIEWER) is None]
        if not visible:
            self._audit(where, None, "health", "refused", text[:200])
            self._refuse(where, "you have no viewer role on any cluster (slack.roles)")
            return
        self._audit(where, None, "health", "accepted", f"all: {', '.join(visible)}"[:200])

        def compute() -> r.Reply:
            from checks.incidents import headline

            # its own small pool: waiting on the bot's pool from inside it could deadlock
            with ThreadPoolExecutor(max_workers=min(8, len(visible))) as ex:
                outs = list(ex.map(self.backend.check, visible))
            return r.all_clusters_reply([
                (o.report.verdict, headline(o.report.cluster, o.report.verdict,
                                              o.incidents, len(o.report.findings)))
                for o in outs])
        self._answer(where, compute)

    def _answer(self, where: Where, compute: Callable[[], r.Reply]) -> None:
        """Compute a reply; past ``working_after_s`` say "still working…" first."""
        lock = threading.Lock()
        state: dict[str, Any] = {"done": False, "ts": None}

        def working() -> None:
            with lock:
                if state["done"]:
                    return
                resp = self.client.chat_postMessage(
                    channel=where.channel, text=":hourglass_flowing_sand: still working…",
                    thread_ts=where.thread_ts)
                state["ts"] = resp.get("ts")

        timer = threading.Timer(self.working_after_s, working)
        timer.daemon = True
        timer.start()
        try:
            reply = compute()
        except (BotError, g.GrammarError) as e:
            reply = r.error_reply(str(e))
        except Exception as e:
            log.error("command failed: %s", self.redactor.text(_fmt_exc()))
            reply = r.error_reply(f"error: {type(e).__name__}: "
                                  f"{self.redactor.text(str(e))[:300]}")
        finally:
            timer.cancel()
        with lock:
            state["done"] = True
            ts = state["ts"]
        if ts and reply.ephemeral:
            # a refusal is for the asker only: never turn the public "still working…" into
            # it; answer privately and take the placeholder away
            self.post(where, reply)
            try:
                self.client.chat_delete(channel=where.channel, ts=ts)
            except Exception as e:
                log.warning("could not delete the 'still working' message: %s",
                            self.redactor.text(str(e))[:200])
            return
        self.post(where, reply, replace_ts=ts)

    def _views(self, cluster: str) -> CheckOutcome:
        """A snapshot for read-only views: no host facts, not recorded as a check run."""
        return self.backend.env.check(cluster, host_facts=False, record=False,
                                      source="slack")

    def token_for(self, cluster: str, user: str,
                  among: Iterable[Finding] | None = None) -> Callable[[Finding], str | None]:
        """A Fix button per finding with a runbook; with ``among``, only for the roots of
        their incidents (a consequence's fix is the root's, never its own)."""
        roots = ({i.root.key for i in correlate(list(among))} if among is not None
                 else None)

        def make(f: Finding) -> str | None:
            if not f.runbook or not f.target:
                return None
            if roots is not None and f.key not in roots:
                return None
            return self.store.new_button("fix", cluster, f.runbook, f.target, user, self.ttl,
                                         {"code": f.code, "entity": f.entity})
        return make

    def incident_token_for(self, cluster: str, user: str) -> Callable[[Incident], str | None]:
        """A Fix button for an incident's one next step (already planned, never refused)."""
        def make(inc: Incident) -> str | None:
            step = inc.next_step
            if step is None:
                return None
            return self.store.new_button("fix", cluster, step.runbook, step.target, user,
                                         self.ttl, {"code": inc.root.code,
                                                    "entity": inc.root.entity})
        return make

    def mute_reply(self, where: Where, cluster: str,
                   cmd: g.Mute | g.Unmute | g.MuteList) -> r.Reply:
        """Mutes with expiry from chat (operators only for mute/unmute), by Slack user ID,
        in the same journal table as the CLI's (storage/mutes.py)."""
        from storage import mutes

        journal = self.backend.env.journal
        if isinstance(cmd, g.MuteList):
            now = time.time()
            rows = [{"what": m.what, "state": "active" if m.active(now) else (
                "removed" if m.removed_at else "expired"), "until": _utc(m.until),
                "by": m.by, "reason": m.reason} for m in mutes.list_mutes(journal, cluster, 20)]
            return r.rows_reply(f"{cluster}: mutes", rows,
                                ("what", "state", "until", "by", "reason"))
        import checks.catalog  # noqa: F401
        from checks.model import REGISTRY

        if cmd.code not in REGISTRY.codes:
            raise BotError(f"unknown code `{cmd.code}`{g.suggest(cmd.code, REGISTRY.codes)}")
        if isinstance(cmd, g.Unmute):
            gone = mutes.remove_mutes(journal, cluster, cmd.code, cmd.entity, where.user)
            if not gone:
                raise BotError(f"no active mute of `{cmd.code}"
                               f"{' ' + cmd.entity if cmd.entity else ''}` on {cluster}")
            return r.text_reply(f":bell: unmuted {', '.join(m.what for m in gone)} on "
                                f"{cluster} by <@{where.user}>")
        m = mutes.add_mute(journal, cluster, cmd.code, cmd.entity, time.time() + cmd.for_s,
                           where.user, cmd.reason)
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
        out = self.backend.check(cluster)
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

    def _cmd_findings(self, where: Where, cluster: str, cmd: g.Findings) -> r.Reply:
        rid, rows = self.backend.last_findings(cluster)
        if rid is None:
            return r.text_reply(f"no check run recorded for {cluster} yet: try "
                                f"`{self.command} health {cluster}`")
        fs = [_finding_from_row(x) for x in rows]
        return r.findings_reply(cluster, fs, self.token_for(cluster, where.user, fs),
                                note=f"from check run #{rid}")

    def _cmd_history(self, where: Where, cluster: str, cmd: g.History) -> r.Reply:
        return r.history_reply(cluster, self.backend.history(cluster))

    def _cmd_silence(self, where: Where, cluster: str, cmd: g.Silence) -> r.Reply:
        try:
            return r.text_reply(self.desk.silence(cluster, cmd.alertname, cmd.duration_s,
                                                  where.user, cmd.reason))
        except AlertmanagerError as e:
            raise BotError(str(e)) from None

    def _cmd_silences(self, where: Where, cluster: str, cmd: g.Silences) -> r.Reply:
        return self._silences(cluster)

    def _cmd_audit(self, where: Where, cluster: str, cmd: g.Audit) -> r.Reply:
        rows = self.backend.audit(cluster)
        for x in rows:
            x["when"] = _utc(x.get("started_at"))
        return r.rows_reply(f"{cluster}: last {len(rows)} runbook runs", rows,
                            ("id", "when", "runbook", "target", "user", "confirmed_by",
                             "source", "outcome", "message"))

    def _ceph_view(self, cluster: str) -> tuple[CheckOutcome, CephState]:
        """A read-only snapshot whose Ceph part is there (else the refusal)."""
        out = self._views(cluster)
        ceph = out.snapshot.ceph
        if ceph is None:
            raise BotError(f"Ceph on {cluster} is not reachable: "
                           f"{out.snapshot.ceph_error or 'no Ceph configured'}")
        return out, ceph

    def _cmd_osd(self, where: Where, cluster: str, cmd: g.Osd) -> r.Reply:
        out, ceph = self._ceph_view(cluster)
        if cmd.osd_id is None:
            return r.osd_tree_reply(cluster, ceph)
        g.check_osd(cmd.osd_id, (o.id for o in ceph.osds))
        return r.osd_reply(cluster, ceph, cmd.osd_id, out.report.findings,
                           self.token_for(cluster, where.user, out.report.findings))

    def _cmd_pools(self, where: Where, cluster: str, cmd: g.Pools) -> r.Reply:
        return r.pools_reply(cluster, self._ceph_view(cluster)[1])

    def _cmd_cache(self, where: Where, cluster: str, cmd: g.Cache) -> r.Reply:
        return r.cache_reply(cluster, self._ceph_view(cluster)[1])

    def _cmd_ring(self, where: Where, cluster: str, cmd: g.Ring) -> r.Reply:
        out = self._views(cluster)
        if out.snapshot.swift is None:
            raise BotError(f"Swift on {cluster} is not reachable: "
                           f"{out.snapshot.swift_error or 'no Swift configured'}")
        return r.ring_reply(cluster, out.snapshot.swift, cmd.kind)

    def _cmd_plan(self, where: Where, cluster: str, cmd: g.Plan | g.Fix) -> r.Reply:
        """``plan``/``fix RUNBOOK TARGET``: the plan; ``fix`` adds Confirm/Cancel."""
        self._check_target(cluster, cmd.runbook, cmd.target)
        return self.plan_reply(where, cluster, cmd.runbook, cmd.target,
                               buttons=isinstance(cmd, g.Fix))

    def _cmd_fix_finding(self, where: Where, cluster: str, cmd: g.FixFinding) -> r.Reply:
        """``fix CODE [TARGET]``: a fresh check, then stordoc.service.fixes' one rule;
        only the wording of its refusals is the bot's."""
        out = self.backend.check(cluster)
        try:
            choice = fixes.choose_fix(out.report.findings, cmd.code, cmd.target)
        except fixes.NoSuchFinding as e:
            raise BotError(f"no current finding `{cmd.code}` on {cluster}"
                           f"{g.suggest(cmd.code, e.current)} (current: "
                           f"{', '.join(e.current) or 'none'})") from None
        except fixes.NotReportedFor:
            raise BotError(f"`{cmd.code}` is not reported for `{cmd.target}`") from None
        except fixes.NoRunbook:
            raise BotError(f"`{cmd.code}` has no runbook that fixes it: see the "
                           "finding's message") from None
        except fixes.Ambiguous as e:
            raise BotError(f"`{cmd.code}` is reported for several targets ("
                           f"{', '.join(e.targets)}): name one, e.g. "
                           f"`fix {cmd.code} {e.targets[0]}`") from None
        return self.plan_reply(where, cluster, choice.runbook, choice.target, buttons=True)

    def _cmd_bench(self, where: Where, cluster: str, cmd: g.Bench) -> r.Reply:
        kinds = self.backend.bench_kinds()
        if not kinds:
            raise BotError("benchmarks are not available in this installation yet")
        if cmd.kind not in kinds:
            raise BotError(f"unknown benchmark `{cmd.kind}`{g.suggest(cmd.kind, kinds)} "
                           f"(kinds: {', '.join(kinds)})")
        return self.plan_reply(where, cluster, f"bench-{cmd.kind}", "bench",
                               buttons=True, options=dict(cmd.options))

    def _cmd_help(self, where: Where, cluster: str, cmd: g.Help) -> r.Reply:
        return r.help_reply(self.command, g.USAGE, cmd.topic)

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

    # ------------------------------------------------------------------ acting
    def plan_reply(self, where: Where, cluster: str, runbook: str, target: str,
                   buttons: bool, options: Mapping[str, Any] | None = None) -> r.Reply:
        pv = self.backend.plan(cluster, runbook, target, where.user, options)
        two = self.auth.two_person(cluster)
        conf = canc = None
        if buttons:
            conf = secrets.token_urlsafe(18)
            canc = self.store.new_button("cancel", cluster, runbook, target, where.user,
                                         self.ttl, {"confirm": conf})
            self.store.new_button(
                "confirm", cluster, runbook, target, where.user, self.ttl,
                {"cancel": canc, "lines": pv.lines, "second_person": pv.second_person,
                 "options": dict(options or {})}, token=conf)
            with self._plans_lock:
                now = time.monotonic()
                self._plans = {k: v for k, v in self._plans.items()
                               if now - v[1] < self.ttl}  # expired plans: forget them
                self._plans[conf] = (pv, now)
        self._audit(where, cluster, "plan", "shown", f"{runbook} {target}")
        return r.plan_reply(cluster, runbook, target, pv.lines, conf, canc, where.user,
                            self.ttl, pv.second_person, two)

    def _button(self, where: Where, token: str, kind: str) -> Button | None:
        b = self.store.button(token)
        if b is None or b.kind != kind:
            self._refuse(where, "this button is not known here (it may come from another "
                                "installation): run the command again")
            return None
        if b.expired():
            self._audit(where, b.cluster, kind, "expired", f"{b.runbook} {b.target}")
            self._refuse(where, f"this button expired (buttons last {self.ttl // 60} min): "
                                f"run `{self.command} health {b.cluster}` again")
            return None
        refusal = self.auth.refusal(where.user, b.cluster, Level.OPERATOR)
        if refusal:
            self._audit(where, b.cluster, kind, "refused", f"{b.runbook} {b.target}")
            self._refuse(where, refusal)
            return None
        return b

    def press_fix(self, where: Where, msg_ts: str, token: str) -> None:
        b = self._button(where, token, "fix")
        if b is None:
            return
        self._audit(where, b.cluster, "fix", "pressed", f"{b.runbook} {b.target}")
        self._answer(where, lambda: self.plan_reply(where, b.cluster, b.runbook, b.target,
                                                    buttons=True))

    def press_silence(self, where: Where, msg_ts: str, token: str) -> None:
        """The Silence button of an alert's post: 4 h, operators only, answered in the
        alert's thread; the token is spent so a double press silences once."""
        b = self._button(where, token, "silence")
        if b is None:
            return
        if not self.store.spend([token], where.user):
            self._refuse(where, "this alert was already silenced from this button")
            return
        alertname = str(b.data.get("alertname", b.target))
        self._audit(where, b.cluster, "silence", "pressed", alertname)
        try:
            line = self.desk.silence(b.cluster, alertname, 4 * 3600.0, where.user,
                                     f"Silence button by {where.user}")
        except AlertmanagerError as e:
            self._refuse(where, str(e))
            return
        self.post(Where(where.channel, where.user, msg_ts, "button"), r.text_reply(line),
                  thread_ts=msg_ts)

    def _silences(self, cluster: str) -> r.Reply:
        lines: list[str] = []
        api = self.desk.api
        if api is None:
            lines.append("Alertmanager: not configured (alerts.alertmanager_url)")
        else:
            try:
                sils = api.silences(self.desk.config.cluster_label,
                                    self.desk.config.label_value(cluster))
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
        from storage.mutes import active_mutes

        for m in active_mutes(self.backend.env.journal, cluster):
            lines.append(f"mute {m.code} {m.entity or '*'} until "
                         f"{_utc(m.until)} by {m.by}: {m.reason}")
        return r.text_reply(f"{cluster}: silences and mutes\n" + "\n".join(lines))

    def press_cancel(self, where: Where, msg_ts: str, token: str) -> None:
        b = self._button(where, token, "cancel")
        if b is None:
            return
        conf = str(b.data.get("confirm", ""))
        if not self.store.spend([token] + ([conf] if conf else []), where.user):
            self._refuse(where, "this plan was already confirmed or cancelled")
            return
        self._audit(where, b.cluster, "cancel", "cancelled", f"{b.runbook} {b.target}")
        head = f"Plan: {b.runbook} {b.target} on {b.cluster}"
        self.client.chat_update(channel=where.channel, ts=msg_ts, text=f"{head}: cancelled",
                                blocks=r.plan_closed_blocks(
                                    head, f"Cancelled by <@{where.user}>; nothing ran."))

    def press_confirm(self, where: Where, msg_ts: str, token: str) -> None:
        b = self._button(where, token, "confirm")
        if b is None:
            return
        if b.used_at is not None:
            self._refuse(where, f"this plan was already handled by <@{b.used_by}>")
            return
        second = bool(b.data.get("second_person", True))  # unknown: the safe side
        if second and self.auth.two_person(b.cluster) and where.user == b.requested_by:
            self._audit(where, b.cluster, "confirm", "refused: two-person",
                        f"{b.runbook} {b.target}")
            self._refuse(where, f"two-person rule on `{b.cluster}`: `{b.runbook}` must be "
                                "confirmed by another operator than the one who asked")
            return
        with self._plans_lock:
            kept = self._plans.pop(token, None)
        pv = kept[0] if kept else None
        if pv is None:  # restarted since the plan was shown: plan again, must be identical
            try:
                pv = self.backend.plan(b.cluster, b.runbook, b.target, b.requested_by,
                                       b.data.get("options") or {})
            except BotError as e:
                self._refuse(where, str(e))
                return
            if pv.lines != list(b.data.get("lines") or []):
                self._refuse(where, "the plan changed since it was shown: press Fix again")
                return
        cancel_tok = str(b.data.get("cancel", ""))
        if not self.store.spend([token] + ([cancel_tok] if cancel_tok else []), where.user):
            self._refuse(where, "this plan was already confirmed or cancelled")
            return
        self._audit(where, b.cluster, "confirm", "running", f"{b.runbook} {b.target}")
        head = f"Plan: {b.runbook} {b.target} on {b.cluster}"
        lines_block = r.sections_of("```\n" + r.esc("\n".join(pv.lines)) + "\n```")[:40]
        self.client.chat_update(
            channel=where.channel, ts=msg_ts, text=f"{head}: running",
            blocks=[r.header(head), *lines_block,
                    r.context(f":gear: confirmed by <@{where.user}> (requested by "
                              f"<@{b.requested_by}>); running, progress in the thread")])
        t = threading.Thread(target=self._run, name="stordoc-bot-run", daemon=True,
                             args=(where, msg_ts, b, pv, head, lines_block))
        self.runs.append(t)
        t.start()

    def _run(self, where: Where, msg_ts: str, b: Button, pv: PlanView, head: str,
             lines_block: list[r.Block]) -> None:
        thread = where.thread_ts or msg_ts

        def send(text: str) -> None:
            self.client.chat_postMessage(channel=where.channel, thread_ts=thread,
                                         text=r.clip(self.redactor.text(text), 2900))

        feed = ThreadFeed(send, self.throttle, where.channel)
        feed.push(f":arrow_forward: `{b.runbook} {b.target}` started by <@{where.user}>")
        cancel = threading.Event()
        files: list[tuple[str, str, str]] = []
        try:
            res = self.backend.execute(pv, b.requested_by, where.user, feed.push, cancel)
            files = res.files
            icon = ":white_check_mark:" if res.ok else ":x:"
            status = f"{icon} {res.summary}"
            verification = res.verification
            for line in res.details:
                feed.push(line)
        except Exception as e:
            log.error("runbook failed: %s", self.redactor.text(_fmt_exc()))
            status = f":x: runbook error: {type(e).__name__}: {self.redactor.text(str(e))[:300]}"
            verification = "not verified"
        feed.push(f"{status}\n*verification:* {verification}")
        feed.close()
        for path, name, title in files:
            try:
                self.client.files_upload_v2(channel=where.channel, thread_ts=thread,
                                            file=path, filename=name, title=title)
            except Exception as e:
                log.warning("chart upload failed: %s", self.redactor.text(str(e)))
            finally:
                Path(path).unlink(missing_ok=True)
        self._audit(where, b.cluster, "run", status[:100], f"{b.runbook} {b.target}")
        self.throttle.wait(where.channel)
        label = "verdict" if b.runbook.startswith("bench-") else "verification"
        closing = (f"{status} · {label}: {verification} · confirmed by "
                   f"<@{where.user}>, requested by <@{b.requested_by}>")
        self.client.chat_update(channel=where.channel, ts=msg_ts,
                                text=r.clip(f"{head}: {status}", 2900),
                                blocks=[r.header(head), *lines_block,
                                        r.context(r.clip(self.redactor.text(closing), 2900))])
        if status.startswith(":white_check_mark:"):
            self._follow(where, thread, b)

    def _follow(self, where: Where, thread: str, b: Button) -> None:
        """After a successful OSD/pool fix: one thread message saying what the cluster
        still does (peering, recovery, Ceph's ETA), updated until clean or 3 minutes."""
        from runbooks.aftermath import Aftermath, follow, worth_following

        if not worth_following(b.runbook):
            return
        try:
            ctx = self.backend.env.run_context(b.cluster, source="slack")
        except Exception as e:  # settings changed under us: say nothing rather than fail
            log.warning("no follow-up: %s", self.redactor.text(str(e))[:200])
            return
        ts: list[str] = []

        def show(am: Aftermath) -> None:
            icon = ":white_check_mark:" if am.clean else ":hourglass_flowing_sand:"
            text = r.clip(f"{icon} after the fix: {am.line}", 2900)
            self.throttle.wait(where.channel)
            if not ts:
                resp = self.client.chat_postMessage(channel=where.channel,
                                                    thread_ts=thread, text=text)
                ts.append(str(resp.get("ts")))
            else:
                self.client.chat_update(channel=where.channel, ts=ts[0], text=text)

        try:
            am = follow(ctx, show, timeout_s=180.0, interval_s=3.0, cancel=self._closing)
            if not am.clean and not self._closing.is_set():
                show(Aftermath(False, am.num_pgs, am.unclean, am.inactive, am.states,
                               am.events, am.eta_s, "still not clean after 3 minutes: "
                               f"{am.line}"))
        except Exception as e:
            log.warning("follow-up failed: %s", self.redactor.text(str(e))[:200])

    def close(self) -> None:
        self._closing.set()
        self.desk.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
        for t in list(self.runs):
            t.join(timeout=300)
        self.store.close()


def valid_ids(user: str, channel: str) -> bool:
    """Slack user and channel IDs, whole strings only (no trailing newline, no space)."""
    return bool(_USER_RE.fullmatch(user) and _CHANNEL_RE.fullmatch(channel))


def _ack_only(ack: Callable[..., None]) -> None:
    ack()


def _utc(ts: Any) -> str:
    try:
        return f"{dt.datetime.fromtimestamp(float(ts), dt.UTC):%Y-%m-%d %H:%M}Z"
    except (TypeError, ValueError):
        return "-"


def _fmt_exc() -> str:
    import traceback

    return traceback.format_exc(limit=8)
