"""Issue 39.5: the bot is composed of its parts, not one class spread over four files by
inheritance: ``StordocBot`` holds a ``BotCore`` (state, delivery) that its ``Commands``
and ``Actions`` hold too (errbot's plugins hold the bot the same way); none subclasses
another. Driven through the real bolt App over HTTP: a command and a button still reach
their handler group."""

from __future__ import annotations

from pathlib import Path

from bot.actions import Actions
from bot.app import StordocBot
from bot.commands import Commands
from bot.core import BotCore
from core.settings import parse_settings
from tests.support.fake_slack import BotHarness, all_text
from tests.support.poll import wait_until

OPERATOR = "UOPERATOR1"


def test_the_bot_is_composed_not_inherited(tmp_path: Path) -> None:
    for part in (StordocBot, Commands, Actions, BotCore):
        assert part.__bases__ == (object,), part
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    settings = parse_settings({"journal": str(tmp_path / "j.db"), "default_cluster": "lab",
                               "clusters": {"lab": {"ceph": {"conf": str(conf), "timeout": 1}}}})
    h = BotHarness(settings, {"lab": {"operators": [OPERATOR]}}, str(tmp_path / "bot.db"),
                   throttle_s=0.0)
    try:
        bot = h.bot
        assert bot.commands.core is bot.core and bot.actions.core is bot.core
        assert bot.commands.actions is bot.actions
        assert bot.core.store is bot.store and bot.core.desk is bot.desk
        # a command reaches Commands, a button Actions: through the bolt App over HTTP
        assert h.slack.slash("help", OPERATOR).status == 200
        wait_until(lambda: [c for c in h.fake.of("chat.postEphemeral", "chat.postMessage")
                            if "health" in all_text(c)], 30, "no help answer")
        before = len(h.ephemerals())
        assert h.slack.press("cancel", "not-a-token", OPERATOR, "1700000000.000100"
                             ).status == 200
        wait_until(lambda: len(h.ephemerals()) > before, 30, "no answer to the press")
        assert "this button is not known here" in all_text(h.ephemerals()[before])
    finally:
        h.close()
