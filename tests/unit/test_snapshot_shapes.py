"""Snapshot values and shapes (issue #37.6): a value out of its documented range (a time
of 1e20 or -1e18, a 400-digit number, 1e400) or a Ceph answer of the wrong JSON shape
(``osd dump`` as ``[]``, ``null``, ``"x"``) is refused with one line naming the file and
what is wrong (exit 64), in the CLI (``stordoc.cli.main``) and in Slack (the real bot over
HTTP: the same line, no exception class, no server path). Property tests throw odd
values and shapes at every file of a snapshot: a valid check or that one line, never a
traceback."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.settings import parse_settings
from storage.snapshot.shapes import CEPH_SHAPES
from tests.support.cli import run_main
from tests.support.examples import examples
from tests.support.fake_slack import BotHarness, all_text
from tests.support.fixture_snapshots import FIXTURES

CASE = FIXTURES / "pacific" / "osd-unmounted-in"  # Ceph, Swift and four hosts
VIEWER = "UVIEWSHAPE"
# what never reaches a person: an exception's class, a traceback
LEAK = re.compile(r"Traceback|\b[A-Z][a-zA-Z]+(Error|Exception)\b")


def edit(d: Path, rel: str, fn: Any) -> None:
    p = d / rel
    p.write_text(json.dumps(fn(json.loads(p.read_text()))))


def set_key(key: str, value: Any) -> Any:
    return lambda doc: {**doc, key: value}


def raw_taken_at(d: Path, text: str) -> None:
    """``taken_at`` as literal JSON text (1e400 and 400 digits have no Python float)."""
    p = d / "snapshot.json"
    doc = json.loads(p.read_text())
    p.write_text(p.read_text().replace(json.dumps(doc["taken_at"]), text, 1))


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    d = tmp_path / "snap"
    shutil.copytree(CASE, d)
    return d


def refused(d: Path, *why: str) -> str:
    rc, out, err = run_main("check", "--from", str(d))
    assert rc == 64, (rc, out, err)
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert not LEAK.search(err), err
    for w in why:
        assert w in err, err
    return err


BAD = [
    ("snapshot.json", set_key("taken_at", 1e20), "taken_at is out of range"),
    ("snapshot.json", set_key("taken_at", -1e18), "taken_at is out of range"),
    ("snapshot.json", set_key("taken_at", -1), "taken_at is out of range"),
    ("snapshot.json", set_key("duration_s", -5), "duration_s is out of range"),
    ("ceph/osd_dump.json", lambda d: [], "the answer to 'osd dump' is a list, not an object"),
    ("ceph/osd_dump.json", lambda d: None, "the answer to 'osd dump' is null"),
    ("ceph/osd_dump.json", lambda d: "x", "the answer to 'osd dump' is text"),
    ("ceph/osd_dump.json", set_key("osds", {}), "'osds' is not a list"),
    ("ceph/osd_dump.json", lambda d: {**d, "osds": [{**d["osds"][0], "up": "yes"}]},
     "'up' is not 0 or 1"),
    ("ceph/osd_dump.json", set_key("osds", []), "'osd dump' has no such OSD"),
    ("ceph/osd_tree.json", lambda d: [1], "the answer to 'osd tree' is a list"),
    ("ceph/health_detail.json", lambda d: [], "the answer to 'health detail' is a list"),
    ("ceph/pg_stat.json", lambda d: 7, "the answer to 'pg stat' is a number"),
    ("hosts/0.json", set_key("collected_at", 1e20), "collected_at is out of range"),
    ("hosts/1.json", set_key("window_s", -1), "window_s is out of range"),
    ("swift.json", set_key("collected_at", -1e18), "collected_at is out of range"),
]


@pytest.mark.parametrize("rel,fn,why", BAD, ids=[f"{r}:{w[:30]}" for r, _, w in BAD])
def test_a_bad_value_or_shape_is_one_line_naming_the_file(snap: Path, rel: str, fn: Any,
                                                          why: str) -> None:
    edit(snap, rel, fn)
    refused(snap, rel, why)


@pytest.mark.parametrize("text,why", [("1e400", "1e400 is too large a number"),
                                      ("1" + "0" * 400, "taken_at is out of range")])
def test_numbers_no_float_holds(snap: Path, text: str, why: str) -> None:
    raw_taken_at(snap, text)
    refused(snap, "snapshot.json", why)


# ------------------------------------------------------------------ Slack
@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BotHarness, Path]]:
    tmp = tmp_path_factory.mktemp("shapes-bot")
    conf = tmp / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    s = parse_settings({"journal": str(tmp / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    snaps = tmp / "snapshots"
    snaps.mkdir()
    h = BotHarness(s, {"lab": {"viewers": [VIEWER]}}, str(tmp / "bot.db"),
                   throttle_s=0.05, snapshots_dir=str(snaps))
    yield h, snaps
    h.close()


def slack_answer(h: BotHarness, text: str) -> str:
    n = len(h.posts()) + len(h.ephemerals())
    h.slack.slash(text, VIEWER)
    got = h.fake.wait_for(lambda f: (f.of("chat.postMessage") + f.of("chat.postEphemeral")
                                     )[n:], 30)
    return all_text(got[0])


@pytest.mark.parametrize("name,rel,fn,why", [
    ("far-future", "snapshot.json", set_key("taken_at", 1e20), "taken_at is out of range"),
    ("before-1970", "snapshot.json", set_key("taken_at", -1e18), "taken_at is out of range"),
    ("dump-list", "ceph/osd_dump.json", lambda d: [], "'osd dump' is a list, not an object"),
])
def test_slack_says_the_one_line(bot: tuple[BotHarness, Path], name: str, rel: str, fn: Any,
                                 why: str) -> None:
    h, snaps = bot
    shutil.copytree(CASE, snaps / name)
    edit(snaps / name, rel, fn)
    text = slack_answer(h, f"health lab from {name}")
    assert why in text and rel in text, text
    assert not LEAK.search(text) and str(snaps) not in text, text
    assert len(set(text.strip().splitlines())) == 1, text  # (its notification text too)


# ------------------------------------------------------------------ properties
odd_numbers = (st.integers() | st.integers(min_value=10**18, max_value=10**400)
               | st.integers(max_value=-10**18, min_value=-10**400)
               | st.floats(allow_nan=False, allow_infinity=False)
               | st.sampled_from([1e20, -1e18, 1e308, -1e308, 2**63, -2**63, 0, -1, 0.5]))
odd_values = st.recursive(
    st.none() | st.booleans() | odd_numbers | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids,
                                                              max_size=3),
    max_leaves=8)
FILES = ["snapshot.json", "cluster.json", "swift.json", "hosts/0.json", "hosts/2.json",
         *sorted(f"ceph/{p.name}" for p in (CASE / "ceph").iterdir())]


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in ``doc`` a value sits (bounded: the first few of each list/object)."""
    yield at
    if isinstance(doc, dict):
        for k in list(doc)[:12]:
            yield from _paths(doc[k], (*at, k))
    elif isinstance(doc, list):
        for i in range(min(len(doc), 3)):
            yield from _paths(doc[i], (*at, i))


def _put(doc: Any, at: tuple[Any, ...], value: Any) -> Any:
    if not at:
        return value
    doc[at[0]] = _put(doc[at[0]], at[1:], value)
    return doc


def _diagnosis_or_one_line(d: Path, slack: tuple[BotHarness, Path] | None = None) -> None:
    rc, out, err = run_main("check", "--from", str(d))
    assert not LEAK.search(out + err), (out, err)
    if rc == 64:
        assert out == "" and len(err.strip().splitlines()) == 1, err
    else:
        assert rc in (0, 1, 2, 3) and err == "", (rc, err)
        assert out.splitlines()[1].split(" ")[0] in ("OK", "WARN", "CRIT", "UNREACHABLE"), out
        rc, out, err = run_main("check", "--from", str(d), "--json")
        assert rc in (0, 1, 2, 3) and json.loads(out)["snapshot"], err
    if slack is not None:  # the bot's own handler, without the HTTP round trip
        h, snaps = slack
        reply = h.bot.commands._health_from("lab", d.name)
        text = str(reply.messages)
        assert not LEAK.search(text) and str(snaps) not in text, text


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data(), which=st.sampled_from(FILES), value=odd_values)
def test_an_odd_value_anywhere_is_a_diagnosis_or_one_line(
        bot: tuple[BotHarness, Path], data: st.DataObject, which: str, value: Any) -> None:
    h, snaps = bot
    d = snaps / "prop"
    if not d.exists():
        shutil.copytree(CASE, d)
    p = d / which
    keep = p.read_bytes()
    doc = json.loads(keep)
    at = data.draw(st.sampled_from(list(_paths(doc))), label="at")
    p.write_text(json.dumps(_put(doc, at, value)))
    try:
        _diagnosis_or_one_line(d, (h, snaps))
    finally:
        p.write_bytes(keep)


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from([f for f in FILES if f.startswith("ceph/")]), value=odd_values)
def test_a_ceph_answer_of_another_shape_is_refused(snap: Path, which: str,
                                                   value: Any) -> None:
    p = snap / which
    keep = p.read_bytes()
    p.write_text(json.dumps(value))
    manifest = json.loads((snap / "snapshot.json").read_text())
    key = manifest["ceph"]["answers"][which]
    want = CEPH_SHAPES[key]
    shape = ("an object" if isinstance(value, dict) else "a list" if isinstance(value, list)
             else "null" if value is None else "other")
    try:
        if shape not in want:
            refused(snap, which, f"the answer to '{key}'")
        else:
            _diagnosis_or_one_line(snap)
    finally:
        p.write_bytes(keep)
