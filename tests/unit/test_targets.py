"""One spelling per target: every spelling of an OSD gives one lock key or a refusal, in
the runbooks layer and in every front end that parses targets (bot grammar, CLI)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.grammar import Fix, GrammarError, parse
from runbooks.api import plan_from_snapshot
from runbooks.catalog import registry
from runbooks.model import Refused
from runbooks.targets import canonical_osd, canonical_target
from tests.unit.test_runbook_plan import ctx_for, osd1_unmounted

# every Unicode decimal digit that is not ASCII (Arabic-Indic, Devanagari, fullwidth, ...)
UNICODE_DIGITS = [chr(c) for c in range(0x80, 0x110000)
                  if unicodedata.category(chr(c)) == "Nd"]


BY_VALUE = {v: [d for d in UNICODE_DIGITS if unicodedata.digit(d) == v] for v in range(10)}


def _spelling(n: int) -> st.SearchStrategy[str]:
    """Ways a person (or an attacker) can write osd.n: zeros, case, padding, and each
    digit possibly replaced by a Unicode digit of the same value."""
    def digit(ch: str) -> st.SearchStrategy[str]:
        return st.one_of(st.just(ch), st.sampled_from(BY_VALUE[int(ch)]))

    number = st.builds(lambda z, ds: z + "".join(ds),
                       st.sampled_from(["", "0", "00", "\u0660"]),
                       st.tuples(*[digit(ch) for ch in str(n)]))
    prefix = st.sampled_from(["osd.", "OSD.", "Osd.", "osd. ", "", "osd", "osd.+", "osd.-"])
    pad = st.sampled_from(["", " ", "\t", "\n", "\u00a0", "\u200b"])
    return st.builds(lambda a, p, d, b: a + p + d + b, pad, prefix, number, pad)


@settings(max_examples=400, deadline=None)
@given(n=st.integers(min_value=0, max_value=40), data=st.data())
def test_all_spellings_of_one_osd_map_to_one_key_or_are_refused(n: int, data: st.DataObject) -> None:
    spellings = data.draw(st.lists(_spelling(n), min_size=1, max_size=6))
    keys = set()
    for s in spellings:
        try:
            keys.add(canonical_osd(s))
        except Refused:
            continue
    # whatever was accepted is one lock key: osd.n in ASCII
    assert keys <= {f"osd.{n}"}


@pytest.mark.parametrize("digit", ["\u0662", "\u06f2", "\u0968", "\uff12", "\U0001d7d0"])
def test_unicode_digits_are_refused_everywhere(digit: str) -> None:
    assert int(digit) == 2  # what Python's int() would have accepted
    with pytest.raises(Refused, match="ASCII"):
        canonical_osd(f"osd.{digit}")
    with pytest.raises(GrammarError):
        parse(f"fix osd-start osd.{digit}")
    with pytest.raises(GrammarError):
        parse(f"osd osd.{digit}")


def test_leading_zeros_and_case_are_one_osd() -> None:
    assert {canonical_osd(s) for s in ("osd.2", "osd.02", "osd.0002", "OSD.2", " osd.2 ")} \
        == {"osd.2"}
    for bad in ("2", "osd.", "osd.2.0", "osd.1234567", "osd.2\x00", "osd.0x2", "osd.2e0"):
        with pytest.raises(Refused):
            canonical_osd(bad)


def test_bot_grammar_gives_the_runbooks_spelling() -> None:
    for text in ("fix osd-start osd.02", "fix osd-start 2", "fix osd-start osd.2"):
        cmd = parse(text)
        assert isinstance(cmd, Fix) and cmd.target == "osd.2"


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zeros=st.integers(0, 4), upper=st.booleans())
def test_plan_lock_key_is_canonical(tmp_path_factory: pytest.TempPathFactory, zeros: int,
                                    upper: bool) -> None:
    """The plan's target and locks (what the audit records and the lock table holds) are
    the canonical spelling, whatever the user typed."""
    ctx = ctx_for(tmp_path_factory.mktemp("t"))
    snap = osd1_unmounted(ctx)
    typed = ("OSD." if upper else "osd.") + "0" * zeros + "1"
    p = plan_from_snapshot(ctx, snap, "osd-remount", typed)
    assert p.target == "osd.1"
    assert [k for k in p.locks if k.startswith(("osd", "OSD"))] == ["osd.1"]


def test_every_runbook_kind_has_a_canonical_form() -> None:
    for rb in registry().values():
        with pytest.raises(Refused):
            canonical_target(rb.info.target_kind, "x\u0662\u200b")
