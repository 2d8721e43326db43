"""Text from outside never drives the terminal (issue #37.14): a snapshot's host name and a
Prometheus server's error text holding ESC sequences reach the CLI's output with their
control characters shown (``\\x1b``), not obeyed; rich's own styles still work. The one
rule is ``core.fmt.printable``, applied by ``core.terminal`` to everything printed."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from rich.text import Text

from core.fmt import printable
from core.terminal import SafeConsole
from tests.support.cli import run_main
from tests.support.fixture_snapshots import FIXTURES
from tests.support.prom_server import FakeProm, FsSeries, Node

# set the window title, clear the screen, move the cursor, a one-byte CSI (C1), a bell
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[H\x9b31m\x08"


def test_printable_shows_every_control_and_keeps_lines() -> None:
    assert printable(f"a{EVIL}b") == "a\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\x9b31m\\x08b"
    assert printable("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert printable(printable(EVIL)) == printable(EVIL)  # once is enough, twice harmless


def test_a_snapshot_host_name_with_escapes_is_shown_not_obeyed(tmp_path: Path) -> None:
    d = tmp_path / "snap"
    shutil.copytree(FIXTURES / "pacific" / "healthy", d)
    p = d / "hosts" / "0.json"
    doc = json.loads(p.read_text())
    doc.update(name=f"node{EVIL}1", error=f"refused{EVIL}", facts=None, identity=None)
    p.write_text(json.dumps(doc))
    for args in ((), ("-v",)):
        rc, out, err = run_main("check", "--from", str(d), *args)
        assert rc == 3 or rc in (1, 2), (rc, err)
        assert "HOST_UNREACHABLE" in out
        assert "\x1b" not in out + err and "\x07" not in out and "\x9b" not in out
        # (rich drops a bell and a backspace itself; the rest is shown)
        assert "host node\\x1b]0;pwned\\x1b[2J\\x1b[H\\x9b31m1" in out


class _ErrProm(FakeProm):
    """A Prometheus whose every query fails with an error text holding escapes."""

    def body(self, expr: str) -> bytes:
        raise ValueError(f"boom{EVIL}")


def test_prometheus_error_text_with_escapes_is_shown_not_obeyed(tmp_path: Path) -> None:
    fake = _ErrProm([Node("127.0.0.2:9100", "node1", fs=[FsSeries("/srv/node/d1",
                                                                   "/dev/sdb")])])
    with fake.serve() as url:
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'journal = "{tmp_path / "j.db"}"\n[clusters.p]\n'
                       '[[clusters.p.hosts]]\nname = "node1"\naddress = "127.0.0.2"\n'
                       'swift_devices_dir = "/srv/node"\n[clusters.p.prometheus]\n'
                       f'url = "{url}"\nssh_max_hosts = 0\n')
        rc, out, err = run_main("--config", str(cfg), "check", "--cluster", "p", "-v")
    assert "PROMETHEUS_" in out, out
    assert "boom\\x1b]0;pwned" in out, out
    assert "\x1b" not in out + err and "\x9b" not in out + err


def test_styles_still_reach_a_real_terminal() -> None:
    buf = io.StringIO()
    con = SafeConsole(file=buf, force_terminal=True, color_system="standard", width=200,
                      highlight=False)
    con.print(Text.assemble(("CRIT", "bold red"), f" host node{EVIL}1"))
    con.print(f"plain {EVIL}", markup=False)
    out = buf.getvalue()
    assert "\x1b[1;31mCRIT" in out  # rich's own style sequence
    assert out.count("\x1b") == out.count("\x1b[0m") + 1  # only: one style, its resets
    assert "node\\x1b]0;pwned\\x1b[2J" in out and "\x9b" not in out
