"""Alerts in, diagnosis out: Alertmanager's webhook (``POST /alertmanager``) and watch mode.

A page starts with an alert, not with a command. ``AlertGate`` takes Alertmanager's v4
webhook in front of everything else (bounded body, bearer token compared in constant time,
a payload that validates, a cluster the settings know and a channel bound to it, else a
4xx and nothing posted). ``AlertDesk`` then runs the check and posts one message per
incident into the cluster's channel: the alert's name, stordoc's root cause and evidence,
the next step with its Fix button. The same incident is never posted twice while it is
open: another alert about it, a repeat delivery of a group, or watch mode seeing it again
add a line to that message's thread; when the alert resolves (or watch mode sees the
incident gone) the thread says so, with what stordoc saw clear. Threads live in the
journal (``alert_threads``), deliveries are deduplicated by a hash of the group key, status
and the alerts' fingerprints (``bot_requests``), so a restart or a retry posts nothing new.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot import render as r
from bot.wsgi import drain
from checks.model import Severity

if TYPE_CHECKING:
    from bot.app import StordocBot
    from checks.incidents import Incident
    from checks.service import CheckOutcome

log = logging.getLogger("stordoc.bot.alerts")
PATH = "/alertmanager"
MAX_BODY = 1024 * 1024  # Alertmanager sends every alert of a group: 200 alerts fit well
_BEARER_RE = re.compile(r"Bearer ([\x21-\x7e]{8,512})")
_LEN_RE = re.compile(r"[0-9]{1,12}")
_OSD_RE = re.compile(r"osd\.([0-9]{1,6})")


class AmAlert(BaseModel):
    """One alert of Alertmanager's webhook payload (version 4)."""

    model_config = ConfigDict(extra="ignore")
    status: Literal["firing", "resolved"]
    labels: dict[str, str] = Field(max_length=100)
    annotations: dict[str, str] = Field(default_factory=dict, max_length=100)
    startsAt: str = Field("", max_length=64)
    endsAt: str = Field("", max_length=64)
    fingerprint: str = Field("", max_length=64)

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "?")[:120]


class AmPayload(BaseModel):
    """Alertmanager's webhook body (``version: "4"``)."""

    model_config = ConfigDict(extra="ignore")
    version: Literal["4"]
    groupKey: str = Field(max_length=4096)
    status: Literal["firing", "resolved"]
    receiver: str = Field("", max_length=256)
    groupLabels: dict[str, str] = Field(default_factory=dict, max_length=100)
    commonLabels: dict[str, str] = Field(default_factory=dict, max_length=100)
    commonAnnotations: dict[str, str] = Field(default_factory=dict, max_length=100)
    externalURL: str = Field("", max_length=2048)
    truncatedAlerts: int = Field(0, ge=0)
    alerts: list[AmAlert] = Field(min_length=1)

    @property
    def name(self) -> str:
        return (self.groupLabels.get("alertname") or self.commonLabels.get("alertname")
                or self.alerts[0].name)[:120]

    def since(self) -> float | None:
        """When the newest of these alerts started (resolved: ended), epoch s: a check
        begun after it saw the condition (or its end); None when a time is missing or
        unreadable (check afresh)."""
        starts = [_epoch(a.endsAt if a.status == "resolved" else a.startsAt)
                  for a in self.alerts]
        if not starts or any(s is None for s in starts):
            return None
        return max(s for s in starts if s is not None)

    def delivery_key(self) -> str:
        """Same for a repeated delivery of the same state of the same group."""
        parts = sorted(f"{a.fingerprint}:{a.status}:{a.startsAt}" for a in self.alerts)
        raw = json.dumps([self.groupKey, self.status, parts])
        return "am:" + hashlib.sha256(raw.encode()).hexdigest()[:40]


_FRAC_RE = re.compile(r"(\.[0-9]{6})[0-9]+")


def _epoch(ts: str) -> float | None:
    """RFC 3339 as Alertmanager writes it (nanoseconds, ``Z``) to epoch seconds."""
    try:
        d = dt.datetime.fromisoformat(_FRAC_RE.sub(r"\1", ts.strip()).replace("Z", "+00:00"))
    except ValueError:
        return None
    if d.tzinfo is None or d.year < 2000:  # Go's zero time "0001-01-01T00:00:00Z"
        return None
    return d.timestamp()


class Refused(Exception):
    """A webhook delivery that is not taken: HTTP status and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def parse_payload(body: bytes, max_alerts: int) -> AmPayload:
    """The payload, or ``Refused`` (400 malformed, 413 too many alerts)."""
    try:
        obj = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "body is not JSON") from None
    if not isinstance(obj, dict):
        raise Refused(400, "body is not a JSON object")
    alerts = obj.get("alerts")
    if isinstance(alerts, list) and len(alerts) > max_alerts:
        raise Refused(413, f"{len(alerts)} alerts in one delivery (at most {max_alerts})")
    try:
        return AmPayload.model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "body"
        raise Refused(400, f"not an Alertmanager v4 payload: {where}: "
                           f"{str(err.get('msg', ''))[:120]}") from None


def cluster_of(p: AmPayload, label: str, mapping: Mapping[str, str],
               clusters: Iterable[str]) -> str:
    """The stordoc cluster the alerts name by ``label`` (all must agree), else ``Refused``."""
    values = {a.labels.get(label) for a in p.alerts} | (
        {p.commonLabels[label]} if label in p.commonLabels else set())
    values.discard(None)
    if not values:
        raise Refused(422, f"alerts carry no {label!r} label: set it in Prometheus "
                           "(external_labels) or alerts.cluster_label")
    if len(values) > 1:
        raise Refused(422, f"alerts of several clusters in one group ({label} = "
                           f"{', '.join(sorted(str(v)[:40] for v in values))}): group by "
                           f"{label} in Alertmanager's route")
    value = str(values.pop())
    name = mapping.get(value, value)
    if name not in set(clusters):
        raise Refused(422, f"unknown cluster {value[:60]!r} (alerts.clusters maps label "
                           "values to configured clusters)")
    return name


def entities_of(alert: AmAlert) -> set[str]:
    """stordoc entities an alert's labels name (``ceph_daemon``, ``osd``, ``hostname``)."""
    out: set[str] = set()
    for key in ("ceph_daemon", "osd", "daemon"):
        m = _OSD_RE.fullmatch(alert.labels.get(key, ""))
        if m:
            out.add(f"osd.{int(m.group(1))}")
    for key in ("hostname", "host", "pool", "name"):
        v = alert.labels.get(key)
        if v and key != "name":
            out.add(v[:120])
    return out


def incident_entities(inc: Incident) -> set[str]:
    ents = {inc.root.entity} | {f.entity for f in inc.consequences}
    for f in (inc.root, *inc.consequences):
        if f.target:
            ents.add(f.target)
    return ents


def related(incidents: Sequence[Incident], alerts: Sequence[AmAlert]) -> list[Incident]:
    """The incidents an alert group is about: those sharing an entity with its alerts, or
    all of them when the alerts name no entity (``CephHealthWarning``, ``CephPGsUnclean``)."""
    named: set[str] = set().union(*(entities_of(a) for a in alerts))
    if not named:
        return list(incidents)
    hit = [i for i in incidents if incident_entities(i) & named]
    return hit or list(incidents)


# --------------------------------------------------------------------------- silences

class AlertmanagerError(Exception):
    """Alertmanager's API did not do what was asked; one line."""


class AlertmanagerApi:
    """The two calls stordoc makes to Alertmanager's API v2: create a silence, list them."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            detail = e.read()[:200].decode("utf-8", "replace").strip()
            raise AlertmanagerError(f"Alertmanager answered {e.code}: {detail}") from None
        except (OSError, ValueError) as e:
            raise AlertmanagerError(f"Alertmanager at {self.url} unreachable: {e}") from None

    def create_silence(self, matchers: Mapping[str, str], ends_at: float, created_by: str,
                       comment: str) -> str:
        body = {"matchers": [{"name": k, "value": v, "isRegex": False, "isEqual": True}
                             for k, v in matchers.items()],
                "startsAt": _rfc3339(time.time()), "endsAt": _rfc3339(ends_at),
                "createdBy": created_by, "comment": comment or "silenced from Slack"}
        out = self._call("POST", "/api/v2/silences", body)
        sid = out.get("silenceID") if isinstance(out, dict) else None
        if not sid:
            raise AlertmanagerError("Alertmanager returned no silence ID")
        return str(sid)

    def silences(self, label: str, value: str) -> list[dict[str, Any]]:
        """Active silences whose matchers include ``label="value"``."""
        out = self._call("GET", "/api/v2/silences")
        res = []
        for sil in out if isinstance(out, list) else []:
            if (sil.get("status") or {}).get("state") != "active":
                continue
            ms = {m.get("name"): m.get("value") for m in sil.get("matchers") or []}
            if ms.get(label) == value:
                res.append(sil)
        return res


def _rfc3339(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass(frozen=True)
class AlertConfig:
    """What the desk needs of ``[alerts]``: the cluster label and Alertmanager's API."""

    cluster_label: str = "cluster"
    clusters: Mapping[str, str] = field(default_factory=dict)  # label value -> cluster
    alertmanager_url: str | None = None
    quiet_hours: str | None = None  # "22:00-07:00", UTC
    quiet_min_severity: Severity = Severity.CRIT

    def quiet(self, severity: Severity, now: float | None = None) -> bool:
        """True when an incident of ``severity`` must wait for the end of quiet hours."""
        if not self.quiet_hours or severity >= self.quiet_min_severity:
            return False
        a, b = (int(x[:2]) * 60 + int(x[3:]) for x in self.quiet_hours.split("-"))
        t = time.gmtime(time.time() if now is None else now)
        m = t.tm_hour * 60 + t.tm_min
        return (a <= m < b) if a <= b else (m >= a or m < b)

    def label_value(self, cluster: str) -> str:
        """The label value that names ``cluster`` in alerts (the mapping's, else its name)."""
        return next((k for k, v in self.clusters.items() if v == cluster), cluster)


# --------------------------------------------------------------------------- gate

class AlertGate:
    """WSGI app for ``POST /alertmanager``: cheap checks first, the work in the pool."""

    def __init__(self, token: str, accept: Callable[[AmPayload], str],
                 max_alerts: int = 200, max_body: int = MAX_BODY) -> None:
        self._token = token.encode()
        self.accept = accept  # validates cluster/channel (raises Refused), queues the work
        self.max_alerts = max_alerts
        self.max_body = max_body

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        try:
            detail = self._take(environ)
            code, reason = 200, "OK"
        except Refused as e:
            code, reason, detail = e.status, _REASONS.get(e.status, "Refused"), str(e)
            log.warning("alertmanager webhook: refused %d: %s (from %s)", code, detail,
                        str(environ.get("REMOTE_ADDR", "?"))[:64])
        body = (json.dumps({"status": reason, "detail": detail}) + "\n").encode()
        start_response(f"{code} {reason}", [("Content-Type", "application/json"),
                                            ("Content-Length", str(len(body)))])
        return [body]

    def _take(self, environ: dict[str, Any]) -> str:
        if environ.get("REQUEST_METHOD") != "POST":
            raise Refused(405, "not a POST")
        raw_len = str(environ.get("CONTENT_LENGTH") or "0")
        if not _LEN_RE.fullmatch(raw_len):
            raise Refused(400, "bad Content-Length")
        size = int(raw_len)
        if size > self.max_body:
            drain(environ["wsgi.input"], size)
            raise Refused(413, f"body over {self.max_body} bytes")
        body = environ["wsgi.input"].read(size) if size else b""
        m = _BEARER_RE.fullmatch(str(environ.get("HTTP_AUTHORIZATION", "")))
        if not m or not hmac.compare_digest(m.group(1).encode(), self._token):
            raise Refused(401, "missing or wrong bearer token")
        return self.accept(parse_payload(body, self.max_alerts))


_REASONS = {400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed",
            413: "Payload Too Large", 422: "Unprocessable Entity"}


# --------------------------------------------------------------------------- desk

@dataclass(frozen=True)
class AlertThread:
    key: str
    cluster: str
    incident: str
    channel: str
    ts: str
    opened_at: float
    title: str


class AlertDesk:
    """Posts incidents into cluster channels, once each, and follows them in threads."""

    def __init__(self, bot: StordocBot, channels: Mapping[str, str],
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
        with bot.store.journal.lock:
            bot.store.journal.db.table("alert_threads").create(
                {"key": str, "cluster": str, "incident": str, "channel": str, "ts": str,
                 "opened_at": float, "closed_at": float, "title": str, "groups": str},
                pk="key", if_not_exists=True)

    def _lock(self, cluster: str) -> threading.Lock:
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
        self.bot.submit(self.handle, p, cluster, time.monotonic())
        return f"accepted for {cluster}"

    def handle(self, p: AmPayload, cluster: str, received: float) -> None:
        """Run the check, then post or thread (one cluster at a time: no double posts)."""
        with self._lock(cluster):
            out = self.bot.backend.check(cluster, "alert", since=p.since())
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
        muted = []
        for th in self.open_threads(cluster):
            if any(_alertname_of(g) == alertname for g in self._groups(th.key)) and \
                    th.incident != "(none)":
                code, _, entity = th.incident.partition(" ")
                self.mute(cluster, code, entity, until, user, reason or f"silence {alertname}")
                muted.append(th.incident)
        self.bot.store.audit(user, cluster, "silence", "created",
                             f"{alertname} until {_rfc3339(until)} id {sid}; muted: "
                             f"{', '.join(muted) or 'nothing'}; {reason}"[:500])
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))
        line = (f"Silenced `{r.esc(alertname)}` on {cluster} until {when} (Alertmanager "
                f"silence {r.esc(sid)})")
        return line + (f"; stordoc muted {', '.join(muted)} until then" if muted else "")

    def mute(self, cluster: str, code: str, entity: str, until: float, user: str,
             reason: str) -> None:
        """stordoc's own mute of an incident's root finding, same expiry as the silence."""
        self.bot.backend.records.mute(cluster, code, entity or None, until - time.time(),
                                      reason, f"slack:{user}")

    def _firing(self, p: AmPayload, cluster: str, out: CheckOutcome,
                incidents: Sequence[Incident]) -> None:
        note = f"Alertmanager: *{r.esc(p.name)}* firing ({len(p.alerts)} alert" \
               f"{'s' if len(p.alerts) != 1 else ''})"
        if not incidents:
            key = f"{cluster}|alert|{p.groupKey}"
            th = self.thread(key)
            if th is None:
                self._open(key, cluster, "(none)", f"{p.name} firing on {cluster}",
                           _quiet_blocks(p, cluster, out)
                           + self._silence_actions(cluster, p.name), p.groupKey)
            else:
                self._reply(th, f"{note} again; stordoc still finds no problem.")
            return
        for inc in incidents:
            key = f"{cluster}|{inc.id}"
            th = self.thread(key)
            if th is None and self._held(cluster, inc, p.name):
                continue
            if th is None:
                blocks = self._incident_blocks(cluster, inc, f"{p.name} firing")
                blocks += self._silence_actions(cluster, p.name)
                self._open(key, cluster, inc.id, f"{p.name}: {inc.root.entity} "
                           f"{inc.root.code} on {cluster}", blocks, p.groupKey)
            elif self._add_group(th, p.groupKey):
                self._reply(th, f"{note}: same cause ({inc.root.entity} {inc.root.code}).")

    def _silence_actions(self, cluster: str, alertname: str) -> list[r.Block]:
        """The Silence button (when Alertmanager's API is configured)."""
        if self.api is None:
            return []
        tok = self.bot.store.new_button("silence", cluster, "silence", alertname,
                                        "alertmanager", self.bot.ttl, {"alertname": alertname})
        return [{"type": "actions", "elements": [r.button("Silence 4h", "silence", tok)]}]

    def _resolved(self, p: AmPayload, cluster: str, out: CheckOutcome) -> None:
        now_ids = present(out)
        for th in self.threads_of_group(cluster, p.groupKey):
            if th.incident == "(none)" or th.incident not in now_ids:
                self._reply(th, f":white_check_mark: resolved: *{r.esc(p.name)}*; stordoc "
                                f"sees {r.esc(th.incident)} clear"
                                f" (check at {time.strftime('%H:%M:%S')}).")
                self._close(th)
            else:
                self._reply(th, f"Alertmanager says *{r.esc(p.name)}* resolved, but stordoc "
                                f"still sees {r.esc(th.incident)}; following it here until "
                                f"it clears (up to {self.follow_for_s / 60:.0f} min).")
                self._follow(th)

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
                    if self.thread(th.key) is None:  # closed meanwhile (watch, an alert)
                        return
                    out = self.bot.backend.check(th.cluster, "alert", since=time.time())
                    if out.report.verdict != 3 and th.incident not in present(out):
                        with self._lock(th.cluster):
                            if self.thread(th.key) is not None:
                                self._reply(th, f":white_check_mark: resolved: stordoc sees "
                                                f"{r.esc(th.incident)} clear (check at "
                                                f"{time.strftime('%H:%M:%S')}).")
                                self._close(th)
                        return
            finally:
                with self._locks_lock:
                    self._following.discard(th.key)
        threading.Thread(target=run, name="stordoc-alert-follow", daemon=True).start()

    # -------------------------------------------------------------- watch
    def sync(self, cluster: str, out: CheckOutcome) -> tuple[int, int]:
        """Watch mode: post incidents not posted yet, close threads of incidents gone.
        Returns (opened, closed). An unreachable cluster closes nothing: not seeing an
        incident is not seeing it clear."""
        opened = closed = 0
        if out.report.verdict == 3:
            return 0, 0
        with self._lock(cluster):
            ids = present(out)
            for inc in out.incidents:
                key = f"{cluster}|{inc.id}"
                if self.thread(key) is None and not self._held(cluster, inc, "watch"):
                    self._open(key, cluster, inc.id, f"{inc.root.entity} {inc.root.code} on "
                               f"{cluster}", self._incident_blocks(cluster, inc, "new incident"),
                               "")
                    opened += 1
            for th in self.open_threads(cluster):
                if th.incident != "(none)" and th.incident not in ids:
                    self._reply(th, f":white_check_mark: resolved: stordoc sees "
                                    f"{r.esc(th.incident)} clear (check at "
                                    f"{time.strftime('%H:%M:%S')}).")
                    self._close(th)
                    closed += 1
        return opened, closed

    def _held(self, cluster: str, inc: Incident, why: str) -> bool:
        """Quiet hours: below the minimum severity, not posted now (audited)."""
        if not self.config.quiet(inc.severity):
            return False
        self.bot.store.audit("alertmanager" if why != "watch" else "watch", cluster,
                             "post", "held: quiet hours", f"{inc.id} ({why})")
        return True

    # -------------------------------------------------------------- messages
    def _incident_blocks(self, cluster: str, inc: Incident, why: str) -> list[r.Block]:
        root = inc.root
        icon = r.SEV_ICON.get(inc.severity, "")
        blocks: list[r.Block] = [r.header(f"{why} on {cluster}")]
        txt = (f"{icon} *Cause:* *{r.esc(root.entity)}* `{root.code}`\n{r.esc(root.message)}"
               f"\n_impact:_ {r.esc(inc.impact)}")
        acc = None
        if inc.next_step is not None:
            ns = inc.next_step
            txt += f"\n_next:_ `fix {ns.runbook} {r.esc(ns.target)}`"
            tok = self.bot.store.new_button("fix", cluster, ns.runbook, ns.target,
                                            "alertmanager", self.bot.ttl,
                                            {"code": root.code, "entity": root.entity})
            acc = r.button("Fix", "fix", tok, style="primary")
        elif inc.manual:
            txt += f"\n_by hand:_ {r.esc(inc.manual)}"
        blocks.append(r.section(txt, acc))
        ev = r.evidence_line(root.evidence)
        if ev:
            blocks.append(r.context(ev))
        if inc.consequences:
            cons = "; ".join(f"{f.entity} {f.code}" for f in inc.consequences[:12])
            more = len(inc.consequences) - 12
            blocks.append(r.context(r.esc(r.clip("consequences: " + cons
                                                 + (f" (+{more})" if more > 0 else ""), 1500))))
        return blocks

    def _open(self, key: str, cluster: str, incident: str, title: str,
              blocks: list[r.Block], group: str) -> None:
        ch = self.channel_of[cluster]
        self.bot.throttle.wait(ch)
        # the fallback text notifies (mrkdwn: `<!channel>` would ping): escaped
        m = r.Message(text=r.clip(r.esc(title), 300), blocks=self.bot._scrub(blocks))
        m.text = self.bot.redactor.text(m.text)
        r.validate_message(m)
        resp = self.bot.client.chat_postMessage(channel=ch, text=m.text, blocks=m.blocks)
        self.bot.store._write(
            "insert or replace into alert_threads (key, cluster, incident, channel, ts, "
            "opened_at, closed_at, title, groups) values (?, ?, ?, ?, ?, ?, null, ?, ?)",
            (key, cluster, incident, ch, str(resp.get("ts")), time.time(), title,
             json.dumps([group] if group else [])))

    def _reply(self, th: AlertThread, text: str) -> None:
        self.bot.throttle.wait(th.channel)
        self.bot.client.chat_postMessage(channel=th.channel, thread_ts=th.ts,
                                         text=self.bot.redactor.text(r.clip(text, 2900)))

    def _add_group(self, th: AlertThread, group: str) -> bool:
        """Link a group to the thread; False when it was linked already (a repeat)."""
        groups = self._groups(th.key)
        if group in groups:
            return False
        self.bot.store._write("update alert_threads set groups = ? where key = ?",
                              (json.dumps([*groups, group]), th.key))
        return True

    def _close(self, th: AlertThread) -> None:
        self.bot.store._write("update alert_threads set closed_at = ? where key = ?",
                              (time.time(), th.key))

    # -------------------------------------------------------------- store
    def _rows(self, where: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self.bot.store._lock:
            return list(self.bot.store._conn.execute(
                "select key, cluster, incident, channel, ts, opened_at, title, groups "
                f"from alert_threads where closed_at is null and {where}", args).fetchall())

    def thread(self, key: str) -> AlertThread | None:
        rows = self._rows("key = ?", (key,))
        return AlertThread(*rows[0][:7]) if rows else None

    def _groups(self, key: str) -> list[str]:
        rows = self._rows("key = ?", (key,))
        return list(json.loads(rows[0][7] or "[]")) if rows else []

    def open_threads(self, cluster: str) -> list[AlertThread]:
        return [AlertThread(*row[:7]) for row in self._rows("cluster = ?", (cluster,))]

    def threads_of_group(self, cluster: str, group: str) -> list[AlertThread]:
        return [AlertThread(*row[:7]) for row in self._rows("cluster = ?", (cluster,))
                if group in json.loads(row[7] or "[]")]


def present(out: CheckOutcome) -> set[str]:
    """Incident ids still there, muted ones included: a muted cause is hidden, not gone,
    and must never be announced as resolved."""
    return {i.id for i in out.incidents} | {f"{f.code} {f.entity}"
                                            for f in out.report.muted}


def _alertname_of(group_key: str) -> str | None:
    m = re.search(r'alertname="([^"]{1,128})"', group_key)
    return m.group(1) if m else None


def _quiet_blocks(p: AmPayload, cluster: str, out: CheckOutcome) -> list[r.Block]:
    worst = max((f.severity for f in out.report.findings), default=None)
    seen = ("no finding" if worst is None else
            f"{len(out.report.findings)} findings, none grouped as an incident")
    summary = p.commonAnnotations.get("summary") or p.alerts[0].annotations.get("summary", "")
    blocks: list[r.Block] = [r.header(f"{p.name} firing on {cluster}")]
    txt = f"stordoc's check finds {seen} (at {time.strftime('%H:%M:%S')})."
    if summary:
        txt = f"_{r.esc(r.clip(summary, 300))}_\n" + txt
    if worst is not None and worst >= Severity.WARN:
        txt += f"\nRun `health {cluster}` for the findings."
    blocks.append(r.section(txt))
    return blocks
