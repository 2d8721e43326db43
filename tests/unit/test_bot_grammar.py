"""The bot's grammar: typed commands from chat text, helpful refusals for everything else."""

from __future__ import annotations

import pytest

from bot import grammar as g


@pytest.mark.parametrize("text,expected", [
    ("health", g.Health(None)),
    ("health lab", g.Health("lab")),
    ("osd", g.Osd(None, None)),
    ("osd tree --cluster lab", g.Osd("lab", None)),
    ("osd osd.2", g.Osd(None, 2)),
    ("osd 2 -c prod", g.Osd("prod", 2)),
    ("pools", g.Pools()),
    ("cache", g.Cache()),
    ("ring", g.Ring(None, None)),
    ("ring object", g.Ring(None, "object")),
    ("findings", g.Findings()),
    ("history --cluster=lab", g.History("lab")),
    ("plan osd-remount osd.1", g.Plan("osd-remount", "osd.1")),
    ("plan osd-start 1", g.Plan("osd-start", "osd.1")),
    ("fix swift-device-remount d2@node2", g.Fix("swift-device-remount", "d2@node2")),
    ("fix swift-server-start object@node1", g.Fix("swift-server-start", "object@node1")),
    ("fix swift-ring-rebalance object", g.Fix("swift-ring-rebalance", "object")),
    ("fix OSD_DATA_UNMOUNTED", g.FixFinding("OSD_DATA_UNMOUNTED")),
    ("fix OSD_DATA_UNMOUNTED osd.1", g.FixFinding("OSD_DATA_UNMOUNTED", "osd.1")),
    ("bench rados seconds=10 threads=4", g.Bench("rados", {"seconds": "10", "threads": "4"})),
    ("audit", g.Audit()),
    ("help", g.Help()),
    ("help fix", g.Help("fix")),
    ("", g.Help()),
    ("HEALTH lab", g.Health("lab")),
])
def test_parses(text: str, expected: g.Command) -> None:
    assert g.parse(text) == expected


@pytest.mark.parametrize("text,needle", [
    ("helth", "did you mean `health`"),
    ("osds", "did you mean `osd`"),
    ("frobnicate", "unknown command `frobnicate`"),
    ("osd osd.1; rm -rf /", "unexpected character `;`"),
    ("health $(reboot)", "unexpected character `$`"),
    ("health `id`", "unexpected backtick in `ˋidˋ`"),
    ("health lab | sh", "unexpected character `|`"),
    ("osd osd.x", "is not an OSD"),
    ("plan osd-remout osd.1", "did you mean `osd-remount`"),
    ("plan osd-remount", "needs a target"),
    ("plan osd-remount pool1", "is not an OSD"),
    ("fix swift-device-remount d2", "DEVICE@HOST"),
    ("fix swift-server-start d2@node1", "SERVER@HOST"),
    ("fix swift-ring-rebalance objct", "did you mean `object`"),
    ("ring blob", "unknown ring"),
    ("pools extra", "unexpected `extra` after `pools`"),
    ("health a b", "unexpected `b`"),
    ("health lab --cluster prod", "two clusters"),
    ("bench", "needs a kind"),
    ("bench rados seconds", "key=value"),
    ("health l\u00e4b", "unexpected character `\u00e4`"),
    ("health \U0001F525", "unexpected character"),
    ("x" * 10_000, "command too long (10000 characters"),
    ("help nothing", "no help on"),
    ("osd --cluster", "needs a cluster name"),
])
def test_refuses_with_help(text: str, needle: str) -> None:
    with pytest.raises(g.GrammarError) as e:
        g.parse(text)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_runbook_names_come_from_the_runbook_layer() -> None:
    assert g.parse("plan only-this x", runbooks=["only-this"]) == g.Plan("only-this", "x")
    with pytest.raises(g.GrammarError, match="unknown runbook"):
        g.parse("plan osd-start osd.1", runbooks=["only-this"])


def test_unknown_osd_names_what_exists() -> None:
    with pytest.raises(g.GrammarError) as e:
        g.check_osd(17, [0, 1, 2])
    assert str(e.value) == "unknown OSD `osd.17`: this cluster has osd.0-osd.2"
    assert g.osd_ranges([0, 1, 2, 5, 7, 8]) == "osd.0-osd.2, osd.5, osd.7-osd.8"
    g.check_osd(1, [0, 1, 2])


def test_unknown_pool_suggests() -> None:
    with pytest.raises(g.GrammarError, match="did you mean `rbd`"):
        g.check_name("pool", "rdb", ["rbd", "cache", "data"])


def test_cluster_resolution_refuses_ambiguity() -> None:
    assert g.resolve_cluster(None, ["lab"], None) == "lab"
    assert g.resolve_cluster(None, ["a", "b"], "b") == "b"
    assert g.resolve_cluster("a", ["a", "b"], "b") == "a"
    with pytest.raises(g.GrammarError, match="none is the default"):
        g.resolve_cluster(None, ["a", "b"], None)
    with pytest.raises(g.GrammarError, match="did you mean `prod`"):
        g.resolve_cluster("prdo", ["prod", "lab"], None)


def test_a_runbook_mode_is_a_word_after_the_target() -> None:
    """``fix pg-mark-unfound-lost 3.0 revert``: the CLI's --mode in Slack (the runbook
    judges the value); key=value for the runbook's own keys; nothing for a runbook that
    reads no options, and no key it does not read."""
    assert g.parse("fix pg-mark-unfound-lost 3.0 revert") == g.Fix(
        "pg-mark-unfound-lost", "3.0", None, (("mode", "revert"),))
    assert g.parse("plan pg-mark-unfound-lost 3.1F mode=delete --cluster lab") == g.Plan(
        "pg-mark-unfound-lost", "3.1f", "lab", (("mode", "delete"),))
    assert g.parse("fix pg-mark-unfound-lost 3.0") == g.Fix("pg-mark-unfound-lost", "3.0")
    for text, why in (("fix osd-start osd.1 revert", "takes no options"),
                      ("fix pg-mark-unfound-lost 3.0 foo=bar", "takes mode="),
                      ("fix pg-mark-unfound-lost 3.0 revert delete", "given twice"),
                      ("fix pg-mark-unfound-lost 3.0 mode=$(x)", "")):
        with pytest.raises(g.GrammarError, match=why):
            g.parse(text)
