"""Every runbook's plan (as the runbook words it and as `stordoc plan` prints it) on every replayed scenario (both releases), and every Slack view of
those scenarios, reads as words: no Python repr (``['account', ...]``, ``{'host': ...}``,
``None``) and no ``[ceph]`` tag on a step of a Swift runbook."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from bot import render as r
from checks.swift_names import host_names
from runbooks.api import Refused, RunContext, plan_from_snapshot
from runbooks.catalog import registry
from storage.journal import Journal
from tests.unit.test_replay import PAIRS, replay

REPR = re.compile(r"\['|\{'|\bNone\b")
# a target of each kind to try on every scenario, besides the targets its findings name
EXAMPLES = {"osd": ("osd.1", "osd.2", "osd.3"), "pool": ("rbd", "lab-fewpg"),
            "cache-pool": ("lab-cache",), "swift-device": ("d2@node2",),
            "swift-server": ("object@node1", "container@node1"),
            "swift-ring": ("object",), "swift-dispersion": ("dispersion",)}


def plans(release: str, name: str) -> Iterator[tuple[str, str, list[str]]]:
    """(runbook, target, plan lines) of every runbook that plans on this scenario."""
    rp = replay(release, name)
    out = rp.outcome
    named: dict[str, set[str]] = {}
    for f in out.report.findings:
        if f.runbook and f.target:
            named.setdefault(f.runbook, set()).add(f.target)
    for rb_name, rb in sorted(registry().items()):
        if rb_name.startswith("bench"):
            continue
        targets = named.get(rb_name, set()) | set(EXAMPLES.get(rb.info.target_kind, ()))
        for target in sorted(targets):
            ctx = RunContext("lab", rp.target, Journal(":memory:"), rp.thresholds, user="t")
            try:
                p = plan_from_snapshot(ctx, out.snapshot, rb_name, target)
            except Refused:  # refused on this scenario (said why elsewhere): no plan
                continue
            yield rb_name, target, p.lines() + cli_lines(p)


def cli_lines(plan: Any) -> list[str]:
    """The plan as `stordoc plan` prints it."""
    import io

    from rich.console import Console

    from stordoc.commands.runbooks import render_plan

    con = Console(file=io.StringIO(), width=200, highlight=False)
    render_plan(con, plan)
    return con.file.getvalue().splitlines()  # type: ignore[attr-defined]


def texts(blocks: Iterable[Any]) -> Iterator[str]:
    for b in blocks:
        if isinstance(b, dict):
            for k, v in b.items():
                if k == "text" and isinstance(v, str):
                    yield v
                else:
                    yield from texts([v])
        elif isinstance(b, list):
            yield from texts(b)


@pytest.mark.parametrize("release,name", PAIRS)
def test_every_plan_reads_as_words(release: str, name: str) -> None:
    seen = 0
    for rb, target, lines in plans(release, name):
        seen += 1
        for line in lines:
            assert not REPR.search(line), f"{rb} {target}: {line}"
            if rb.startswith("swift-"):
                assert "[ceph]" not in line, f"{rb} {target}: {line}"
    if name == "swift-device-unmounted":
        assert seen, "the device remount plans on its own fault"


def slack_views(release: str, name: str) -> Iterator[tuple[str, r.Reply]]:
    out = replay(release, name).outcome
    snap = out.snapshot
    ceph = snap.ceph
    yield "health", r.health_reply("lab", out.report.verdict, out.incidents,
                                   out.report.findings, lambda i: "tok",
                                   ceph.health_status if ceph else None)
    yield "findings", r.findings_reply("lab", out.report.findings, lambda f: "tok")
    if ceph is not None:
        yield "osd tree", r.osd_tree_reply("lab", ceph)
        yield "pools", r.pools_reply("lab", ceph)
        yield "cache", r.cache_reply("lab", ceph)
    if snap.swift is not None:
        for kind in (None, "object", "container", "account"):
            yield f"ring {kind}", r.ring_reply("lab", snap.swift, kind, host_names(snap))


@pytest.mark.parametrize("release,name", PAIRS)
def test_every_slack_view_reads_as_words(release: str, name: str) -> None:
    for view, reply in slack_views(release, name):
        for m in reply.messages:
            r.validate_message(m)
            for t in [m.text, *texts(m.blocks)]:
                assert not REPR.search(t), f"{view}: {t}"
    for rb, target, lines in plans(release, name):  # the plan as Slack shows it
        reply = r.plan_reply("lab", rb, target, lines, "c", "x", "U1", 900, False)
        for m in reply.messages:
            body = "\n".join(texts(m.blocks))
            assert not REPR.search(body), f"{rb}: {body}"
            assert not (rb.startswith("swift-") and "[ceph]" in body), f"{rb}: {body}"
