"""A Slack poster: what ``stordoc watch`` posts through and what the bot holds.

``SlackPoster`` is a Web API client (slack_sdk's retries: ``core.slack.retry``) with the
redactor, the store (buttons, deduplicated deliveries, the audit), the per-channel
throttle, the outage reporter and the alert desk (``core.alerts.AlertDesk``, whose
``DeskHost`` it is). ``build_poster`` makes one from ``settings.slack`` for ``stordoc
watch`` (the bot token only: it receives nothing); the bot (``bot.app.StordocBot``) holds
one made the same way and posts its alerts and watch posts through its desk.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from slack_sdk import WebClient

from checks.model import Severity
from core.alerts import AlertConfig, AlertDesk
from core.errors import UserError
from core.slack.redact import Redactor, install
from core.slack.retry import (
    SlackTrouble,
    describe,
    is_outage,
    is_slack_failure,
    retry_handlers,
    token_invalid,
    until_slack_answers,
)
from core.slack.store import BotStore

if TYPE_CHECKING:
    from core.env import Env
    from core.service import Service

log = logging.getLogger("stordoc.bot")


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


class SlackPoster:
    """A Slack client and everything a post needs; the alert desk's host."""

    def __init__(self, backend: Service, *, bot_token: str, redactor: Redactor,
                 api_base_url: str | None = None, button_ttl_s: int = 900,
                 throttle_s: float = 1.0, channels: Mapping[str, str] | None = None,
                 alerts: AlertConfig | None = None,
                 pool: ThreadPoolExecutor | None = None) -> None:
        self.backend = backend
        self.ttl = button_ttl_s
        self.redactor = redactor
        self.store = BotStore(backend.env.journal)
        self.store.scrub = self.redactor.text
        kwargs: dict[str, Any] = {"token": bot_token}
        if api_base_url:
            kwargs["base_url"] = api_base_url.rstrip("/") + "/"
        # connection errors, 429 and 500/503 retried in place with backoff (slack_sdk)
        self.client = WebClient(retry_handlers=retry_handlers(), **kwargs)
        self.trouble = SlackTrouble()
        self.throttle = ChannelThrottle(throttle_s)
        self.pool = pool or ThreadPoolExecutor(max_workers=2, thread_name_prefix="stordoc-post")
        self.closing = threading.Event()  # ends follow-ups and start-up waits
        self.channels = dict(channels or {})  # channel ID -> the cluster bound to it
        self.desk = AlertDesk(self, self.channels, alerts)

    def submit(self, fn: Callable[..., None], *args: Any, pool: ThreadPoolExecutor | None = None,
               what: str = "answers") -> None:
        """Run ``fn`` in the worker pool (``pool``: another one, e.g. the alert desk's).
        A Slack call that still fails after slack_sdk's retries is said once for all
        workers (``SlackTrouble``), not as a traceback per worker."""
        def guarded() -> None:
            try:
                fn(*args)
            except Exception as e:
                if is_slack_failure(e):
                    self.trouble.failed(what, e)
                else:
                    log.error("bot worker failed: %s", self.redactor.text(_fmt_exc()))
            else:
                self.trouble.ok()
        (pool or self.pool).submit(guarded)

    def scrub(self, obj: Any, pasted: tuple[str, ...] = ()) -> Any:
        """Secrets out of every text in a message (evidence and step output can hold them)."""
        if isinstance(obj, dict):
            return {k: (self.redactor.text(v, pasted) if k == "text" and isinstance(v, str)
                        else self.scrub(v, pasted)) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.scrub(v, pasted) for v in obj]
        return obj

    def halt(self) -> None:
        """Stop the followers and the workers (queued work is dropped)."""
        self.closing.set()
        self.desk.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.desk.pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.halt()
        self.store.close()


def other_secrets(env: Env, app_token: str | None = None) -> list[str]:
    """The secrets besides Slack's own that a post or a log line must never show: the app
    token, the Swift keys, the Alertmanager webhook's token."""
    keys = [c.swift.key.resolve() for c in env.settings.clusters.values()
            if c.swift and c.swift.key]
    if env.settings.alerts.token:
        keys.append(env.settings.alerts.token.resolve())
    return [x for x in [app_token, *keys] if x]


def alert_config(env: Env) -> AlertConfig:
    """The desk's part of ``[alerts]``."""
    a = env.settings.alerts
    return AlertConfig(a.cluster_label, dict(a.clusters), a.alertmanager_url, a.quiet_hours,
                       Severity[a.quiet_min_severity.upper()], a.thread_window_s)


def check_token(client: WebClient, red: Redactor, closing: threading.Event,
                close: Callable[[], None], what: str = "the bot") -> None:
    """auth.test (slack_sdk's own retries included): a bad token is a one-line user error
    (after ``close``); a Slack that is down is an outage, not a bad token: said once, and
    auth.test retried with backoff until Slack answers (or ``closing`` is set)."""
    try:
        client.auth_test()
    except Exception as e:
        why = red.text(describe(e)).splitlines()[0][:300] if str(e) else type(e).__name__
        if token_invalid(e) or not is_outage(e):
            close()
            bad = "the Slack bot token is invalid" if token_invalid(e) else \
                "Slack API auth.test failed"
            raise UserError(f"cannot start {what}: {bad} (auth.test: {why})") from None
        log.warning("Slack is not answering at start-up (auth.test: %s): going on; "
                    "auth.test is retried with backoff, said again when Slack answers", why)
        until_slack_answers(client.auth_test, closing)


def log_redactor(secrets: Iterable[str | None]) -> Redactor:
    """A redactor of ``secrets``, installed on the log (every handler's records)."""
    red = Redactor(list(secrets))
    install(red)
    return red


def build_poster(env: Env) -> SlackPoster:
    """A poster from ``settings.slack`` (``stordoc watch``): the bot token only, it
    receives nothing; a missing or bad token is a one-line user error."""
    from core.service import Service

    s = env.settings.slack
    token = s.bot_token.resolve()
    if not token:
        raise UserError("no Slack bot token: set $SLACK_BOT_TOKEN or slack.bot_token.file")
    secret = s.signing_secret.resolve()
    secrets = [token, secret, *other_secrets(env)]
    red = log_redactor(secrets)
    poster = SlackPoster(Service(env), bot_token=token, redactor=Redactor(secrets),
                         api_base_url=s.api_base_url, button_ttl_s=s.button_ttl_s,
                         channels=s.channels, alerts=alert_config(env))
    check_token(poster.client, red, poster.closing, poster.close)
    return poster


def _fmt_exc() -> str:
    import traceback

    return traceback.format_exc(limit=8)
