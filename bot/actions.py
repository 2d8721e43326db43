"""The Fix / Confirm / Cancel / Silence buttons: a plan with its buttons, and what
pressing one does (checked server-side, two-person rule, run with progress in the thread,
a follow-up while the cluster settles)."""

from __future__ import annotations

import queue
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bot import render as r
from bot.alerts import AlertmanagerError
from bot.auth import Level
from bot.backend import BotError, PlanView
from bot.core import BotCore, ChannelThrottle, Where, _fmt_exc, log
from bot.store import Button


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


class Actions(BotCore):
    """Plans with Confirm/Cancel buttons and the handling of every button press."""

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

