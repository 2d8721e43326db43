"""Temporary changes that expire (storage.expiring, runbooks.expiry): written to the
journal before they are made, reverted at the deadline by the next sweep (a new process
too: a new Journal on the same file), exactly to the value recorded before, never over a
value someone else set since; audited as an ``expiry-revert`` run. A fake monitor stands
in for Ceph (the lab test and benchmarks/expiry_revert.py run the real one)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

import storage.ceph
from runbooks.expiry import (
    MAX_WINDOW_S,
    parse_ratio,
    parse_window,
    sweep,
    temporary_op,
)
from runbooks.model import InvalidRequest, MonOp, RunContext, StepEnv
from runbooks.steps import NoRunner
from storage import expiring
from storage.audit import Audit
from storage.journal import Journal
from storage.targets import CephTarget, ClusterTarget


class FakeMon:
    """The part of a monitor these tests need: osd dump, set-*-ratio, set/unset-group."""

    def __init__(self) -> None:
        self.dump: dict[str, Any] = {
            "full_ratio": 0.949999988079071, "backfillfull_ratio": 0.8999999761581421,
            "nearfull_ratio": 0.8500000238418579,
            "osds": [{"osd": i, "state": ["exists", "up"]} for i in range(3)]}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.on_call: Any = None
        self.fail: str | None = None

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def mon(self, prefix: str, **args: Any) -> Any:
        if self.on_call is not None:
            self.on_call(prefix)
        if prefix == "osd dump":
            return copy.deepcopy(self.dump)
        self.calls.append((prefix, args))
        if self.fail and prefix.startswith(self.fail):
            raise storage.ceph.CephCommandError(prefix, -22, "refused by the fake")
        if prefix.startswith("osd set-") and prefix.endswith("-ratio"):
            key = prefix.removeprefix("osd set-").replace("-ratio", "_ratio")
            self.dump[key] = float(args["ratio"])
        elif prefix in ("osd set-group", "osd unset-group"):
            for o in self.dump["osds"]:
                if f"osd.{o['osd']}" in args["who"]:
                    st = [s for s in o["state"] if s != args["flags"]]
                    o["state"] = st + [args["flags"]] if prefix == "osd set-group" else st
        return None


@pytest.fixture
def mon(monkeypatch: pytest.MonkeyPatch) -> FakeMon:
    fake = FakeMon()
    monkeypatch.setattr(storage.ceph, "CephClient", lambda target: fake)
    return fake


def _ctx(path: Path, user: str = "alice") -> RunContext:
    return RunContext("lab", ClusterTarget("lab", ceph=CephTarget("/x/ceph.conf")),
                      Journal(str(path)), user=user)


def _raise_full(ctx: RunContext, window: float = 60.0) -> str:
    mon = MonOp("osd set-full-ratio", {"ratio": 0.97})
    ok, msg = temporary_op("ratio", "full_ratio", window, mon, (), 0.949999988079071,
                           0.97)(StepEnv(ctx, NoRunner()))
    assert ok
    return msg


def test_written_before_it_is_made_and_reverted_at_the_deadline(tmp_path: Path,
                                                                mon: FakeMon) -> None:
    ctx = _ctx(tmp_path / "j.db")
    seen: list[str] = []

    def before_set(prefix: str) -> None:  # the journal row exists when the command goes
        if prefix == "osd set-full-ratio":
            seen.extend(c.state for c in expiring.open_changes(ctx.journal, "lab"))

    mon.on_call = before_set
    msg = _raise_full(ctx)
    assert seen == ["pending"]
    assert "stordoc reverts it at" in msg
    [ch] = expiring.open_changes(ctx.journal, "lab")
    assert ch.state == "held" and ch.by == "alice" and mon.dump["full_ratio"] == 0.97
    assert sweep(ctx, now=ch.deadline - 1) == []  # not yet: nothing read, nothing sent
    n_calls = len(mon.calls)
    lines = sweep(ctx, now=ch.deadline + 1)
    assert len(lines) == 1 and "reverted" in lines[0] and "full_ratio 0.97 -> 0.95" in lines[0]
    assert mon.calls[n_calls:] == [("osd set-full-ratio", {"ratio": 0.95})]
    assert expiring.open_changes(ctx.journal, "lab") == []
    assert expiring.history(ctx.journal, "lab")[0].state == "reverted"
    run = Audit(ctx.journal).runs(cluster="lab")[0]
    assert run.runbook == "expiry-revert" and run.outcome == "success"
    [step] = Audit(ctx.journal).steps(run.id)
    assert step.status == "done" and step.command == "ceph osd set-full-ratio 0.95"
    assert sweep(ctx, now=ch.deadline + 100) == []  # reverted once, not twice


def test_reverted_by_another_process_after_a_restart(tmp_path: Path, mon: FakeMon) -> None:
    first = _ctx(tmp_path / "j.db")
    _raise_full(first)
    deadline = expiring.open_changes(first.journal, "lab")[0].deadline
    first.journal.close()  # stordoc killed: only the journal file is left
    again = _ctx(tmp_path / "j.db", user="bob")
    lines = sweep(again, now=deadline + 5)
    assert "reverted" in lines[0] and abs(mon.dump["full_ratio"] - 0.95) < 1e-6


def test_a_value_someone_else_set_since_is_left(tmp_path: Path, mon: FakeMon) -> None:
    ctx = _ctx(tmp_path / "j.db")
    _raise_full(ctx)
    mon.dump["full_ratio"] = 0.96  # a person changed it by hand meanwhile
    n_calls = len(mon.calls)
    [line] = sweep(ctx, now=expiring.open_changes(ctx.journal, "lab")[0].deadline + 1)
    assert "changed by someone else since; left as it is" in line and "0.96" in line
    assert mon.calls[n_calls:] == [] and mon.dump["full_ratio"] == 0.96
    assert expiring.history(ctx.journal, "lab")[0].state == "left"


def test_a_failed_change_is_never_reverted(tmp_path: Path, mon: FakeMon) -> None:
    ctx = _ctx(tmp_path / "j.db")
    mon.fail = "osd set-full-ratio"
    with pytest.raises(storage.ceph.CephCommandError):
        _raise_full(ctx)
    assert expiring.open_changes(ctx.journal, "lab") == []
    assert expiring.history(ctx.journal, "lab")[0].state == "not_made"


def test_killed_between_journal_and_command(tmp_path: Path, mon: FakeMon) -> None:
    """A row left pending (the process died around the command): the sweep reads the
    cluster: made -> reverted; not made -> not_made, nothing sent."""
    ctx = _ctx(tmp_path / "j.db")
    ch = expiring.record(ctx.journal, "lab", "ratio", "nearfull_ratio", 10**10, "carol",
                         before=0.85, after=0.9, now=1000.0)
    n_calls = len(mon.calls)
    [line] = sweep(ctx, now=10**10 + 1)
    assert "never made" in line and mon.calls[n_calls:] == []
    assert expiring.history(ctx.journal, "lab")[0].state == "not_made"
    ch = expiring.record(ctx.journal, "lab", "ratio", "nearfull_ratio", 10**10, "carol",
                         before=0.85, after=0.9, now=1000.0)
    mon.dump["nearfull_ratio"] = 0.9  # it was made before the process died
    [line] = sweep(ctx, now=10**10 + 1)
    assert "reverted" in line and abs(mon.dump["nearfull_ratio"] - 0.85) < 1e-9
    assert expiring.history(ctx.journal, "lab")[0].id == ch.id


def test_noout_only_where_stordoc_still_holds_it(tmp_path: Path, mon: FakeMon) -> None:
    ctx = _ctx(tmp_path / "j.db")
    op = MonOp("osd set-group", {"flags": "noout", "who": ["osd.0", "osd.1"]})
    temporary_op("osd-flag", "noout", 30.0, op, ["osd.0", "osd.1"],
                 reason="maintenance of host node1")(StepEnv(ctx, NoRunner()))
    mon.dump["osds"][1]["state"] = ["exists", "up"]  # someone unset osd.1 by hand
    mon.dump["osds"][2]["state"].append("noout")  # and set osd.2: not ours
    [line] = sweep(ctx, now=expiring.open_changes(ctx.journal, "lab")[0].deadline + 1)
    assert mon.calls[-1] == ("osd unset-group", {"flags": "noout", "who": ["osd.0"]})
    assert "osd.1 no longer had it" in line
    assert "noout" in mon.dump["osds"][2]["state"]  # never one stordoc did not set


def test_unreachable_cluster_keeps_the_change_for_next_time(tmp_path: Path,
                                                            mon: FakeMon) -> None:
    ctx = _ctx(tmp_path / "j.db")
    _raise_full(ctx)

    def down(prefix: str) -> None:
        raise storage.ceph.CephUnreachable("monitors unreachable")

    mon.on_call = down
    deadline = expiring.open_changes(ctx.journal, "lab")[0].deadline
    [line] = sweep(ctx, now=deadline + 1)
    assert "not reverted yet" in line
    assert [c.state for c in expiring.open_changes(ctx.journal, "lab")] == ["held"]
    mon.on_call = None
    assert "reverted" in sweep(ctx, now=deadline + 2)[0]


@pytest.mark.parametrize("text", ["0s", "0", "3650d", "8d", "nan", "inf", "1e20", "-5m",
                                  "2 h", "２h", "4s"])
def test_bad_windows_refused(text: str) -> None:
    with pytest.raises(InvalidRequest) as e:
        parse_window(text)
    assert "\n" not in str(e.value)


def test_windows() -> None:
    assert parse_window("2h") == 7200 and parse_window("7d") == MAX_WINDOW_S
    assert parse_window("5s") == 5


@pytest.mark.parametrize("text", ["0.995", "1", "nan", "inf", "-inf", "1e20", "1e-3",
                                  "0", "-0.5", "0x1", "٠.٩", "0.97 ", "."])
def test_bad_ratios_refused(text: str) -> None:
    if text == "0.97 ":
        assert parse_ratio(text) == 0.97
        return
    with pytest.raises(InvalidRequest):
        parse_ratio(text)
