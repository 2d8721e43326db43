"""Authorization by user ID/group per cluster; buttons and dedupe kept in the journal."""

from __future__ import annotations

from pathlib import Path

from core.policy import Authorizer, Level, RoleSpec
from core.slack.redact import Redactor
from core.slack.store import BotStore
from storage.journal import Journal


def test_roles_per_cluster_and_wildcard() -> None:
    a = Authorizer({"lab": RoleSpec(viewers=("UVIEW",), operators=("UOPS",), two_person=True),
                    "*": RoleSpec(viewers=("UALL",))}, admins=("UADMIN",))
    assert a.level("UOPS", "lab") == Level.OPERATOR
    assert a.level("UVIEW", "lab") == Level.VIEWER
    assert a.level("UALL", "prod") == Level.VIEWER
    assert a.level("UOPS", "prod") == Level.NONE
    assert a.level("UADMIN", "prod") == Level.OPERATOR
    assert a.level("UNOBODY", "lab") == Level.NONE
    assert a.two_person("lab") and not a.two_person("prod")
    msg = a.refusal("UVIEW", "lab", Level.OPERATOR)
    assert msg is not None and "*operator* role on cluster `lab`" in msg
    assert a.refusal("UOPS", "lab", Level.OPERATOR) is None


def test_user_groups_expand_and_failures_grant_nothing() -> None:
    asked: list[str] = []

    def members(g: str) -> list[str]:
        asked.append(g)
        if g == "SBROKEN":
            raise RuntimeError("no answer")
        return ["UINGROUP"]
    a = Authorizer({"lab": RoleSpec(operators=("SOPS", "SBROKEN"))}, group_members=members)
    assert a.level("UINGROUP", "lab") == Level.OPERATOR
    assert a.level("UOTHER", "lab") == Level.NONE
    a.level("UOTHER", "lab")
    assert asked.count("SOPS") == 1  # cached


def test_dedupe_survives_restart(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    s = BotStore(j)
    assert s.first_time("cmd:1", "command")
    assert not s.first_time("cmd:1", "command")
    j.close()
    j2 = Journal(tmp_path / "j.db")
    assert not BotStore(j2).first_time("cmd:1", "command")
    assert BotStore(j2).first_time("cmd:2", "command")


def test_buttons_are_tokens_spent_once(tmp_path: Path) -> None:
    s = BotStore(Journal(tmp_path / "j.db"))
    t = s.new_button("confirm", "lab", "osd-start", "osd.1", "U1", 60, {"lines": ["a"]})
    b = s.button(t)
    assert b is not None and b.runbook == "osd-start" and b.data == {"lines": ["a"]}
    assert not b.expired()
    assert s.spend([t], "U2")
    assert not s.spend([t], "U3")
    b2 = s.button(t)
    assert b2 is not None and b2.used_by == "U2"
    assert s.button("forged") is None and s.button("x" * 500) is None
    old = s.new_button("fix", "lab", "osd-start", "osd.1", "U1", 0.000001)
    b3 = s.button(old)
    assert b3 is not None and b3.expired(b3.created_at + 1)


def test_redactor_hides_tokens() -> None:
    red = Redactor(["s3cr3t-signing"])
    out = red.text("token xoxb-1234-abcdef and s3cr3t-signing key=AQBabc")
    assert "xoxb-1234" not in out and "s3cr3t-signing" not in out and "AQBabc" not in out


def test_thread_feed_keeps_order_and_coalesces_bursts() -> None:
    import threading

    from bot.app import ChannelThrottle, ThreadFeed

    sent: list[str] = []
    gate = threading.Event()

    def send(text: str) -> None:
        gate.wait(30)  # hold the first message so the rest queue up behind it
        sent.append(text)

    feed = ThreadFeed(send, ChannelThrottle(0.0), "C1")
    for i in range(20):
        feed.push(f"step {i}")
    gate.set()
    feed.close()
    lines = "\n".join(sent).splitlines()
    assert lines == [f"step {i}" for i in range(20)]
    assert len(sent) < 20  # the queued lines went out together


def test_channel_throttle_spaces_slots_per_channel() -> None:
    from bot.app import ChannelThrottle

    t = ChannelThrottle(1.0)
    assert t.reserve("C1") == 0.0
    second = t.reserve("C1")
    assert 0.9 < second <= 1.0  # the next slot in the same channel is a second later
    assert t.reserve("C2") == 0.0  # other channels are independent
