"""Alerts to diagnosis on the lab: how long from a fault to the root cause in Slack, and
from an alert's arrival at the webhook to its post.

1. webhook -> post: the real bot (bolt over HTTP, a fake Slack API) with the alert gate;
   ``--alerts`` deliveries of Alertmanager's real v4 format (tests/fixtures/alertmanager),
   each its own group, sent over HTTP one every ``--gap`` seconds; the time from the POST
   to the bot's ``chat.postMessage`` for it, p50/p95/max, in two cases:
   * ``began-earlier``: the alert's condition started 60 s before the delivery (Ceph's rules
     fire after 1 to 15 min of a condition): a check begun after that start is reused;
   * ``began-now``: startsAt is the moment of sending: every delivery needs a new check
     (the worst case: the check's own time, with host facts over SSH).
2. fault -> diagnosis (``--chain``): the real chain (mgr prometheus module, Prometheus with
   Ceph's rules, Alertmanager) on the lab; ``lab break osd-unmounted`` to the bot's
   post naming OSD_DATA_UNMOUNTED; then the lab is healed.

Usage: .venv/bin/python benchmarks/alert_latency.py --dir /var/tmp/stordoc-lab \
           --port-base 16000 [--alerts 20] [--gap 0.25] [--chain]
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.settings import AlertSettings, Secret, load_settings
from lab import Lab
from lab.alerts import AlertChain
from tests.support.fake_slack import BotHarness, all_text

CHANNEL = "CBENCHALRT"
FIXTURE = ROOT / "tests" / "fixtures" / "alertmanager" / "osd_down_high_resolved.json"


def _rfc3339(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat().replace("+00:00",
                                                                                 "Z")


def delivery(i: int, began: float, tag: str) -> bytes:
    p = copy.deepcopy(json.loads(FIXTURE.read_text()))
    name = f"StordocBench{tag}{i}"
    p["status"] = "firing"
    p["groupKey"] = "{}:{alertname=\"" + name + "\"}"
    p["groupLabels"] = {"alertname": name}
    p["commonLabels"] = {**p["commonLabels"], "alertname": name, "cluster": "lab"}
    for a in p["alerts"]:
        a.update(status="firing", startsAt=_rfc3339(began), endsAt="0001-01-01T00:00:00Z",
                 fingerprint=f"{i:016x}")
        a["labels"] = {**a["labels"], "alertname": name, "cluster": "lab"}
    return json.dumps(p).encode()


def harness(lab: Lab, token_file: Path, port: int, journal: str) -> BotHarness:
    alerts = AlertSettings(token=Secret(file=str(token_file)))
    return BotHarness(load_settings(lab.config_path), {"lab": {"operators": ["UBENCH0001"]}},
                      journal, throttle_s=0.0, port=port, channels={CHANNEL: "lab"},
                      alerts=alerts)


def webhook_to_post(h: BotHarness, token: str, n: int, gap: float, began_s_ago: float | None,
                    tag: str) -> list[float]:
    url = h.base_url + "/alertmanager"
    sent: dict[str, float] = {}
    for i in range(n):
        began = time.time() - began_s_ago if began_s_ago is not None else time.time()
        body = delivery(i, began, tag)
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        sent[f"StordocBench{tag}{i}"] = time.monotonic()
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200
        time.sleep(gap)
    got: dict[str, float] = {}
    deadline = time.monotonic() + 300
    while len(got) < n and time.monotonic() < deadline:
        for c in h.posts():
            text = all_text(c)
            for name in sent:
                if name not in got and (f"*{name}*" in text or f"{name} firing" in text):
                    got[name] = c.at
        time.sleep(0.1)
    if len(got) < n:
        raise SystemExit(f"only {len(got)} of {n} alerts were posted")
    return [got[k] - sent[k] for k in sent]


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/var/tmp/stordoc-lab")
    ap.add_argument("--port-base", type=int, default=None)
    ap.add_argument("--alerts", type=int, default=20)
    ap.add_argument("--gap", type=float, default=0.25)
    ap.add_argument("--chain", action="store_true", help="also the real alert chain")
    args = ap.parse_args()
    lab = Lab(args.dir, args.port_base)
    chain = AlertChain(lab)
    with tempfile.TemporaryDirectory() as tmp:
        token_file = Path(tmp) / "token"
        token_file.write_text("bench-token-0123456789\n")
        token_file.chmod(0o600)
        if args.chain:
            chain.up()
            token_file = chain.token_file
        token = token_file.read_text().strip()
        h = harness(lab, token_file, chain.ports.webhook, str(Path(tmp) / "bot.db"))
        try:
            for tag, ago in (("Earlier", 60.0), ("Now", None)):
                lat = webhook_to_post(h, token, args.alerts, args.gap, ago, tag)
                print(f"webhook -> post, began-{'earlier' if ago else 'now'}: "
                      f"{len(lat)} alerts, p50 {statistics.median(lat):.3f} s, "
                      f"p95 {pct(lat, 0.95):.2f} s, max {max(lat):.2f} s")
            if args.chain:
                n0 = len(h.posts())
                t0 = time.monotonic()
                lab.break_("osd-unmounted", osd=1)  # down and in: OSD_DOWN fires
                try:
                    def found(_: Any) -> Any:
                        return [c for c in h.posts()[n0:] if "OSD_DATA_UNMOUNTED" in all_text(c)
                                and not c.params.get("thread_ts")]
                    c = h.fake.wait_for(found, 300)[0]
                    print(f"lab break osd-unmounted (down, in) -> diagnosis in Slack: "
                          f"{c.at - t0:.1f} s (alerts firing: {', '.join(chain.firing())})")
                finally:
                    lab.heal("osd-unmounted", osd=1)
        finally:
            h.close()
            if args.chain:
                chain.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
