"""Block Kit rendering: data in, Slack messages out, every one checked against Slack's limits.

Handlers return data (findings, snapshots, plans); this module is the only place that knows
what Slack can display. Long answers are split into several messages (50 blocks, 3000
characters per section) and, past a few messages, uploaded as a text file instead, so a
message Slack would reject is never sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checks.incidents import Incident, headline
from checks.model import Finding, Severity, Verdict
from storage.model import CephState, SwiftState
from stordoc.fmt import human_age

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_BUTTON_TEXT = 75
MAX_ACTION_VALUE = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_TEXT = 3000  # fallback text we send (Slack truncates past 40k; keep notifications short)
MAX_MESSAGES = 4  # more than this becomes a file upload

Block = dict[str, Any]
TokenFn = Callable[[Finding], str | None]

SEV_ICON = {Severity.CRIT: ":red_circle:", Severity.WARN: ":large_orange_circle:",
            Severity.INFO: ":large_blue_circle:"}
SEV_TITLE = {Severity.CRIT: "Critical", Severity.WARN: "Warning", Severity.INFO: "Info"}


class LimitError(ValueError):
    """A message that Slack would reject; raised before anything is sent."""


@dataclass
class Message:
    text: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Upload:
    filename: str
    content: str
    title: str
    comment: str


@dataclass
class Reply:
    """What a command answers: messages in order, or a file when too long for messages."""

    messages: list[Message]
    upload: Upload | None = None
    ephemeral: bool = False


# --------------------------------------------------------------------------- primitives


def esc(s: str) -> str:
    """Escape the three characters Slack mrkdwn treats as control characters."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER),
                                       "emoji": True}}


def section(text: str, accessory: Block | None = None) -> Block:
    b: Block = {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, MAX_SECTION)}}
    if accessory:
        b["accessory"] = accessory
    return b


def context(*texts: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(t, MAX_SECTION)}
                                            for t in texts[:MAX_CONTEXT_ELEMENTS]]}


def divider() -> Block:
    return {"type": "divider"}


def button(text: str, action_id: str, value: str, style: str | None = None,
           confirm: Block | None = None) -> Block:
    b: Block = {"type": "button", "action_id": action_id, "value": value,
                "text": {"type": "plain_text", "text": clip(text, MAX_BUTTON_TEXT)}}
    if style:
        b["style"] = style
    if confirm:
        b["confirm"] = confirm
    return b


def sections_of(text: str, limit: int = MAX_SECTION - 20) -> list[Block]:
    """Split long mrkdwn on line boundaries into sections within the character limit."""
    out: list[Block] = []
    cur = ""
    for line in text.splitlines():
        while len(line) > limit:  # one enormous line: hard-split it
            if cur:
                out.append(section(cur))
                cur = ""
            out.append(section(line[:limit]))
            line = line[limit:]
        if len(cur) + len(line) + 1 > limit:
            out.append(section(cur))
            cur = ""
        cur = f"{cur}\n{line}" if cur else line
    if cur:
        out.append(section(cur))
    return out


# --------------------------------------------------------------------------- limits


def validate_blocks(blocks: Sequence[Block]) -> None:
    """Raise ``LimitError`` for anything Slack would refuse (the limits we rely on)."""
    if len(blocks) > MAX_BLOCKS:
        raise LimitError(f"{len(blocks)} blocks (limit {MAX_BLOCKS})")
    for i, b in enumerate(blocks):
        t = b.get("type")
        if t == "header":
            if len(b["text"]["text"]) > MAX_HEADER:
                raise LimitError(f"block {i}: header over {MAX_HEADER} characters")
        elif t == "section":
            txt = b.get("text", {}).get("text", "")
            if not txt or len(txt) > MAX_SECTION:
                raise LimitError(f"block {i}: section text of {len(txt)} characters "
                                 f"(1..{MAX_SECTION})")
            for f in b.get("fields", []):
                if len(f["text"]) > 2000:
                    raise LimitError(f"block {i}: field over 2000 characters")
            if "accessory" in b:
                _validate_element(i, b["accessory"])
        elif t == "context":
            els = b.get("elements", [])
            if not els or len(els) > MAX_CONTEXT_ELEMENTS:
                raise LimitError(f"block {i}: context with {len(els)} elements")
        elif t == "actions":
            els = b.get("elements", [])
            if not els or len(els) > 25:
                raise LimitError(f"block {i}: actions with {len(els)} elements")
            for e in els:
                _validate_element(i, e)
        if len(b.get("block_id", "")) > 255:
            raise LimitError(f"block {i}: block_id over 255 characters")


def _validate_element(i: int, e: Block) -> None:
    if e.get("type") == "button":
        if len(e["text"]["text"]) > MAX_BUTTON_TEXT:
            raise LimitError(f"block {i}: button text over {MAX_BUTTON_TEXT} characters")
        if len(e.get("value", "")) > MAX_ACTION_VALUE:
            raise LimitError(f"block {i}: button value over {MAX_ACTION_VALUE} characters")
        if len(e.get("action_id", "")) > 255:
            raise LimitError(f"block {i}: action_id over 255 characters")


def validate_message(m: Message) -> None:
    if not m.text or len(m.text) > MAX_TEXT:
        raise LimitError(f"message text of {len(m.text)} characters (1..{MAX_TEXT})")
    validate_blocks(m.blocks)


def paginate(title: str, blocks: list[Block], text: str,
             plain: Callable[[], str] | None = None, filename: str = "stordoc.txt") -> Reply:
    """Split blocks into messages of at most 50; too many messages -> one file upload."""
    pages = [blocks[i:i + MAX_BLOCKS] for i in range(0, len(blocks), MAX_BLOCKS)] or [[]]
    if len(pages) > MAX_MESSAGES:
        content = plain() if plain else blocks_to_text(blocks)
        return Reply([Message(clip(text, MAX_TEXT), [
            header(title),
            section(esc(clip(text, 2000)) + "\n_Too long for messages: attached as a file._")])],
            Upload(filename, content, title, clip(text, 1000)))
    msgs = []
    for n, page in enumerate(pages):
        t = text if len(pages) == 1 else f"{text} ({n + 1}/{len(pages)})"
        msgs.append(Message(clip(t, MAX_TEXT), page))
    for m in msgs:
        validate_message(m)
    return Reply(msgs)


def blocks_to_text(blocks: Iterable[Block]) -> str:
    lines: list[str] = []
    for b in blocks:
        if b.get("type") in ("header", "section"):
            lines.append(b["text"]["text"])
        elif b.get("type") == "context":
            lines.extend(e.get("text", "") for e in b["elements"])
    return "\n".join(lines) + "\n"


def text_reply(text: str, ephemeral: bool = False) -> Reply:
    r = paginate("stordoc", sections_of(text), text.splitlines()[0] if text else "stordoc")
    r.ephemeral = ephemeral
    return r


def error_reply(text: str) -> Reply:
    return text_reply(f":warning: {text}", ephemeral=True)


# --------------------------------------------------------------------------- findings


def _evidence(ev: Mapping[str, Any]) -> str:
    parts = []
    for k, v in ev.items():
        if k == "traceback" or isinstance(v, (dict, list, tuple)):
            continue
        parts.append(f"{k}: `{esc(clip(str(v), 120))}`")
    return clip(" · ".join(parts), 1500)


def finding_blocks(f: Finding, token: str | None) -> list[Block]:
    txt = f"{SEV_ICON[f.severity]} *{esc(f.entity)}*  `{f.code}`\n{esc(f.message)}"
    if f.runbook and token:
        txt += f"\n_fix:_ `{f.runbook} {esc(f.target or '')}`"
    acc = button("Fix", "fix", token, style="primary") if (token and f.runbook) else None
    blocks = [section(txt, acc)]
    ev = _evidence(f.evidence)
    if ev:
        blocks.append(context(ev))
    return blocks


def findings_reply(cluster: str, findings: Sequence[Finding], token_for: TokenFn,
                   title: str | None = None, note: str | None = None) -> Reply:
    """Findings grouped by severity, worst first, each with its Fix button."""
    counts = {s: sum(1 for f in findings if f.severity == s) for s in Severity}
    summary = ", ".join(f"{counts[s]} {s.label}" for s in reversed(Severity) if counts[s])
    head = title or f"{cluster}: " + ("no findings" if not findings else summary)
    text = head if not findings else f"{head}: " + "; ".join(
        f"{f.entity} {f.code}" for f in findings[:10])
    blocks: list[Block] = [header(head)]
    if note:
        blocks.append(context(esc(note)))
    if not findings:
        blocks.append(section(":white_check_mark: All checks passed."))
    for sev in sorted(Severity, reverse=True):
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        blocks.append(section(f"*{SEV_TITLE[sev]} ({len(group)})*"))
        for f in group:
            blocks.extend(finding_blocks(f, token_for(f)))
        blocks.append(divider())

    def plain() -> str:
        return "\n".join(f"[{f.severity.label}] {f.entity} {f.code}: {f.message}"
                         + (f"  (fix: {f.runbook} {f.target or ''})" if f.runbook else "")
                         for f in findings) + "\n"
    return paginate(head, blocks, text, plain, f"{cluster}-findings.txt")


IncidentTokenFn = Callable[[Incident], "str | None"]


def incident_blocks(n: int, inc: Incident, token: str | None) -> list[Block]:
    """One incident: the cause, its impact, what it explains, one next step (Fix)."""
    txt = (f"{SEV_ICON[inc.severity]} *{n}. {esc(inc.root.code)}* `{esc(inc.root.entity)}`"
           f"\n{esc(inc.root.message)}")
    if inc.impact != inc.root.message:
        txt += f"\n_impact:_ {esc(inc.impact)}"
    if inc.next_step is not None:
        txt += f"\n_next:_ `{esc(inc.next_step.command)}`"
    elif inc.manual:
        txt += f"\n_by hand:_ {esc(clip(inc.manual, 400))}"
    acc = (button("Fix", "fix", token, style="primary")
           if token and inc.next_step is not None else None)
    blocks = [section(clip(txt, MAX_SECTION - 20), acc)]
    if inc.consequences:
        blocks.append(context("explains: " + esc(clip(", ".join(
            f"{c.code} {c.entity}" for c in inc.consequences), 1500))))
    return blocks


def health_reply(cluster: str, verdict: Verdict, incidents: Sequence[Incident],
                 findings: Sequence[Finding], incident_token: IncidentTokenFn,
                 ceph_health: str | None = None, note: str | None = None) -> Reply:
    """`health`: stordoc's verdict and the top cause first, incidents each with one Fix,
    then Ceph's health as one fact, then every finding (no Fix on consequences)."""
    head = headline(cluster, verdict, incidents, len(findings))
    blocks: list[Block] = [section(f"*{esc(head)}*")]
    facts = []
    if ceph_health:
        facts.append(f"Ceph {ceph_health}")
    counts = {s: sum(1 for f in findings if f.severity == s) for s in Severity}
    facts.append(f"{len(findings)} findings ({counts[Severity.CRIT]} crit, "
                 f"{counts[Severity.WARN]} warn)")
    if note:
        facts.append(note)
    blocks.append(context(esc(" · ".join(facts))))
    if not findings:
        blocks.append(section(":white_check_mark: All checks passed."))
    for n, inc in enumerate(incidents, 1):
        blocks.extend(incident_blocks(n, inc, incident_token(inc)))
    rest = [f for f in findings if not any(f.key == x.key for i in incidents
                                            for x in i.findings)]
    if rest:
        blocks.append(divider())
        blocks.append(section(f"*Other findings ({len(rest)})*"))
        for f in rest:
            blocks.extend(finding_blocks(f, None))

    def plain() -> str:
        lines = [head]
        for n, inc in enumerate(incidents, 1):
            lines.append(f"{n}. [{inc.severity.label}] {inc.root.code} {inc.root.entity}: "
                         f"{inc.root.message} | impact: {inc.impact}"
                         + (f" | next: {inc.next_step.command}" if inc.next_step else ""))
            lines += [f"   explains: {c.code} {c.entity}: {c.message}"
                      for c in inc.consequences]
        lines += [f"[{f.severity.label}] {f.entity} {f.code}: {f.message}" for f in rest]
        return "\n".join(lines) + "\n"
    return paginate(head, blocks, head, plain, f"{cluster}-health.txt")


VERDICT_ICON = {Verdict.OK: ":large_green_circle:", Verdict.WARN: ":large_orange_circle:",
                Verdict.CRIT: ":red_circle:", Verdict.UNREACHABLE: ":black_circle:"}


def all_clusters_reply(lines: Sequence[tuple[Verdict, str]]) -> Reply:
    """``health all``: one verdict line per cluster, worst first."""
    icon = VERDICT_ICON
    rows = sorted(lines, key=lambda x: -x[0])
    head = f"All clusters ({len(rows)})"
    blocks: list[Block] = [header(head)]
    blocks += sections_of("\n".join(f"{icon.get(c, '')} {esc(t)}" for c, t in rows))
    text = head + ": " + "; ".join(t for _, t in rows)
    return paginate(head, blocks, clip(text, MAX_TEXT), lambda: "\n".join(t for _, t in rows)
                    + "\n", "all-clusters.txt")


# --------------------------------------------------------------------------- views


def osd_tree_reply(cluster: str, ceph: CephState) -> Reply:
    """The OSD tree by CRUSH host with up/in marks (``osd tree`` alone cannot show out)."""
    lines = []
    placed: set[int] = set()
    for h in ceph.hosts:
        lines.append(f"*{esc(h.name)}*")
        for oid in h.osd_ids:
            o = ceph.osd(oid)
            placed.add(oid)
            if o is None:
                continue
            lines.append(_osd_line(o))
    rest = [o for o in ceph.osds if o.id not in placed]
    if rest:
        lines.append("*(no host)*")
        lines.extend(_osd_line(o) for o in rest)
    up = sum(1 for o in ceph.osds if o.up)
    inn = sum(1 for o in ceph.osds if o.in_)
    head = f"{cluster}: {len(ceph.osds)} OSDs, {up} up, {inn} in"
    return paginate(head, [header(head)] + sections_of("\n".join(lines)), head)


def _osd_line(o: Any) -> str:
    up = ":large_green_circle: up" if o.up else ":red_circle: down"
    inn = "in" if o.in_ else "*out*"
    extra = " destroyed" if o.destroyed else ""
    return (f"    `{o.name}` {up} · {inn}{extra}  weight {o.crush_weight:.3f} "
            f"reweight {o.reweight:.2f}")


def osd_reply(cluster: str, ceph: CephState, osd_id: int,
              findings: Sequence[Finding], token_for: TokenFn) -> Reply:
    o = ceph.osd(osd_id)
    assert o is not None
    head = f"{cluster}: {o.name} on {o.host or '?'}"
    lines = [_osd_line(o).strip(), f"uuid `{o.uuid}`  class {o.device_class or '-'}",
             f"up_from {o.up_from}  up_thru {o.up_thru}  down_at {o.down_at}"]
    if o.public_addr:
        lines.append(f"address `{o.public_addr}`")
    blocks = [header(head)] + sections_of("\n".join(lines))
    mine = [f for f in findings if f.entity == o.name or f.target == o.name]
    for f in mine:
        blocks.extend(finding_blocks(f, token_for(f)))
    return paginate(head, blocks, head)


def pools_reply(cluster: str, ceph: CephState) -> Reply:
    head = f"{cluster}: {len(ceph.pools)} pools"
    lines = [f"`{esc(p.name)}` id {p.id} {p.type} size {p.size}/{p.min_size} "
             f"pg_num {p.pg_num} pgp_num {p.pgp_num} autoscale {p.pg_autoscale_mode} "
             f"objects {p.objects} used {p.percent_used:.1f}%"
             + (f" cache_mode {p.cache_mode}" if p.cache_mode != "none" else "")
             for p in ceph.pools] or ["no pools"]
    return paginate(head, [header(head)] + sections_of("\n".join(lines)), head)


def cache_reply(cluster: str, ceph: CephState) -> Reply:
    tiers = [p for p in ceph.pools if p.tier_of >= 0]
    head = f"{cluster}: {len(tiers)} cache tiers"
    by_id = {p.id: p.name for p in ceph.pools}
    lines = []
    for p in tiers:
        lines.append(
            f"`{esc(p.name)}` over `{esc(by_id.get(p.tier_of, str(p.tier_of)))}` mode "
            f"{p.cache_mode}\n    target_max_bytes {p.target_max_bytes} target_max_objects "
            f"{p.target_max_objects}\n    dirty {p.cache_target_dirty_ratio_micro / 1e6:.2f} "
            f"dirty_high {p.cache_target_dirty_high_ratio_micro / 1e6:.2f} full "
            f"{p.cache_target_full_ratio_micro / 1e6:.2f}\n    hit_set {p.hit_set_type} "
            f"x{p.hit_set_count} period {p.hit_set_period}s")
    if not lines:
        lines = ["no cache tiers"]
    return paginate(head, [header(head)] + sections_of("\n".join(lines)), head)


def ring_reply(cluster: str, swift: SwiftState, kind: str | None) -> Reply:
    rings = [r for r in swift.rings if kind is None or r.kind == kind]
    head = f"{cluster}: Swift " + (f"{kind} ring" if kind else f"{len(rings)} rings")
    lines = []
    for r in rings:
        bal = f"{r.balance:.2f}%" if r.balance is not None else "?"
        disp = f"{r.dispersion:.2f}%" if r.dispersion is not None else "?"
        lines.append(f"*{r.kind}*  part_power {r.part_power} replicas {r.replicas:g} "
                     f"min_part_hours {r.min_part_hours} balance {bal} dispersion {disp}"
                     + (f"\n    :warning: {esc(r.error)}" if r.error else ""))
        for d in r.devices:
            lines.append(f"    `{esc(d.endpoint)}` z{d.zone} weight {d.weight:g} "
                         f"parts {d.parts}")
    if not lines:
        lines = [f"no {kind} ring" if kind else "no rings"]
    lines += server_lines(swift, kind)
    return paginate(head, [header(head)] + sections_of("\n".join(lines)), head)


def server_lines(swift: SwiftState, kind: str | None) -> list[str]:
    """Per storage server: state, replication age, async pendings, quarantines, fill; then
    the dispersion figures (% of sampled copies found)."""
    from checks.swift_recon import server_summaries

    want = None if kind is None else ("object" if kind.startswith("object") else kind)
    out = []
    for s in server_summaries(swift, swift.collected_at or time.time()):
        if want is not None and s.server != want:
            continue
        if s.state != "ok":
            out.append(f"    :red_circle: {s.server} `{s.endpoint}` {esc(s.state)}")
            continue
        rep = "never" if s.replication_age_s is None else human_age(s.replication_age_s) + \
            " ago"
        out.append(f"    {s.server} `{s.endpoint}` replicated {rep}, async "
                   f"{'-' if s.async_pending is None else f'{s.async_pending:.0f}'}, "
                   f"quarantined {'-' if s.quarantined is None else f'{s.quarantined:.0f}'}, "
                   f"fill {'-' if s.fill_max is None else f'{s.fill_max:.0%}'}")
    out = (["*servers*"] + out) if out else []
    if swift.dispersion is not None and want in (None, "object", "container"):
        from checks.swift_dispersion import dispersion_summary

        d = dispersion_summary(swift)
        icon = ":red_circle: " if d.missing else ""
        out.append(f"{icon}{esc(d.line())}")
    return out


def history_reply(cluster: str, runs: Sequence[Mapping[str, Any]]) -> Reply:
    import datetime as dt

    head = f"{cluster}: last {len(runs)} check runs"
    lines = []
    for run in runs:
        when = dt.datetime.fromtimestamp(run["started_at"], dt.UTC)
        lines.append(f"#{run['id']} {when:%Y-%m-%d %H:%M:%S}Z {run['worst']} "
                     f"{run['n_findings']} findings ({run['source']})")
    lines = lines or ["no check runs recorded yet"]
    return paginate(head, [header(head)] + sections_of("\n".join(lines)), head)


def rows_reply(title: str, rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> Reply:
    lines = [" ".join(f"{k}={esc(clip(str(r.get(k)), 80))}" for k in keys if r.get(k)
                      is not None) for r in rows] or ["nothing recorded yet"]
    return paginate(title, [header(title)] + sections_of("\n".join(lines)), title)


def help_reply(command: str, usage: Mapping[str, str], topic: str | None) -> Reply:
    if topic:
        text = f"`{command} {usage[topic]}`"
    else:
        text = "\n".join(f"`{command} {u}`" for u in usage.values())
        text += ("\nMention me with the same words to use it in a thread. Targets: `osd.N`, "
                 "pool names, `DEVICE@HOST`, ring kinds.")
    r = paginate("stordoc help", [header("stordoc help")] + sections_of(text), "stordoc help")
    r.ephemeral = True
    return r


# --------------------------------------------------------------------------- plans


def plan_reply(cluster: str, runbook: str, target: str, lines: Sequence[str],
               confirm_token: str | None, cancel_token: str | None, requester: str,
               ttl_s: int, second_person: bool, two_person: bool) -> Reply:
    """The plan as a dry run, with Confirm (behind Slack's confirm dialog) and Cancel."""
    head = f"Plan: {runbook} {target} on {cluster}"
    body = "\n".join(lines) or "(no steps)"
    blocks: list[Block] = [header(head)]
    blocks.extend(sections_of("```\n" + esc(clip(body, 2900 * 10)) + "\n```")[:40])
    note = f"requested by <@{requester}> · buttons expire in {ttl_s // 60} min"
    if second_person and two_person:
        note += " · two-person rule: someone else must confirm"
    blocks.append(context(note))
    if confirm_token and cancel_token:
        blocks.append({"type": "actions", "elements": [
            button("Confirm", "confirm", confirm_token, style="danger", confirm={
                "title": {"type": "plain_text", "text": "Run this runbook?"},
                "text": {"type": "mrkdwn",
                         "text": clip(f"Run `{runbook} {esc(target)}` on *{cluster}* now?", 300)},
                "confirm": {"type": "plain_text", "text": "Run it"},
                "deny": {"type": "plain_text", "text": "Not now"},
            }),
            button("Cancel", "cancel", cancel_token),
        ]})
    return paginate(head, blocks, head)


def plan_closed_blocks(head: str, status: str) -> list[Block]:
    """``status`` is our own mrkdwn (user mentions of validated IDs): not escaped."""
    return [header(head), context(status)]
