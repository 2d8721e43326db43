"""`stordoc bot --http` as a real process: reads its secrets from the environment, serves
signed requests, answers through the (fake) Slack API, and refuses bad setups in one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.fake_slack import SIGNING_SECRET, TOKEN, FakeSlack, SlackSender

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, api: str) -> Path:
    p = tmp_path / "stordoc.toml"
    p.write_text(f'journal = "{tmp_path}/j.db"\n[clusters.lab.ceph]\nconf = "{tmp_path}/none"\n'
                 f'[slack]\napi_base_url = "{api}"\n[slack.roles.lab]\nviewers = ["UVIEW00001"]\n')
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_stordoc_bot_http_serves_signed_requests(tmp_path: Path) -> None:
    fake = FakeSlack().start()
    port = _free_port()
    env = {**os.environ, "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen([sys.executable, "-m", "stordoc", "-c",
                             str(_config(tmp_path, fake.base_url)), "bot", "--http",
                             "--port", str(port)], cwd=ROOT, env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # blocks until the server says it listens (or exits)
            seen.append(line)
            if "stordoc bot: HTTP on" in line:
                break
        assert any(f"http://127.0.0.1:{port}/slack/events" in x for x in seen), seen
        assert not any(TOKEN in x or SIGNING_SECRET in x for x in seen)
        sender = SlackSender(f"http://127.0.0.1:{port}/slack/events")
        assert sender.slash("help", "UVIEW00001").status == 200
        fake.wait_for(lambda f: f.of("chat.postEphemeral"), 30)
        assert sender.send(sender.command_body("help", "UVIEW00001"),
                           "application/x-www-form-urlencoded", secret="bad").status == 401
    finally:
        proc.terminate()
        proc.wait(30)
        fake.stop()


def test_missing_secret_is_one_line_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    env["PYTHONWARNINGS"] = "ignore"
    r = subprocess.run([sys.executable, "-m", "stordoc", "-c",
                        str(_config(tmp_path, "http://127.0.0.1:9/api/")), "bot", "--http"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 64
    assert "no Slack bot token" in r.stderr and "Traceback" not in r.stderr
    r2 = subprocess.run([sys.executable, "-m", "stordoc", "-c",
                         str(_config(tmp_path, "http://127.0.0.1:9/api/")), "bot", "--http",
                         "--host", "0.0.0.0"], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=60)
    assert r2.returncode == 64 and "refusing to listen on 0.0.0.0" in r2.stderr
