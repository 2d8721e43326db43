"""The TUI's screens never call its App (issue 39.5): what they read comes from the
session they are handed (``tui.state``); what they want done they post as a
``tui.messages`` message, which the App handles. The only App calls left in them are
Textual's own (``push_screen`` of a detail or a modal screen), never one that stordoc's
App adds or overrides. Read from the source with ``ast``; the behaviour itself is
covered by the pilot tests (tests/unit/test_tui_app.py and the snapshot tests)."""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App

from tui.app import StordocApp

ROOT = Path(__file__).resolve().parents[2]
SCREENS = sorted((ROOT / "tui" / "screens").glob("*.py")) + [ROOT / "tui" / "clusters.py"]


def app_calls(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every use of ``<something>.app`` in a module: ``name`` is the
    attribute read from it, "" when the App itself is taken (kept, passed, returned)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "app":
            up = parent.get(node)
            out.append((node.lineno, up.attr if isinstance(up, ast.Attribute) else ""))
    return sorted(out)


def test_screens_use_only_textuals_app_api() -> None:
    ours = set(vars(StordocApp))  # what stordoc's App adds or overrides
    used = {(p.name, line, name) for p in SCREENS for line, name in app_calls(p)}
    assert used  # the reader sees the screens' push_screen calls
    wrong = sorted(f"{f}:{line}: app.{name}" for f, line, name in used
                   if not name or name in ours or not hasattr(App, name))
    assert wrong == []


def test_the_reader_sees_an_app_call(tmp_path: Path) -> None:
    src = ("def f(self):\n    self.app.open_runbook('x', 'y')\n    self.app.push_screen(s)\n"
           "    return self.app\n")
    p = tmp_path / "probe.py"
    p.write_text(src)
    assert [n for _, n in app_calls(p)] == ["open_runbook", "push_screen", ""]
