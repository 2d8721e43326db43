"""The read-only facts script: one SSH round trip per host gathers everything.

To keep ``stordoc check`` fast, one host costs one SSH round trip: a constant, read-only
``sh`` script (``FACTS_SCRIPT``) whose inputs (fstab path, OSD ids, data dirs, pid files,
Swift device dirs, ring dirs) come from the settings and the cluster maps and are passed
as positional arguments, never spliced into the script text. Its output is a sequence of
``@@name [arg]`` sections (``storage.hostfacts.parse``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class DaemonProbe:
    """What the facts script reads about one daemon (``@@daemon NAME``): its pid file, how
    to ask it (``asok:PATH``, ``http:HOST:PORT``, ``memcached:HOST:PORT``,
    ``tcp:HOST:PORT``; "" for none), its log, Ceph's crash dir, its systemd unit."""

    name: str
    pid_file: str = ""
    probe: str = ""
    log_file: str = ""
    crash_dir: str = ""
    unit: str = ""

# The kernel log lines both host-facts paths read: the facts script's @@kmsg and @@xfslog
# sections over SSH, and scripts/stordoc-kmsg-textfile's series through Prometheus (a unit
# test keeps the three texts equal): disk I/O errors with the kernel's attach lines (an
# error logged before its device's last attach is a predecessor's), and XFS's mounts,
# unmounts, shutdowns and errors.
KMSG_GREP = (r"I/O error|medium error|XFS \(.*\): (metadata I/O error|Corruption)"
             r"|: detected capacity change from 0 to|Attached SCSI disk"
             r"|virtio_blk .*logical blocks")
KMSG_TAIL = 400
XFSLOG_GREP = (r"XFS \([^)]*\): (Mounting|Unmounting|User initiated shutdown"
               r"|.*[Ss]hutting down filesystem|Filesystem has been shut down|Corruption"
               r"|metadata I/O error)")
XFSLOG_TAIL = 300
KMSG_TEXTFILE = "stordoc_kmsg.prom"  # what the textfile script writes in its directory

# Positional args: FSTAB then groups "osd ID DIR PIDFILE" / "swift NAME DIR" /
# "ringdir DIR" (md5sum of each ring.gz there) / "daemon NAME PIDFILE PROBE LOG CRASHDIR
# UNIT" (a daemon's life: the probes of live daemons run at the end, in one python3 with
# a thread each, 3 s each at most, answers in ``@@probes``).
# Read-only: findmnt, lsblk, losetup, cat, dmesg/journalctl, ps, test, readlink, find,
# df, smartctl -H -A; the one write is fsprobe's: a new file (mktemp) removed at once.
FACTS_SCRIPT = r"""
PROBE_PY='
import socket, sys, threading
def probe(name, target):
    kind, _, where = target.partition(":")
    try:
        if kind == "asok":
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(3)
            s.connect(where)
            s.sendall(b"{\"prefix\": \"version\"}\0")
        else:
            host, _, port = where.rpartition(":")
            s = socket.create_connection((host, int(port)), timeout=3)
            s.settimeout(3)
            if kind == "http":
                s.sendall(b"GET /healthcheck HTTP/1.0\r\n\r\n")
            elif kind == "memcached":
                s.sendall(b"version\r\n")
        r = "ok" if s.recv(4) else "closed"
    except socket.timeout:
        r = "timeout"
    except ConnectionRefusedError:
        r = "refused"
    except (OSError, ValueError) as e:
        r = "error " + e.__class__.__name__
    with lock:
        sys.stdout.write(name + " " + r + "\n")
        sys.stdout.flush()
lock = threading.Lock()
ts = [threading.Thread(target=probe, args=ln.split(None, 1)) for ln in sys.stdin.read().splitlines() if len(ln.split(None, 1)) == 2]
[t.start() for t in ts]
[t.join() for t in ts]
'
FATAL_RE='Caught signal|ceph_assert|FAILED assert|terminate called|received  ?signal|Got [Ss]ignal|Immediate shutdown|starting shutdown|shutdown complete|osd init failed|unable to mount|SIGTERM|Segmentation fault|Traceback|exiting'
START_RE='ceph version .*process ceph-|rsyncd version .* starting|Started child|Starting object'
LOGSCAN_AWK='
$0 ~ ENVIRON["FATAL_RE"] && $0 !~ /^ *-[0-9]+> / { l = $0; sub(/^ *0> /, "", l); f[nf++ % 8] = substr(l, 1, 400) }
$0 ~ ENVIRON["START_RE"] && $0 !~ /^ *-?[0-9]+> / { s[ns++ % 8] = substr($0, 1, 300) }
END {
  for (i = (nf > 8 ? nf - 8 : 0); i < nf; i++) print "fatal " f[i % 8]
  for (i = (ns > 8 ? ns - 8 : 0); i < ns; i++) print "start " s[i % 8]
}'
export FATAL_RE START_RE
fstab=$1; shift
dprobes=""
echo "@@now"; date +%s
echo "@@findmnt"; findmnt -J -l -o SOURCE,TARGET,FSTYPE,OPTIONS 2>/dev/null || { echo "@@procmounts"; cat /proc/mounts; }
echo "@@lsblk"; lsblk -J -b -o NAME,PATH,TYPE,SIZE,FSTYPE,UUID,LABEL,MOUNTPOINT 2>/dev/null
echo "@@losetup"; losetup -J -l 2>/dev/null
echo "@@fstab"; cat -- "$fstab" 2>/dev/null
echo "@@kmsg"; { dmesg --time-format iso 2>/dev/null || journalctl -k -b -q --no-pager -o short-iso 2>/dev/null; } | grep -E 'I/O error|medium error|XFS \(.*\): (metadata I/O error|Corruption)|: detected capacity change from 0 to|Attached SCSI disk|virtio_blk .*logical blocks' | tail -n 400
echo "@@ps"; ps -eo pid=,args= 2>/dev/null | grep -E '[c]eph-osd'
echo "@@swiftps"; ps -eo pid=,args= 2>/dev/null | grep -E '[s]wift-(object|container|account)-(server|replicator)'
echo "@@addrs"; ip -o addr show 2>/dev/null | awk '{print $4}'
echo "@@netdev"; cat /proc/net/dev 2>/dev/null
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
echo "@@xfslog"; { dmesg --time-format iso 2>/dev/null || journalctl -k -b -q --no-pager -o short-iso 2>/dev/null; } | grep -E 'XFS \([^)]*\): (Mounting|Unmounting|User initiated shutdown|.*[Ss]hutting down filesystem|Filesystem has been shut down|Corruption|metadata I/O error)' | tail -n 300
disks=""
# fsprobe KIND NAME DIR: is DIR a mount point (the mount table, not stat: a shut-down XFS
# answers EIO to stat), ro, writable (a new file of our own: mktemp never opens an
# existing name; removed at once), df; the whole disk under it goes to @@smart
fsprobe() {
  echo "@@fsprobe $1 $2"
  src=$(awk -v t="$3" '$2 == t { s = $1 " " $3 " " $4 } END { if (s != "") print s }' /proc/self/mounts 2>/dev/null)
  [ -n "$src" ] || { echo "mounted 0"; return; }
  echo "mount $src"
  f=$(LC_ALL=C timeout 10 mktemp -- "$3/.stordoc-probe.XXXXXX" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && [ -f "$f" ]; then
    if w=$(LC_ALL=C timeout 10 sh -c 'printf stordoc > "$1"' sh "$f" 2>&1); then echo "write ok"
    else echo "write fail $(printf '%s' "$w" | tail -n 1)"; fi
    rm -f -- "$f"
  elif [ $rc -eq 124 ]; then echo "write fail timed out after 10 s"
  else echo "write fail $(printf '%s' "$f" | tail -n 1)"; fi
  echo "df $(LC_ALL=C timeout 10 df -B1 --output=size,avail,iavail -- "$3" 2>&1 | tail -n 1)"
  dev=${src%% *}
  case $dev in /dev/*) disks="$disks $dev";; esac
}
# ringmd5 DIR: the md5sum of each ring.gz there, one md5sum for all (a function's own "$@")
ringmd5() {
  rdir=$1; set --
  for f in "$rdir"/*.ring.gz; do [ -f "$f" ] && set -- "$@" "$f"; done
  [ $# -eq 0 ] || md5sum -- "$@" 2>/dev/null
}
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
      if [ -L "$3/block" ]; then b=$(readlink -f -- "$3/block"); case $b in /dev/*) disks="$disks $b";; esac; fi
      fsprobe osd "$2" "$3"
      shift 4;;
    swift)
      echo "@@swift $2"
      if [ -d "$3" ]; then echo "dir 1"; else echo "dir 0"; fi
      for k in objects containers accounts; do
        if [ -d "$3/$k" ]; then
          echo "parts $k $(find "$3/$k" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*' 2>/dev/null | wc -l)"
        fi
      done
      fsprobe swift "$2" "$3"
      shift 3;;
    daemon)
      # NAME PIDFILE LOGFILE PROBE CRASHDIR UNIT (checks/daemons.py judges it)
      echo "@@daemon $2"
      if [ -n "$3" ]; then
        if [ -r "$3" ]; then
          pid=$(head -c 32 -- "$3" | tr -dc 0-9)
          echo "pidfile 1 ${pid:-0}"
          if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then
            st=$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f1)
            # a moment in uninterruptible I/O (an fsync) is no hang: D only when it stays
            # D over 5 looks 0.2 s apart
            i=0
            while [ "$st" = D ] && [ $i -lt 5 ]; do
              sleep 0.2; i=$((i+1))
              st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
            done
            echo "proc ${st:-?} $(tr '\000' ' ' < "/proc/$pid/cmdline" | head -c 300)"
            if [ -n "$4" ]; then dprobes="$dprobes$2 $4
"; fi
          fi
        else
          echo "pidfile 0"
        fi
      fi
      if [ -n "$5" ] && [ -r "$5" ]; then
        echo "log 1"
        # an abort dumps up to 10000 recent events ("  -9999> ..."): older lines, left out;
        # the dump's last one ("     0> ... Caught signal") is the fatal line itself, kept
        # for when the dump pushed the first copy out of the tail
        # one awk reads the tail once for both (bytes, as cut -c counts them): the last 8
        # fatal lines (400 bytes each) then the last 8 start lines (300 bytes each)
        tail -n 4000 -- "$5" 2>/dev/null | LC_ALL=C awk "$LOGSCAN_AWK"
        echo "last $(tail -n 1 -- "$5" | cut -c1-400)"
      elif [ -n "$5" ]; then
        echo "log 0"
      fi
      if [ -n "$6" ] && [ -d "$6" ]; then
        crashes=$(grep -lF "\"entity_name\": \"$2\"" "$6"/*/meta "$6"/posted/*/meta 2>/dev/null | tail -n 10)
        if [ -n "$crashes" ]; then
          printf '%s\n' "$crashes" | sed 's/^/crash /'
          # a manager module's Python exception is reported as a crash of its mgr (which runs on)
          printf '%s\n' "$crashes" | xargs -r grep -lF '"mgr_module"' 2>/dev/null | sed 's/^/modcrash /'
        fi
      fi
      if [ -n "$7" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        systemctl show --no-pager -p Id,NRestarts,Result,ExecMainStatus,ExecMainCode -- "$7" 2>/dev/null | sed 's/^/unit /'
      fi
      shift 7;;
    ringdir)
      echo "@@ringmd5"
      ringmd5 "$2"
      shift 2;;
    *) shift;;
  esac
done
# SMART of each whole disk under our dirs (read-only, -n standby: a sleeping disk is not
# woken); loop, device-mapper and other virtual devices have none: not asked
for d in $(for x in $disks; do p=$(lsblk -ndo PKNAME -- "$x" 2>/dev/null | head -n 1); if [ -n "$p" ]; then echo "/dev/$p"; else echo "$x"; fi; done | sort -u); do
  echo "@@smart $d"
  case $d in
    /dev/loop*|/dev/dm-*|/dev/ram*|/dev/zram*|/dev/nbd*|/dev/rbd*|/dev/md*|/dev/mapper/*) echo "virtual";;
    *) if command -v smartctl >/dev/null 2>&1; then LC_ALL=C timeout 20 smartctl -j -H -A -n standby -- "$d" 2>&1; else echo "no smartctl"; fi;;
  esac
done
echo "@@probes"
if [ -n "$dprobes" ]; then printf '%s' "$dprobes" | timeout 6 python3 -S -c "$PROBE_PY" 2>/dev/null; fi
echo "@@oom"; { dmesg --time-format iso 2>/dev/null || journalctl -k -b -q --no-pager -o short-iso 2>/dev/null; } | grep -E 'Killed process [0-9]+ ' | tail -n 20
echo "@@end"
"""


def facts_argv(fstab: str, osds: Sequence[tuple[int, str, str | None]],
               swift: Sequence[tuple[str, str]], ring_dirs: Sequence[str] = (),
               daemons: Sequence[DaemonProbe] = ()) -> list[str]:
    """The one command that gathers a host's facts (constant script, typed arguments)."""
    argv = ["sh", "-c", FACTS_SCRIPT, "stordoc-facts", fstab]
    for dm in daemons:
        argv += ["daemon", dm.name, dm.pid_file, dm.probe, dm.log_file, dm.crash_dir, dm.unit]
    for osd_id, d, pidf in osds:
        argv += ["osd", str(int(osd_id)), d, pidf or ""]
    for name, d in swift:
        argv += ["swift", name, d]
    for d in ring_dirs:
        argv += ["ringdir", d]
    return argv
