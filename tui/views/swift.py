"""Swift: rings and their devices (balance, recon state), storage servers, the proxy and
dispersion line."""

from __future__ import annotations

from storage.model import RingDevice, RingState, SwiftState
from tui.views.common import Row, human_age

RING_COLUMNS = ("ring / device", "region", "zone", "ip:port", "weight", "parts", "wanted",
                "balance", "recon")


def device_balance(d: RingDevice) -> float | None:
    if not d.parts_wanted:
        return None
    return 100.0 * (d.parts - d.parts_wanted) / d.parts_wanted


def _recon_state(sw: SwiftState, ring: RingState, d: RingDevice) -> tuple[str, str]:
    server = "object" if ring.kind.startswith("object") else ring.kind
    host = next((h for h in sw.recon if h.ip == d.ip and h.port == d.port
                 and h.server == server), None)
    if host is None:
        host = next((h for h in sw.recon if h.ip == d.ip and h.server == server), None)
    if host is None:
        return "no recon", "dim"
    if host.error:
        return f"recon error: {host.error}"[:40], "yellow"
    if d.device in host.unmounted:
        return "UNMOUNTED", "bold red"
    du = next((u for u in host.diskusage if u.device == d.device), None)
    if du is None:
        return "MISSING", "bold red"
    if du.error:
        return f"recon: {du.error}"[:40], "yellow"
    if not du.mounted:
        return "UNMOUNTED", "bold red"
    return (f"mounted {100.0 * du.fill:.0f}%" if du.fill is not None else "mounted"), "green"


def swift_note(sw: SwiftState | None, swift_error: str | None) -> str:
    """The line under the rings: the proxy's health and the dispersion figures."""
    from checks.swift_dispersion import dispersion_summary

    if sw is None:
        return swift_error or "no Swift configured for this cluster"
    parts = []
    if sw.proxy_url:
        parts.append(f"proxy {sw.proxy_url}: " + ("healthy" if sw.proxy_healthy else
                                                  f"UNHEALTHY {sw.proxy_error or ''}"))
    if sw.dispersion is not None:
        parts.append(dispersion_summary(sw).line())
    return "\n".join(parts)


SERVER_COLUMNS = ("server", "ip:port", "state", "replicated", "async", "quarantined",
                  "fill max")


def server_rows(sw: SwiftState | None, now: float, needle: str = "") -> list[Row]:
    """One row per storage server: replication age, async pendings, quarantines, fill."""
    from checks.swift_recon import server_summaries

    if sw is None:
        return []
    rows: list[Row] = []
    ndl = needle.lower()
    for s in server_summaries(sw, now):
        ok = s.state == "ok"
        cells = (s.server, s.endpoint, s.state if ok else s.state.upper(),
                 "-" if s.replication_age_s is None else human_age(s.replication_age_s) + " ago",
                 "-" if s.async_pending is None else f"{s.async_pending:.0f}",
                 "-" if s.quarantined is None else f"{s.quarantined:.0f}",
                 "-" if s.fill_max is None else f"{s.fill_max:.0%}")
        styles = ("", "", "green" if ok else "bold red", "", "", "",
                  "bold red" if (s.fill_max or 0) >= 0.9 else
                  "yellow" if (s.fill_max or 0) >= 0.8 else "")
        r = Row(f"srv:{s.server}:{s.endpoint}", "server", cells, styles,
                " ".join(cells).lower(), s)
        if r.matches(ndl):
            rows.append(r)
    return rows


def ring_rows(sw: SwiftState | None, needle: str = "") -> list[Row]:
    """Each ring (part power, replicas, balance) then its devices by region and zone."""
    if sw is None:
        return []
    rows: list[Row] = []
    ndl = needle.lower()
    for ring in sw.rings:
        devs: list[Row] = []
        for d in sorted(ring.devices, key=lambda d: (d.region, d.zone, d.ip, d.port, d.device)):
            bal = device_balance(d)
            recon, rstyle = _recon_state(sw, ring, d)
            cells = [f"  {d.device} (id {d.id})", str(d.region), str(d.zone), f"{d.ip}:{d.port}",
                     f"{d.weight:g}", str(d.parts), str(d.parts_wanted or "-"),
                     "-" if bal is None else f"{bal:+.1f}%", recon]
            styles = ["", "", "", "", "red" if d.weight == 0 else "",
                      "red" if d.parts == 0 else "", "",
                      "yellow" if bal is not None and abs(bal) > 5 else "", rstyle]
            r = Row(f"dev:{ring.kind}:{d.id}", "device", tuple(cells), tuple(styles),
                    f"{' '.join(cells)} {ring.kind}".lower(), (ring.kind, d))
            if r.matches(ndl):
                devs.append(r)
        if not devs and ndl:
            continue
        rbal = "-" if ring.balance is None else f"{ring.balance:.2f}%"
        disp = "" if ring.dispersion is None else f" disp {ring.dispersion:.1f}%"
        label = f"▾ {ring.kind} ring"
        cells2 = (label, "", "", f"2^{ring.part_power} parts x{ring.replicas:g}",
                  f"{sum(d.weight for d in ring.devices):g}",
                  str(sum(d.parts for d in ring.devices)), f"mph {ring.min_part_hours}h",
                  rbal + disp, ring.error or ("builder != ring" if ring.builder_matches_ring
                                             is False else ""))
        rows.append(Row(f"ring:{ring.kind}", "ring", cells2,
                        ("bold", "", "", "", "", "", "", "", "bold red"), label.lower(),
                        ring.kind))
        rows.extend(devs)
    return rows
