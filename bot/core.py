"""The bot's state and delivery plumbing, shared by its commands and its buttons.

``Where`` an answer goes and who asked, and ``BotCore``: the
state every part of the bot reads (declared here, set by ``bot.app.StordocBot``) and how a
reply reaches Slack (redacted, validated, split; "still working…" past a few seconds),
how a refusal is said and how an action is audited.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from slack_sdk import WebClient

from bot import grammar as g
from bot import render as r
from core.alerts import AlertDesk
from core.policy import Authorizer
from core.service import Service
from core.slack.poster import ChannelThrottle, SlackPoster
from core.slack.redact import Redactor, incident_ref
from core.slack.retry import SlackTrouble, is_slack_failure
from core.slack.store import BotStore

log = logging.getLogger("stordoc.bot")


class BotError(Exception):
    """Something a person asked for that cannot be done; the message says why (one line)."""


@dataclass(frozen=True)
class Where:
    """Where an answer goes and who asked."""

    channel: str
    user: str
    thread_ts: str | None = None
    via: str = "command"  # "command" | "mention" | "button"
    at: float = field(default_factory=time.time)  # when it was asked (epoch s)
    # the secret values in what was asked (storage.audit.secrets_in): never said back,
    # even where a refusal quotes one word of them without the shape that gave them away
    pasted: tuple[str, ...] = ()


class BotCore:
    """What the commands and the buttons share: the bot's state and its way of answering.
    One object, held by the bot (``bot.app.StordocBot``) and by each handler group
    (``bot.commands.Commands``, ``bot.actions.Actions``): composition, not a chain of
    subclasses. Posting itself is the core's ``SlackPoster`` (``slack``)."""

    def __init__(self, backend: Service, slack: SlackPoster, auth: Authorizer, *,
                 command: str, working_after_s: float, signing_secret: str,
                 pool: ThreadPoolExecutor) -> None:
        self.backend = backend
        self.slack = slack
        self.auth = auth
        self.command = command
        self.working_after_s = working_after_s
        self.signing_secret = signing_secret
        self.pool = pool
        self.ttl: int = slack.ttl
        self.redactor: Redactor = slack.redactor
        self.store: BotStore = slack.store
        self.client: WebClient = slack.client
        self.trouble: SlackTrouble = slack.trouble
        self.throttle: ChannelThrottle = slack.throttle
        self.closing: threading.Event = slack.closing  # ends follow-ups when the bot stops
        self.channels: dict[str, str] = slack.channels  # channel ID -> its bound cluster
        self.desk: AlertDesk = slack.desk

    def submit(self, fn: Callable[..., None], *args: Any, pool: ThreadPoolExecutor | None = None,
               what: str = "answers") -> None:
        """Run ``fn`` in the worker pool (``core.slack.poster.SlackPoster.submit``)."""
        self.slack.submit(fn, *args, pool=pool, what=what)

    def post(self, where: Where, reply: r.Reply, replace_ts: str | None = None,
             thread_ts: str | None = None) -> list[str]:
        """Send a reply: validated against the limits, split or uploaded; returns ts list."""
        tts = thread_ts if thread_ts is not None else where.thread_ts
        out: list[str] = []
        for m in reply.messages:
            m.text = self.redactor.text(m.text, where.pasted)
            m.blocks = self.scrub(m.blocks, where.pasted)
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

    def scrub(self, obj: Any, pasted: tuple[str, ...] = ()) -> Any:
        """Secrets out of every text in a message (``SlackPoster.scrub``)."""
        return self.slack.scrub(obj, pasted)

    def internal_error(self, what: str) -> str:
        """One user-facing line for an unexpected failure: no exception class, message or
        server path (they can name ``snapshots_dir``, the journal, a key file); the full
        traceback goes to the bot's log under the same reference."""
        ref = incident_ref()
        log.error("%s failed (reference %s): %s", what, ref, self.redactor.text(_fmt_exc()))
        return (f"the bot hit an internal error and could not finish this (reference {ref}; "
                "the details are in the bot's log)")

    def refuse(self, where: Where, text: str) -> None:
        self.post(where, r.error_reply(text))

    def audit(self, where: Where, cluster: str | None, action: str, outcome: str,
               detail: str = "") -> None:
        # a cluster name comes from chat until resolved: a secret pasted there must not be
        # stored; configured names are kept, anything else only redacted
        if cluster is not None and cluster not in self.backend.clusters():
            cluster = self.redactor.text(cluster, where.pasted)
        self.store.audit(where.user, cluster, action, outcome,
                         self.redactor.text(detail, where.pasted))

    def answer_in_time(self, where: Where, compute: Callable[[], r.Reply]) -> None:
        """Compute a reply; past ``working_after_s`` say "still working…" first."""
        lock = threading.Lock()
        state: dict[str, Any] = {"done": False, "ts": None}

        def working() -> None:
            with lock:
                if state["done"]:
                    return
                try:
                    resp = self.client.chat_postMessage(
                        channel=where.channel, text=":hourglass_flowing_sand: still working…",
                        thread_ts=where.thread_ts)
                except Exception as e:  # the answer itself still comes (or is said lost)
                    if not is_slack_failure(e):
                        raise
                    self.trouble.failed("'still working' notes", e)
                    return
                state["ts"] = resp.get("ts")

        timer = threading.Timer(self.working_after_s, working)
        timer.daemon = True
        timer.start()
        try:
            reply = compute()
        except g.GrammarError as e:  # it quotes the user's words: `<!channel>` escaped
            reply = r.error_reply(r.esc(str(e)))
        except BotError as e:
            reply = r.error_reply(str(e))
        except Exception:
            reply = r.error_reply(self.internal_error("command"))
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



def _fmt_exc() -> str:
    import traceback

    return traceback.format_exc(limit=8)
