"""Issue 26.8, the smaller ones: an alert name with a newline cannot forge a log line,
`lab break` refuses an option its scenario does not read (exit 64, nothing done), a run
SIGKILLed after its mount is not audited as 'Not done: 2. mount', an expired button names
its real lifetime, and a grammar refusal escapes `<!channel>`."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.render import ttl_words
from core.settings import AlertSettings, Secret, parse_settings
from core.slack.redact import escape_controls
from runbooks.api import RunContext
from runbooks.leftovers import reconcile
from storage.audit import Audit
from storage.journal import Journal
from storage.targets import ClusterTarget
from stordoc.cli import main
from tests.support.fake_slack import BotHarness, all_text
from tests.support.poll import wait_until
from tests.unit.test_alerts import payload

OPERATOR = "UOPERATOR1"
TOKEN = "alert-token-0123456789"
ROOT = Path(__file__).parents[2]


def _settings(tmp_path: Path):  # type: ignore[no-untyped-def]
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    return parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})


def test_alert_name_with_a_newline_cannot_forge_a_log_line(tmp_path: Path) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # the bot installs its filter on root's handlers
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    tok = tmp_path / "token"
    tok.write_text(TOKEN)
    h = BotHarness(_settings(tmp_path), {"lab": {"operators": [OPERATOR]}},
                   str(tmp_path / "bot.db"), throttle_s=0.05, channels={"CLABROOM01": "lab"},
                   alerts=AlertSettings(token=Secret(file=str(tok))))
    try:
        forged = "CephOSDDown\nINFO stordoc.bot: admin rights granted to U0EVIL\x1b[2J"
        p = payload()
        p["groupLabels"] = {"alertname": forged}
        p["commonLabels"]["alertname"] = forged
        for a in p["alerts"]:
            a["labels"]["alertname"] = forged
        req = urllib.request.Request(h.base_url + "/alertmanager", method="POST",
                                     data=json.dumps(p).encode(),
                                     headers={"Authorization": f"Bearer {TOKEN}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200
        # a hang guard: the check runs in the pool
        wait_until(lambda: "handled in" in stream.getvalue(), 120, "the alert handled", 0.05)
    finally:
        h.close()
        root.removeHandler(handler)
        root.setLevel(old_level)
    lines = stream.getvalue().splitlines()
    assert any("CephOSDDown\\nINFO stordoc.bot: admin rights" in ln for ln in lines)
    assert not [ln for ln in lines if ln.startswith("INFO stordoc.bot: admin")]
    assert "\x1b" not in stream.getvalue()


def test_escape_controls() -> None:
    assert escape_controls("a\nb\r\tc\x1b[1m\x7f\u2028\x85é") == \
        "a\\nb\\r\\tc\\x1b[1m\\x7f\\u2028\\x85é"


@pytest.mark.parametrize("argv,needle", [
    (["break", "osd-unmounted", "--osd", "2", "--device", "d1"],
     "lab break osd-unmounted takes no --device (its options: --osd, --out): nothing done"),
    (["break", "pool-few-pgs", "--osd", "1"],
     "lab break pool-few-pgs takes no --osd (it takes no options)"),
    (["heal", "swift-device-full", "--server", "object"],
     "lab heal swift-device-full takes no --server (its options: --device)"),
])
def test_lab_break_refuses_an_option_its_scenario_does_not_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        needle: str) -> None:
    base = tmp_path / "lab"
    base.mkdir()
    (base / "lab.json").write_text('{"port_base": 29000, "osd_layout": "mixed"}')
    before = sorted(p.name for p in base.iterdir())
    assert main(["lab", *argv, "--dir", str(base)]) == 64
    err = capsys.readouterr().err
    assert err.strip() == f"error: {needle}" or needle in err, err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in base.iterdir()) == before  # nothing done


_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from runbooks.api import RunContext, execute
    from runbooks.model import Plan, PlannedStep, PyOp
    from storage.journal import Journal
    from storage.targets import ClusterTarget
    marks = Path(sys.argv[2])
    def op(name, hang=False):
        def fn(env):
            (marks / name).write_text("done")
            while hang:
                time.sleep(1)
            return True, name
        return PyOp(name, fn)
    steps = (PlannedStep(1, "set flag", "local", "set flag", 300.0, None, op("flag")),
             PlannedStep(2, "mount", "local", "mount", 300.0, None, op("mount")),
             PlannedStep(3, "start", "local", "start", 300.0, None, op("start", hang=True)),
             PlannedStep(4, "clear flag", "local", "clear", 300.0, 1, op("clear")))
    ctx = RunContext("lab", ClusterTarget("lab"), Journal(sys.argv[1]), user="tester")
    execute(ctx, Plan(runbook="osd-remount", cluster="lab", target="osd.2", params={},
                      steps=steps, verify_codes=(), locks=("osd.2",)), "tester",
            recheck=False)
""")


def test_run_sigkilled_after_its_mount_is_not_audited_as_not_mounted(tmp_path: Path) -> None:
    """The report: SIGKILL after the mount, and the audit said 'Not done: 2. mount'."""
    db, marks = tmp_path / "j.db", tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(db), str(marks)], env=env)
    try:
        def started() -> bool:
            assert child.poll() is None
            return (marks / "start").exists()

        wait_until(started, 120, "the run's step 3 to start", 0.05)  # a hang guard only
        child.send_signal(signal.SIGKILL)  # during step 3: step 2 (the mount) happened
    finally:
        child.kill()
        child.wait(60)
    assert (marks / "mount").exists()
    j = Journal(db)
    reconcile(RunContext("lab", ClusterTarget("lab"), j, user="tester"))
    (run,) = Audit(j).runs(cluster="lab")
    assert run.outcome == "interrupted"
    assert "Done: 1. set flag, 2. mount." in run.message, run.message
    assert "Under way when it ended (outcome unknown): 3. start." in run.message
    assert run.message.endswith("Not done: 4. clear flag"), run.message
    assert "2. mount" not in run.message.split("Not done:")[1]
    j.close()


def test_ttl_words() -> None:
    assert [ttl_words(s) for s in (2, 59, 60, 90, 900, 3600, 5400)] == [
        "2 s", "59 s", "1 min", "1 min 30 s", "15 min", "1 h", "1 h 30 min"]


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    harness = BotHarness(_settings(tmp_path), {"lab": {"operators": [OPERATOR]}},
                         str(tmp_path / "bot.db"), button_ttl_s=2, throttle_s=0.05)
    yield harness
    harness.close()


def test_expired_button_names_its_real_lifetime(h: BotHarness) -> None:
    tok = h.bot.store.new_button("confirm", "lab", "osd-start", "osd.1", OPERATOR, h.bot.ttl)
    wait_until(lambda: h.bot.store.button(tok).expired(),  # type: ignore[union-attr]
               30, "the button's own 2 s lifetime to pass", interval=0.1)
    h.slack.press("confirm", tok, OPERATOR, "1700000000.000100")
    refusal = h.wait_post("this button expired", ("chat.postEphemeral",))
    assert "buttons last 2 s" in refusal.params["text"], refusal.params["text"]
    assert "0 min" not in refusal.params["text"]


def test_grammar_refusal_escapes_channel_pings(h: BotHarness) -> None:
    for text in ("health <!channel>", "<!here> status", "mute X <!everyone> for 1h"):
        h.slack.slash(text, OPERATOR)
    h.fake.wait_for(lambda f: len(f.of("chat.postEphemeral")) >= 3)
    for c in h.fake.of("chat.postEphemeral"):
        text = all_text(c)
        assert "<!" not in text, text
    assert any("&lt;!channel&gt;" in all_text(c) for c in h.fake.of("chat.postEphemeral"))
