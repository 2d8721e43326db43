"""What a cluster has, as Slack messages: the OSD tree, one OSD, pools, cache tiers, rings.

Read-only views of a snapshot (``CephState``, ``SwiftState``); an OSD's own findings come
with their Fix buttons like everywhere else (``finding_blocks``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from bot.render.findings import TokenFn, finding_blocks
from checks.model import Finding
from core.fmt import human_age
from core.slack.blocks import Reply, esc, header, paginate, sections_of
from storage.model import CephState, SwiftState


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


def ring_reply(cluster: str, swift: SwiftState, kind: str | None,
               names: Mapping[str, str] | None = None) -> Reply:
    """Rings with each device as ``d2@node2`` (``names``: address -> configured host)
    and its recon state (UNMOUNTED, MISSING, mounted 40%), then the servers."""
    from checks.swift_names import device_name
    from checks.swift_recon_values import ring_device_state

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
            st = ring_device_state(swift, r.kind, d)
            state = f":red_circle: *{esc(st.text)}*" if st.bad else esc(st.text)
            lines.append(f"    `{esc(device_name(d.device, d.ip, names))}` {state} · "
                         f"z{d.zone} weight {d.weight:g} parts {d.parts}")
    if not lines:
        lines = [f"no {kind} ring" if kind else "no rings"]
    lines += server_lines(swift, kind, names)
    return paginate(head, [header(head)] + sections_of("\n".join(lines)), head)


def server_lines(swift: SwiftState, kind: str | None,
                 names: Mapping[str, str] | None = None) -> list[str]:
    """Per storage server (on its configured host, ``names``: address -> host): state,
    replication age, async pendings, quarantines, fill; then the dispersion figures (%
    of sampled copies found)."""
    from checks.swift_recon import server_summaries

    want = None if kind is None else ("object" if kind.startswith("object") else kind)
    out = []
    for s in server_summaries(swift, swift.collected_at or time.time()):
        if want is not None and s.server != want:
            continue
        on = f" on {esc(names[s.ip])}" if names and s.ip in names else ""
        if s.state != "ok":
            out.append(f"    :red_circle: {s.server}{on} `{s.endpoint}` {esc(s.state)}")
            continue
        rep = "never" if s.replication_age_s is None else human_age(s.replication_age_s) + \
            " ago"
        out.append(f"    {s.server}{on} `{s.endpoint}` replicated {rep}, async "
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
