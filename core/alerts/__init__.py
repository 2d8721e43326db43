"""Alerts in, diagnosis out: the desk that posts incidents from Alertmanager and watch mode.

A page starts with an alert, not with a command. ``AlertGate`` (``gate``) takes
Alertmanager's v4 webhook in front of everything else and ``payload`` validates it;
``AlertDesk.accept`` then checks the cluster and its channel (else a 4xx and nothing
posted), and ``AlertDesk`` runs the check and posts one message per incident into the
cluster's channel: the alert's name, stordoc's root cause and evidence, the next step
with its Fix button (``messages``). The same incident is never posted twice while it
is open: another alert about it, a repeat delivery of a group, or watch mode
(``watch``) seeing it again add a line to that message's thread; when the alert
resolves (or watch mode sees the incident gone) the thread says so, with what stordoc saw
clear. Threads live in the journal (``threads``), deliveries are deduplicated by a
hash of the group key, status and the alerts' fingerprints (``bot_requests``), so a
restart or a retry posts nothing new. Silences go through ``alertmanager``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from checks.model import Severity, Verdict
from checks.mutable import mute_refusal
from core.alerts.alertmanager import AlertmanagerApi, AlertmanagerError, rfc3339
from core.alerts.gate import MAX_BODY, PATH, AlertGate
from core.alerts.messages import (
    alert_incident_blocks,
    alert_quiet_blocks,
    alert_quiet_line,
    silence_actions,
    window_summary_blocks,
)
from core.alerts.payload import (
    AmAlert,
    AmPayload,
    Refused,
    alertname_of,
    cluster_of,
    entities_of,
    incident_entities,
    no_data_of,
    parse_payload,
    related,
)
from core.alerts.threads import AlertThread, AlertThreads
from core.alerts.watch import present, sync
from core.alerts.windows import AlertWindow, AlertWindows, Item, Outbox
from core.service import fixes
from core.slack import blocks as r
from core.slack.retry import is_slack_failure

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from checks.incidents import Incident
    from checks.outcome import CheckOutcome
    from core.service import Service
    from core.slack.redact import Redactor
    from core.slack.retry import SlackTrouble
    from core.slack.store import BotStore

__all__ = [
    "MAX_BODY", "PATH", "AlertConfig", "AlertDesk", "AlertGate", "AlertThread", "AlertmanagerApi",
    "AlertmanagerError", "AmAlert", "AmPayload", "Refused", "cluster_of", "entities_of",
    "incident_entities", "parse_payload", "present", "related",
]

log = logging.getLogger("stordoc.bot.alerts")


@dataclass(frozen=True)
class AlertConfig:
    """What the desk needs of ``[alerts]``: the cluster label and Alertmanager's API."""

    cluster_label: str = "cluster"
    clusters: Mapping[str, str] = field(default_factory=dict)  # label value -> cluster
    alertmanager_url: str | None = None
    quiet_hours: str | None = None  # "22:00-07:00", UTC
    quiet_min_severity: Severity = Severity.CRIT
    # the groups of one cluster within this many seconds of its first: one thread
    # (``core.alerts.windows``); 0: each group its own top-level post
    thread_window_s: float = 300.0

    def quiet(self, severity: Severity, now: float | None = None) -> bool:
        """True when an incident of ``severity`` must wait for the end of quiet hours
        (the rule: ``core.service.quiet``)."""
        from core.service.quiet import held_in_quiet_hours

        return held_in_quiet_hours(severity, self.quiet_hours, self.quiet_min_severity, now)

    def label_value(self, cluster: str) -> str:
        """The label value that names ``cluster`` in alerts (the mapping's, else its name)."""
        return next((k for k, v in self.clusters.items() if v == cluster), cluster)


# --------------------------------------------------------------------------- desk

class Pacer(Protocol):
    def wait(self, channel: str, stop: threading.Event | None = None) -> None: ...


class DeskHost(Protocol):
    """What the desk needs of what holds it (``core.slack.poster.SlackPoster`` is one): the
    desk is a part of the poster and never imports the module that assembles it."""

    backend: Service
    store: BotStore
    client: WebClient
    redactor: Redactor
    trouble: SlackTrouble
    ttl: int

    @property
    def throttle(self) -> Pacer: ...

    def submit(self, fn: Callable[..., None], *args: Any, pool: ThreadPoolExecutor | None = None,
               what: str = "answers") -> None: ...

    def scrub(self, obj: Any) -> Any: ...


class AlertDesk:
    """Posts incidents into cluster channels, once each, and follows them in threads."""

    def __init__(self, bot: DeskHost, channels: Mapping[str, str],
                 config: AlertConfig | None = None) -> None:
        self.bot = bot
        self.config = config or AlertConfig()
        self.api = (AlertmanagerApi(self.config.alertmanager_url)
                    if self.config.alertmanager_url else None)
        self.channel_of: dict[str, str] = {}
        for ch, cluster in channels.items():
            self.channel_of.setdefault(cluster, ch)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._following: set[str] = set()
        self.follow_every_s = 20.0
        self.follow_for_s = 1800.0
        self.stop = threading.Event()  # set by the bot's close(): followers end
        self.threads = AlertThreads(bot.store)
        self.windows = AlertWindows(bot.store, self.config.thread_window_s)
        self.outbox = Outbox(self._post_in_thread, self._update_summary,
                             lambda ch: self.bot.throttle.wait(ch, self.stop),
                             lambda e: self.bot.trouble.failed("alert thread replies", e),
                             self.stop)
        # alert work has its own workers: a flood never queues a person's command (the
        # bot's pool); per cluster the lock below makes it one at a time anyway
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="stordoc-alert")

    def lock(self, cluster: str) -> threading.Lock:
        """One cluster at a time (alerts, followers, watch mode): no incident posted twice."""
        with self._locks_lock:
            return self._locks.setdefault(cluster, threading.Lock())

    # -------------------------------------------------------------- intake
    def accept(self, p: AmPayload, label: str, mapping: Mapping[str, str]) -> str:
        """Validate the delivery's cluster and channel, dedupe, queue; the 200's detail."""
        cluster = cluster_of(p, label, mapping, self.bot.backend.clusters())
        if cluster not in self.channel_of:
            raise Refused(422, f"no Slack channel is bound to cluster {cluster!r} "
                               "(slack.channels)")
        if not self.bot.store.first_time(p.delivery_key(), "alert"):
            return "duplicate delivery: already handled"
        self.bot.store.audit("alertmanager", cluster, "alert", p.status,
                             f"{p.name} ({len(p.alerts)} alerts)")
        self.bot.submit(self.handle, p, cluster, time.monotonic(), time.time(),
                        pool=self.pool, what="alert posts")
        return f"accepted for {cluster}"

    def handle(self, p: AmPayload, cluster: str, received: float,
               received_at: float | None = None) -> None:
        """Run the check, then post or thread (one cluster at a time: no double posts).
        The check is coalesced: a run under way when the alert began (or, for a start
        time missing or in the future, when the delivery arrived) answers it, so a flood
        of deliveries is one check, not one each (``core.service.inspect``)."""
        at = time.time() if received_at is None else received_at
        began = p.since()
        since = at if began is None else min(began, at)
        with self.lock(cluster):
            out = self.bot.backend.check(cluster, "alert", since=since)
            incidents = list(out.incidents)
            if p.status == "firing":
                self._firing(p, cluster, out, related(incidents, p.alerts))
            else:
                self._resolved(p, cluster, out)
            log.info("alert %s %s for %s handled in %.2f s", p.name, p.status, cluster,
                     time.monotonic() - received)

    def silence(self, cluster: str, alertname: str, duration_s: float, user: str,
                reason: str) -> str:
        """An Alertmanager silence of ``alertname`` on ``cluster`` (creator: the Slack user),
        and a stordoc mute of the roots of the incidents that alert was posted with, same
        expiry. Returns the reply line; raises AlertmanagerError."""
        if self.api is None:
            raise AlertmanagerError("no Alertmanager to silence in: set alerts.alertmanager_url")
        until = time.time() + duration_s
        sid = self.api.create_silence(
            {"alertname": alertname, self.config.cluster_label: self.config.label_value(cluster)},
            until, f"slack:{user}", reason or f"silenced from Slack by {user}")
        muted, unmutable = [], []
        for th in self.threads.open_of(cluster):
            if any(alertname_of(g) == alertname for g in self.threads.groups(th.key)) and \
                    th.incident != "(none)":
                code, _, entity = th.incident.partition(" ")
                if mute_refusal(code):  # stordoc cannot see: that stays on the verdict
                    unmutable.append(th.incident)
                    continue
                self.mute(cluster, code, entity, until, user, reason or f"silence {alertname}")
                muted.append(th.incident)
        self.bot.store.audit(user, cluster, "silence", "created",
                             f"{alertname} until {rfc3339(until)} id {sid}; muted: "
                             f"{', '.join(muted) or 'nothing'}; {reason}"[:500])
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))
        line = (f"Silenced `{r.esc(alertname)}` on {cluster} until {when} (Alertmanager "
                f"silence {r.esc(sid)})")
        return line + (f"; stordoc muted {', '.join(muted)} until then" if muted else "") + (
            f"; not muted in stordoc (cannot see the cluster): {', '.join(unmutable)}"
            if unmutable else "")

    def mute(self, cluster: str, code: str, entity: str, until: float, user: str,
             reason: str) -> None:
        """stordoc's own mute of an incident's root finding, same expiry as the silence."""
        self.bot.backend.records.mute(cluster, code, entity or None, until - time.time(),
                                      self.bot.redactor.text(reason), f"slack:{user}")

    def _firing(self, p: AmPayload, cluster: str, out: CheckOutcome,
                incidents: Sequence[Incident]) -> None:
        """Post what is new (the window's top-level post, or a reply in its thread), add
        a line to the threads of incidents posted already, count the group in its window's
        summary; a repeat of what the window has is counted, not posted."""
        note = f"Alertmanager: *{r.esc(p.name)}* firing ({len(p.alerts)} alert" \
               f"{'s' if len(p.alerts) != 1 else ''})"
        cur = self.windows.current(cluster)
        repeat = cur is not None and self.windows.repeats(cur, p)
        posted: AlertWindow | None = None  # the window this delivery posted news in
        opened = False
        touched: list[AlertThread] = []
        if not incidents:
            key = f"{cluster}|alert|{p.groupKey}"
            th = self.threads.get(key)
            if th is None and not repeat:  # (a repeat: its alerts are in the window)
                no_data = no_data_of(p.alerts)
                posted, opened = self._post_alert(
                    cur, p, key, cluster, "(none)", f"{p.name} firing on {cluster}",
                    lambda: alert_quiet_blocks(p, cluster, out, no_data)
                    + self._silence_actions(cluster, p.name),
                    lambda: alert_quiet_line(p, cluster, out, no_data,
                                             self._silence_token(cluster, p.name)))
            elif th is not None and not repeat:
                self.reply(th, f"{note} again; stordoc still finds no problem.")
                touched.append(th)
        for inc in incidents:
            key = f"{cluster}|{inc.id}"
            th = self.threads.get(key)
            if th is None and self.held(cluster, inc, p.name):
                continue
            if th is None:
                def blocks(inc: Incident = inc) -> list[r.Block]:
                    return (self.incident_blocks(cluster, inc, f"{p.name} firing")
                            + self._silence_actions(cluster, p.name))
                win, new = self._post_alert(
                    posted or cur, p, key, cluster, inc.id,
                    f"{p.name}: {inc.root.entity} {inc.root.code} on {cluster}", blocks, blocks)
                posted, opened = posted or win, opened or new
            elif self.threads.link_group(th.key, p.groupKey) and not repeat:
                self.reply(th, f"{note}: same cause ({inc.root.entity} {inc.root.code}).")
                touched.append(th)
        # the group in a window's summary: the one it was posted in or repeats, else the
        # one listing it, else the one of the thread it went to
        win = posted or (cur if cur is not None and (repeat or self.windows.lists(
            cur, p.groupKey)) else None) or self.windows.listing(cluster, p.groupKey)
        for th in touched:
            win = win or self.windows.by_ts(th.channel, th.ts)
        if win is not None and not opened:
            self.windows.note(win, p)
            self.outbox.touch(win)

    def _post_alert(self, cur: AlertWindow | None, p: AmPayload, key: str, cluster: str,
                    incident: str, title: str, top: Callable[[], list[r.Block]],
                    item: Callable[[], list[r.Block]]) -> tuple[AlertWindow | None, bool]:
        """News of an alert group: the cluster's top-level post when no window is open
        (it opens one), else a reply in the window's thread (sent by the outbox, packed
        with others at Slack's pace). Returns (the window, whether this opened it)."""
        if cur is None:
            ts, blocks = self._post_top(cluster, title, top())
            self.threads.add(key, cluster, incident, self.channel_of[cluster], ts, title,
                             p.groupKey)
            if self.windows.window_s <= 0:
                return None, False
            return self.windows.open(cluster, self.channel_of[cluster], ts, title, blocks,
                                     p), True
        self.threads.add(key, cluster, incident, cur.channel, cur.ts, title, p.groupKey)
        self.outbox.put(cur, Item(r.clip(r.esc(title), 300), item()))
        return cur, False

    def _silence_token(self, cluster: str, alertname: str) -> str | None:
        if self.api is None:
            return None
        return self.bot.store.new_button("silence", cluster, "silence", alertname,
                                         "alertmanager", self.bot.ttl, {"alertname": alertname})

    def _silence_actions(self, cluster: str, alertname: str) -> list[r.Block]:
        """The Silence button (when Alertmanager's API is configured)."""
        tok = self._silence_token(cluster, alertname)
        return [] if tok is None else silence_actions(tok)

    def _resolved(self, p: AmPayload, cluster: str, out: CheckOutcome) -> None:
        now_ids = present(out)
        for th in self.threads.of_group(cluster, p.groupKey):
            if th.incident == "(none)" or th.incident not in now_ids:
                self.reply(th, f":white_check_mark: resolved: *{r.esc(p.name)}*; stordoc "
                           f"sees {r.esc(th.incident)} clear"
                           f" (check at {time.strftime('%H:%M:%S')}).")
                self.close_thread(th)
            else:
                self.reply(th, f"Alertmanager says *{r.esc(p.name)}* resolved, but stordoc "
                           f"still sees {r.esc(th.incident)}; following it here until "
                           f"it clears (up to {self.follow_for_s / 60:.0f} min).")
                self._follow(th)
        win = self.windows.listing(cluster, p.groupKey)
        if win is not None:  # its line in the summary says resolved
            self.windows.note(win, p)
            self.outbox.touch(win)

    def _follow(self, th: AlertThread) -> None:
        """Re-check every ``follow_every_s`` until the thread's incident is gone (then say
        it in the thread) or ``follow_for_s`` passed: an alert that resolves before its
        cause (a flapping rule) still gets its "resolved" when the cause clears."""
        with self._locks_lock:
            if th.key in self._following:
                return
            self._following.add(th.key)

        def run() -> None:
            deadline = time.monotonic() + self.follow_for_s
            try:
                while time.monotonic() < deadline and not self.stop.wait(self.follow_every_s):
                    if self.threads.get(th.key) is None:  # closed meanwhile (watch, an alert)
                        return
                    out = self.bot.backend.check(th.cluster, "alert", since=time.time())
                    if out.report.verdict != Verdict.UNREACHABLE and th.incident not in present(out):
                        with self.lock(th.cluster):
                            if self.threads.get(th.key) is not None:
                                self.reply(th, f":white_check_mark: resolved: stordoc sees "
                                           f"{r.esc(th.incident)} clear (check at "
                                           f"{time.strftime('%H:%M:%S')}).")
                                self.close_thread(th)
                        return
            except Exception as e:
                if not is_slack_failure(e):
                    raise
                self.bot.trouble.failed("alert thread replies", e)
            finally:
                with self._locks_lock:
                    self._following.discard(th.key)
        threading.Thread(target=run, name="stordoc-alert-follow", daemon=True).start()

    def sync(self, cluster: str, out: CheckOutcome) -> tuple[int, int]:
        """Watch mode (``core.alerts.watch.sync``): post new incidents, close gone ones."""
        return sync(self, cluster, out)

    def held(self, cluster: str, inc: Incident, why: str) -> bool:
        """Quiet hours: below the minimum severity, not posted now (audited)."""
        if not self.config.quiet(inc.severity):
            return False
        self.bot.store.audit("alertmanager" if why != "watch" else "watch", cluster,
                             "post", "held: quiet hours", f"{inc.id} ({why})")
        return True

    # -------------------------------------------------------------- messages
    def incident_blocks(self, cluster: str, inc: Incident, why: str) -> list[r.Block]:
        """The incident's message; its Fix button's token when it has a next step."""
        tok = None
        if (fx := fixes.incident_fix(inc)) is not None:
            tok = self.bot.store.new_button("fix", cluster, fx.runbook, fx.target,
                                            "alertmanager", self.bot.ttl,
                                            {"code": inc.root.code, "entity": inc.root.entity})
        return alert_incident_blocks(cluster, inc, why, tok)

    def open_thread(self, key: str, cluster: str, incident: str, title: str,
                    blocks: list[r.Block], group: str) -> None:
        """Post the incident's message in the cluster's channel and record its thread."""
        ts, _ = self._post_top(cluster, title, blocks)
        self.threads.add(key, cluster, incident, self.channel_of[cluster], ts, title, group)

    def _post_top(self, cluster: str, title: str, blocks: list[r.Block]
                  ) -> tuple[str, list[r.Block]]:
        """A top-level post in the cluster's channel: its ts and the blocks sent."""
        ch = self.channel_of[cluster]
        self.bot.throttle.wait(ch)
        # the fallback text notifies (mrkdwn: `<!channel>` would ping): escaped
        m = r.Message(text=r.clip(r.esc(title), 300), blocks=self.bot.scrub(blocks))
        m.text = self.bot.redactor.text(m.text)
        r.validate_message(m)
        resp = self.bot.client.chat_postMessage(channel=ch, text=m.text, blocks=m.blocks)
        return str(resp.get("ts")), m.blocks

    def reply(self, th: AlertThread, text: str) -> None:
        """One line in the thread (redacted, clipped); in a window's thread it goes with
        the others queued for it (``windows.Outbox``)."""
        win = self.windows.by_ts(th.channel, th.ts)
        if win is not None:
            self.outbox.put(win, Item(r.clip(text, 300), [r.section(r.clip(text, 2900))]))
            return
        self.bot.throttle.wait(th.channel)
        self.bot.client.chat_postMessage(channel=th.channel, thread_ts=th.ts,
                                         text=self.bot.redactor.text(r.clip(text, 2900)))

    def _post_in_thread(self, win: AlertWindow, text: str, blocks: list[r.Block]) -> None:
        """One (packed) reply in a window's thread (the outbox's sender)."""
        m = r.Message(text=self.bot.redactor.text(text), blocks=self.bot.scrub(blocks))
        r.validate_message(m)
        self.bot.client.chat_postMessage(channel=win.channel, thread_ts=win.ts, text=m.text,
                                         blocks=m.blocks)

    def _update_summary(self, win: AlertWindow) -> None:
        """The window's top-level post as first sent, with the summary of its groups now."""
        summary = window_summary_blocks(win.cluster, win.opened_at, self.windows.window_s,
                                        self.windows.groups(win.key))
        m = r.Message(text=self.bot.redactor.text(r.clip(r.esc(win.title), 300)),
                      blocks=[*win.root[:r.MAX_BLOCKS - len(summary)],
                              *self.bot.scrub(summary)])
        r.validate_message(m)
        self.bot.client.chat_update(channel=win.channel, ts=win.ts, text=m.text,
                                    blocks=m.blocks)

    def close_thread(self, th: AlertThread) -> None:
        """Stop following the thread: the next time this incident appears, a new message."""
        self.threads.close(th.key)
