"""Slack Web API calls that fail: retried where a retry can help, said once.

Every call of the bot's ``WebClient`` (and ``stordoc watch``'s) goes through slack_sdk's
own retry handlers (``slack_sdk.http_retry``): a connection error, HTTP 429 (after its
``Retry-After``) and HTTP 500/503 are retried in place with exponential backoff and jitter,
``RETRIES`` times; each retry is one log line. What still fails (retries spent, or an
error no retry can mend: ``channel_not_found``, ``invalid_auth``...) reaches the caller:
``SlackTrouble`` says once that Slack calls fail and once that they work again, with the
number of answers lost meanwhile, instead of a traceback per worker. ``stordoc watch``
tries a failed post again at a later check (``Backoff``): the thread is recorded only once
the post went through, so it is delivered once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.error import URLError

from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.http_retry import (
    BackoffRetryIntervalCalculator,
    ConnectionErrorRetryHandler,
    HttpRequest,
    HttpResponse,
    RateLimitErrorRetryHandler,
    RetryHandler,
    RetryState,
)
from slack_sdk.http_retry.builtin_handlers import ServerErrorRetryHandler
from slack_sdk.http_retry.jitter import RandomJitter

log = logging.getLogger("stordoc.bot.slack")

RETRIES = 2
_BACKOFF = BackoffRetryIntervalCalculator(backoff_factor=0.5, jitter=RandomJitter())


def method_of(url: str) -> str:
    """``chat.postMessage`` from ``https://slack.com/api/chat.postMessage``."""
    return url.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0][:60]


class Said(RetryHandler):
    """A slack_sdk retry handler that logs one line per retry it makes."""

    def __init__(self, inner: RetryHandler) -> None:
        super().__init__(inner.max_retry_count, inner.interval_calculator)
        self.inner = inner

    def can_retry(self, *, state: RetryState, request: HttpRequest,
                  response: HttpResponse | None = None, error: Exception | None = None
                  ) -> bool:
        return bool(self.inner.can_retry(state=state, request=request, response=response,
                                         error=error))

    def prepare_for_next_attempt(self, *, state: RetryState, request: HttpRequest,
                                 response: HttpResponse | None = None,
                                 error: Exception | None = None) -> None:
        why = (f"HTTP {response.status_code}" if response is not None
               else f"{type(error).__name__}: {str(error)[:120]}")
        log.warning("Slack %s failed (%s): retry %d of %d", method_of(request.url), why,
                    state.current_attempt + 1, self.max_retry_count)
        self.inner.prepare_for_next_attempt(state=state, request=request, response=response,
                                            error=error)


def retry_handlers(retries: int = RETRIES) -> list[RetryHandler]:
    """Connection errors, 429 and 500/503: retried with backoff, each retry logged."""
    return [Said(ConnectionErrorRetryHandler(max_retry_count=retries,
                                             interval_calculator=_BACKOFF)),
            Said(RateLimitErrorRetryHandler(max_retry_count=retries,
                                            interval_calculator=_BACKOFF)),
            Said(ServerErrorRetryHandler(max_retry_count=retries,
                                         interval_calculator=_BACKOFF))]


def is_slack_failure(e: BaseException) -> bool:
    """A failed Slack Web API call (not a bug of ours)."""
    return isinstance(e, (SlackApiError, SlackRequestError, URLError, ConnectionError,
                          TimeoutError))


def describe(e: BaseException) -> str:
    """One short line for a failed Slack call: the API's error code, else the exception."""
    if isinstance(e, SlackApiError):
        resp: Any = e.response
        code = resp.get("error") if hasattr(resp, "get") else None
        status = getattr(resp, "status_code", None)
        return f"{code or 'error'}" + (f", HTTP {status}" if status and status != 200 else "")
    return f"{type(e).__name__}: {str(e)[:160]}"


class SlackTrouble:
    """Says once that Slack calls fail (and what kind of work is lost), and once that they
    work again, with the count of what was lost meanwhile."""

    def __init__(self, logger: logging.Logger = log) -> None:
        self.log = logger
        self._lock = threading.Lock()
        self.failing = False
        self.lost = 0

    def failed(self, what: str, e: BaseException) -> None:
        with self._lock:
            self.lost += 1
            first, self.failing = not self.failing, True
        if first:
            self.log.error("Slack API calls are failing (%s): %s not delivered; retried "
                           "where a retry can help, said again when Slack answers",
                           describe(e), what)

    def ok(self) -> None:
        if not self.failing:  # the common case: no lock taken
            return
        with self._lock:
            lost, was = self.lost, self.failing
            self.failing, self.lost = False, 0
        if was:
            self.log.warning("Slack API answers again; %d %s lost while it failed", lost,
                             "reply was" if lost == 1 else "replies were")


class Backoff:
    """When a watch tries a failed post again: slack_sdk's exponential backoff with jitter
    (factor: half the check interval, so the next check tries first, then waits grow to at
    most ``cap_s``); the checks themselves go on meanwhile."""

    def __init__(self, every_s: float, cap_s: float = 300.0) -> None:
        self.calc = BackoffRetryIntervalCalculator(backoff_factor=every_s / 2)
        self.cap_s = cap_s
        self.failures = 0
        self.not_before = 0.0

    def due(self, now: float) -> bool:
        return now >= self.not_before

    def failed(self, now: float) -> float:
        """Record a failure; returns the delay before the next try."""
        delay = min(self.cap_s, float(self.calc.calculate_sleep_duration(self.failures)))
        self.failures += 1
        self.not_before = now + delay
        return delay

    def ok(self) -> None:
        self.failures, self.not_before = 0, 0.0


# auth.test answers that mean the token itself is bad (not an outage): exit 64 at start-up
TOKEN_INVALID = frozenset({"invalid_auth", "not_authed", "account_inactive",
                           "token_revoked", "token_expired"})


def token_invalid(e: BaseException) -> bool:
    """Slack answered, and said the token is not valid."""
    if not isinstance(e, SlackApiError):
        return False
    resp: Any = e.response
    return bool(hasattr(resp, "get") and resp.get("error") in TOKEN_INVALID)


def is_outage(e: BaseException) -> bool:
    """A Slack that cannot answer now (5xx, 429, a dropped or refused connection), as
    opposed to one that answered ``invalid_auth``."""
    from http.client import HTTPException

    return not token_invalid(e) and (is_slack_failure(e)
                                     or isinstance(e, (OSError, HTTPException)))


def until_slack_answers(call: Any, stop: threading.Event, logger: logging.Logger = log,
                        first_s: float = 2.0, cap_s: float = 60.0) -> threading.Thread:
    """Call ``call`` (``auth.test``) in a background thread with exponential backoff and
    jitter until Slack answers; says once when it does (or that the token is invalid)."""
    calc = BackoffRetryIntervalCalculator(backoff_factor=first_s, jitter=RandomJitter())

    def run() -> None:
        n = 0
        while not stop.wait(min(cap_s, float(calc.calculate_sleep_duration(n)))):
            n += 1
            try:
                call()
            except Exception as e:  # noqa: BLE001 - said once below or retried
                if token_invalid(e):
                    logger.error("Slack answers again, but the bot token is invalid "
                                 "(auth.test: %s): fix slack.bot_token", describe(e))
                    return
                continue
            logger.warning("Slack answers again (auth.test ok after %d %s): replies and "
                           "posts go out", n, "retry" if n == 1 else "retries")
            return

    t = threading.Thread(target=run, name="stordoc-slack-startup", daemon=True)
    t.start()
    return t
