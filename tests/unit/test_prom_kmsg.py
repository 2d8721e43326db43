"""The kernel log through Prometheus: scripts/stordoc-kmsg-textfile (run for real, with a
``dmesg`` of our own first on PATH) writes what node_exporter's textfile collector exports,
and ``storage.hostfacts.prom`` reads it as the SSH path reads the same lines: a shut-down
XFS (healthy to node_exporter's filesystem collector) and kernel I/O errors are found from
Prometheus alone; a stale textfile is never read as a quiet kernel."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checks.engine import run_checks
from storage.hostfacts.scripts import (
    FACTS_SCRIPT,
    KMSG_GREP,
    KMSG_TAIL,
    KMSG_TEXTFILE,
    XFSLOG_GREP,
    XFSLOG_TAIL,
)
from storage.model import HostFacts
from tests.support.prom_server import FakeProm, Kmsg, Node, parse_textfile
from tests.unit.test_prom_facts import at, keys, nodes_of, saved, via_prom

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "stordoc-kmsg-textfile"
T0 = "2026-11-27T15:20:31,000000+00:00"


def run_script(tmp: Path, dmesg_out: str | None, journal_out: str | None = None
               ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The script with fake ``dmesg`` / ``journalctl`` (None: it fails) first on PATH."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, out in (("dmesg", dmesg_out), ("journalctl", journal_out)):
        src = tmp / f"{name}.out"
        src.write_bytes((out or "").encode("utf-8", "surrogateescape"))
        (bin_dir / name).write_text(
            f"#!/bin/sh\ncat '{src}'\n" if out is not None else "#!/bin/sh\nexit 1\n")
        (bin_dir / name).chmod(0o755)
    out_dir = tmp / "textfile"
    out_dir.mkdir(exist_ok=True)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    r = subprocess.run(["sh", str(SCRIPT), str(out_dir)], capture_output=True, text=True,
                       env=env, timeout=60, check=False)
    return r, out_dir / KMSG_TEXTFILE


def test_the_textfile_reads_the_lines_the_ssh_facts_script_reads() -> None:
    """One meaning for "the kernel lines stordoc reads": the same greps and tails in the
    SSH facts script and in the textfile script."""
    text = SCRIPT.read_text()
    for grep, tail in ((KMSG_GREP, KMSG_TAIL), (XFSLOG_GREP, XFSLOG_TAIL)):
        assert f"grep -E '{grep}' | tail -n {tail}" in FACTS_SCRIPT
        assert f"grep -E '{grep}' \"$raw\" | tail -n {tail}" in text


def promtool_ok(path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian's prometheus, installed by scripts/setup) is missing"
    r = subprocess.run([promtool, "check", "metrics"], stdin=path.open(), text=True,
                       capture_output=True, timeout=60, check=False)
    # promtool's lint also says it has no "_total"-style advice for gauges; failures only
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_real_kernel_log_becomes_a_valid_textfile_that_reads_back(tmp_path: Path) -> None:
    lines = [
        f"{T0} loop7: detected capacity change from 0 to 655360",
        f"{T0} XFS (loop7): Mounting V5 Filesystem",
        f"{T0} I/O error, dev loop7, sector 1024 op 0x1:(WRITE) flags 0x800",
        f'{T0} XFS (loop7): metadata I/O error in "xfs_buf_ioend" at daddr 0x2 len 1 \\x',
        f"{T0} XFS (loop7): User initiated shutdown received.",
        f"{T0} XFS (loop7): Filesystem has been shut down due to log error (0x2).",
        f"{T0} usb 1-1: new high-speed USB device (not read)",
        f"{T0} sd 2:0:0:0: [sdb] Attached SCSI disk \u00e9\udcff\t" + "x" * 600,
    ]
    r, out = run_script(tmp_path, "\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    promtool_ok(out)
    got = parse_textfile(out.read_text())
    assert got["stordoc_kmsg_readable"] == [({}, 1.0)]
    assert got["stordoc_kmsg_errors"] == [({}, 5.0)]  # 2 in kmsg, 3 in xfslog
    by = {s: [lab["line"] for lab, _ in sorted(
        (x for x in got["stordoc_kmsg_line"] if x[0]["section"] == s),
        key=lambda x: int(x[0]["n"]))] for s in ("kmsg", "xfslog")}
    assert by["kmsg"][:3] == [lines[0], lines[2], lines[3]]
    assert by["xfslog"] == [lines[1], lines[3], lines[4], lines[5]]
    # non-ASCII bytes dropped, a tab made a space, at most 400 characters
    assert by["kmsg"][3].startswith(f"{T0} sd 2:0:0:0: [sdb] Attached SCSI disk  xxx")
    assert by["kmsg"][3] != lines[7]
    assert len(by["kmsg"][3]) == 400 and by["kmsg"][3].isascii()


def test_the_tails_are_the_ssh_scripts_and_an_unreadable_log_says_so(tmp_path: Path) -> None:
    many = [f"{T0} I/O error, dev sdb, sector {i} op 0x0:(READ)" for i in range(450)]
    many += [f"{T0} XFS (sdb): Mounting V5 Filesystem" for _ in range(350)]
    r, out = run_script(tmp_path, "\n".join(many) + "\n")
    assert r.returncode == 0, r.stderr
    got = parse_textfile(out.read_text())
    kmsg = [lab for lab, _ in got["stordoc_kmsg_line"] if lab["section"] == "kmsg"]
    xfs = [lab for lab, _ in got["stordoc_kmsg_line"] if lab["section"] == "xfslog"]
    assert len(kmsg) == KMSG_TAIL and kmsg[-1]["line"].endswith("sector 449 op 0x0:(READ)")
    assert len(xfs) == XFSLOG_TAIL
    # dmesg refused (dmesg_restrict, not root): journalctl's kernel lines instead
    r, out = run_script(tmp_path, None, f"{T0} I/O error, dev sdc, sector 8 op 0x0:(READ)\n")
    got = parse_textfile(out.read_text())
    assert got["stordoc_kmsg_readable"] == [({}, 1.0)]
    assert [lab["line"] for lab, _ in got["stordoc_kmsg_line"]] == [
        f"{T0} I/O error, dev sdc, sector 8 op 0x0:(READ)"]
    # dmesg refused and journalctl says nothing (exit 0: a user outside systemd-journal):
    # not a quiet kernel, an unreadable log
    r, out = run_script(tmp_path, None, "")
    assert parse_textfile(out.read_text())["stordoc_kmsg_readable"] == [({}, 0.0)]
    # neither: readable 0, no line (a quiet log is not claimed)
    r, out = run_script(tmp_path, None, None)
    assert r.returncode == 0, r.stderr
    promtool_ok(out)
    got = parse_textfile(out.read_text())
    assert got["stordoc_kmsg_readable"] == [({}, 0.0)] and "stordoc_kmsg_line" not in got
    assert not [p for p in out.parent.iterdir() if p.name != KMSG_TEXTFILE]  # no temp left


def test_bad_arguments_change_nothing(tmp_path: Path) -> None:
    r = subprocess.run(["sh", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "usage" in r.stderr
    r = subprocess.run(["sh", str(SCRIPT), str(tmp_path / "missing")], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 2 and "not a directory" in r.stderr
    assert not (tmp_path / "missing").exists()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x2FF,
                                      blacklist_characters="\n\r"), max_size=120))
def test_any_line_is_escaped_so_it_reads_back(tmp_path: Path, tail: str) -> None:
    """Quotes, backslashes, braces, ``="``, control characters and non-ASCII in a kernel
    line never break the textfile (node_exporter would refuse all of it)."""
    line = f"{T0} I/O error, dev sdb, sector 1 {tail}"
    r, out = run_script(tmp_path, line + "\n")
    assert r.returncode == 0, r.stderr
    got = parse_textfile(out.read_text())
    want = "".join(c for c in line.replace("\t", " ") if " " <= c <= "~")[:400]
    if "I/O error" in want:
        assert [lab["line"] for lab, _ in got["stordoc_kmsg_line"]] == [want]


# ------------------------------------------------------------------ read by the checks


def test_a_shut_down_xfs_is_found_from_prometheus_alone_as_ssh_finds_it() -> None:
    """node_exporter's filesystem collector reports a shut-down XFS healthy (it answers
    statfs); the kernel-log textfile is what says it, and gives SSH's finding."""
    snap, target, _ = saved("pacific", "swift-device-shutdown")
    want = {k for k in keys(snap, snap.taken_at) if k[0] == "FS_SHUTDOWN"}
    assert want == {("FS_SHUTDOWN", "disk /dev/loop29@node2", "crit")}
    with FakeProm(nodes_of(snap.hosts), clock=at(snap)).serve() as url:
        alone, asked = via_prom(snap, target, url, ssh_max=0)
        deep, asked_deep = via_prom(snap, target, url)
    assert asked == []
    assert keys(alone, snap.taken_at) == keys(snap, snap.taken_at)
    assert alone.hosts["node2"].xfs_events and alone.hosts["node2"].fs_probes
    # by default the host it names gets SSH's deep look, and only it
    assert asked_deep == ["node2"]
    assert deep.prometheus is not None
    (said,) = deep.prometheus.ssh_hosts
    assert said.startswith("node2 (") and "Swift device d2: its XFS shut down" in said
    # without the textfile, Prometheus alone cannot tell: nothing found, and it says so
    bare = [replace(n, kmsg=None) for n in nodes_of(snap.hosts)]
    with FakeProm(bare, clock=at(snap)).serve() as url:
        blind, _ = via_prom(snap, target, url, ssh_max=0)
    rep = run_checks(blind, now=snap.taken_at)
    assert not [f for f in rep.findings if f.code == "FS_SHUTDOWN"]
    unknown = [f for f in rep.findings if f.code.startswith("HOST_KERNEL_LOG")]
    assert [f.code for f in unknown] == ["HOST_KERNEL_LOG_UNWATCHED"]
    assert unknown[0].severity.label == "info"
    assert "of 4 host(s)" in unknown[0].message


def _errors_fleet(snap_hosts: Mapping[str, HostFacts], lines: list[str],
                  age_s: float = 10.0) -> list[Node]:
    nodes = nodes_of(snap_hosts)
    for n in nodes:
        n.kmsg = Kmsg(age_s=age_s, lines={"kmsg": lines})
    return nodes


def test_kernel_io_errors_on_a_hosts_own_device_only_and_not_a_predecessors() -> None:
    snap, target, _ = saved("pacific", "pg-inconsistent")  # disks probed, no I/O error
    assert not any(f.io_errors for f in snap.hosts.values())
    d2 = next(p.source for p in snap.hosts["node2"].fs_probes if p.name == "d2")
    dev = os.path.basename(d2 or "")
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(snap.taken_at - 60)) + ",000000+00:00"
    err = f"{ts} I/O error, dev {dev}, sector 2048 op 0x1:(WRITE) flags 0x0"
    attach = f"{ts} {dev}: detected capacity change from 0 to 655360"
    # an error, then the name given to a new device: the predecessor's, nothing found
    with FakeProm(_errors_fleet(snap.hosts, [err, attach]), clock=at(snap)).serve() as url:
        old, asked = via_prom(snap, target, url, ssh_max=0)
    assert asked == [] and not old.hosts["node2"].io_errors
    assert not [k for k in keys(old, snap.taken_at) if k[0] == "DEVICE_IO_ERRORS"]
    # attached, then an error: node2's disk is failing, and only node2's
    with FakeProm(_errors_fleet(snap.hosts, [attach, err]), clock=at(snap)).serve() as url:
        new, _ = via_prom(snap, target, url, ssh_max=0)
        _, asked = via_prom(snap, target, url)
    found = [k for k in keys(new, snap.taken_at) if k[0] == "DEVICE_IO_ERRORS"]
    assert found == [("DEVICE_IO_ERRORS", f"disk {d2}@node2", "crit")], found
    assert [h for h, f in new.hosts.items() if f.io_errors] == ["node2"]
    assert asked == ["node2"]


def test_a_stale_or_unreadable_kernel_log_is_looked_at_never_read_as_quiet() -> None:
    snap, target, _ = saved("pacific", "healthy")
    nodes = nodes_of(snap.hosts)
    stale = next(n for n in nodes if n.nodename == "node3")
    stale.kmsg = Kmsg(age_s=3600)  # its cron job stopped an hour ago
    unread = next(n for n in nodes if n.nodename == "node1")
    unread.kmsg = Kmsg(readable=0)
    with FakeProm(nodes, clock=at(snap)).serve() as url:
        alone, _ = via_prom(snap, target, url, ssh_max=0)
        _, asked = via_prom(snap, target, url)
    assert sorted(asked) == ["node1", "node3"]
    rep = run_checks(alone, now=snap.taken_at)
    f = [f for f in rep.findings if f.code.startswith("HOST_KERNEL_LOG")]
    assert [x.code for x in f] == ["HOST_KERNEL_LOG_STALE"], rep.findings
    assert f[0].severity.label == "warn"
    assert "node1" in f[0].message and "node3" in f[0].message
    assert "3600 s old" in " ".join(f[0].evidence["why"])  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1e20, 1e20])
def test_absurd_textfile_times_are_not_believed(bad: float) -> None:
    snap, target, _ = saved("pacific", "healthy")
    nodes = nodes_of(snap.hosts)
    for n in nodes:
        n.kmsg = None
        n.textfile = {"stordoc_kmsg_readable": [({}, 1.0)], "stordoc_kmsg_time": [({}, bad)],
                      "stordoc_kmsg_errors": [({}, 0.0)]}
    with FakeProm(nodes, clock=at(snap)).serve() as url:
        got, asked = via_prom(snap, target, url)
    assert sorted(asked) == sorted(snap.hosts)  # each to SSH: its kernel log is unknown
    assert keys(got, snap.taken_at) == keys(snap, snap.taken_at)


def test_a_healthy_fleet_sends_no_kernel_line() -> None:
    """Three numbers per host; the lines only of hosts whose log has an error in it."""
    snap, target, _ = saved("pacific", "healthy")
    nodes = nodes_of(snap.hosts)
    for n in nodes:  # every host's log has attach and mount lines, no error
        n.kmsg = Kmsg(lines={"kmsg": [f"{T0} loop3: detected capacity change from 0 to 8"],
                             "xfslog": [f"{T0} XFS (loop3): Mounting V5 Filesystem"]})
    fake = FakeProm(nodes, clock=at(snap))
    with fake.serve() as url:
        got, asked = via_prom(snap, target, url)
    lines_q = next(q for q in fake.queries if q.startswith("stordoc_kmsg_line"))
    assert fake.evaluate(lines_q, snap.taken_at) == []
    assert asked == [] and keys(got, snap.taken_at) == keys(snap, snap.taken_at)
    assert got.prometheus is not None and got.prometheus.kernel_log_unknown == ()
