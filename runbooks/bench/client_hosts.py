"""Which hosts a multi-client benchmark runs on, the runner that reaches them, and the
Ceph files each one needs.

Client names typed by a person are checked against the cluster's configured hosts (exact
names, so a Unicode look-alike is an unknown host, never a new address). Each client gets
a minimal ``ceph.conf`` and the one key of the configured Ceph client, which never appears
in a command line or a log (``runbooks.bench.clients`` copies them over SSH).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeGuard

from runbooks.model import InvalidRequest, Refused, RunContext
from storage.runner import Runner, Spawner
from storage.safefile import FileRefused, read_text
from storage.targets import CephTarget, HostTarget

MAX_CLIENTS = 64
ALL = "*"  # "the [bench] clients list, or every configured host"
_KEY_RE = re.compile(r"\A[A-Za-z0-9+/=]{16,200}\Z")


def _shown(name: str) -> str:
    """A typed name as it may be shown: ASCII-escaped, bounded."""
    return ascii(name[:60]) if not (name.isascii() and name.isprintable()) else repr(name[:60])


def resolve_clients(ctx: RunContext, names: Sequence[str], default: Sequence[str] = ()
                    ) -> list[HostTarget]:
    """The configured hosts named by ``names`` (``*``: the ``[bench] clients`` list, or
    every configured host). Unknown or repeated names are refused in one line."""
    hosts = list(ctx.target.hosts)
    by_name = {h.name: h for h in hosts}
    wanted = list(names)
    if wanted == [ALL]:
        wanted = list(default) or [h.name for h in hosts]
        if not wanted:
            raise Refused(f"cluster {ctx.cluster} has no hosts configured to run clients on")
    if not wanted:
        raise InvalidRequest("no clients named")
    if len(wanted) > MAX_CLIENTS:
        raise InvalidRequest(f"{len(wanted)} clients: at most {MAX_CLIENTS}")
    seen: set[str] = set()
    out: list[HostTarget] = []
    for n in wanted:
        h = by_name.get(n)
        if h is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise InvalidRequest(f"unknown client {_shown(n)}: clients are configured hosts of "
                          f"cluster {ctx.cluster} ({known})")
        if n in seen:
            raise InvalidRequest(f"client {n} named twice")
        seen.add(n)
        out.append(h)
    return out


def _can_spawn(r: Runner) -> TypeGuard[Spawner]:
    return hasattr(r, "spawn")


def spawner(ctx: RunContext, hosts: Sequence[HostTarget]) -> tuple[Spawner, bool]:
    """The runner for the clients: the context's when it can spawn, else SSH (fabric).
    Returns it and whether we own it (and must close it)."""
    r: Runner | None = ctx.runner
    if r is not None and _can_spawn(r):
        return r, False
    from storage.ssh import FabricRunner

    return FabricRunner(hosts), True


def ceph_client_files(t: CephTarget, cluster: Any, stage_dir: str) -> dict[str, bytes]:
    """A minimal ceph.conf (fsid, monitors, auth modes, as the running client sees them)
    and a keyring with the one key of the configured client. ``cluster`` is a connected
    ``rados.Rados``. The key never appears in a command line or a log."""
    vals = {"fsid": str(cluster.get_fsid())}
    for k in ("mon_host", "auth_cluster_required", "auth_service_required",
              "auth_client_required"):
        try:
            v = cluster.conf_get(k)
        except Exception:  # noqa: BLE001
            v = None
        if v:
            vals[k] = str(v)
    if "mon_host" not in vals:
        raise Refused("cannot tell the clients where the monitors are (no mon_host in the "
                      "running configuration)")
    if any("\n" in v or "\r" in v for v in vals.values()):
        raise Refused("unexpected line break in the running Ceph configuration")
    conf = "[global]\n" + "".join(f"{k} = {v}\n" for k, v in vals.items())
    conf += (f"\n[{t.client}]\nkeyring = {stage_dir}/keyring\nadmin_socket =\n"
             "log_file =\nlog_to_stderr = false\n")
    key = client_key(t, cluster)
    keyring = f"[{t.client}]\n\tkey = {key}\n"
    return {"ceph.conf": conf.encode(), "keyring": keyring.encode()}


def client_key(t: CephTarget, cluster: Any) -> str:
    """The key of ``t.client`` from its keyring file (the configured one, else the one the
    running configuration names)."""
    path = t.keyring
    if not path:
        try:
            path = str(cluster.conf_get("keyring")).split(",")[0].strip()
        except Exception:  # noqa: BLE001
            path = None
    if not path:
        raise Refused(f"no keyring configured for {t.client}: the clients need its key")
    try:
        text = read_text(path, 64 * 1024)  # a regular file, bounded (not a FIFO)
    except OSError as e:
        raise Refused(f"cannot read the keyring of {t.client}: {e.strerror}") from None
    except (FileRefused, UnicodeDecodeError) as e:
        raise Refused(f"cannot read the keyring of {t.client}: {e}") from None
    section = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("[") and s.endswith("]"):
            section = s[1:-1].strip()
            continue
        if section == t.client and "=" in s:
            k, _, v = s.partition("=")
            if k.strip() == "key" and _KEY_RE.match(v.strip()):
                return v.strip()
    raise Refused(f"no key for {t.client} in its keyring")
