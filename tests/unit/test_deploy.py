"""The deployment pieces of issue 40.4: the systemd units (deploy/systemd/), the Slack app
manifest (deploy/slack-app-manifest.yml) and the settings reading the units' credentials."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from core.settings import load_settings
from core.settings_model import SlackSettings
from stordoc.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"
MANIFEST = ROOT / "deploy" / "slack-app-manifest.yml"
INSTALLED = "/opt/stordoc/bin/stordoc"  # where README.md installs the wheel's venv

# Slack Web API method (slack_sdk's name) -> the bot scope it needs (Slack's method and
# scope reference; None: no scope). files_upload_v2 is files.getUploadURLExternal and
# files.completeUploadExternal, both files:write.
METHOD_SCOPES: dict[str, str | None] = {
    "chat_postMessage": "chat:write",
    "chat_postEphemeral": "chat:write",
    "chat_update": "chat:write",
    "chat_delete": "chat:write",
    "files_upload_v2": "files:write",
    "usergroups_users_list": "usergroups:read",
    "auth_test": None,
}
# event the manifest subscribes to -> its scope
EVENT_SCOPES = {"app_mention": "app_mentions:read"}


def _service(unit: Path) -> dict[str, list[str]]:
    """[Service] of a unit file: key -> every value (LoadCredential= repeats)."""
    out: dict[str, list[str]] = {}
    section = ""
    for line in unit.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def _sources() -> str:
    return "\n".join(p.read_text() for d in ("bot", "stordoc")
                     for p in sorted((ROOT / d).rglob("*.py")))


# --- the Slack app manifest ------------------------------------------------------------

def test_the_manifest_asks_for_exactly_the_scopes_the_bot_uses() -> None:
    m = yaml.safe_load(MANIFEST.read_text())
    code = _sources()
    called = set(re.findall(r"\bclient\.([a-z]+_[A-Za-z0-9_]+)\(", code))
    called |= {n.replace(".", "_") for n in re.findall(r"api_call\(\s*[\"']([\w.]+)", code)}
    unknown = called - METHOD_SCOPES.keys()
    assert not unknown, f"Slack methods called with no scope known here: {unknown}"
    assert "chat_postMessage" in called and "files_upload_v2" in called  # the grep works
    events = m["settings"]["event_subscriptions"]["bot_events"]
    handled = set(re.findall(r"app\.event\(\"(\w+)\"\)", (ROOT / "bot" / "app.py").read_text()))
    assert set(events) <= handled and "app_mention" in events
    assert "self.app.command(" in (ROOT / "bot" / "app.py").read_text()
    need = {s for s in map(METHOD_SCOPES.get, called) if s}
    need |= {EVENT_SCOPES[e] for e in events} | {"commands"}  # a slash command needs it
    assert sorted(m["oauth_config"]["scopes"]["bot"]) == sorted(need)


def test_the_manifest_matches_the_bot_and_docs_slack() -> None:
    m = yaml.safe_load(MANIFEST.read_text())
    assert set(m) >= {"display_information", "features", "oauth_config", "settings"}
    (cmd,) = m["features"]["slash_commands"]
    assert cmd["command"] == SlackSettings().command
    assert m["features"]["bot_user"]["display_name"]
    s = m["settings"]
    assert s["interactivity"]["is_enabled"] is True
    from bot.server import PATH

    for url in (cmd["url"], s["event_subscriptions"]["request_url"],
                s["interactivity"]["request_url"]):
        assert url.startswith("https://") and url.endswith(PATH)
    assert s["socket_mode_enabled"] is False  # the URLs above are for `stordoc bot --http`
    # docs/slack.md lists the same scopes and events
    doc = (ROOT / "docs" / "slack.md").read_text()
    listed = re.search(r"Bot token scopes:(.*?)\n- Events", doc, re.S)
    assert listed is not None
    assert sorted(re.findall(r"`([a-z_:.]+)`", listed.group(1))) == \
        sorted(m["oauth_config"]["scopes"]["bot"])
    assert re.search(r"- Events: `app_mention`", doc)


# --- the systemd units -----------------------------------------------------------------

@pytest.mark.parametrize("name, cmd", [("stordoc-bot.service", "bot"),
                                       ("stordoc-watch@.service", "watch")])
def test_the_units_restart_harden_and_take_secrets_as_credentials(name: str, cmd: str) -> None:
    svc = _service(UNITS / name)
    assert svc["Restart"] == ["on-failure"]
    assert svc["User"] == ["stordoc"]  # README.md makes the system user
    assert svc["NoNewPrivileges"] == ["yes"] and svc["ProtectSystem"] == ["strict"]
    assert svc["StateDirectory"] == ["stordoc"]  # the journal: config.example.toml's path
    assert load_settings(ROOT / "config.example.toml").journal.startswith("/var/lib/stordoc/")
    creds = [v.split(":", 1)[0] for v in svc["LoadCredential"]]
    assert "slack-bot-token" in creds
    (exec_start,) = svc["ExecStart"]
    exe, *argv = exec_start.split()
    assert exe == INSTALLED
    argv = [a.replace("%i", "prod") for a in argv]
    args = build_parser(argv).parse_args(argv)  # the command line stordoc really takes
    assert args.command == cmd
    if cmd == "watch":
        assert args.cluster == "prod"  # one watch per cluster: the instance names it
    assert not any(k.startswith("Environment") and "TOKEN" in v.upper()
                   for k, vs in svc.items() for v in vs)  # no secret in the environment


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    exe = tmp_path / "bin" / "stordoc"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    for unit in UNITS.glob("*.service"):
        (tmp_path / unit.name).write_text(unit.read_text().replace(INSTALLED, str(exe)))
    r = subprocess.run(["systemd-analyze", "verify", "./stordoc-bot.service",
                        "./stordoc-watch@prod.service"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    # it says an unknown key or a bad value on stderr and still exits 0
    ours = [ln for ln in r.stderr.splitlines() if "stordoc" in ln]
    assert r.returncode == 0 and not ours, r.stderr
    # systemd's own exposure score of the sandbox (0 safest .. 10): at most 2.0 ("OK";
    # 6.6 "MEDIUM" before the capability, namespace and system call limits)
    for unit in ("./stordoc-bot.service", "./stordoc-watch@prod.service"):
        sec = subprocess.run(["systemd-analyze", "security", "--offline=true",
                              "--threshold=20", unit], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        assert sec.returncode == 0, sec.stdout[-3000:] + sec.stderr


# --- the credentials the units hand over, read by the settings ---------------------------

def test_secret_files_under_the_credentials_directory_resolve(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = _service(UNITS / "stordoc-bot.service")
    creds = tmp_path / "credentials"
    creds.mkdir()
    for v in svc["LoadCredential"]:  # what systemd does for the unit
        name = v.split(":", 1)[0]
        (creds / name).write_text(f"from-{name}\n")
    cfg = tmp_path / "config.toml"
    cfg.write_text('[clusters.prod.ceph]\nconf = "/etc/ceph/ceph.conf"\n[slack]\n'
                   'bot_token = { file = "${CREDENTIALS_DIRECTORY}/slack-bot-token" }\n'
                   'signing_secret = { file = "$CREDENTIALS_DIRECTORY/slack-signing-secret" }\n')
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    s = load_settings(cfg).slack
    assert s.bot_token.resolve() == "from-slack-bot-token"
    assert s.signing_secret.resolve() == "from-slack-signing-secret"
    # by hand, outside the unit: no such directory, the secret is missing (not an error)
    monkeypatch.delenv("CREDENTIALS_DIRECTORY")
    assert os.environ.get("CREDENTIALS_DIRECTORY") is None
    assert load_settings(cfg).slack.bot_token.resolve() is None
