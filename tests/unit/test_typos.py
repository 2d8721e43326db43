"""Typos on the command line (issue 27.8): a misspelt finding code or runbook is said to
be unknown, with the closest spelling (as Slack suggests), one line, exit 64, before
anything is read or changed; a known code with no finding is not worded as all clear."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from checks.catalog import finding_codes
from checks.spelling import closest
from core.exitstatus import ExitStatus
from core.service.fixes import UnknownFindingCode, catalogued_code
from core.service.records import UnknownCode, known_code
from runbooks.model import InvalidRequest
from runbooks.planning import list_runbooks, runbook_named
from tests.support.cli import run_main

CODES = finding_codes()
RUNBOOKS = tuple(i.name for i in list_runbooks())


def _cli(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    """The CLI in-process on a config whose cluster cannot be reached: a typo must be
    refused before anything would talk to it."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{tmp_path / "j.db"}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.ceph]\nconf = "/nonexistent/ceph.conf"\n')
    return run_main("--config", str(cfg), *argv)


@pytest.mark.parametrize("argv, line", [
    (("fix", "--finding", "OSD_DATA_UNMOUNT"),
     "error: unknown finding code OSD_DATA_UNMOUNT: did you mean OSD_DATA_UNMOUNTED?"),
    (("fix", "--finding", "osd_down_outt", "--yes"),
     "error: unknown finding code OSD_DOWN_OUTT: did you mean OSD_DOWN_OUT?"),
    (("fix", "osd-remout", "osd.1"),
     "error: unknown runbook osd-remout: did you mean osd-remount?"),
    (("plan", "osd-remout", "osd.1"),
     "error: unknown runbook osd-remout: did you mean osd-remount?"),
    (("mute", "OSD_DATA_UNMOUNT", "--for", "1h", "--reason", "disk swap"),
     "error: unknown finding code OSD_DATA_UNMOUNT: did you mean OSD_DATA_UNMOUNTED?"),
    (("unmute", "OSD_DOWN_OUTT"),
     "error: unknown finding code OSD_DOWN_OUTT: did you mean OSD_DOWN_OUT?"),
])
def test_a_typo_is_one_line_with_the_closest_spelling_and_exit_64(
        tmp_path: Path, argv: tuple[str, ...], line: str) -> None:
    rc, out, err = _cli(tmp_path, *argv)
    assert rc == ExitStatus.USAGE
    assert err.splitlines() == [line] and out == ""
    assert not (tmp_path / "j.db").exists()  # nothing was read, recorded or changed


def test_with_nothing_close_every_runbook_is_listed_and_codes_say_where_they_are(
        tmp_path: Path) -> None:
    rc, _, err = _cli(tmp_path, "fix", "zzz", "osd.1")
    assert rc == ExitStatus.USAGE and len(err.splitlines()) == 1
    assert err.startswith("error: unknown runbook zzz; the runbooks: ")
    assert all(name in err for name in RUNBOOKS)
    rc, _, err = _cli(tmp_path, "fix", "--finding", "QQQ_ZZZ")
    assert rc == ExitStatus.USAGE and len(err.splitlines()) == 1
    assert "unknown finding code QQQ_ZZZ: no check reports it" in err
    assert "CEPH_HEALTH --entity 'ceph CODE'" in err  # where Ceph's own codes are


def test_one_catalogue_for_fix_and_mute() -> None:
    assert "OSD_DATA_UNMOUNTED" in CODES and "CEPH_HEALTH" in CODES
    assert "CEPH_UNREACHABLE" in CODES  # the engine's own codes too
    for code in CODES:
        assert catalogued_code(f" {code.lower()} ") == code == known_code(code)
    with pytest.raises(UnknownCode) as ei:
        known_code("OSD_DATA_UNMOUNT")
    assert ei.value.known == CODES


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CODES), st.data())
def test_a_code_with_one_letter_dropped_is_unknown_and_its_code_suggested(
        code: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(code) - 1))
    typo = code[:i] + code[i + 1:]
    assume(typo.upper() not in CODES)
    with pytest.raises(UnknownFindingCode) as ei:
        catalogued_code(typo)
    assert ei.value.suggestion == code, (typo, ei.value.suggestion)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=string.ascii_letters + "_-0123456789\u017f\u041e ", max_size=30))
def test_no_text_but_a_catalogued_code_is_ever_taken(text: str) -> None:
    try:
        code = catalogued_code(text)
    except UnknownFindingCode as e:
        assert e.suggestion is None or e.suggestion in CODES
        assert str(e).startswith(f"unknown finding code {text.strip().upper()}"
                                 if text.strip().isascii() else "unknown finding code")
    else:
        assert code in CODES and text.isascii() and text.strip().upper() == code


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(RUNBOOKS), st.data())
def test_a_runbook_with_one_letter_dropped_is_suggested(name: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(name) - 1))
    typo = name[:i] + name[i + 1:]
    assume(typo not in RUNBOOKS)
    with pytest.raises(InvalidRequest, match=f"^unknown runbook {typo}: did you mean "
                       f"{name}\\?$"):
        runbook_named(typo)


def test_closest_keeps_the_choices_spelling_and_says_nothing_when_far() -> None:
    assert closest("osd_data_unmount", CODES) == "OSD_DATA_UNMOUNTED"
    assert closest(" OSD-REMOUT ", RUNBOOKS) == "osd-remount"
    assert closest("zzz", RUNBOOKS) is None and closest("x", ()) is None


def test_check_only_with_a_typo_suggests_the_code() -> None:
    from tests.support.cli import cli
    from tests.support.fixture_snapshots import FIXTURES  # the saved lab scenarios

    r = cli(None, "check", "--from", str(FIXTURES / "pacific" / "healthy"), "--only",
            "OSD_DATA_UNMOUNT", timeout=60, columns=None)
    assert r.returncode == 64, r
    assert "unknown finding code(s): OSD_DATA_UNMOUNT (did you mean OSD_DATA_UNMOUNTED?)" \
        in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
