"""Every CLI option and positional of every subcommand, found by walking the argparse
parser, fed hostile numbers and strings: exit 64 with one line on stderr, or a normal run
(here against a cluster that does not exist), never a traceback. The same for settings
values. The CLI runs in-process through ``main()``."""

from __future__ import annotations

import argparse
import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.settings import SettingsError, parse_settings
from stordoc.cli import build_parser, main
from tests.support.cli import unreachable_config
from tests.support.examples import examples

HOSTILE = [
    "inf", "-inf", "nan", "NaN", "1e400", "-1e400", "1e308", str(10**20), str(-(10**20)),
    "-1", "0", "00", "1e3", "0x10", "1_000", "+5", ".5", "5.", " 5", "5 ",
    "\u0662", "\uff12", "\u0968\u0968", "osd.\u0662", "\U0001d7d0",  # Unicode digits
    "\u2212" "1", "\u00bd", "\u2167", "\u0031\u0336",  # look-alikes: minus sign, ½, Ⅷ
    "", " ", "\x00", "a\x00b", "\n", "a\nb", "\x1b[31m", "x" * 5000, "9" * 400,
    "/etc", "../../etc/passwd", "/proc/self/mem", "-", "--", "[bold]x[/]", "$(reboot)",
    "osd.2;reboot", "4k", "4M", "1G", "1T", "2T", "80/15/5", "80/15/4", "200/0/0",
    "pool=/etc", "nosuch=1",
]

# subcommands that would start something long-running (a server, a UI, a lab, a watch): only
# their arguments are parsed here (the lab and bot have their own lab tests)
PARSE_ONLY = {"bot", "tui", "lab", "watch"}


@dataclass(frozen=True)
class Slot:
    path: tuple[str, ...]  # e.g. ("bench", "rados")
    option: str | None  # "--duration", or None for a positional
    index: int  # which positional (or -1)
    positionals: tuple[argparse.Action, ...]

    def argv(self, value: str) -> list[str]:
        pos = [_valid(a) for a in self.positionals]
        if self.option is None:
            pos[self.index] = value
            return [*self.path, *pos]
        # "--opt=value" keeps a value that starts with "-" a value
        return [*self.path, *pos, f"{self.option}={value}"]

    def __repr__(self) -> str:
        return " ".join([*self.path, self.option or f"<positional {self.index}>"])


def _valid(a: argparse.Action) -> str:
    return str(a.choices[0]) if a.choices else "x"  # type: ignore[index]


def _walk(p: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[Slot]:
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    positionals = tuple(a for a in p._actions if not a.option_strings
                        and not isinstance(a, argparse._SubParsersAction))
    if path:
        for a in p._actions:
            if a.option_strings and a.nargs != 0 and a.dest not in ("help", "config"):
                yield Slot(path, max(a.option_strings, key=len), -1, positionals)
        for i, _ in enumerate(positionals):
            yield Slot(path, None, i, positionals)
    for s in subs:
        for name, sp in s.choices.items():
            yield from _walk(sp, (*path, name))


SLOTS = list(_walk(build_parser(), ()))


def test_the_walk_finds_the_options_the_issue_names() -> None:
    names = {repr(s) for s in SLOTS}
    for want in ("bench rados --size", "bench rados --duration", "bench swift --size-max",
                 "bench rbd --image-size", "bench rbd --rwmixread", "audit --run",
                 "audit --last", "fix --option", "bench rados --pool", "bench limits --size"):
        assert want in names, want
    assert len(SLOTS) > 60


@pytest.fixture(autouse=True)
def _in_a_scratch_dir(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that write where they are told (``snapshot save DIR``) write here, not in
    the checkout, whatever hostile DIR they are given."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> str:
    return unreachable_config(tmp_path_factory.mktemp("cli"))


def _run(cfg: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    full = ["--config", cfg, *argv]
    if argv[0] in PARSE_ONLY:
        try:
            args = build_parser().parse_args(full)
        except SystemExit as e:
            return int(e.code or 0), capsys.readouterr().err
        from core.argtypes import check_strings

        bad = check_strings(args)
        return (64 if bad else 0), (f"error: {bad}\n" if bad else "")
    try:
        rc = main(full)
    except SystemExit as e:
        rc = int(e.code or 0)
    return rc, capsys.readouterr().err


def _assert_clean(slot: Slot, value: str, rc: int, err: str) -> None:
    assert "Traceback" not in err, (slot, value, err)
    if rc in (64, 4):  # bad input, or refused by the runbook/benchmark: one line
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), (slot, value, err)
    else:
        assert rc in (0, 1, 2, 3), (slot, value, rc, err)


@settings(max_examples=examples(600), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(slot=st.sampled_from(SLOTS),
       value=st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12),
                       st.floats().map(repr), st.integers().map(str)))
def test_every_option_hostile_values(cfg: str, capsys: pytest.CaptureFixture[str],
                                     slot: Slot, value: str) -> None:
    rc, err = _run(cfg, slot.argv(value), capsys)
    _assert_clean(slot, value, rc, err)


@pytest.mark.parametrize("argv", [
    ["bench", "rados", "-b", "inf"], ["bench", "rados", "-b", "1e400"],
    ["bench", "swift", "-l", "inf"], ["bench", "rbd", "--image-size", "1e400"],
    ["bench", "swift", "--size", "nan"], ["bench", "limits", "--size", "inf"],
    ["bench", "rados", "--duration", "nan"], ["bench", "rados", "--duration", "inf"],
    ["audit", "--run", "99999999999999999999"], ["audit", "--last", "99999999999999999999"],
    ["bench", "rbd", "--rwmixread", "500"], ["bench", "rados", "--pool", "/etc"],
    ["bench", "rados", "-b", "\u0662"], ["fix", "osd-start", "osd.2", "-o", "nosuch=1"],
    ["plan", "cache-tier-tune", "p", "-o", "nosuch=1"],
])
def test_the_issues_inputs_are_refused(cfg: str, capsys: pytest.CaptureFixture[str],
                                       argv: list[str]) -> None:
    rc, err = _run(cfg, argv, capsys)
    assert rc == 64, (argv, err)
    _assert_clean(Slot(tuple(argv[:1]), None, -1, ()), " ".join(argv), rc, err)


def test_unknown_runbook_option_is_refused_by_the_runbook() -> None:
    from runbooks.api import plan_from_snapshot
    from runbooks.model import Refused
    from tests.unit.test_runbook_plan import ctx_for, osd1_unmounted

    ctx = ctx_for(Path("/nonexistent-journal-dir-not-used"))
    with pytest.raises(Refused, match="unknown option.*'nosuch'"):
        plan_from_snapshot(ctx, osd1_unmounted(ctx), "osd-remount", "osd.1", {"nosuch": "1"})


# ------------------------------------------------------------------ settings values

BASE: dict[str, Any] = {"journal": "/tmp/stordoc-hostile-never-written.db",
                        "clusters": {"a": {"ceph": {"conf": "/nonexistent"},
                                           "hosts": [{"name": "n", "address": "127.0.0.1"}]}}}

# every settable scalar of the model, as a path into the TOML document
SETTING_PATHS: list[tuple[str, ...]] = [
    ("journal",), ("runbooks", "step_timeout_s"), ("runbooks", "verify_timeout_s"),
    ("bench", "max_duration_s"), ("bench", "max_bytes"), ("bench", "pool"),
    ("bench", "container"), ("bench", "k_noise"), ("bench", "min_change"),
    ("tui", "refresh_s"), ("slack", "api_base_url"), ("slack", "button_ttl_s"),
    ("thresholds", "clock_skew_max_s"), ("thresholds", "pg_per_osd_target"),
    ("clusters", "a", "ceph", "timeout"), ("clusters", "a", "hosts", 0, "timeout"),
    ("clusters", "a", "hosts", 0, "port"), ("clusters", "a", "hosts", 0, "osd_data_dir"),
    ("clusters", "a", "hosts", 0, "osd_pid_file"), ("clusters", "a", "hosts", 0, "osd_start", 0),
]


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    cur: Any = d
    for i, k in enumerate(path[:-1]):
        if isinstance(k, int):
            cur = cur[k]
        else:
            cur = cur.setdefault(k, ["ceph-osd", "-i", "{id}"]
                                 if isinstance(path[i + 1], int) else {})
    cur[path[-1]] = value
    return d


HOSTILE_VALUES = st.one_of(
    st.sampled_from([math.inf, -math.inf, math.nan, 1e308, 1e400, 10**20, -1, 0, "",
                     "\x00", "{nope}", "{0}", "{id:q}", "{id.nope}", "{id[0]}", "{}", "{id!r}",
                     "/proc/self/x", "/tmp", "file:///etc/passwd", "ftp://x", "/etc",
                     "x" * 5000, "\u0662", "inf"]),
    st.floats(), st.integers(), st.text(max_size=12))


@settings(max_examples=400, deadline=None)
@given(path=st.sampled_from(SETTING_PATHS), value=HOSTILE_VALUES)
def test_settings_values_are_refused_with_one_message_or_sane(path: tuple[Any, ...],
                                                               value: Any) -> None:
    doc = _set(BASE, path, value)
    try:
        s = parse_settings(doc, "hostile.toml")
    except SettingsError as e:
        assert str(e).startswith("hostile.toml: ")
        return
    # accepted: then it is in range
    rs = s.runbooks
    for t in (rs.step_timeout_s, rs.verify_timeout_s, s.bench.max_duration_s,
              s.clusters["a"].hosts[0].timeout):
        assert 0 < t <= 86400
    assert s.slack.api_base_url is None or s.slack.api_base_url.startswith("http")
    assert not Path(s.journal).resolve().is_dir()
    assert not str(Path(s.journal).resolve()).startswith(("/proc", "/sys", "/dev"))
    for part in s.clusters["a"].hosts[0].osd_start:
        part.format(id=1, conf="c", cluster="ceph")  # never KeyError/IndexError/AttributeError


@pytest.mark.parametrize(("path", "value", "msg"), [
    (("clusters", "a", "hosts", 0, "osd_start", 0), "{nope}", "{nope} is not allowed"),
    (("clusters", "a", "hosts", 0, "osd_start", 0), "{0}", "{0} is not allowed"),
    (("clusters", "a", "hosts", 0, "osd_start", 0), "{id:q}", "{id:q} is not allowed"),
    (("clusters", "a", "hosts", 0, "osd_start", 0), "{id.nope}", "{id.nope} is not allowed"),
    (("journal",), "/tmp", "is a directory"),
    (("journal",), "/proc/self/journal.db", "under /proc"),
    (("slack", "api_base_url"), "file:///etc/passwd", "not an http(s) URL"),
    (("runbooks", "step_timeout_s"), 1e308, "less than or equal to 86400"),
    (("bench", "pool"), "/etc", "not a plain name"),
])
def test_the_issues_settings_are_refused(path: tuple[Any, ...], value: Any, msg: str) -> None:
    with pytest.raises(SettingsError, match=msg.replace("{", r"\{").replace("}", r"\}")
                       .replace("(", r"\(").replace(")", r"\)")):
        parse_settings(_set(BASE, path, value), "x.toml")


def test_durations_parse_and_refuse() -> None:
    from core.argtypes import parse_duration

    assert parse_duration("90", 1, 86400) == 90
    assert parse_duration("5m", 1, 86400) == 300
    assert parse_duration(" 4H ", 1, 86400) == 4 * 3600
    assert parse_duration("1d", 1, 86400) == 86400
    for bad in ("inf", "nan", "1e3", "-5m", "5 m", "٥m", "5mm", "", "99999999999h", "2d"):
        with pytest.raises(ValueError):
            parse_duration(bad, 1, 86400)
