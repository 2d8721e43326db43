"""The TUI's cluster list on the real lab: every configured cluster with its last verdict
and age, Enter switches without restarting (the other cluster's data only), Esc keeps."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from core.env import Env
from core.service import Service
from lab import Lab
from tests.lab.test_tui_lab import SIZE
from tests.support.cli import cli
from tests.support.tui import lab_env, pilot_wait, sync
from tui.app import StordocApp
from tui.backend import EnvBackend
from tui.clusters import ClusterListScreen


def _two_clusters(lab: Lab, tmp_path: Path) -> Env:
    """The lab, and "far": a cluster whose monitor nobody answers."""
    conf = tmp_path / "far.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\nauth_cluster_required = none\n"
                    "auth_service_required = none\nauth_client_required = none\n")
    return lab_env(lab, tmp_path, extra=f'\n[clusters.far.ceph]\nconf = "{conf}"\ntimeout = 3\n',
                   name="two.toml")


def _alert_posted_for_far(env: Env, tmp_path: Path) -> None:
    """The real bot (same journal) takes an alert about "far" and posts it."""
    import json
    import urllib.request

    from core.settings import AlertSettings, Secret
    from tests.support.fake_slack import BotHarness

    h = BotHarness(env.settings, {"far": {"operators": ["UOPSFAR001"]}}, env.settings.journal,
                   throttle_s=0.05, channels={"CFARROOM01": "far"},
                   alerts=AlertSettings(token=Secret(value="far-token-0123456789")))
    try:
        fixture = Path(__file__).parents[1] / "fixtures" / "alertmanager" / \
            "osd_down_high_resolved.json"
        p = json.loads(fixture.read_text())
        p.update(status="firing", groupKey='{}:{alertname="CephHealthError"}',
                 groupLabels={"alertname": "CephHealthError"})
        p["alerts"][0].update(status="firing", endsAt="0001-01-01T00:00:00Z",
                              labels={"alertname": "CephHealthError", "cluster": "far"})
        req = urllib.request.Request(h.base_url + "/alertmanager", method="POST",
                                     data=json.dumps(p).encode(), headers={
                                         "Authorization": "Bearer far-token-0123456789",
                                         "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200
        h.fake.wait_for(lambda f: h.posts(), 120)
    finally:
        h.close()


@sync
async def test_cluster_list_switches_without_restart(lab: Lab, tmp_path: Path) -> None:
    env = _two_clusters(lab, tmp_path)
    Service(env).check("far", "cli")  # "far" has a recorded (unreachable) run, the lab none yet
    _alert_posted_for_far(env, tmp_path)  # the on-call stream the list follows
    app = StordocApp(EnvBackend(env), "lab", refresh_s=0, refresh_timeout_s=120, user="t")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot_wait(pilot, lambda: app.state.outcome is not None, 120, "lab data")
            lab_outcome = app.state.outcome
            await pilot.press("C")
            assert isinstance(app.screen, ClusterListScreen)
            t = app.screen.query_one("#clusters", DataTable)
            rows = {str(k.value): [str(c) for c in t.get_row(k)] for k in t.rows}
            assert set(rows) == {"far", "lab"}
            assert rows["far"][2].startswith("UNREACHABLE") and "ago" in rows["far"][3]
            assert rows["lab"][0] == "▶"
            st = app.screen.query_one("#stream", DataTable)
            stream = [[str(c) for c in st.get_row(k)] for k in st.rows]
            assert any(r[1] == "far" and "CephHealthError" in r[2] and r[3] == "open"
                       for r in stream), stream
            await pilot.press("escape")  # Esc keeps the cluster
            assert app.cluster == "lab" and app.state.outcome is lab_outcome
            await pilot.press("C")
            t = app.screen.query_one("#clusters", DataTable)
            t.move_cursor(row=t.get_row_index("far"))
            await pilot.press("enter")
            assert app.cluster == "far" and app.state.outcome is not lab_outcome
            await pilot_wait(pilot, lambda: app.state.outcome is not None
                             or app.state.error is not None, 120, "far's refresh")
            out = app.state.outcome
            assert out is None or out.report.cluster == "far"
            assert "far" in app.title
            await pilot.press("C")
            t = app.screen.query_one("#clusters", DataTable)
            t.move_cursor(row=t.get_row_index("lab"))
            await pilot.press("enter")
            await pilot_wait(pilot, lambda: app.state.outcome is not None, 120, "lab again")
            assert app.state.outcome is not None and app.state.outcome.report.cluster == "lab"
    finally:
        env.close()


def test_check_all_one_line_per_cluster_worst_exit(lab: Lab, tmp_path: Path) -> None:
    import json

    env = _two_clusters(lab, tmp_path)
    env.close()
    cfg = str(tmp_path / "two.toml")
    run = cli(cfg, "check", "--all", timeout=300, columns=None)
    assert run.returncode == 3, run.stderr  # the worst: "far" is unreachable
    # one verdict per cluster, wrapped at the width: continuation rows are indented
    lines = [ln for ln in run.stdout.splitlines() if ln.strip() and not ln.startswith("  ")]
    assert len(lines) == 2, run.stdout
    # each printed when ready (core.service.fleet): in the order they finish
    assert sum(ln.startswith("UNREACHABLE far:") for ln in lines) == 1
    assert sum(" lab:" in ln for ln in lines) == 1, run.stdout
    js = cli(cfg, "check", "--all", "--json", timeout=300, columns=None)
    doc = json.loads(js.stdout)
    assert doc["exit_code"] == 3 and doc["status"] == "unreachable"
    assert {c["cluster"]: c["status"] for c in doc["clusters"]}["far"] == "unreachable"
    bad = cli(cfg, "check", "--all", "--cluster", "lab", timeout=60, columns=None)
    assert bad.returncode == 64 and "Traceback" not in bad.stderr
