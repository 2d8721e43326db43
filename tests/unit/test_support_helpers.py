"""The tests' own helpers (tests/support/): the poll returns what held and names what it
waited for, the broken-lab context heals whatever the block did, the CLI runner is the
real ``python -m stordoc``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.broken import broken
from tests.support.cli import cli
from tests.support.poll import wait_until


def test_wait_until_returns_the_first_truthy_value() -> None:
    seen = iter([0, "", None, "there"])
    assert wait_until(lambda: next(seen), 5, "a value", 0.001) == "there"


def test_wait_until_names_what_and_the_last_value_at_the_deadline() -> None:
    with pytest.raises(AssertionError, match=r"waiting for the moon \(last: \[\]\)"):
        wait_until(list, 0.02, "the moon", 0.005)
    with pytest.raises(AssertionError, match="worded late: 3"):
        wait_until(lambda: False, 0.01, lambda: f"worded late: {1 + 2}", 0.005)


def test_wait_until_retries_only_the_named_exceptions() -> None:
    calls = iter([KeyError("not yet"), KeyError("not yet"), 7])

    def flaky() -> Any:
        v = next(calls)
        if isinstance(v, Exception):
            raise v
        return v

    assert wait_until(flaky, 5, "a value", 0.001, retry_on=(KeyError,)) == 7
    with pytest.raises(AssertionError, match="KeyError"):
        wait_until(lambda: {}["x"], 0.01, "a key", 0.005, retry_on=(KeyError,))
    with pytest.raises(ValueError):
        wait_until(lambda: int("x"), 1, "a number", 0.005, retry_on=(KeyError,))


class FakeLab:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def break_(self, scenario: str, **kw: Any) -> str:
        self.calls.append(("break", scenario, kw))
        return "broken"

    def heal(self, scenario: str, **kw: Any) -> str:
        self.calls.append(("heal", scenario, kw))
        return "healed"


def test_broken_heals_when_the_test_fails_and_when_it_fixed_the_fault_itself() -> None:
    lab = FakeLab()
    with pytest.raises(AssertionError), broken(lab, "osd-unmounted", osd=1, out=True):
        raise AssertionError("the test failed")
    with broken(lab, "swift-ring-bad", mode="drift"):
        pass  # the test's own fix repaired it: healed all the same (a heal is idempotent)
    assert lab.calls == [("break", "osd-unmounted", {"osd": 1, "out": True}),
                         ("heal", "osd-unmounted", {"osd": 1}),
                         ("break", "swift-ring-bad", {"mode": "drift"}),
                         ("heal", "swift-ring-bad", {})]


def test_cli_runs_the_real_stordoc_with_its_config(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.a.ceph]\nconf = "/x"\ntimeout = -1\n')
    r = cli(cfg, "check", timeout=60)
    assert r.returncode == 64 and "clusters.a.ceph.timeout" in r.stderr, r
