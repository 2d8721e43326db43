"""Host facts over SSH: the root cause of a down OSD or an unmounted Swift drive is on its host.

``FabricRunner`` is the real ``storage.runner.Runner``: one fabric ``Connection`` per host,
reused for the whole run, host keys checked against the configured known_hosts (paramiko
``RejectPolicy``: an unknown key is an error, never added), key-file auth, a connect timeout
and a timeout per command. Commands are argv lists joined with ``shlex.join``.

``collect_host_facts`` asks every configured host in parallel. To keep ``stordoc check``
fast, one host costs one SSH round trip: a constant, read-only ``sh`` script (``FACTS_SCRIPT``)
whose inputs (fstab path, OSD ids, data dirs, pid files, Swift device dirs) come from the
settings and the cluster maps and are passed as positional arguments, never spliced into
the script text. A second round trip happens only when a relevant directory is not mounted:
``IDENTITY_SCRIPT`` reads what the unmounted candidate devices hold.

Read-only side effect (documented in docs/checks-swift-hosts.md): to read ``whoami`` /
``ceph_fsid`` / ``fsid`` from an *unmounted, unused* XFS device, the identity script mounts
it for a moment with ``ro,norecovery,nodev,nosuid,noexec`` on a fresh ``mktemp -d``
directory inside a private mount namespace (``unshare -m`` when available), reads three
small files and unmounts. ``norecovery`` means the XFS log is not replayed, so nothing is
written to the device. Devices that are mounted, held by another device (holders), or
attached as a loop device to something mounted are never touched.

Because lab "hosts" are all the same machine, the facts are filtered to what belongs to the
host: its OSDs (CRUSH host == HostTarget.name) and its Swift devices (ring ip ==
HostTarget.address).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storage.deploy import parse_lvs, parse_systemd
from storage.model import (
    BlockDevice,
    CephState,
    Daemon,
    DeviceIdentity,
    FstabLine,
    HostFacts,
    IoError,
    Mount,
    SwiftState,
)
from storage.runner import CommandResult, HostUnreachable, Runner, Spawned
from storage.targets import ClusterTarget, HostTarget

# --------------------------------------------------------------------------- runner


class FabricRunner:
    """``Runner`` over SSH with fabric; one connection per host, one thread at a time on it.

    ``host`` in ``run()`` is a configured host name or address. Connections open lazily
    and stay open until ``close()``.
    """

    def __init__(self, hosts: Iterable[HostTarget]) -> None:
        self._targets: dict[str, HostTarget] = {}
        for h in hosts:
            self._targets[h.name] = h
            self._targets.setdefault(h.address, h)
        self._conns: dict[str, Any] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._failed: dict[str, str] = {}

    def _target(self, host: str) -> HostTarget:
        t = self._targets.get(host)
        if t is None:
            raise HostUnreachable(host, "not a configured host")
        return t

    def _lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def _connect(self, t: HostTarget) -> Any:
        """Open (or reuse) the connection; unknown host keys and refusals raise."""
        import paramiko
        from fabric import Config, Connection

        conn = self._conns.get(t.name)
        if conn is not None and conn.is_connected:
            return conn
        cfg = Config(overrides={"load_ssh_configs": False})
        ck: dict[str, Any] = {
            "timeout": t.timeout_s,
            "banner_timeout": t.timeout_s,
            "auth_timeout": t.timeout_s,
            "allow_agent": False,
            "look_for_keys": t.key_file is None,
        }
        if t.key_file:
            ck["key_filename"] = [t.key_file]
        conn = Connection(host=t.address, port=t.port, user=t.user, config=cfg,
                          connect_kwargs=ck)
        client = conn.client
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            if t.known_hosts:
                client.load_host_keys(t.known_hosts)
            else:
                client.load_system_host_keys()
        except OSError as e:
            raise HostUnreachable(t.name, f"cannot read known_hosts {t.known_hosts}: {e}") from e
        try:
            conn.open()
        except paramiko.BadHostKeyException as e:
            raise HostUnreachable(t.name, f"host key mismatch: {e}") from None
        except paramiko.SSHException as e:
            msg = str(e)
            if "not found in known_hosts" in msg:
                msg = f"unknown host key (not in {t.known_hosts or 'known_hosts'}): {msg}"
            raise HostUnreachable(t.name, msg) from None
        except (TimeoutError, OSError, EOFError) as e:
            raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
        self._conns[t.name] = conn
        return conn

    def open_all(self, max_workers: int = 32) -> dict[str, str]:
        """Connect to every host in parallel now (e.g. while Ceph and Swift are read).

        Returns host name -> reason for the hosts that failed; ``run()`` on those raises
        ``HostUnreachable`` at once instead of waiting out the connect timeout again.
        """
        targets = list({t.name: t for t in self._targets.values()}.values())

        def one(t: HostTarget) -> tuple[str, str | None]:
            try:
                with self._lock(t.name):
                    self._connect(t)
                return t.name, None
            except HostUnreachable as e:
                return t.name, e.reason

        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(targets)))) as pool:
            failed = {n: r for n, r in pool.map(one, targets) if r is not None}
        self._failed.update(failed)
        return failed

    def run(self, host: str, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        from invoke.exceptions import CommandTimedOut

        t = self._target(host)
        if t.name in self._failed:
            raise HostUnreachable(t.name, self._failed[t.name])
        cmd = shlex.join(list(argv))
        t0 = time.monotonic()
        with self._lock(t.name):
            conn = self._connect(t)
            try:
                r = conn.run(cmd, hide=True, warn=True, timeout=max(1, int(timeout_s + 0.999)),
                             in_stream=False, pty=False)
            except CommandTimedOut as e:
                out = e.result.stdout if e.result is not None else ""
                return CommandResult(t.name, tuple(argv), -1, out, "timed out",
                                     time.monotonic() - t0, timed_out=True)
            except (OSError, EOFError) as e:
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
            except Exception as e:  # paramiko.SSHException mid-run  # noqa: BLE001
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
        return CommandResult(t.name, tuple(argv), r.exited, r.stdout, r.stderr,
                             time.monotonic() - t0)

    def put(self, host: str, local_path: str, remote_path: str,
            timeout_s: float = 60.0) -> None:
        """SFTP ``local_path`` to ``remote_path`` on the host (no shell involved)."""
        t = self._target(host)
        if t.name in self._failed:
            raise HostUnreachable(t.name, self._failed[t.name])
        with self._lock(t.name):
            conn = self._connect(t)
            try:
                sftp = conn.client.open_sftp()
            except Exception as e:  # noqa: BLE001  (paramiko.SSHException: no sftp)
                raise OSError(f"{t.name}: no SFTP: {type(e).__name__}: {e}") from None
            try:
                sftp.get_channel().settimeout(timeout_s)
                sftp.put(local_path, remote_path)
            finally:
                sftp.close()

    def spawn(self, host: str, argv: Sequence[str],
              on_line: Callable[[str, str], None] | None = None) -> Spawned:
        """Start argv on the host on a channel of its own (the connection is shared, its
        lock held only while the channel opens): several commands can run on one host at
        once, and ``run`` still works beside them (e.g. to signal them)."""
        t = self._target(host)
        if t.name in self._failed:
            raise HostUnreachable(t.name, self._failed[t.name])
        with self._lock(t.name):
            conn = self._connect(t)
            try:
                transport = conn.client.get_transport()
                if transport is None or not transport.is_active():
                    raise EOFError("connection closed")
                chan = transport.open_session(timeout=t.timeout_s)
                chan.set_combine_stderr(True)
                chan.exec_command(shlex.join(list(argv)))
            except (OSError, EOFError) as e:
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
            except Exception as e:  # noqa: BLE001  (paramiko.SSHException)
                self._drop(t.name)
                raise HostUnreachable(t.name, f"{type(e).__name__}: {e}") from None
        return _ChannelSpawned(t.name, argv, on_line, chan)

    def _drop(self, name: str) -> None:
        conn = self._conns.pop(name, None)
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001, S110
                pass

    def close(self) -> None:
        for name in list(self._conns):
            self._drop(name)


class _ChannelSpawned(Spawned):
    """A command on an SSH channel: its output read by a thread, its exit status kept."""

    def __init__(self, host: str, argv: Sequence[str],
                 on_line: Callable[[str, str], None] | None, chan: Any) -> None:
        super().__init__(host, argv, on_line)
        self._chan = chan
        threading.Thread(target=self._run, daemon=True, name=f"ssh-{host}").start()

    def _run(self) -> None:
        self._feed_lines(lambda: self._chan.recv(65536))
        try:
            rc = int(self._chan.recv_exit_status())
        except Exception:  # noqa: BLE001  (the connection died: no status)
            rc = -1
        self._finish(rc)

    def write(self, data: str) -> None:
        try:
            self._chan.sendall(data.encode())
        except Exception as e:  # noqa: BLE001
            raise OSError(f"{self.host}: cannot write to the command: {e}") from None

    def close(self) -> None:
        try:
            self._chan.shutdown_write()
        except Exception:  # noqa: BLE001, S110
            pass


# --------------------------------------------------------------------------- the scripts

# Positional args: FSTAB then groups "osd ID DIR PIDFILE" / "swift NAME DIR" /
# "ringdir DIR" (md5sum of each ring.gz there).
# Read-only: findmnt, lsblk, losetup, cat, dmesg/journalctl, ps, test, readlink, find.
FACTS_SCRIPT = r"""
fstab=$1; shift
echo "@@now"; date +%s
echo "@@findmnt"; findmnt -J -l -o SOURCE,TARGET,FSTYPE,OPTIONS 2>/dev/null || { echo "@@procmounts"; cat /proc/mounts; }
echo "@@lsblk"; lsblk -J -b -o NAME,PATH,TYPE,SIZE,FSTYPE,UUID,LABEL,MOUNTPOINT 2>/dev/null
echo "@@losetup"; losetup -J -l 2>/dev/null
echo "@@fstab"; cat -- "$fstab" 2>/dev/null
echo "@@kmsg"; { dmesg --time-format iso 2>/dev/null || journalctl -k -b -q --no-pager -o short-iso 2>/dev/null; } | grep -E 'I/O error|medium error|XFS \(.*\): (metadata I/O error|Corruption)' | tail -n 300
echo "@@ps"; ps -eo pid=,args= 2>/dev/null | grep -E '[c]eph-osd'
echo "@@swiftps"; ps -eo pid=,args= 2>/dev/null | grep -E '[s]wift-(object|container|account)-(server|replicator)'
echo "@@addrs"; ip -o addr show 2>/dev/null | awk '{print $4}'
echo "@@listen"; ss -Hltnp 2>/dev/null || echo "unknown"
echo "@@lvs"
if command -v lvs >/dev/null 2>&1; then
  LVM_SUPPRESS_FD_WARNINGS=1 lvs --reportformat json -o lv_path,lv_name,vg_name,lv_tags,lv_active,devices 2>/dev/null
fi
echo "@@systemd"
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  units=$(systemctl list-units --all --plain --no-legend --no-pager 'ceph-osd@*' 'ceph-volume@*' 'ceph-*@osd.*' 2>/dev/null | awk '{print $1}')
  if [ -n "$units" ]; then
    systemctl show --no-pager -p Id,ActiveState,SubState,Result,StateChangeTimestamp $units 2>/dev/null
    for u in $units; do
      if [ "$(systemctl is-failed -- "$u" 2>/dev/null)" = failed ]; then
        echo "@@journal $u"; journalctl -u "$u" -n 20 --no-pager -q -o short-iso 2>/dev/null
      fi
    done
  fi
fi
while [ $# -gt 0 ]; do
  case $1 in
    osd)
      echo "@@osd $2"
      if [ -d "$3" ]; then echo "dir 1"; else echo "dir 0"; fi
      if [ -f "$3/whoami" ]; then echo "whoami 1"; else echo "whoami 0"; fi
      if [ -L "$3/block" ]; then echo "block $(readlink -f -- "$3/block")"; fi
      if [ -n "$4" ] && [ -r "$4" ]; then
        pid=$(head -c 32 -- "$4" | tr -dc 0-9)
        if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ]; then
          echo "pid $pid 1 $(tr '\000' ' ' < "/proc/$pid/cmdline")"
        else
          echo "pid ${pid:-0} 0"
        fi
      fi
      shift 4;;
    swift)
      echo "@@swift $2"
      if [ -d "$3" ]; then echo "dir 1"; else echo "dir 0"; fi
      for k in objects containers accounts; do
        if [ -d "$3/$k" ]; then
          echo "parts $k $(find "$3/$k" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*' 2>/dev/null | wc -l)"
        fi
      done
      shift 3;;
    ringdir)
      echo "@@ringmd5"
      for f in "$2"/*.ring.gz; do [ -f "$f" ] && md5sum -- "$f"; done 2>/dev/null
      shift 2;;
    *) shift;;
  esac
done
echo "@@end"
"""

# Positional args: device paths (block devices or loop image files). See module docstring.
IDENTITY_SCRIPT = r"""
for dev in "$@"; do
  echo "@@dev $dev"
  if [ ! -f "$dev" ] && [ "$(head -c 22 -- "$dev" 2>/dev/null)" = "bluestore block device" ]; then
    echo "bluestore 1"
    if command -v ceph-bluestore-tool >/dev/null 2>&1; then
      printf 'label '; ceph-bluestore-tool show-label --dev "$dev" 2>/dev/null | tr -d '\n'; echo
    fi
    continue
  fi
  t=$(mktemp -d /tmp/stordoc-id.XXXXXX) || continue
  opts=ro,norecovery,nodev,nosuid,noexec
  if [ -f "$dev" ]; then opts=loop,$opts; fi
  if [ ! -f "$dev" ] && command -v blkid >/dev/null 2>&1; then
    fs=$(blkid -p -s TYPE -o value -- "$dev" 2>/dev/null)
    if [ "$fs" != xfs ]; then echo "error not xfs (${fs:-unknown})"; rmdir -- "$t"; continue; fi
  fi
  if mount -t xfs -o "$opts" -- "$dev" "$t" 2>/dev/null; then
    for f in whoami ceph_fsid fsid; do
      if [ -f "$t/$f" ]; then printf '%s %s\n' "$f" "$(head -c 200 -- "$t/$f" | tr -d '\n')"; fi
    done
    umount -- "$t"
  else
    echo "error mount failed"
  fi
  rmdir -- "$t"
done
echo "@@end"
"""


def facts_argv(fstab: str, osds: Sequence[tuple[int, str, str | None]],
               swift: Sequence[tuple[str, str]], ring_dirs: Sequence[str] = ()) -> list[str]:
    """The one command that gathers a host's facts (constant script, typed arguments)."""
    argv = ["sh", "-c", FACTS_SCRIPT, "stordoc-facts", fstab]
    for osd_id, d, pidf in osds:
        argv += ["osd", str(int(osd_id)), d, pidf or ""]
    for name, d in swift:
        argv += ["swift", name, d]
    for d in ring_dirs:
        argv += ["ringdir", d]
    return argv


def identity_argv(devices: Sequence[str]) -> list[str]:
    """Read-only identity probe of unmounted devices (private mount namespace if possible)."""
    inner = ["sh", "-c", IDENTITY_SCRIPT, "stordoc-identity", *devices]
    # unshare keeps the brief mount invisible to the rest of the host and drops it with the
    # namespace even if the script is killed; fall back to the plain script without it.
    wrapper = ('if command -v unshare >/dev/null 2>&1 && unshare -m --propagation private true'
               ' 2>/dev/null; then exec unshare -m --propagation private "$@"; else exec "$@"; fi')
    return ["sh", "-c", wrapper, "stordoc-unshare", *inner]


# --------------------------------------------------------------------------- parsing


def split_sections(text: str) -> dict[str, list[str]]:
    """``@@name arg`` headers -> lines until the next header (key keeps the argument)."""
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("@@"):
            cur = out.setdefault(line[2:].strip(), [])
        elif cur is not None:
            cur.append(line)
    return out


_PARTS_KIND = {"objects": "object", "containers": "container", "accounts": "account"}


def parse_swift_parts(lines: Sequence[str]) -> dict[str, int]:
    """``parts objects 57`` lines -> {"object": 57}: partition dirs on one Swift device."""
    out: dict[str, int] = {}
    for line in lines:
        p = line.split()
        if len(p) == 3 and p[0] == "parts" and p[1] in _PARTS_KIND and p[2].isdigit():
            out[_PARTS_KIND[p[1]]] = int(p[2])
    return out


def parse_addrs(lines: Sequence[str]) -> tuple[str, ...]:
    """``ip -o addr`` fourth fields (``127.0.0.1/8``, ``fe80::1/64``) -> the addresses, as
    Swift's whataremyips() lists them (exact addresses, not the networks)."""
    out: list[str] = []
    for line in lines:
        a = line.strip().split("/", 1)[0]
        if a and a not in out and re.fullmatch(r"[0-9A-Fa-f:.]+", a):
            out.append(a)
    return tuple(out)


def parse_findmnt(text: str) -> tuple[Mount, ...]:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return ()
    return tuple(Mount(str(fs.get("source") or ""), str(fs.get("target") or ""),
                       str(fs.get("fstype") or ""), str(fs.get("options") or ""))
                 for fs in data.get("filesystems", []))


def _unescape_mount(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def parse_proc_mounts(text: str) -> tuple[Mount, ...]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            out.append(Mount(_unescape_mount(parts[0]), _unescape_mount(parts[1]), parts[2],
                             parts[3]))
    return tuple(out)


def parse_losetup(text: str) -> dict[str, str]:
    """loop device path -> backing file."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return {}
    return {str(d.get("name")): str(d.get("back-file") or "").removesuffix(" (deleted)")
            for d in data.get("loopdevices", []) if d.get("name")}


@dataclass(frozen=True)
class _Dev:
    dev: BlockDevice
    label: str | None
    has_children: bool


def parse_lsblk(text: str, backing: Mapping[str, str]) -> list[_Dev]:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return []
    out: list[_Dev] = []

    def walk(nodes: list[dict[str, Any]]) -> None:
        for n in nodes:
            path = str(n.get("path") or f"/dev/{n.get('name')}")
            kids = n.get("children") or []
            size = n.get("size")
            out.append(_Dev(BlockDevice(
                path=path, type=str(n.get("type") or ""),
                size=int(size) if isinstance(size, (int, str)) and str(size).isdigit() else 0,
                fstype=n.get("fstype"), uuid=n.get("uuid"), mountpoint=n.get("mountpoint"),
                backing_file=backing.get(path)), n.get("label"), bool(kids)))
            walk(kids)

    walk(data.get("blockdevices", []))
    return out


def parse_fstab(text: str) -> tuple[FstabLine, ...]:
    """Active and commented-out mount lines (a ``#`` line that still parses as a mount)."""
    out = []
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        commented = s.startswith("#")
        body = s.lstrip("#").strip() if commented else s
        parts = body.split()
        if len(parts) < 3 or not (parts[1].startswith("/") or parts[1] in ("none", "swap")):
            continue  # a comment in prose, not a disabled mount line
        if commented and not (parts[0].startswith(("/", "UUID=", "LABEL=", "PARTUUID="))):
            continue
        out.append(FstabLine(_unescape_mount(parts[0]), _unescape_mount(parts[1]), parts[2],
                             parts[3] if len(parts) > 3 else "defaults", commented, raw))
    return tuple(out)


_IO_PATTERNS = (
    re.compile(r"I/O error, dev (?P<dev>[\w.-]+?),? sector"),
    re.compile(r"Buffer I/O error on (?:dev|device) (?P<dev>[\w.-]+?),"),
    re.compile(r"XFS \((?P<dev>[\w.-]+)\): (?:metadata I/O error|Corruption)"),
    re.compile(r"\b(?P<dev>sd[a-z]+|nvme\d+n\d+|vd[a-z]+|loop\d+)\b.*(?:medium error|I/O error)"),
)
_TS_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[,.](\d+))?([+-]\d\d:?\d\d)?\s")


def _ts(line: str) -> float | None:
    m = _TS_RE.match(line)
    if not m:
        return None
    tz = m.group(3) or "+00:00"
    if ":" not in tz:
        tz = tz[:3] + ":" + tz[3:]
    try:
        return datetime.fromisoformat(m.group(1) + tz).timestamp()
    except ValueError:
        return None


def parse_io_errors(lines: Iterable[str], now: float, window_s: float) -> tuple[IoError, ...]:
    """Kernel I/O error lines within the window; ``device`` is the kernel name (loop3, sdb1)."""
    out = []
    for line in lines:
        for pat in _IO_PATTERNS:
            m = pat.search(line)
            if m:
                when = _ts(line)
                if when is not None and now - when > window_s:
                    break
                out.append(IoError(m.group("dev"), line.strip(), when))
                break
    return tuple(out)


# ``-i N`` / ``--id N``, or ``-n osd.N`` / ``--name osd.N`` (cephadm's containers)
_OSD_ARG_RE = re.compile(r"(?:^|\s)(?:(?:-i|--id)(?:\s+|=)|(?:-n|--name)(?:\s+|=)osd\.)"
                         r"(\d+)(?:\s|$)")


_CLUSTER_ARG_RE = re.compile(r"(?:^|\s)--cluster(?:\s+|=)(\S+)")


def parse_ps_osds(lines: Iterable[str], cluster: str = "ceph") -> dict[int, int]:
    """OSD id -> pid from ``ps -eo pid=,args=`` lines of ceph-osd processes of ``cluster``."""
    out: dict[int, int] = {}
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        args = parts[1]
        if "ceph-osd" not in args.split(None, 1)[0]:
            continue
        cm = _CLUSTER_ARG_RE.search(args)
        if (cm.group(1) if cm else "ceph") != cluster:
            continue
        m = _OSD_ARG_RE.search(args)
        if m:
            out.setdefault(int(m.group(1)), int(parts[0]))
    return out


_SS_PROC_RE = re.compile(r'\("([^"]*)",pid=(\d+)')
_SWIFT_PS_RE = re.compile(r"swift-(object|container|account)-(server|replicator)")


def parse_listeners(lines: Iterable[str]) -> dict[int, tuple[int | None, str]] | None:
    """TCP port -> (pid, process name) from ``ss -Hltnp``; None when ss is not there."""
    lines = list(lines)
    if any(ln.strip() == "unknown" for ln in lines):
        return None
    out: dict[int, tuple[int | None, str]] = {}
    for line in lines:
        f = line.split()
        if len(f) < 4 or ":" not in f[3]:
            continue
        port_s = f[3].rsplit(":", 1)[1]
        if not port_s.isdigit():
            continue
        m = _SS_PROC_RE.search(line)
        out.setdefault(int(port_s), (int(m.group(2)), m.group(1)) if m else (None, ""))
    return out


def parse_md5sums(lines: Iterable[str]) -> dict[str, str]:
    """path -> md5 from ``md5sum`` lines (``<32 hex>  <path>``)."""
    out: dict[str, str] = {}
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and re.fullmatch(r"[0-9a-f]{32}", parts[0]):
            out[parts[1].lstrip("*")] = parts[0]
    return out


def parse_ps_swift(lines: Iterable[str]) -> list[Daemon]:
    """Swift storage server and replicator processes from ``ps -eo pid=,args=`` (ident =
    the config path; kind ``swift-object-server``, ``swift-object-replicator``...)."""
    out: list[Daemon] = []
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        words = parts[1].split()
        idx = next((i for i, w in enumerate(words[:3])
                    if _SWIFT_PS_RE.fullmatch(os.path.basename(w))), None)
        if idx is None:
            continue
        m = _SWIFT_PS_RE.fullmatch(os.path.basename(words[idx]))
        assert m is not None
        conf = words[idx + 1] if len(words) > idx + 1 else ""
        out.append(Daemon(f"swift-{m.group(1)}-{m.group(2)}", conf, int(parts[0]), True))
    return out


def parse_bluestore_label(text: str) -> dict[str, DeviceIdentity]:
    """``ceph-bluestore-tool show-label`` JSON (device -> label) -> identities.

    The label's ``osd_key`` is a secret: only whether it is there is kept."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return {}
    out: dict[str, DeviceIdentity] = {}
    if not isinstance(data, dict):
        return out
    for dev, lab in data.items():
        if not isinstance(lab, dict):
            continue
        who = str(lab.get("whoami", ""))
        out[str(dev)] = DeviceIdentity(
            device=str(dev), whoami=int(who) if who.isdigit() else None,
            ceph_fsid=lab.get("ceph_fsid") or None, osd_fsid=lab.get("osd_uuid") or None,
            kind="bluestore",
            activatable=bool(lab.get("osd_key")) and lab.get("ready") == "ready"
            and lab.get("description", "main") == "main")
    return out


def parse_identities(text: str) -> dict[str, DeviceIdentity | str]:
    """device -> identity, or an error string when it could not be read."""
    out: dict[str, DeviceIdentity | str] = {}
    for key, lines in split_sections(text).items():
        if not key.startswith("dev "):
            continue
        dev = key[4:]
        vals: dict[str, str] = {}
        err = None
        for ln in lines:
            k, _, v = ln.partition(" ")
            if k == "error":
                err = v
            else:
                vals[k] = v.strip()
        if vals.get("bluestore") == "1":
            got = parse_bluestore_label(vals.get("label", "")).get(dev)
            out[dev] = got if got is not None else "BlueStore label unreadable"
            continue
        if err and not vals:
            out[dev] = err
            continue
        who = vals.get("whoami", "")
        out[dev] = DeviceIdentity(device=dev, whoami=int(who) if who.isdigit() else None,
                                  ceph_fsid=vals.get("ceph_fsid") or None,
                                  osd_fsid=vals.get("fsid") or None)
    return out


# --------------------------------------------------------------------------- per host plan


@dataclass(frozen=True)
class HostPlan:
    """What belongs to one host: its OSDs and Swift devices, with their paths."""

    target: HostTarget
    osds: tuple[tuple[int, str, str | None], ...] = ()  # (id, data dir, pid file)
    swift: tuple[tuple[str, str], ...] = ()  # (device name, dir)
    cluster_name: str = "ceph"
    extra: Mapping[str, str] = field(default_factory=dict)


def osd_data_dir(t: HostTarget, cluster: str, osd_id: int, fsid: str = "") -> str:
    return t.osd_data_dir.format(cluster=cluster, id=osd_id, fsid=fsid)


def plan_for(target: ClusterTarget, host: HostTarget, ceph: CephState | None,
             swift: SwiftState | None) -> HostPlan:
    cl = target.ceph_cluster_name
    osds: list[tuple[int, str, str | None]] = []
    if ceph is not None:
        for o in sorted(ceph.osds, key=lambda o: o.id):
            if o.host == host.name and o.exists:
                pidf = host.osd_pid_file.format(id=o.id, cluster=cl, fsid=ceph.fsid) \
                    if host.osd_pid_file else None
                osds.append((o.id, osd_data_dir(host, cl, o.id, ceph.fsid), pidf))
    devs: list[tuple[str, str]] = []
    if swift is not None and host.swift_devices_dir:
        seen: set[str] = set()
        for ring in swift.rings:
            for d in ring.devices:
                if d.ip == host.address and d.device not in seen:
                    seen.add(d.device)
                    devs.append((d.device, os.path.join(host.swift_devices_dir, d.device)))
    return HostPlan(host, tuple(osds), tuple(sorted(devs)), cl)


def _norm(p: str) -> str:
    return os.path.normpath(p) if p else p


def _candidates(plan: HostPlan, mounts: Sequence[Mount], devs: Sequence[_Dev],
                backing: Mapping[str, str], fstab: Sequence[FstabLine],
                unmounted_osd_dirs: Sequence[str]) -> list[str]:
    """Unmounted, unused devices that might hold an unmounted OSD dir.

    First the fstab sources of those dirs (a device, a UUID=/LABEL=, or a loop image:
    the loop device it is attached to, else the image file itself). Only when fstab names
    nothing, every unmounted device without children whose filesystem is XFS or unknown
    (lsblk without udev reports no FSTYPE); the identity script probes with blkid first.
    """
    if not unmounted_osd_dirs:
        return []
    mounted = {_norm(m.source) for m in mounts}
    free = [d for d in devs if not d.dev.mountpoint and not d.has_children
            and _norm(d.dev.path) not in mounted and d.dev.type in ("disk", "part", "loop",
                                                                    "lvm", "crypt")]
    out: list[str] = []

    def add(p: str) -> None:
        if p not in out and _norm(p) not in mounted:
            out.append(p)

    wanted = {_norm(p) for p in unmounted_osd_dirs}
    for fl in fstab:
        if _norm(fl.mountpoint) not in wanted:
            continue
        src = fl.device
        if src.startswith(("UUID=", "LABEL=")):
            key, _, val = src.partition("=")
            for d in free:
                if (d.dev.uuid if key == "UUID" else d.label) == val:
                    add(d.dev.path)
            continue
        loops = [d.dev.path for d in free if d.dev.backing_file
                 and _norm(d.dev.backing_file) == _norm(src)]
        attached = [dev for dev, f in backing.items() if _norm(f) == _norm(src)]
        if loops:
            for lp in loops:
                add(lp)
        elif not attached and src.startswith("/"):
            add(src)  # a block device path, or a loop image not attached anywhere
    if not out:
        for d in free:
            if d.dev.fstype in (None, "", "xfs", "ceph_bluestore") and d.dev.size > 0:
                add(d.dev.path)
    return out


def _facts_from_output(plan: HostPlan, text: str, window_s: float,
                       t_start: float) -> tuple[HostFacts, list[str], dict[str, str]]:
    """Parse one facts run; returns facts (no identities yet), candidate devices, links."""
    t = plan.target
    sec = split_sections(text)
    now_lines = sec.get("now", [])
    remote_now = float(now_lines[0]) if now_lines and now_lines[0].strip().isdigit() \
        else time.time()
    if "procmounts" in sec:
        all_mounts = parse_proc_mounts("\n".join(sec["procmounts"]))
    else:
        all_mounts = parse_findmnt("\n".join(sec.get("findmnt", [])))
    backing = parse_losetup("\n".join(sec.get("losetup", [])))
    devs = parse_lsblk("\n".join(sec.get("lsblk", [])), backing)
    fstab_all = parse_fstab("\n".join(sec.get("fstab", [])))
    io_all = parse_io_errors(sec.get("kmsg", []), remote_now, window_s)
    ps = parse_ps_osds(sec.get("ps", []), plan.cluster_name)

    dirs: dict[str, bool] = {}
    daemons: list[Daemon] = []
    links: dict[str, str] = {}
    relevant_dirs: list[str] = []
    unmounted_osd_dirs: list[str] = []
    mount_by_target = {_norm(m.target): m for m in all_mounts}
    for osd_id, d, pidf in plan.osds:
        lines = sec.get(f"osd {osd_id}", [])
        kv = {ln.split(" ", 1)[0]: (ln.split(" ", 1)[1] if " " in ln else "") for ln in lines}
        dirs[d] = kv.get("dir") == "1"
        dirs[os.path.join(d, "whoami")] = kv.get("whoami") == "1"
        relevant_dirs.append(d)
        if _norm(d) not in mount_by_target and kv.get("whoami") != "1":
            unmounted_osd_dirs.append(d)
        if kv.get("block"):
            links[os.path.join(d, "block")] = kv["block"]
        running, pid = False, None
        if "pid" in kv:
            p = kv["pid"].split(" ", 2)
            pid = int(p[0]) if p[0].isdigit() and p[0] != "0" else None
            # the pid file is the authority when configured: a ps match could be another
            # cluster's osd.N on the same machine
            running = len(p) >= 2 and p[1] == "1" and "ceph-osd" in (p[2] if len(p) > 2 else "")
        elif pidf:
            running = False  # configured pid file is missing: the daemon removed it on exit
        elif osd_id in ps:
            running, pid = True, ps[osd_id]
        daemons.append(Daemon("ceph-osd", str(osd_id), pid, running))
    swift_parts: dict[str, dict[str, int]] = {}
    for name, d in plan.swift:
        lines = sec.get(f"swift {name}", [])
        dirs[d] = "dir 1" in lines
        relevant_dirs.append(d)
        swift_parts[name] = parse_swift_parts(lines)

    rel = {_norm(d) for d in relevant_dirs}
    mounts = tuple(m for m in all_mounts if _norm(m.target) in rel)
    fstab = tuple(f for f in fstab_all if _norm(f.mountpoint) in rel)
    cand = _candidates(plan, all_mounts, devs, backing, fstab_all, unmounted_osd_dirs)
    # block devices that matter: mounted on our dirs, our OSDs' block links, candidates,
    # and fstab sources of our dirs (by path or by backing file)
    keep_paths = {_norm(m.source) for m in mounts} | {_norm(v) for v in links.values()} \
        | {_norm(c) for c in cand}
    keep_files = {_norm(f.device) for f in fstab}
    bdevs = tuple(d.dev for d in devs if _norm(d.dev.path) in keep_paths
                  or (d.dev.backing_file and _norm(d.dev.backing_file) in keep_files))
    kept_names = {os.path.basename(b.path) for b in bdevs} | \
        {os.path.basename(m.source) for m in mounts}
    io = tuple(e for e in io_all if e.device in kept_names
               or re.sub(r"p?\d+$", "", e.device) in kept_names
               or any(k.startswith(e.device) for k in kept_names))
    listeners = parse_listeners(sec.get("listen", [])) if "listen" in sec else None
    mine = {o[0] for o in plan.osds}
    lvm = tuple(v for v in parse_lvs("\n".join(sec.get("lvs", []))) if v.osd_id in mine)
    journals = {k[len("journal "):]: v for k, v in sec.items() if k.startswith("journal ")}
    units = tuple(u for u in parse_systemd(sec.get("systemd", []), journals)
                  if u.osd_id in mine)
    facts = HostFacts(name=t.name, address=t.address, mounts=mounts, block_devices=bdevs,
                      fstab=fstab, daemons=tuple(daemons), listeners=listeners,
                      swift_processes=tuple(parse_ps_swift(sec.get("swiftps", []))),
                      io_errors=io, dirs=dirs,
                      collected_at=time.time(), duration_s=time.monotonic() - t_start,
                      links=links, osd_dirs={o[0]: o[1] for o in plan.osds},
                      swift_dirs=dict(plan.swift), swift_parts=swift_parts,
                      lvm_volumes=lvm, units=units,
                      ring_md5=parse_md5sums(sec.get("ringmd5", [])),
                      addresses=parse_addrs(sec.get("addrs", [])))
    labels = {d.dev.path: d.label for d in devs if d.label}
    # Swift: the dir name an unmounted device would be mounted as (fstab), else its label
    return facts, cand, labels


def _swift_identities(plan: HostPlan, facts: HostFacts,
                      labels: Mapping[str, str]) -> list[DeviceIdentity]:
    out: list[DeviceIdentity] = []
    unmounted = {_norm(d): name for name, d in plan.swift if facts.mount_at(d) is None}
    for fl in facts.fstab:
        name = unmounted.get(_norm(fl.mountpoint))
        if name:
            loops = [b.path for b in facts.block_devices if b.mountpoint is None
                     and b.backing_file and _norm(b.backing_file) == _norm(fl.device)]
            out.append(DeviceIdentity(device=loops[0] if loops else fl.device, label=name))
    named = {i.device for i in out}
    for bd in facts.block_devices:
        if bd.path not in named and bd.mountpoint is None \
                and labels.get(bd.path) in unmounted.values():
            out.append(DeviceIdentity(device=bd.path, label=labels[bd.path]))
    return out


def collect_one(plan: HostPlan, runner: Runner, window_s: float = 86400.0) -> HostFacts:
    """All facts of one host: one round trip, plus one more only for unmounted devices."""
    t = plan.target
    t0 = time.monotonic()
    try:
        r = runner.run(t.name, facts_argv(t.fstab_path, plan.osds, plan.swift, t.swift_ring_dirs),
                       timeout_s=t.timeout_s)
    except HostUnreachable as e:
        return HostFacts(name=t.name, address=t.address, error=e.reason,
                         collected_at=time.time(), duration_s=time.monotonic() - t0)
    if r.timed_out or "@@end" not in r.stdout:
        why = "timed out" if r.timed_out else f"facts script failed (rc {r.rc}): " \
            f"{r.stderr.strip()[:200]}"
        return HostFacts(name=t.name, address=t.address, error=why,
                         collected_at=time.time(), duration_s=time.monotonic() - t0)
    facts, cand, labels = _facts_from_output(plan, r.stdout, window_s, t0)
    idents: list[DeviceIdentity] = _swift_identities(plan, facts, labels)
    if cand:
        try:
            ri = runner.run(t.name, identity_argv(cand), timeout_s=t.timeout_s)
            found = parse_identities(ri.stdout)
        except HostUnreachable:
            found = {}
        mine = {o[0] for o in plan.osds}
        for dev in cand:
            ident = found.get(dev)
            if isinstance(ident, DeviceIdentity) and ident.whoami in mine:
                idents.append(ident)
    return HostFacts(**{**facts.__dict__, "identities": tuple(idents),
                        "duration_s": time.monotonic() - t0})


def collect_host_facts(target: ClusterTarget, ceph: CephState | None,
                       swift: SwiftState | None, runner: Runner | None = None,
                       window_s: float = 86400.0, max_workers: int = 32) -> dict[str, HostFacts]:
    """Facts of every configured host, in parallel; a silent host becomes HostFacts(error)."""
    if not target.hosts:
        return {}
    own = runner is None
    run: Runner = runner if runner is not None else FabricRunner(target.hosts)
    plans = [plan_for(target, h, ceph, swift) for h in target.hosts]
    out: dict[str, HostFacts] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(plans)))) as pool:
            futs = {p.target.name: pool.submit(collect_one, p, run, window_s) for p in plans}
            for name, fut in futs.items():
                h = target.host(name)
                try:
                    out[name] = fut.result()
                except Exception as e:  # never let one host abort the run  # noqa: BLE001
                    out[name] = HostFacts(name=name, address=h.address if h else "",
                                          error=f"{type(e).__name__}: {e}")
    finally:
        if own:
            run.close()
    return out
