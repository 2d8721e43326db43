"""The slack-bolt App: listeners for the slash command, mentions and buttons.

Every listener acknowledges at once (Slack wants an answer within 3 s) and hands the work
to a thread pool; a command still running after ``working_after_s`` posts "still
working…" and later replaces it with the answer. The grammar decides what a text means,
the authorizer who may do it, the store makes buttons server-side tokens and dedupes
retried deliveries, the renderer makes Block Kit within Slack's limits, and the backend
is the only door to checks and runbooks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from slack_bolt import App, BoltResponse
from slack_bolt.error import BoltUnhandledRequestError

from bot.actions import Actions, ThreadFeed
from bot.commands import Commands, Handler
from bot.core import BotCore, Where, log
from core.alerts import AlertConfig
from core.policy import Authorizer, RoleSpec
from core.service import Service
from core.slack.poster import ChannelThrottle, SlackPoster
from core.slack.redact import Redactor

# the bot's parts live in bot.core (state, delivery), bot.commands (the command table) and
# bot.actions (the buttons), held by StordocBot; these names stay importable from here
__all__ = ["ChannelThrottle", "Handler", "StordocBot", "ThreadFeed", "Where", "valid_ids"]

_USER_RE = re.compile(r"[UW][A-Z0-9]{2,30}")  # always re.fullmatch: `$` allows a "\n"
_CHANNEL_RE = re.compile(r"[CDG][A-Z0-9]{2,30}")
_MENTION_RE = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")


class StordocBot:
    """The bot: one bolt App and its listeners, composed of its parts (errbot-style: each
    holds the shared ``BotCore``, none is a subclass of another): ``core`` (state and
    delivery, posting through the core's ``SlackPoster``), ``commands``
    (``bot.commands.Commands``) and ``actions`` (the buttons: ``bot.actions.Actions``)."""

    def __init__(self, backend: Service, *, bot_token: str, signing_secret: str,
                 command: str = "/stordoc", api_base_url: str | None = None,
                 button_ttl_s: int = 900, roles: Mapping[str, RoleSpec] | None = None,
                 admins: Iterable[str] = (), workers: int = 8, working_after_s: float = 2.5,
                 throttle_s: float = 1.0, secrets: Iterable[str] = (),
                 channels: Mapping[str, str] | None = None,
                 alerts: AlertConfig | None = None, verify_token: bool = True) -> None:
        from bot.grammar.commands import grammar_words

        redactor = Redactor([bot_token, signing_secret, *secrets], keep=grammar_words())
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stordoc-bot")
        # what posts (client, store, throttle, outage reports, the alert desk): the core's
        # poster, the same ``stordoc watch`` posts through
        slack = SlackPoster(backend, bot_token=bot_token, redactor=redactor,
                            api_base_url=api_base_url, button_ttl_s=button_ttl_s,
                            throttle_s=throttle_s, channels=channels, alerts=alerts, pool=pool)
        auth = Authorizer(roles or {}, tuple(admins), self._group_members)
        self.core = BotCore(backend, slack, auth, command=command,
                            working_after_s=working_after_s, signing_secret=signing_secret,
                            pool=pool)
        self.actions = Actions(self.core)
        self.commands = Commands(self.core, self.actions)
        # the parts a caller of the bot uses (the server, watch, tests): the core's own
        self.backend, self.slack, self.store, self.desk = backend, slack, slack.store, slack.desk
        self.client, self.redactor, self.pool, self.ttl = slack.client, redactor, pool, slack.ttl
        self.command, self.signing_secret = command, signing_secret
        self.closing = slack.closing  # ends follow-ups and start-up waits when the bot stops
        self.app = App(client=self.client, signing_secret=signing_secret,
                       token_verification_enabled=verify_token,  # auth.test now
                       process_before_response=True,  # listeners only ack + submit
                       raise_error_for_unhandled_request=True)  # -> _on_bolt_error
        # A signed body of a shape bolt cannot read (``actions: []``, ``event: null``...)
        # fails inside bolt: one line and a 400 instead of its traceback and a 500.
        self.app.error(_on_bolt_error)
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

    # ------------------------------------------------------------------ listeners
    def _on_command(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        user, channel = str(body.get("user_id", "")), str(body.get("channel_id", ""))
        if not valid_ids(user, channel):
            return
        self.core.submit(self.commands.run_text, Where(channel, user, None, "command"),
                    str(body.get("text", "")))

    def _on_mention(self, ack: Callable[..., None], event: dict[str, Any]) -> None:
        ack()
        user, channel = str(event.get("user", "")), str(event.get("channel", ""))
        if not valid_ids(user, channel):
            return
        text = _MENTION_RE.sub(" ", str(event.get("text", ""))).strip()
        thread = str(event.get("thread_ts") or event.get("ts") or "") or None
        self.core.submit(self.commands.run_text, Where(channel, user, thread, "mention"), text)

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
            self.core.submit(self.actions.press_fix, *w)

    def _on_confirm(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        w = self._button_where(body)
        if w:
            self.core.submit(self.actions.press_confirm, *w)

    def _on_cancel(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        w = self._button_where(body)
        if w:
            self.core.submit(self.actions.press_cancel, *w)

    def _on_silence(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        ack()
        w = self._button_where(body)
        if w:
            self.core.submit(self.actions.press_silence, *w)

    def close(self) -> None:
        self.slack.halt()
        for t in list(self.actions.runs):
            t.join(timeout=300)
        self.store.close()


def valid_ids(user: str, channel: str) -> bool:
    """Slack user and channel IDs, whole strings only (no trailing newline, no space)."""
    return bool(_USER_RE.fullmatch(user) and _CHANNEL_RE.fullmatch(channel))


def _ack_only(ack: Callable[..., None]) -> None:
    ack()


def _on_bolt_error(error: Exception, response: BoltResponse | None) -> BoltResponse:
    """bolt's error handler (its middleware, its listeners, and a request nothing handles):
    a 400 and one bounded log line, never bolt's traceback and a 500. Slack's real payloads
    never get here (the catch-all listeners take what the bot does not use)."""
    if isinstance(error, BoltUnhandledRequestError):
        why = "no listener takes it"
    else:
        why = f"{type(error).__name__}: {str(error)[:160]}"
    log.warning("http: refused 400: signed, but bolt cannot take this payload (%s)",
                why.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return BoltResponse(status=400, body="Bad Request\n",
                        headers={"content-type": "text/plain"})
