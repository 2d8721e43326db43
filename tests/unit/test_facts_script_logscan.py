"""Issue 39.7: the facts script reads a daemon's log and crash dir with fewer processes
(one awk instead of two seven-process pipelines; the crash list read once), and prints
exactly what the pipelines printed.

The reference is the script's former text, run by ``sh`` on the same files: each case
runs the real ``FACTS_SCRIPT`` (through ``facts_argv``) on real files and compares its
``@@daemon`` section with what the former commands print. Logs come from fixed edge cases
(more than 8 matches, the abort dump's ``-N>``/``0>`` lines, long lines, invalid UTF-8,
NUL bytes, no final newline, an empty log) and from hypothesis. Both run in the C locale
(what an SSH session without LANG gets, as the lab's): the awk always matches bytes, so in
a UTF-8 session it also matches a start line whose ``.*`` spans invalid UTF-8, which the
former grep skipped there.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.hostfacts.scripts import DaemonProbe, facts_argv

# the daemon section's log and crash reading as it was before (commit 31fb325)
FORMER = r"""
FATAL_RE='Caught signal|ceph_assert|FAILED assert|terminate called|received  ?signal|Got [Ss]ignal|Immediate shutdown|starting shutdown|shutdown complete|osd init failed|unable to mount|SIGTERM|Segmentation fault|Traceback|exiting'
START_RE='ceph version .*process ceph-|rsyncd version .* starting|Started child|Starting object'
echo "@@daemon $1"
echo "log 1"
tail -n 4000 -- "$2" 2>/dev/null | grep -aE "$FATAL_RE" | grep -avE '^ *-[0-9]+> ' | sed -E 's/^ *0> //' | tail -n 8 | cut -c1-400 | sed 's/^/fatal /'
tail -n 4000 -- "$2" 2>/dev/null | grep -aE "$START_RE" | grep -avE '^ *-?[0-9]+> ' | tail -n 8 | cut -c1-300 | sed 's/^/start /'
echo "last $(tail -n 1 -- "$2" | cut -c1-400)"
if [ -n "$3" ] && [ -d "$3" ]; then
  grep -lF "\"entity_name\": \"$1\"" "$3"/*/meta "$3"/posted/*/meta 2>/dev/null | tail -n 10 | sed 's/^/crash /'
  grep -lF "\"entity_name\": \"$1\"" "$3"/*/meta "$3"/posted/*/meta 2>/dev/null | tail -n 10 | xargs -r grep -lF '"mgr_module"' 2>/dev/null | sed 's/^/modcrash /'
fi
"""

LINES = [
    "2026-11-28T10:00:00 ceph version 16.2.15 (abc) pacific (stable), process ceph-mon, pid 7",
    "2026-11-28T10:00:01 *** Caught signal (Aborted) **",
    "2026-11-28T10:00:01 ./src/mon/Monitor.cc: 42: FAILED ceph_assert(x)",
    "  -9999> 2026-11-28T10:00:00 Caught signal in the dump, left out",
    "  -12> 2026-11-28T10:00:00 ceph version 16.2.15 process ceph-osd in the dump",
    "     0> 2026-11-28T10:00:02 *** Caught signal (Segmentation fault) **",
    "0> 2026-11-28T10:00:02 received  signal: Terminated from PID 1",
    "rsyncd version 3.2.7 starting, listening on port 873",
    "object-server: Started child 4242",
    "Starting object replication pass.",
    "Traceback (most recent call last):",
    "an ordinary line",
    "",
    "Got signal 15, exiting " + "x" * 600,
    "ceph version " + "é" * 250 + " process ceph-mgr",
]


def _section(out: str, name: str) -> str:
    start = out.index(f"@@daemon {name}\n")
    rest = out[start:]
    end = rest.find("\n@@", 1)
    return rest if end < 0 else rest[:end + 1]


def _both(log: Path, crash: Path | None, name: str = "mon.a") -> tuple[bytes, bytes]:
    argv = facts_argv("/nonexistent-fstab", (), (), (), (
        DaemonProbe(name, "", "", str(log), str(crash) if crash else "", ""),))
    env = {**os.environ, "LC_ALL": "C"}
    now = subprocess.run(argv, capture_output=True, check=True, timeout=60, env=env).stdout
    before = subprocess.run(["sh", "-c", FORMER, "former", name, str(log),
                             str(crash) if crash else ""],
                            capture_output=True, check=True, timeout=60, env=env).stdout
    sec = _section(now.decode("latin-1"), name).encode("latin-1")
    return sec, before


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("data", [
    b"",
    "\n".join(LINES).encode(),  # no final newline
    ("\n".join(LINES) + "\n").encode(),
    ("\n".join(LINES * 5) + "\n").encode(),  # more than 8 of each kind
    ("\n".join(f"line {i} Caught signal {i}" for i in range(5000)) + "\n").encode(),
    b"\xff\xfe Caught signal \xc3\x28 bad utf-8\nceph version \xe9 process ceph-osd\n",
    b"Caught signal \x00\x00 in a NUL run\n\x00\x00\x00\nlast line\n",
    b"a\r\nCaught signal\r\nStarted child\r\n",
], ids=["empty", "no-final-newline", "lines", "many", "5000-lines", "bad-utf8", "nul", "crlf"])
def test_the_log_reading_prints_what_the_former_pipelines_printed(
        tmp_path: Path, data: bytes) -> None:
    sec, before = _both(_write(tmp_path / "daemon.log", data), None)
    assert sec == before
    assert sec.startswith(b"@@daemon mon.a\nlog 1\n")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(LINES),
                          st.builds(lambda p, line: p + line,
                                    st.sampled_from(["", " ", "   -7> ", "  0> ", "-3> "]),
                                    st.sampled_from(LINES)),
                          st.text(max_size=80)), max_size=40),
       st.booleans())
def test_any_log_reads_as_before(lines: list[str], final_newline: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = "\n".join(lines) + ("\n" if final_newline and lines else "")
        sec, before = _both(_write(Path(tmp) / "daemon.log",
                                   data.encode(errors="surrogateescape")), None)
        assert sec == before


@pytest.mark.parametrize("n_crashes, module", [(0, False), (1, False), (3, True), (14, True)])
def test_the_crash_dir_reads_as_before(tmp_path: Path, n_crashes: int, module: bool) -> None:
    crash = tmp_path / "crash"
    (crash / "posted").mkdir(parents=True)
    for i in range(n_crashes):
        d = crash / ("posted" if i % 3 == 0 else "") / f"2026-11-28_{i:02d}_crash"
        d.mkdir(parents=True)
        meta = {"entity_name": "mgr.x" if i % 4 != 3 else "mon.a"}
        if module and i % 2:
            meta["mgr_module"] = "dashboard"
        (d / "meta").write_text(json.dumps(meta))
    log = _write(tmp_path / "mgr.log", b"ceph version 16 process ceph-mgr\n")
    sec, before = _both(log, crash, "mgr.x")
    assert sec == before
    assert sec.count(b"\ncrash ") == min(10, sum(1 for i in range(n_crashes) if i % 4 != 3))


def test_the_ring_md5s_read_as_before(tmp_path: Path) -> None:
    """One md5sum per ring dir instead of one per ring: the same lines, in the same order,
    an unreadable or odd entry left out as before; the arguments after a ring dir are still
    read (the function's ``set --`` leaves the script's own arguments alone)."""
    full, empty = tmp_path / "rings", tmp_path / "none"
    full.mkdir()
    empty.mkdir()
    for name in ("object", "container", "account", "object-1"):
        (full / f"{name}.ring.gz").write_bytes(name.encode() * 100)
    (full / "dir.ring.gz").mkdir()  # not a file: left out
    (full / "object.builder").write_text("not a ring")
    log = _write(tmp_path / "d.log", b"Started child 7\n")
    argv = facts_argv("/nonexistent-fstab", (), (), (str(full), str(empty), str(full)),
                      (DaemonProbe("rsyncd", "", "", str(log), "", ""),))
    env = {**os.environ, "LC_ALL": "C"}
    out = subprocess.run(argv, capture_output=True, check=True, timeout=60, env=env,
                         text=True).stdout
    got = [ln for sec in out.split("@@ringmd5\n")[1:] for ln in [sec.split("@@")[0]]]
    former = 'for f in "$1"/*.ring.gz; do [ -f "$f" ] && md5sum -- "$f"; done 2>/dev/null'
    want = [subprocess.run(["sh", "-c", former, "former", str(d)], capture_output=True,
                           check=False, timeout=60, env=env, text=True).stdout
            for d in (full, empty, full)]
    assert got == want
    assert len(want[0].splitlines()) == 4 and want[1] == ""
    assert "@@daemon rsyncd\nlog 1\nstart Started child 7\n" in out
