"""The settings file's model above the cluster tables: the top level (``Settings``: journal,
default cluster, clusters) and the tables of the front ends and runbooks (``[slack]``,
``[alerts]``, ``[tui]``, ``[runbooks]``, ``[bench]``). The cluster tables are in
``core.settings_clusters``; reading a file is ``core.settings``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from checks.model import Thresholds
from core.settings_clusters import (
    ClusterSettings,
    Secret,
    SettingsError,  # re-exported: its home is the cluster tables' module (no circle)
    StrictModel,
    ThresholdSettings,
)

# every timeout, in seconds: above zero, at most a day (1e308 "timed out" after 2 s)
MAX_TIMEOUT_S = 86400.0


def Timeout(default: float, hi: float = MAX_TIMEOUT_S) -> Any:  # noqa: N802
    return Field(default, gt=0, le=hi, allow_inf_nan=False)


class Role(StrictModel):
    viewers: list[str] = []  # Slack user IDs (U...) or user group IDs (S...)
    operators: list[str] = []
    two_person: bool = False  # confirmer must differ from requester for destructive runbooks


def http_url(v: str | None) -> str | None:
    """An optional http(s) URL with a host (Slack's API base, Alertmanager's API)."""
    if v is None:
        return v
    u = urlsplit(v)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"{v!r} is not an http(s) URL")
    return v


class SlackSettings(StrictModel):
    command: str = "/stordoc"
    bot_token: Secret = Secret(env="SLACK_BOT_TOKEN")
    signing_secret: Secret = Secret(env="SLACK_SIGNING_SECRET")
    app_token: Secret = Secret(env="SLACK_APP_TOKEN")
    api_base_url: str | None = None  # only for a local fake Slack API in tests
    # where ``health [CLUSTER] from NAME`` finds saved snapshots (NAME is a directory here)
    snapshots_dir: str | None = None
    button_ttl_s: int = Field(900, gt=0, le=7 * 86400)

    @field_validator("api_base_url")
    @classmethod
    def _url_ok(cls, v: str | None) -> str | None:
        return http_url(v)
    roles: dict[str, Role] = {}  # per cluster name, "*" for all
    admins: list[str] = []
    # channel ID -> cluster: commands there default to it; other clusters only for admins;
    # alerts and watch posts of a cluster go to its channel
    channels: dict[str, str] = {}

    @field_validator("channels")
    @classmethod
    def _channel_ids(cls, v: dict[str, str]) -> dict[str, str]:
        for ch in v:
            if not re.fullmatch(r"[CG][A-Z0-9]{2,30}", ch):
                raise ValueError(f"{ch!r} is not a Slack channel ID (C... or G...)")
        return v


class AlertSettings(StrictModel):
    """Alertmanager's webhook into the bot (``POST /alertmanager``) and its API for silences."""

    token: Secret | None = None  # the bearer token Alertmanager sends; no token, no intake
    cluster_label: str = "cluster"  # the alert label naming the cluster
    clusters: dict[str, str] = {}  # label value (name or Ceph fsid) -> stordoc cluster
    alertmanager_url: str | None = None  # for silences from chat
    max_alerts: int = Field(200, ge=1, le=10_000)  # per delivery; more is refused (413)
    # "22:00-07:00" (UTC): only incidents at or above quiet_min_severity are posted then;
    # the others wait for the end of the quiet hours (watch posts them; alerts repeat)
    quiet_hours: str | None = None
    quiet_min_severity: Literal["warn", "crit"] = "crit"
    # the alert groups of one cluster within this many seconds of its first are one
    # thread: one top-level post with a running summary, the later groups as replies;
    # 0: each group its own top-level post
    thread_window_s: float = Field(300.0, ge=0, le=86_400, allow_inf_nan=False)

    @field_validator("quiet_hours")
    @classmethod
    def _quiet_ok(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"([01][0-9]|2[0-3]):[0-5][0-9]-"
                                              r"([01][0-9]|2[0-3]):[0-5][0-9]", v):
            raise ValueError(f"{v!r} is not a span like 22:00-07:00 (UTC)")
        return v

    @field_validator("alertmanager_url")
    @classmethod
    def _url_ok(cls, v: str | None) -> str | None:
        return http_url(v)


class TuiSettings(StrictModel):
    refresh_s: float = Field(10.0, ge=1.0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    bindings: dict[str, str] = {}  # action -> key, e.g. {"refresh": "r"}


class RunbookSettings(StrictModel):
    verify_timeout_s: float = Timeout(120.0)
    step_timeout_s: float = Timeout(120.0)
    bench_after_fix: Literal["none", "rados"] = "none"


class BenchSettings(StrictModel):
    max_duration_s: float = Timeout(120.0)
    max_bytes: int = Field(2 * 1024**3, gt=0, le=1024**4)
    # unset: each RADOS/RBD benchmark creates stordoc-bench-<run> and removes it afterwards
    pool: str | None = None
    container: str = "stordoc-bench"
    k_noise: float = Field(3.0, gt=0, le=100, allow_inf_nan=False)
    min_change: float = Field(0.10, gt=0, le=10, allow_inf_nan=False)
    # `bench ... --clients` without names: these configured hosts (empty: every host)
    clients: list[str] = Field(default_factory=list, max_length=64)
    # no longer used (fio's servers listen on Unix sockets reached over SSH); kept so
    # settings files that name it still load
    fio_port: int = Field(8765, ge=1024, le=65535)

    @field_validator("clients")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        for n in v:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", n):
                raise ValueError(f"not a host name: {ascii(n[:60])}")
        if len(set(v)) != len(v):
            raise ValueError("a host named twice")
        return v

    @field_validator("pool", "container")
    @classmethod
    def _plain(cls, v: str | None) -> str | None:
        from runbooks.model import Refused

        if v is None:
            return None
        from runbooks.targets import new_pool_name

        try:
            return new_pool_name(v)
        except Refused as e:
            raise ValueError(str(e)) from None


class CheckSettings(StrictModel):
    """``[check]``: ``check --all`` over many clusters."""

    parallel: int = Field(8, ge=1, le=64)  # clusters checked at once
    # a cluster's budget (its own ``[clusters.NAME] check_timeout_s`` wins): past it, one
    # line "NAME: unreachable after Ns" and the other clusters go on
    cluster_timeout_s: float = Timeout(60.0)


class Settings(StrictModel):
    journal: str = "/var/lib/stordoc/journal.db"

    @field_validator("journal")
    @classmethod
    def _journal_ok(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("an empty path")
        if not v.isprintable():
            raise ValueError("a path with control characters")
        try:
            p = Path(v).expanduser()
            real = p.resolve()
            is_dir = real.is_dir()
        except (OSError, RuntimeError) as e:
            raise ValueError(f"{v[:80]}: unusable path: {e}") from None
        if real.parts[:2] in (("/", "proc"), ("/", "sys"), ("/", "dev")):
            raise ValueError(f"{v}: not a place for a journal file (under /{real.parts[1]})")
        if is_dir:
            raise ValueError(f"{v}: is a directory; name a file in it, e.g. {p / 'journal.db'}")
        return v
    default_cluster: str | None = None
    user: str | None = None  # who runs the CLI, for the audit (default: $USER)
    thresholds: ThresholdSettings = ThresholdSettings()
    clusters: dict[str, ClusterSettings]
    slack: SlackSettings = SlackSettings()
    alerts: AlertSettings = AlertSettings()
    tui: TuiSettings = TuiSettings()
    runbooks: RunbookSettings = RunbookSettings()
    bench: BenchSettings = BenchSettings()
    check: CheckSettings = CheckSettings()
    # Slack user id -> the OpenSSH public keys of that approver (``core.approvals``):
    # the CLI's second person signs the plan with the private key on their own machine
    approver_keys: dict[str, list[str]] = {}
    source: str | None = None

    @field_validator("approver_keys", mode="before")
    @classmethod
    def _approver_keys(cls, v: Any) -> Any:
        from core.approvals import USER_ID_RE, public_key

        if not isinstance(v, dict):
            return v
        out: dict[str, list[str]] = {}
        for uid, keys in v.items():
            if not isinstance(uid, str) or not USER_ID_RE.match(uid):
                raise ValueError(f"{str(uid)[:40]!r} is not a user id like U0ADMIN")
            ks = [keys] if isinstance(keys, str) else keys
            if not isinstance(ks, list) or not ks:
                raise ValueError(f"{uid}: a public key or a list of them")
            for k in ks:
                if not isinstance(k, str):
                    raise ValueError(f"{uid}: a public key is a string")
                public_key(k)
            out[uid] = list(ks)
        return out

    @model_validator(mode="after")
    def _known_clusters(self) -> Settings:
        """Channel bindings and alert label mappings must name configured clusters."""
        for where, names in (("slack.channels", self.slack.channels),
                             ("alerts.clusters", self.alerts.clusters)):
            for key, name in names.items():
                if name not in self.clusters:
                    raise ValueError(f"{where}.{key}: unknown cluster {name!r}; configured: "
                                     f"{', '.join(sorted(self.clusters)) or 'none'}")
        return self

    def check_timeout_for(self, name: str) -> float:
        """Seconds ``check --all`` gives cluster ``name``."""
        own = self.clusters[name].check_timeout_s
        return own if own is not None else self.check.cluster_timeout_s

    def cluster_name(self, name: str | None) -> str:
        """Resolve an explicit or default cluster name; ambiguous or unknown is an error."""
        if name:
            if name not in self.clusters:
                known = ", ".join(sorted(self.clusters)) or "none"
                raise SettingsError(f"unknown cluster {name!r}; configured: {known}")
            return name
        if self.default_cluster:
            return self.default_cluster
        if len(self.clusters) == 1:
            return next(iter(self.clusters))
        raise SettingsError(
            "several clusters configured and no default_cluster: name one with --cluster "
            f"({', '.join(sorted(self.clusters))})")

    def cluster(self, name: str | None) -> ClusterSettings:
        return self.clusters[self.cluster_name(name)]

    def thresholds_for(self, name: str) -> Thresholds:
        return self.clusters[name].thresholds.apply(self.thresholds.apply(Thresholds()))
