"""The import rules of docs/ARCHITECTURE.md, read from the source with ``ast``.

Every import counts: at the top, inside a function, and under ``if TYPE_CHECKING:`` (a
reader follows those too). A ``from pkg import name`` counts as an import of ``pkg.name``
when that is a module of ours, else of ``pkg``.

- no import circle among the modules of any package (a lower module never imports the
  one that assembles it; issue 39.6), nor across packages;
- the TUI's screens and views never import its App (``tui.app``): they read
  ``tui.state`` and post ``tui.messages`` (issue 39.5);
- the product never imports ``lab``; ``stordoc/commands/lab.py`` (the lab's own command
  line) is the one door;
- imports go one way: front ends (``bot``, ``tui``, ``stordoc``: the command line) ->
  ``core`` (the service, the I/O environment, settings, every policy) -> ``runbooks`` ->
  ``checks`` -> ``storage`` (issue 39.1);
- front ends never import each other, but for the two doors through which the command
  line starts the others (``stordoc bot``, ``stordoc tui``): ``watch`` posts through the
  core, not the bot.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "lab", "tui", "stordoc", "core", "runbooks", "checks", "storage")
FRONT_ENDS = ("bot", "tui", "stordoc")
LAB_DOOR = "stordoc.commands.lab"
# the command line's doors to the other front ends: ``stordoc bot`` and ``stordoc tui``
FRONT_DOORS = {"stordoc.commands.bot": "bot", "stordoc.commands.tui": "tui"}
# what each layer may not import: anything above it, and a front end the other ones
ABOVE = {
    "storage": ("checks", "runbooks", "core", *FRONT_ENDS),
    "checks": ("runbooks", "core", *FRONT_ENDS),
    "runbooks": ("core", *FRONT_ENDS),
    "core": FRONT_ENDS,
    "bot": ("tui", "stordoc"),
    "tui": ("bot", "stordoc"),
    "stordoc": ("bot", "tui"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _targets(node: ast.AST, here: str, is_package: bool, known: set[str]) -> Iterable[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = here.split(".")
            drop = node.level - 1 if is_package else node.level
            base = base[: len(base) - drop] if drop else base
            pkg = ".".join(base + ([node.module] if node.module else []))
        else:
            pkg = node.module or ""
        for alias in node.names:
            sub = f"{pkg}.{alias.name}"
            yield sub if sub in known else pkg


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of ours it imports (every import, at any depth)."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(tree):
            for target in _targets(node, name, is_package, known):
                if target.split(".")[0] in PACKAGES and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]], package: str) -> list[list[str]]:
    """The strongly connected components (of two or more modules) inside ``package``."""
    inside = {m for m in graph if m == package or m.startswith(package + ".")}
    edges = {m: sorted(t for t in graph[m] if t in inside) for m in inside}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(inside):
        if module not in index:
            visit(module)
    return found


def _top(module: str) -> str:
    return module.split(".")[0]


def test_no_circle_inside_any_package() -> None:
    graph = import_graph()
    found = {p: circles(graph, p) for p in PACKAGES}
    assert found == {p: [] for p in PACKAGES}, found


def test_no_circle_across_packages() -> None:
    """The whole product as one graph: a circle through two packages is one too."""
    graph = import_graph()
    whole = {f"all.{m}": {f"all.{t}" for t in ts} for m, ts in graph.items()}
    got = [[m.removeprefix("all.") for m in c] for c in circles(whole, "all")]
    assert got == [], got


def test_tui_screens_and_views_never_import_the_app() -> None:
    """The App assembles the screens; a screen reads ``tui.state`` and posts
    ``tui.messages`` (issue 39.5), so nothing under them imports ``tui.app``."""
    graph = import_graph()
    below = [m for m in graph if m.startswith(("tui.screens", "tui.views", "tui.clusters"))]
    assert len(below) > 10  # the screens and views were found
    wrong = sorted(f"{m} -> tui.app" for m in below if "tui.app" in graph[m])
    assert wrong == []


def test_the_product_never_imports_the_lab() -> None:
    graph = import_graph()
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if _top(module) != "lab" and module != LAB_DOOR
        for target in targets
        if _top(target) == "lab"
    )
    assert wrong == []


def test_imports_go_down_only() -> None:
    graph = import_graph()
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if _top(target) in ABOVE.get(_top(module), ())
        and FRONT_DOORS.get(module) != _top(target)
    )
    assert wrong == []


def test_the_rules_see_a_circle_and_a_lab_import() -> None:
    """The reader itself: a circle, a TYPE_CHECKING import and a relative import count."""
    graph = {"bot.a": {"bot.b"}, "bot.b": {"bot.c"}, "bot.c": {"bot.a"}, "bot.d": {"bot.a"}}
    assert circles(graph, "bot") == [["bot.a", "bot.b", "bot.c"]]
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import core\n"
    node = ast.parse(source).body[1].body[0]  # type: ignore[attr-defined]
    assert list(_targets(node, "lab.ceph", False, {"lab.core"})) == ["lab.core"]
