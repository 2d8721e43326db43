"""The ``[clusters.NAME]`` tables of the settings: how to reach a cluster (Ceph, Swift, its
hosts and the command templates run there), its thresholds and mutes, and ``Secret``.
``ClusterSettings.target`` turns them into the plain values of ``storage.targets``.
Every model refuses unknown keys (``StrictModel``).
"""

from __future__ import annotations

import os
import string
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from checks.model import Thresholds
from storage.model.daemons import daemon_kind
from storage.prometheus import check_url
from storage.safefile import FileRefused, read_text
from storage.targets import (
    CephTarget,
    ClusterTarget,
    DaemonTarget,
    HostDiscovery,
    HostTarget,
    PromTarget,
    SwiftTarget,
)


class SettingsError(Exception):
    """A config file that cannot be used; the message names the file and the key. (Here,
    with the cluster tables that raise it first; core.settings_model re-exports it.)"""


MAX_SECRET_BYTES = 64 * 1024  # a token, a key, a keyring: far smaller


class StrictModel(BaseModel):
    """Unknown keys are refused (a typo is an error), values are frozen, no inf/nan."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


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
OSD_STOP_FIELDS = frozenset({"id", "conf", "cluster", "pid"})
OSD_PREPARE_FIELDS = frozenset({"id", "conf", "cluster", "device"})
OSD_XFS_FIELDS = frozenset({"id", "conf", "cluster", "device", "data_dir", "fs_uuid",
                            "osd_uuid"})


class Secret(StrictModel):
    """A secret given as an environment variable name or a file path (or inline for labs)."""

    env: str | None = None
    file: str | None = None
    value: str | None = None

    @field_validator("file")
    @classmethod
    def _credentials_dir(cls, v: str | None) -> str | None:
        """``$CREDENTIALS_DIRECTORY`` (or ``${...}``) is the directory systemd gives a unit
        with ``LoadCredential=`` (deploy/systemd/); unset (a shell, not the unit), the path
        stays as written, names no file, and the secret is missing like any absent file."""
        where = os.environ.get("CREDENTIALS_DIRECTORY")
        if v and where:
            v = v.replace("${CREDENTIALS_DIRECTORY}", where).replace("$CREDENTIALS_DIRECTORY",
                                                                     where)
        return v

    def resolve(self) -> str | None:
        if self.env and os.environ.get(self.env):
            return os.environ[self.env]
        if self.file:
            p = Path(self.file)
            if p.exists():
                try:  # a FIFO, a device or a huge file is refused, never read unbounded
                    return read_text(p, MAX_SECRET_BYTES).strip()
                except FileRefused as e:
                    raise SettingsError(f"secret file {e}") from None
        return self.value


class CephSettings(StrictModel):
    """How stordoc reaches Ceph. ``client``/``keyring`` do every read (a check); a
    separate ``fix_client``/``fix_keyring`` (least privilege, issue 40.3) makes every
    change (runbooks, benchmarks, reverting temporary changes): a bot host given only the
    read-only key checks and says, on a Fix, which key it lacks."""

    conf: str
    keyring: str | None = None
    client: str = "client.admin"
    fix_client: str | None = None
    fix_keyring: str | None = None
    timeout: float = Field(10.0, gt=0, le=300, allow_inf_nan=False)
    cluster_name: str = "ceph"
    # the argv of an osdmaptool of the cluster's release or newer (the map is given as
    # /dev/stdin; a chroot prefix works); [] = the 10 s stamp rule instead (said so)
    osdmaptool: list[str] = Field(default_factory=lambda: ["osdmaptool"], max_length=16)
    # the argv of the rados CLI (``rados list-inconsistent-obj`` for inconsistent PGs;
    # a chroot prefix works); [] = not used (the PGs are named, their copies not)
    rados: list[str] = Field(default_factory=lambda: ["rados"], max_length=16)

    @field_validator("osdmaptool", "rados")
    @classmethod
    def _tool_ok(cls, v: list[str]) -> list[str]:
        if any(not part or "\x00" in part for part in v):
            raise ValueError("an empty or NUL argument")
        return v

    @field_validator("client", "fix_client")
    @classmethod
    def _client_ok(cls, v: str | None) -> str | None:
        if v is not None and not (v.startswith("client.") and len(v) > 7
                                  and v.isascii() and v.isprintable() and " " not in v):
            raise ValueError(f"a Ceph user is client.NAME (ASCII, no spaces): {v!r}")
        return v

    @model_validator(mode="after")
    def _fix_pair(self) -> CephSettings:
        if self.fix_keyring and not self.fix_client:
            raise ValueError("fix_keyring needs fix_client (the user whose key it holds)")
        return self

    @property
    def separate_fix_user(self) -> bool:
        return bool(self.fix_client) and (self.fix_client, self.fix_keyring) != \
            (self.client, self.keyring)


class SwiftSettings(StrictModel):
    swift_dir: str = "/etc/swift"
    proxy_url: str | None = None
    auth_url: str | None = None
    user: str | None = None
    key: Secret | None = None
    recon_timeout: float = Field(5.0, gt=0, le=120, allow_inf_nan=False)


class PrometheusSettings(StrictModel):
    """``[clusters.NAME.prometheus]``: host facts from the node_exporters this Prometheus
    scrapes (``storage.hostfacts.prom``); SSH then reaches only the hosts in question."""

    url: str
    timeout_s: float = Field(10.0, gt=0, le=120, allow_inf_nan=False)
    stale_s: float = Field(180.0, gt=0, le=86400, allow_inf_nan=False)
    job: str = Field("node", pattern=r"^[A-Za-z0-9_.:/-]{1,128}$")
    ssh_max_hosts: int = Field(64, ge=0, le=10000)

    @field_validator("url")
    @classmethod
    def _url_ok(cls, v: str) -> str:
        return check_url(v)

    def target(self) -> PromTarget:
        return PromTarget(self.url, self.timeout_s, self.stale_s, self.job,
                          self.ssh_max_hosts)


class DaemonSettings(StrictModel):
    """One daemon of a host besides its OSDs: ``mon.a``, ``mgr.x``, ``swift-object-server``,
    ``swift-object-replicator``, ``memcached``, ``rsyncd``... (checks/daemons.py)."""

    name: str
    pid_file: str = ""
    log_file: str = ""
    admin_socket: str = ""
    port: int | None = Field(None, ge=1, le=65535)
    address: str = ""
    unit: str = ""
    start: list[str] = []

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        daemon_kind(v)  # ValueError names the kinds
        return v

    @field_validator("start")
    @classmethod
    def _no_fields(cls, v: list[str]) -> list[str]:
        for part in v:
            check_template(part, frozenset())
        return v

    def target(self) -> DaemonTarget:
        return DaemonTarget(self.name, self.pid_file, self.log_file, self.admin_socket,
                            self.port, self.address, self.unit, tuple(self.start))


class HostSettings(StrictModel):
    name: str
    # "" only beside ``hosts_from``: the address the cluster reports for this host
    address: str = ""
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
    osd_stop: list[str] = ["systemctl", "stop", "ceph-osd@{id}"]
    osd_prepare_raw: list[str] = ["ceph-volume", "--cluster", "{cluster}", "raw", "prepare",
                                  "--bluestore", "--data", "{device}", "--osd-id", "{id}"]
    osd_create_lvm: list[str] = ["ceph-volume", "--cluster", "{cluster}", "lvm", "create",
                                 "--bluestore", "--data", "{device}", "--osd-id", "{id}",
                                 "--no-systemd"]
    osd_mkfs_xfs: list[str] = ["mkfs.xfs", "-q", "-m", "uuid={fs_uuid}", "{device}"]
    osd_mount_xfs: list[str] = ["mount", "-t", "xfs", "-o", "noatime", "{device}",
                                "{data_dir}"]
    osd_keyring_new: list[str] = ["ceph-authtool", "--create-keyring", "{data_dir}/keyring",
                                  "--gen-key", "-n", "osd.{id}"]
    osd_keyring_print: list[str] = ["ceph-authtool", "{data_dir}/keyring", "-p", "-n",
                                    "osd.{id}"]
    osd_mkfs: list[str] = ["ceph-osd", "--cluster", "{cluster}", "-i", "{id}", "--mkfs",
                           "--osd-uuid", "{osd_uuid}"]
    osd_chown: list[str] = ["chown", "-R", "ceph:ceph", "{data_dir}"]
    swift_devices_dir: str | None = None
    swift_server_start: list[str] = ["systemctl", "start", "swift-{server}"]
    swift_replicator_start: list[str] = ["systemctl", "start", "swift-{server}-replicator"]
    fstab_path: str = "/etc/fstab"
    swift_ring_dirs: list[str] = Field(default_factory=list, max_length=32)
    osd_log_file: str | None = "/var/log/ceph/{cluster}-osd.{id}.log"
    osd_admin_socket: str | None = "/var/run/ceph/{cluster}-osd.{id}.asok"
    osd_unit: str | None = "ceph-osd@{id}.service"
    ceph_crash_dir: str | None = "/var/lib/ceph/crash"
    daemons: list[DaemonSettings] = Field(default_factory=list, max_length=256)
    evidence_dir: str = "/var/lib/stordoc/evidence"

    @field_validator("osd_log_file", "osd_admin_socket", "osd_unit")
    @classmethod
    def _osd_templates(cls, v: str | None) -> str | None:
        return None if v is None else check_template(v, OSD_PATH_FIELDS)

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

    @field_validator("osd_stop")
    @classmethod
    def _stop_ok(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("an empty command")
        for part in v:
            check_template(part, OSD_STOP_FIELDS)
        return v

    @field_validator("osd_prepare_raw", "osd_create_lvm")
    @classmethod
    def _prepare_ok(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("an empty command")
        for part in v:
            check_template(part, OSD_PREPARE_FIELDS)
        return v

    @field_validator("osd_mkfs_xfs", "osd_mount_xfs", "osd_keyring_new", "osd_keyring_print",
                     "osd_mkfs", "osd_chown")
    @classmethod
    def _xfs_ok(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("an empty command")
        for part in v:
            check_template(part, OSD_XFS_FIELDS)
        if v[0] == "mkfs.xfs" and any(a in ("-f", "--force") for a in v):
            raise ValueError("mkfs.xfs with -f would overwrite a filesystem: leave it out")
        return v

    @field_validator("osd_data_dir", "osd_pid_file")
    @classmethod
    def _path_ok(cls, v: str | None) -> str | None:
        return None if v is None else check_template(v, OSD_PATH_FIELDS)


class HostDefaults(HostSettings):
    """``[clusters.NAME.host_defaults]``: what every host of the cluster shares (SSH user,
    key, port, the deployment's paths and commands); a ``[[clusters.NAME.hosts]]`` entry
    sets only where one host differs, every host found from the cluster
    (``hosts_from``) is built from these alone."""

    name: str = "*"

    @model_validator(mode="after")
    def _no_identity(self) -> HostDefaults:
        given = self.model_fields_set & {"name", "address", "daemons"}
        if given:
            raise ValueError(f"{', '.join(sorted(given))}: per host only "
                             "(a [[hosts]] entry), not a default")
        return self


def _given(m: BaseModel) -> dict[str, Any]:
    return m.model_dump(include=set(m.model_fields_set))


def host_target(h: HostSettings) -> HostTarget:
    return HostTarget(
        name=h.name, address=h.address, port=h.port, user=h.user,
        key_file=h.key_file, known_hosts=h.known_hosts, timeout_s=h.timeout,
        osd_start=tuple(h.osd_start), osd_data_dir=h.osd_data_dir,
        osd_pid_file=h.osd_pid_file, swift_devices_dir=h.swift_devices_dir,
        osd_activate_raw=tuple(h.osd_activate_raw),
        osd_activate_lvm=tuple(h.osd_activate_lvm),
        osd_start_cephadm=tuple(h.osd_start_cephadm),
        osd_stop=tuple(h.osd_stop), osd_prepare_raw=tuple(h.osd_prepare_raw),
        osd_create_lvm=tuple(h.osd_create_lvm),
        osd_mkfs_xfs=tuple(h.osd_mkfs_xfs), osd_mount_xfs=tuple(h.osd_mount_xfs),
        osd_keyring_new=tuple(h.osd_keyring_new),
        osd_keyring_print=tuple(h.osd_keyring_print), osd_mkfs=tuple(h.osd_mkfs),
        osd_chown=tuple(h.osd_chown),
        swift_server_start=tuple(h.swift_server_start),
        swift_replicator_start=tuple(h.swift_replicator_start),
        fstab_path=h.fstab_path, swift_ring_dirs=tuple(h.swift_ring_dirs),
        osd_log_file=h.osd_log_file, osd_admin_socket=h.osd_admin_socket,
        osd_unit=h.osd_unit, ceph_crash_dir=h.ceph_crash_dir,
        daemons=tuple(d.target() for d in h.daemons),
        evidence_dir=h.evidence_dir,
    )


class ThresholdSettings(StrictModel):
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
    pg_settle_window_s: float | None = Field(None, ge=0)
    device_health_warn_s: float | None = Field(None, ge=0)
    device_health_crit_s: float | None = Field(None, ge=0)
    device_wear_warn: float | None = Field(None, gt=0, le=1)

    @field_validator("*")
    @classmethod
    def _sane(cls, v: float | None) -> float | None:
        if v is not None and not 0 <= v <= 1e9:
            raise ValueError(f"must be between 0 and 1e9, not {v}")
        return v

    def apply(self, base: Thresholds) -> Thresholds:
        vals = {k: v for k, v in self.model_dump().items() if v is not None}
        return Thresholds(**{**base.__dict__, **vals})


class ClusterSettings(StrictModel):
    ceph: CephSettings | None = None
    swift: SwiftSettings | None = None
    hosts: list[HostSettings] = []
    # hosts found from the cluster at each check (storage.discover): CRUSH hosts with
    # OSDs, the rings' storage servers; each built from ``host_defaults``
    hosts_from: list[Literal["ceph", "swift"]] = Field(default_factory=list, max_length=2)
    host_defaults: HostDefaults = HostDefaults()
    muted: list[str] = []
    thresholds: ThresholdSettings = ThresholdSettings()
    prometheus: PrometheusSettings | None = None
    # ``check --all``: this cluster's budget in seconds (default: [check] cluster_timeout_s)
    check_timeout_s: float | None = Field(None, gt=0, le=86400, allow_inf_nan=False)

    @model_validator(mode="after")
    def _addresses(self) -> ClusterSettings:
        bare = [h.name for h in self.hosts if not h.address]
        if bare and not self.hosts_from:
            raise ValueError(f"host {bare[0]}: no address (give one, or set hosts_from "
                             "so the cluster reports it)")
        names = [h.name for h in self.hosts]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice and self.hosts_from:
            raise ValueError(f"host {twice[0]} is listed twice")
        return self

    def host_settings(self) -> list[HostSettings]:
        """The configured hosts, each on ``host_defaults`` (what it sets wins)."""
        base = _given(self.host_defaults)
        base.pop("name", None)
        return [HostSettings(**{**base, **_given(h)}) for h in self.hosts]

    def target(self, name: str, changes: bool = False) -> ClusterTarget:
        """The plain values of ``storage.targets``; ``changes``: Ceph as the user that
        makes changes (``ceph.fix_client``, when set), else as the one that reads."""
        cluster_name = self.ceph.cluster_name if self.ceph else "ceph"
        c = self.ceph
        fix = changes and c is not None and c.fix_client is not None
        defaults = HostSettings(**{**_given(self.host_defaults), "name": "*"})
        return ClusterTarget(
            name=name,
            ceph=CephTarget(c.conf, (c.fix_keyring or c.keyring) if fix else c.keyring,
                            (c.fix_client or c.client) if fix else c.client,
                            c.timeout, tuple(c.osdmaptool), tuple(c.rados))
            if c else None,
            swift=SwiftTarget(
                proxy_url=self.swift.proxy_url, auth_url=self.swift.auth_url,
                user=self.swift.user, key=self.swift.key.resolve() if self.swift.key else None,
                swift_dir=self.swift.swift_dir, recon_timeout_s=self.swift.recon_timeout,
            ) if self.swift else None,
            hosts=tuple(host_target(h) for h in self.host_settings()),
            ceph_cluster_name=cluster_name,
            prometheus=self.prometheus.target() if self.prometheus else None,
            discovery=HostDiscovery(tuple(self.hosts_from),
                                    replace(host_target(defaults), name="", address=""))
            if self.hosts_from else None,
        )
