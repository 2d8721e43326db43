"""benchmarks/hostile_run.py counts what it is meant to count: each category goes to 1
when one known-bad case goes through a deliberately broken stand-in target (a CLI runner
that prints a traceback or says OK, a subprocess that never ends, an HTTP endpoint that
answers 500, a journal holding a secret, a Slack channel with a Confirm button or an "All
checks passed."), and a tiny real sample (the CLI in-process, the real bot over HTTP)
counts its inputs. Today's product is not judged here: the categories
``KNOWN_BAD_BEFORE`` names are not asserted to be zero."""

from __future__ import annotations

import json
import logging
import random
import sqlite3
import sys
import threading
import urllib.request
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import unreachable_config
from tests.support.fake_slack import TOKEN, FakeSlack

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import hostile_run as H  # noqa: E402


def _only(t: H.Tally, cat: str, n: int = 1) -> None:
    """``cat`` counted ``n`` times, every other category zero."""
    assert t.count(cat) == n, t.hits
    for c in H.CATEGORIES:
        if c != cat:
            assert t.count(c) == 0, (c, t.hits[c])


# ------------------------------------------------------------------ the CLI


def test_cli_counts_one_traceback_and_one_false_ok_from_a_broken_runner(tmp_path: Path
                                                                       ) -> None:
    calls: list[Sequence[str]] = []

    def broken(argv: Sequence[str]) -> H.Run:
        calls.append(argv)
        if len(calls) == 5:
            return H.Run(1, "", "Traceback (most recent call last):\n  boom\nKeyError: 'x'\n")
        if argv[2] == "check" and not any(a[2] == "check" for a in calls[:-1]):
            return H.Run(0, "OK c1: all good\n")  # the first check says OK: a false OK
        return H.Run(3, "", "error: unreachable\n")

    t = H.Tally()
    H.part_cli(t, random.Random(1), 20, unreachable_config(tmp_path), run=broken)
    assert t.inputs["cli"] == 20
    assert calls and calls[0][2] == "check"
    assert t.count("tracebacks") == 1 and t.count("false_ok") == 1, t.hits
    assert t.count("hangs") == t.count("secrets") == t.count("http500") == 0


def test_cli_exception_name_in_a_user_facing_line_counts() -> None:
    t = H.Tally()
    H.judge_cli(t, "cli#1", ["check"], H.Run(3, "", "error: cannot read: KeyError: 'osds'\n"),
                check_like=True)
    H.judge_cli(t, "cli#2", ["check"], H.Run(3, "UNREACHABLE c1: no monitor answered\n"),
                check_like=True)
    _only(t, "tracebacks")


def test_in_process_runner_bounds_a_hang_and_catches_what_escapes(monkeypatch:
                                                                  pytest.MonkeyPatch) -> None:
    import time

    import stordoc.cli

    def sleepy(argv: list[str], term: Any = None) -> int:
        if "sleep" in argv:
            time.sleep(30)
        raise RuntimeError("escaped main")

    monkeypatch.setattr(stordoc.cli, "main", sleepy)
    t = H.Tally()
    H.judge_cli(t, "cli#1", ["sleep"], H.run_cli_inprocess(["sleep"], limit=0.3), False)
    _only(t, "hangs")
    H.judge_cli(t, "cli#2", ["x"], H.run_cli_inprocess(["x"], limit=5), False)
    assert t.count("tracebacks") == 1
    assert t.hits["tracebacks"]["cli#2"].startswith("Traceback (most recent call last)")


def test_files_count_a_subprocess_that_never_ends_as_a_hang() -> None:
    def stuck(argv: Sequence[str]) -> H.Run:
        if "fifo" in argv:  # stands for a CLI blocked on a FIFO
            return H.run_subprocess([sys.executable, "-c", "import time; time.sleep(30)"], 0.5)
        return H.run_subprocess([sys.executable, "-c", "raise SystemExit(3)"], 30)

    t = H.Tally()
    H.part_files(t, [("dir as journal", ["check"]), ("fifo as conf", ["fifo", "check"]),
                     ("dir as config", ["mute", "--list"])], run=stuck)
    assert t.inputs["files"] == 3
    _only(t, "hangs")
    assert "fifo as conf" in t.hits["hangs"]["files#2"]


def test_snapshot_and_prometheus_parts_count_an_ok(tmp_path: Path) -> None:
    snaps = [(f"odd {i}", tmp_path / f"s{i}") for i in range(4)]
    t = H.Tally()
    H.part_snapshots(t, snaps, run=lambda a: H.Run(0 if a[-1].endswith("s2") else 64))
    assert t.inputs["snapshot"] == 4
    _only(t, "false_ok")
    assert "odd 2" in t.hits["false_ok"]["snapshot#3"]

    t = H.Tally()
    seen: list[Any] = []

    def prom_check(argv: Sequence[str]) -> H.Run:
        """A stand-in check: asks the real fake Prometheus (its URL from the config) and
        says OK only where the answer was null."""
        url = Path(argv[1]).read_text().split('url = "')[1].split('"')[0]
        with urllib.request.urlopen(url + "/api/v1/query?query=up%7Bjob%3D%22node%22%7D",
                                    timeout=10) as r:
            doc = json.loads(r.read())
        seen.append(doc)
        return H.Run(0 if doc is None else 1)

    variants = [v for v in H.prom_variants() if v[0] in ("document null", "result null")]
    H.part_prom(t, tmp_path, variants, run=prom_check)
    assert t.inputs["prom"] == 2
    _only(t, "false_ok")
    assert seen[0] is not None and seen[0]["data"]["result"]  # the control: real samples


# ------------------------------------------------------------------ HTTP, logs, stderr


class _Endpoint(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        code, text = (500, b"oops") if b"boom" in body else (
            (400, b"Traceback (most recent call last):\n  x\nValueError: y")
            if b"trace" in body else (200, b""))
        self.send_response(code)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


@pytest.fixture
def endpoint() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/slack/events"
    srv.shutdown()
    srv.server_close()


def test_slack_shapes_count_one_500_and_one_traceback(endpoint: str) -> None:
    ids = H.Ids()
    shapes = H.slack_shapes(random.Random(3), 20, ids, "tok")
    assert len(shapes) == 20
    shapes[7] = ("boom", b"text=boom", H.FORM, "")
    shapes[11] = ("trace", b"text=trace", H.FORM, "")
    t = H.Tally()
    H.part_slack_shapes(t, H.signed_post(endpoint, "s"), shapes, H.LogTrap())
    assert t.inputs["slack"] == 20
    assert t.count("http500") == 1 and "boom" in t.hits["http500"]["slack#8"]
    assert t.count("tracebacks") == 1 and "slack#12" in t.hits["tracebacks"]
    assert t.count("hangs") == t.count("unauthorized") == 0


def test_an_endpoint_that_never_answers_is_a_hang() -> None:
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)  # accepts (the kernel does) and never answers
    try:
        status, _ = H.post_raw(f"http://127.0.0.1:{srv.getsockname()[1]}/", b"x", {},
                               timeout=0.5)
        t = H.Tally()
        H.judge_http(t, "slack#1", "silent", status, "")
        _only(t, "hangs")
    finally:
        srv.close()


def test_log_records_and_stderr_with_tracebacks_count() -> None:
    t = H.Tally()
    trap = H.LogTrap()
    with trap.installed():
        trap.current = "slack#1"
        logging.getLogger("stordoc.hostile-test").warning("a plain line")
        trap.current = "slack#2"
        try:
            raise KeyError("x")
        except KeyError:
            logging.getLogger("stordoc.hostile-test").exception("handler failed")
    err = H.StderrTrap(trap, sys.stderr)
    trap.current = "slack#3"
    err.write("Traceback (most recent call last):\n  File ...\n")
    trap.judge(t)
    err.judge(t)
    assert set(t.hits["tracebacks"]) == {"slack#2", "slack#3"}


# ------------------------------------------------------------------ secrets


def test_a_secret_in_a_real_sqlite_journal_counts_once(tmp_path: Path) -> None:
    rng = random.Random(5)
    cases = H.secret_cases(rng)
    assert len(cases) == 8 and all(needle in text for text, needle in cases)
    db = tmp_path / "j.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE mutes (reason TEXT)")
    con.execute("INSERT INTO mutes VALUES (?)", ("disk swap " + cases[3][0],))  # the PEM
    con.execute("INSERT INTO mutes VALUES (?)", ("disk swap [redacted]",))
    con.commit()
    needles = {needle: f"cli-secret#{i + 1}" for i, (_, needle) in enumerate(cases)}
    t = H.Tally()
    H.scan_secrets(t, needles, H.journal_blobs([db]))
    con.close()
    _only(t, "secrets")
    assert "cli-secret#4" in t.hits["secrets"]


def test_a_secret_posted_to_the_fake_slack_counts(tmp_path: Path) -> None:
    from slack_sdk import WebClient

    fake = FakeSlack().start()
    try:
        text, needle = H.secret_cases(random.Random(6))[5]  # a Slack token
        WebClient(token=TOKEN, base_url=fake.base_url).chat_postMessage(
            channel="CH0000001", text=f"unknown cluster `{text}`")
        t = H.Tally()
        H.scan_secrets(t, {needle: "slack-secret#1", "hunter2NOPE": "slack-secret#2"},
                       {"fake Slack calls": H.fake_slack_blob(fake)})
        _only(t, "secrets")
    finally:
        fake.stop()


# ------------------------------------------------------------------ Slack channels


def test_a_confirm_button_or_an_ok_in_an_inputs_channel_counts() -> None:
    from slack_sdk import WebClient

    fake = FakeSlack().start()
    try:
        c = WebClient(token=TOKEN, base_url=fake.base_url)
        c.chat_postEphemeral(channel="CH0000001", user="USTRANGER1",
                             text="refused: you are not an operator of lab")
        c.chat_postMessage(channel="CH0000002", text="Plan: osd-remount osd.1", blocks=[
            {"type": "actions", "elements": [
                {"type": "button", "action_id": "confirm", "value": "tok",
                 "text": {"type": "plain_text", "text": "Confirm"}}]}])
        c.chat_postMessage(channel="CH0000003", text="OK lab: no incidents")
        c.chat_postMessage(channel="CH0000004", text="WARN lab: OSD_DOWN_OUT osd.1")
        sent = [(f"slack-auth#{i}", f"case {i}", f"CH000000{i}") for i in range(1, 5)]
        t = H.Tally()
        H.judge_channels(t, fake, sent, unauthorized=True)
        _only(t, "unauthorized")
        assert "slack-auth#2" in t.hits["unauthorized"]
        t = H.Tally()
        H.judge_channels(t, fake, sent, false_ok=True)
        _only(t, "false_ok")
        assert "slack-auth#3" in t.hits["false_ok"]
    finally:
        fake.stop()


def test_the_report_prints_every_category_and_the_exit_status_follows() -> None:
    import io

    t = H.Tally()
    for _ in range(3):
        t.new("cli")
    out = io.StringIO()
    t.report(out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:2] == ["inputs", "3"]
    for c in H.CATEGORIES:
        assert any(ln.startswith(H.LABELS[c]) and ln.split()[-1] == "0" for ln in lines), c
    assert not t.bad()
    t.hit("hangs", "cli#2", "x")
    assert t.bad()
    t = H.Tally()
    t.goals.append(("slow clients", False))
    assert t.bad()


# ------------------------------------------------------------------ a tiny real sample


def test_a_tiny_real_sample_counts_its_inputs(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """20 CLI inputs in-process and 20 Slack bodies to the real bot: every input counted,
    no category above its inputs, and none outside KNOWN_BAD_BEFORE (the categories the
    run before issue #37's fixes found)."""
    monkeypatch.chdir(tmp_path)
    t = H.Tally()
    trap = H.LogTrap()
    with trap.installed():
        H.part_cli(t, random.Random(37), 20, unreachable_config(tmp_path), logs=trap)
        (tmp_path / "snaps").mkdir()
        bot = H.start_bot(tmp_path, tmp_path / "snaps")
        try:
            from tests.support.fake_slack import SIGNING_SECRET

            shapes = H.slack_shapes(random.Random(37), 20, H.Ids(), "no-such-token")
            H.part_slack_shapes(t, H.signed_post(bot.h.server.url, SIGNING_SECRET), shapes,
                                trap, bot.h.fake)
        finally:
            bot.close()
        trap.judge(t)
    assert t.inputs == {"cli": 20, "slack": 20}
    for c in H.CATEGORIES:
        assert t.count(c) <= 40
        if c not in H.KNOWN_BAD_BEFORE:
            assert t.count(c) == 0, (c, t.hits[c])
