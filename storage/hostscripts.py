"""The constant shell scripts the daemon runbooks run on a host (typed arguments, never
text from a user): here, below the runbooks, so the host's allowlist (storage/hostallow.py)
matches each by its whole text."""

from __future__ import annotations

# what is saved before anything changes: constant script, typed arguments
# $1 evidence dir, $2 log file, $3 crash report dir, $4 pid (a hung process)
EVIDENCE_SCRIPT = r"""
set -e
umask 077
mkdir -p -- "$1"
if [ -n "$2" ] && [ -r "$2" ]; then tail -n 2000 -- "$2" > "$1/log-tail"; fi
if [ -n "$3" ] && [ -d "$3" ]; then cp -a -- "$3" "$1/"; fi
if [ -n "$4" ] && [ -d "/proc/$4" ]; then
  { cat "/proc/$4/status"; echo; echo "wchan: $(cat "/proc/$4/wchan" 2>/dev/null)";
    cat "/proc/$4/stack" 2>/dev/null || true; } > "$1/proc" 2>/dev/null || true
fi
ls -- "$1"
"""
# $1 pid, $2 what its command line must name (the pid is still that daemon)
KILL_SCRIPT = r"""
tr '\000' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2" || { echo "pid $1 is no longer $2: nothing killed" >&2; exit 1; }
kill -KILL "$1"
i=0
while [ -e "/proc/$1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
[ ! -e "/proc/$1" ]
"""
PROGRAM = {"mon": "ceph-mon", "mgr": "ceph-mgr", "osd": "ceph-osd", "memcached": "memcached",
           "rsyncd": "rsync"}
# $1 pid file: it names a live process (printed)
ALIVE_SCRIPT = 'p=$(cat -- "$1" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" && echo "$p"'
# $1 a new file: standard input written to it, never over a file that exists (noclobber
# creates it or fails; a copy that fails half-way removes only the file it created). A
# copy is a command like any other, so the restricted key's allowlist covers it and no
# SFTP subsystem is needed (``FabricRunner.put``)
PUT_SCRIPT = r"""
set -C
umask 022
if [ -e "$1" ] || [ -L "$1" ]; then echo "$1 exists: stordoc does not write over it" >&2; exit 3; fi
{ true > "$1"; } 2>/dev/null || { echo "$1: cannot create it" >&2; exit 1; }
cat >> "$1" || { rm -f -- "$1"; exit 1; }
"""


def put_argv(remote_path: str) -> list[str]:
    """The command that writes its standard input to ``remote_path`` (a new file)."""
    return ["sh", "-c", PUT_SCRIPT, "stordoc-put", remote_path]
