"""`stordoc watch` across a fix of the seed fault (issue 27, items 2 and 3): one NEW line
for the fault, one RESOLVED line, one RUN line for what the fix did itself (noout, PGs
settling after it), no NEW line for noout, OSDMAP_FLAGS or PGS_NOT_ACTIVE_CLEAN; and
`stordoc check` right after the fix reports no CRIT PGS_NOT_ACTIVE_CLEAN incident while
the PGs settle. The watch posts to a fake Slack whose chat.postMessage fails past
slack_sdk's retries when the fault appears (issue 26.2): watch says so in one line, keeps
checking, and posts the incident once at a later check, then its resolution."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lab import Lab
from tests.support.broken import break_until_teardown
from tests.support.cli import ROOT, cli, cli_argv, cli_env
from tests.support.fake_slack import TOKEN, FakeSlack, all_text
from tests.support.poll import wait_until

# the shortest --every watch takes
EVERY = "5s"
CH = "CWATCHLAB1"


def _lines(out: Path) -> list[str]:
    """What watch printed so far, without the time stamp and cluster name."""
    return [ln.split(" ", 2)[2] for ln in out.read_text().splitlines()
            if ln.count(" ") >= 2 and ln[:4].isdigit()]


@pytest.mark.on_reef
def test_watch_across_the_seed_fix_and_check_while_settling(
        lab: Lab, cfg: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    out = tmp_path / "watch.out"
    fake = FakeSlack().start()
    request.addfinalizer(fake.stop)
    # the first post of the fault fails three times: slack_sdk retries twice, then watch
    fake.fail("chat.postMessage", 3, 503, "service_unavailable")
    cfg.write_text(cfg.read_text() + f'\n[slack]\napi_base_url = "{fake.base_url}"\n'
                   f'[slack.channels]\n{CH} = "lab"\n')
    with out.open("w") as sink:
        watch = subprocess.Popen(
            cli_argv(cfg, "watch", "--every", EVERY), stdout=sink, stderr=subprocess.STDOUT,
            cwd=ROOT, env=cli_env({"PYTHONUNBUFFERED": "1", "SLACK_BOT_TOKEN": TOKEN}))

    def stop_watch() -> None:
        if watch.poll() is None:
            watch.send_signal(signal.SIGTERM)  # watch stops after its current check
            try:
                watch.wait(30)
            except subprocess.TimeoutExpired:
                watch.kill()
                watch.wait()

    request.addfinalizer(stop_watch)
    wait_until(lambda: any(ln.startswith("watching,") for ln in _lines(out)), 60,
               "watch's first check")
    break_until_teardown(request, lab, "osd-unmounted", osd=1)
    wait_until(lambda: any(ln.startswith("NEW ") and "osd.1" in ln for ln in _lines(out)),
               90, "watch to say NEW for the fault on osd.1")
    wait_until(lambda: [c for c in fake.of("chat.postMessage") if "osd.1" in all_text(c)],
               90, "watch to post the fault once Slack answers again")

    # the fix through the CLI, `check` run back to back meanwhile and right after it:
    # PGs peering after the OSD is back are settling, never a CRIT incident no runbook fixes
    fix = subprocess.Popen(
        cli_argv(cfg, "fix", "osd-remount", "osd.1", "--yes", "--follow", "0"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=cli_env())
    checks: list[tuple[int, list[dict[str, Any]]]] = []
    while True:
        running = fix.poll() is None
        chk = cli(cfg, "check", "--json", "--no-record")
        checks.append((chk.returncode, json.loads(chk.stdout)["incidents"]))
        if not running:
            break
    fixed = fix.communicate()[0]
    assert fix.returncode == 0, fixed
    print("checks during and right after the fix:", *(
        f"exit {rc}: {[(i['severity'], i['impact']) for i in incs]}" for rc, incs in checks),
        sep="\n  ")
    for _, incs in checks:
        assert not [i for i in incs if i["root"]["code"] == "PGS_NOT_ACTIVE_CLEAN"], incs
        for i in incs:
            if i["root"]["code"] == "PGS_SETTLING":
                assert i["severity"] == "info", i
                assert "settling after run #" in i["impact"], i
                assert "osd-remount osd.1" in i["impact"], i
    rc, incs = checks[-1]  # after the fix: settling or clean, never CRIT
    assert rc in (0, 1), incs

    wait_until(lab.pgs_clean, 240, "PGs active+clean after the fix")
    wait_until(lambda: any(ln.startswith("RESOLVED ") for ln in _lines(out)), 60,
               "watch to say the fault RESOLVED")
    stop_watch()
    lines = _lines(out)
    print("watch:", *lines, sep="\n  ")
    new = [ln for ln in lines if ln.startswith("NEW ")]
    resolved = [ln for ln in lines if ln.startswith("RESOLVED ")]
    runs = [ln for ln in lines if ln.startswith("RUN ")]
    assert len(new) == 1 and "osd.1" in new[0] and "crit" in new[0], lines
    assert len(resolved) == 1 and "osd.1" in resolved[0], lines
    assert len(runs) == 1 and "osd-remount osd.1" in runs[0], lines
    for word in ("noout", "OSDMAP_FLAGS", "PGS_NOT_ACTIVE_CLEAN"):
        assert not [ln for ln in new if word in ln], lines
    # Slack failed for the fault's post: one line, the checks went on, posted once later,
    # its resolution in its thread, no traceback
    text = out.read_text()
    assert len(fake.failed) == 3 and "Traceback" not in text, text[-2000:]
    assert len([ln for ln in lines if ln.startswith("SLACK posting failed")]) == 1, lines
    assert [ln for ln in lines if ln.startswith("SLACK posting works again")], lines
    posts = [c for c in fake.of("chat.postMessage") if c.params.get("channel") == CH]
    heads = [str(c.params.get("text")) for c in posts if not c.params.get("thread_ts")]
    # one message per incident (osd.1's cause may be seen anew: DAEMON_STOPPED, then
    # DATA_UNMOUNTED), none twice
    assert heads and len(set(heads)) == len(heads), [all_text(c) for c in posts]
    assert all("osd.1" in h for h in heads), heads
    assert [c for c in posts if c.params.get("thread_ts") and "resolved" in all_text(c)], \
        [all_text(c) for c in posts]
