"""Settings: one typed model read from a TOML file shaped like ``config.example.toml``.

pydantic validates it (unknown keys are refused, so a typo is an error, not a silently
ignored option) and ``SettingsError`` names the bad key in dotted form. Secrets are read
from the environment or from files named here, never written in the file itself (the
lab's generated config is the one exception: it lives outside the repo).
"""

from __future__ import annotations

import os
import re
import string
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from checks.model import Thresholds
from storage.targets import CephTarget, ClusterTarget, HostTarget, SwiftTarget

DEFAULT_PATHS = (
    Path(os.environ.get("STORDOC_CONFIG", "")) if os.environ.get("STORDOC_CONFIG") else None,
    Path.home() / ".config" / "stordoc" / "config.toml",
    Path("/etc/stordoc/config.toml"),
)


class SettingsError(Exception):
    """A config file that cannot be used; the message names the file and the key."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# every timeout, in seconds: above zero, at most a day (1e308 "timed out" after 2 s)
MAX_TIMEOUT_S = 86400.0


def Timeout(default: float, hi: float = MAX_TIMEOUT_S) -> Any:  # noqa: N802
    return Field(default, gt=0, le=hi, allow_inf_nan=False)


def check_template(template: str, fields: frozenset[str]) -> str:
    """An argv/path template may name only ``fields``, plainly: ``{id}``, never ``{0}``,
    ``{}``, ``{id.attr}``, ``{id[0]}``, ``{id:spec}`` or ``{id!r}``."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:
        raise ValueError(f"bad template {template!r}: {e}") from None
    allowed = ", ".join("{" + f + "}" for f in sorted(fields))
    for _, name, spec, conv in parts:
        if name is None:
            continue
        if name not in fields or spec or conv:
            shown = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            raise ValueError(f"template {template!r}: {shown} is not allowed (use {allowed})")
    return template


OSD_START_FIELDS = frozenset({"id", "conf", "cluster"})
OSD_PATH_FIELDS = frozenset({"id", "cluster", "fsid"})
OSD_ACTIVATE_FIELDS = frozenset({"id", "conf", "cluster", "device", "osd_fsid", "fsid"})


class Secret(_Model):
    """A secret given as an environment variable name or a file path (or inline for labs)."""

    env: str | None = None
    file: str | None = None
    value: str | None = None

    def resolve(self) -> str | None:
        if self.env and os.environ.get(self.env):
            return os.environ[self.env]
        if self.file:
            p = Path(self.file)
            if p.exists():
                return p.read_text().strip()
        return self.value


class CephSettings(_Model):
    conf: str
    keyring: str | None = None
    client: str = "client.admin"
    timeout: float = Field(10.0, gt=0, le=300, allow_inf_nan=False)
    cluster_name: str = "ceph"


class SwiftSettings(_Model):
    swift_dir: str = "/etc/swift"
    proxy_url: str | None = None
    auth_url: str | None = None
    user: str | None = None
    key: Secret | None = None
    recon_timeout: float = Field(5.0, gt=0, le=120, allow_inf_nan=False)


class HostSettings(_Model):
    name: str
    address: str
    port: int = Field(22, ge=1, le=65535)
    user: str = "root"
    key_file: str | None = None
    known_hosts: str | None = None
    timeout: float = Field(10.0, gt=0, le=300, allow_inf_nan=False)
    osd_start: list[str] = ["systemctl", "start", "ceph-osd@{id}"]
    osd_data_dir: str = "/var/lib/ceph/osd/{cluster}-{id}"
    osd_pid_file: str | None = None
    osd_activate_raw: list[str] = ["ceph-volume", "--cluster", "{cluster}", "raw", "activate",
                                   "--device", "{device}", "--no-systemd"]
    osd_activate_lvm: list[str] = ["ceph-volume", "--cluster", "{cluster}", "lvm", "activate",
                                   "--no-systemd", "{id}", "{osd_fsid}"]
    osd_start_cephadm: list[str] = ["systemctl", "start", "ceph-{fsid}@osd.{id}"]
    swift_devices_dir: str | None = None
    swift_server_start: list[str] = ["systemctl", "start", "swift-{server}"]
    swift_replicator_start: list[str] = ["systemctl", "start", "swift-{server}-replicator"]
    fstab_path: str = "/etc/fstab"
    swift_ring_dirs: list[str] = Field(default_factory=list, max_length=32)

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not v or any(c.isspace() for c in v):
            raise ValueError("host name must be non-empty without spaces")
        return v

    @field_validator("osd_start")
    @classmethod
    def _start_ok(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("an empty command")
        for part in v:
            check_template(part, OSD_START_FIELDS)
        return v

    @field_validator("osd_activate_raw", "osd_activate_lvm", "osd_start_cephadm")
    @classmethod
    def _activate_ok(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("an empty command")
        for part in v:
            check_template(part, OSD_ACTIVATE_FIELDS)
        return v

    @field_validator("osd_data_dir", "osd_pid_file")
    @classmethod
    def _path_ok(cls, v: str | None) -> str | None:
        return None if v is None else check_template(v, OSD_PATH_FIELDS)


class ThresholdSettings(_Model):
    pg_per_osd_target: int | None = None
    pg_low_factor: float | None = None
    pg_high_factor: float | None = None
    mon_max_pg_per_osd: int | None = None
    cache_near_target_ratio: float | None = None
    swift_balance_max: float | None = None
    swift_dispersion_max: float | None = None
    swift_min_parts_per_device: int | None = None
    swift_max_parts_per_device: int | None = None
    swift_replication_age_warn_s: float | None = Field(None, gt=0)
    swift_replication_age_crit_s: float | None = Field(None, gt=0)
    swift_replication_failures_warn: int | None = Field(None, ge=0)
    swift_async_pending_warn: int | None = Field(None, ge=0)
    swift_async_pending_crit: int | None = Field(None, ge=0)
    swift_quarantine_growth_warn: int | None = Field(None, ge=1)
    swift_history_window_s: float | None = Field(None, gt=0)
    swift_fill_warn: float | None = Field(None, gt=0, le=1)
    swift_fill_crit: float | None = Field(None, gt=0, le=1)
    swift_fill_spread_warn: float | None = Field(None, gt=0, le=1)
    swift_load5_warn: float | None = Field(None, gt=0)
    swift_time_drift_max_s: float | None = Field(None, gt=0)
    swift_sockstat_orphan_warn: int | None = Field(None, ge=0)
    swift_driveaudit_errors_max: int | None = Field(None, ge=0)
    swift_sweep_warn_s: float | None = Field(None, gt=0)
    swift_dispersion_copies_warn_pct: float | None = Field(None, gt=0, le=100)
    swift_dispersion_copies_crit_pct: float | None = Field(None, gt=0, le=100)
    clock_skew_max_s: float | None = None
    io_error_window_s: float | None = None

    @field_validator("*")
    @classmethod
    def _sane(cls, v: float | None) -> float | None:
        if v is not None and not 0 <= v <= 1e9:
            raise ValueError(f"must be between 0 and 1e9, not {v}")
        return v

    def apply(self, base: Thresholds) -> Thresholds:
        vals = {k: v for k, v in self.model_dump().items() if v is not None}
        return Thresholds(**{**base.__dict__, **vals})


class ClusterSettings(_Model):
    ceph: CephSettings | None = None
    swift: SwiftSettings | None = None
    hosts: list[HostSettings] = []
    muted: list[str] = []
    thresholds: ThresholdSettings = ThresholdSettings()

    def target(self, name: str) -> ClusterTarget:
        cluster_name = self.ceph.cluster_name if self.ceph else "ceph"
        return ClusterTarget(
            name=name,
            ceph=CephTarget(self.ceph.conf, self.ceph.keyring, self.ceph.client,
                            self.ceph.timeout) if self.ceph else None,
            swift=SwiftTarget(
                proxy_url=self.swift.proxy_url, auth_url=self.swift.auth_url,
                user=self.swift.user, key=self.swift.key.resolve() if self.swift.key else None,
                swift_dir=self.swift.swift_dir, recon_timeout_s=self.swift.recon_timeout,
            ) if self.swift else None,
            hosts=tuple(
                HostTarget(
                    name=h.name, address=h.address, port=h.port, user=h.user,
                    key_file=h.key_file, known_hosts=h.known_hosts, timeout_s=h.timeout,
                    osd_start=tuple(h.osd_start), osd_data_dir=h.osd_data_dir,
                    osd_pid_file=h.osd_pid_file, swift_devices_dir=h.swift_devices_dir,
                    osd_activate_raw=tuple(h.osd_activate_raw),
                    osd_activate_lvm=tuple(h.osd_activate_lvm),
                    osd_start_cephadm=tuple(h.osd_start_cephadm),
                    swift_server_start=tuple(h.swift_server_start),
                    swift_replicator_start=tuple(h.swift_replicator_start),
                    fstab_path=h.fstab_path, swift_ring_dirs=tuple(h.swift_ring_dirs),
                ) for h in self.hosts
            ),
            ceph_cluster_name=cluster_name,
        )


class Role(_Model):
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


class SlackSettings(_Model):
    command: str = "/stordoc"
    bot_token: Secret = Secret(env="SLACK_BOT_TOKEN")
    signing_secret: Secret = Secret(env="SLACK_SIGNING_SECRET")
    app_token: Secret = Secret(env="SLACK_APP_TOKEN")
    api_base_url: str | None = None  # only for a local fake Slack API in tests
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


class AlertSettings(_Model):
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


class TuiSettings(_Model):
    refresh_s: float = Field(10.0, ge=1.0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    bindings: dict[str, str] = {}  # action -> key, e.g. {"refresh": "r"}


class RunbookSettings(_Model):
    verify_timeout_s: float = Timeout(120.0)
    step_timeout_s: float = Timeout(120.0)
    bench_after_fix: Literal["none", "rados"] = "none"


class BenchSettings(_Model):
    max_duration_s: float = Timeout(120.0)
    max_bytes: int = Field(2 * 1024**3, gt=0, le=1024**4)
    pool: str = "stordoc-bench"
    container: str = "stordoc-bench"
    k_noise: float = Field(3.0, gt=0, le=100, allow_inf_nan=False)
    min_change: float = Field(0.10, gt=0, le=10, allow_inf_nan=False)
    # `bench ... --clients` without names: these configured hosts (empty: every host)
    clients: list[str] = Field(default_factory=list, max_length=64)
    # the port each client's `fio --server` listens on, on the client's own address
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
    def _plain(cls, v: str) -> str:
        from runbooks.model import Refused
        from runbooks.targets import new_pool_name

        try:
            return new_pool_name(v)
        except Refused as e:
            raise ValueError(str(e)) from None


class Settings(_Model):
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
    source: str | None = None

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


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def parse_settings(data: dict[str, Any], source: str = "<settings>") -> Settings:
    try:
        s = Settings.model_validate({**data, "source": source})
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            key = _loc(err["loc"])
            if err["type"] == "extra_forbidden":
                msgs.append(f"{key}: unknown key")
            elif err["type"] == "missing":
                msgs.append(f"{key}: required key missing")
            else:
                msgs.append(f"{key}: {err['msg']}")
        raise SettingsError(f"{source}: " + "; ".join(msgs)) from None
    if s.default_cluster and s.default_cluster not in s.clusters:
        raise SettingsError(
            f"{source}: default_cluster: {s.default_cluster!r} is not a configured cluster")
    return s


def _read(p: Path) -> Settings:
    if p.is_dir():
        raise SettingsError(f"{p}: is a directory, not a config file")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"{p}: not valid TOML: {e}") from None
    except PermissionError:
        raise  # the CLI says "permission denied: FILE" with its own exit status
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"{p}: cannot read: {e}") from None
    return parse_settings(data, str(p))


def running_lab_config() -> Path | None:
    """The config of a default lab that runs now (``stordoc lab up`` without --dir)."""
    import lab.core as labcore

    if not (Path(labcore.DEFAULT_DIR) / "lab.json").is_file():
        return None
    try:
        lab = labcore.Lab(labcore.DEFAULT_DIR)
        if lab.config_path.is_file() and lab.pid("mon.a"):
            return lab.config_path
    except OSError:
        return None
    return None


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def load_settings(path: str | os.PathLike[str] | None = None,
                  notice: Callable[[str], None] = _say) -> Settings:
    """Read settings from ``path``, $STORDOC_CONFIG, ~/.config/stordoc or /etc/stordoc, or
    else a running default lab's config (``notice`` says so)."""
    if path:
        p = Path(path)
        if not p.exists():
            raise SettingsError(f"{path}: no such config file")
        return _read(p)
    env = os.environ.get("STORDOC_CONFIG")
    if env:
        if not Path(env).exists():
            raise SettingsError(f"{env} (named by $STORDOC_CONFIG): no such config file")
        return _read(Path(env))
    for p in DEFAULT_PATHS[1:]:
        if p is not None and p.exists():
            return _read(p)
    lab = running_lab_config()
    if lab is not None:
        notice(f"stordoc: no config file; using the running lab's config {lab}")
        return _read(lab)
    raise SettingsError(
        "no config file: pass --config FILE, set STORDOC_CONFIG, or write "
        f"{DEFAULT_PATHS[1]} (see config.example.toml); a lab's config is in its "
        "directory ('stordoc lab status --dir DIR' names it; 'stordoc lab up' starts one)")
