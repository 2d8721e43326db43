"""The real ``stordoc bot --http`` as a child process, for lab tests and benchmarks.

The bot gets the settings file it is given plus a ``[slack]`` section that points its Web
API client at a local fake Slack; its secrets come from the environment, as in production.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from tests.support.fake_slack import SIGNING_SECRET, TOKEN

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bot_config(base_config: Path, out: Path, api_base_url: str, cluster: str,
               viewers: Iterable[str] = (), operators: Iterable[str] = (),
               journal: Path | None = None) -> Path:
    """A copy of ``base_config`` with a ``[slack]`` section (and its own journal)."""
    text = base_config.read_text()
    if journal is not None:
        text = "\n".join(f'journal = "{journal}"' if line.startswith("journal =") else line
                         for line in text.splitlines()) + "\n"
    q = ", ".join
    text += (f'\n[slack]\napi_base_url = "{api_base_url}"\n[slack.roles.{cluster}]\n'
             f'viewers = [{q(repr(v).replace(chr(39), chr(34)) for v in viewers)}]\n'
             f'operators = [{q(repr(v).replace(chr(39), chr(34)) for v in operators)}]\n')
    out.write_text(text)
    return out


class BotProcess:
    """``stordoc -c CONFIG bot --http --port N`` started and stopped by pid."""

    def __init__(self, config: Path, workers: int = 8, extra_env: dict[str, str] | None = None
                 ) -> None:
        self.port = free_port()
        env = {**os.environ, "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
               "PYTHONWARNINGS": "ignore", **(extra_env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stordoc", "-c", str(config), "bot", "--http",
             "--port", str(self.port), "--workers", str(workers)],
            cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # until it listens (or exits)
            self.log.append(line)
            if "stordoc bot: HTTP on" in line:
                break
        else:
            raise RuntimeError("the bot exited before listening:\n" + "".join(self.log))
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
