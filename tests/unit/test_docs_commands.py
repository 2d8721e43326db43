"""Every `stordoc ...` command the docs name exists (issue #38.7): docs/tui.md once said
`stordoc runbooks fix` where the command is `stordoc fix`. Each command written in
README.md and docs/*.md (in backticks or a fenced block) is walked through the real
argparse parser (``stordoc.cli.build_parser``): its subcommand path must be one the
parser has, and each long option it gives must be one that (sub)command takes."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from stordoc.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `stordoc check --from DIR`, and in fenced blocks a line running stordoc
TICKED = re.compile(r"`([^`\n]*\bstordoc [^`\n]*)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# a command line starts with stordoc (after `$ `, `sudo [-u USER]`, VAR=value or
# `python -m `), or
# follows a pipe, `;`, `&&` or `$(`: the words up to the next of those
COMMAND = re.compile(r"(?:^\s*(?:\$ )?(?:sudo (?:-u \S+ )?)?(?:[A-Z_]+=\S* )*|[;|&(] ?)"
                     r"(?:python3? -m )?stordoc((?: [^ ;|&)`]+)+)")


def commands(text: str) -> list[str]:
    """The argument words after each `stordoc` that runs something."""
    spans = [m.group(1) for m in TICKED.finditer(text)]
    for block in FENCE.findall(text):
        spans += [ln for ln in block.splitlines()[1:-1] if "stordoc " in ln
                  and not ln.lstrip().startswith("#")]
    out = []
    for span in spans:
        for m in COMMAND.finditer(span):
            out.append(m.group(1).strip())
    return out


def _subparsers(p: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    return next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)


def runbook_names() -> set[str]:
    from runbooks.api import list_runbooks

    return {i.name for i in list_runbooks()}


# the positional arguments that name a runbook (`stordoc runbooks fix` once meant `fix`)
RUNBOOK_ARGS = {("stordoc runbooks", "name"), ("stordoc fix", "runbook"),
                ("stordoc plan", "runbook")}


def problem(words: str, top: argparse.ArgumentParser) -> str | None:
    """Why ``stordoc WORDS`` is no command of the parser, or None."""
    from core.service.actions import is_bench

    p, path = top, ["stordoc"]
    try:  # quoted words are one argument (--reason "disk swap")
        toks = [w.strip("[]") for w in shlex.split(words)]
    except ValueError:
        toks = [w.strip("[]") for w in words.split()]
    positional = 0
    i = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if t.startswith("-") and t != "-":
            opt = t.split("=", 1)[0]
            act = p._option_string_actions.get(opt)
            if act is None:
                if opt.startswith("--") and not opt.endswith("..."):
                    return f"{' '.join(path)} has no option {opt}"
                continue
            if act.nargs != 0 and "=" not in t and i < len(toks) \
                    and not toks[i].startswith("-"):
                i += 1  # the option's value
            continue
        sub = _subparsers(p)
        if sub is None or sub.choices is None:  # a positional argument
            args = [a for a in p._actions if not a.option_strings]
            if positional >= len(args) and not any(a.nargs in ("*", "+", argparse.REMAINDER)
                                                   for a in args):
                if re.fullmatch(r"[a-z][a-z0-9-]*", t):
                    return f"{' '.join(path)} takes no argument {t!r}"
                continue
            dest = args[min(positional, len(args) - 1)].dest
            positional += 1
            if ((" ".join(path), dest) in RUNBOOK_ARGS and re.fullmatch(r"[a-z][a-z-]*", t)
                    and t not in runbook_names() and not is_bench(t)):
                return f"{' '.join(path)}: {t!r} is no runbook"
            continue
        if t in sub.choices:
            p = sub.choices[t]
            path.append(t)
            positional = 0
            continue
        if not re.fullmatch(r"[a-z][a-z0-9-]*", t):
            return None  # a placeholder (COMMAND, NAME, ...), a path or a quoted word
        return f"{' '.join(path)} has no command {t!r}"
    return None


def named() -> list[tuple[str, str]]:
    return [(f"{doc.relative_to(ROOT)}", c) for doc in DOCS
            for c in commands(doc.read_text())]


def test_the_docs_name_commands_at_all() -> None:
    found = named()
    assert len(found) > 50, found  # the extraction finds them (a broken regex finds none)
    assert ("docs/tui.md", "tui [--cluster NAME] [--read-only] [--refresh SECONDS]") in found
    # and it catches what the tester found
    assert problem("runbooks fix", build_parser()) == "stordoc runbooks: 'fix' is no runbook"


def test_every_command_in_the_docs_exists() -> None:
    top = build_parser()
    bad = [f"{doc}: stordoc {c}: {why}" for doc, c in named()
           if (why := problem(c, top)) is not None]
    assert bad == []


@pytest.mark.parametrize("words,ok", [("check --from DIR", True), ("chek", False),
                                      ("snapshot save DIR", True),
                                      ("fix osd-remount osd.1", True),
                                      ("plan osd-remout osd.1", False),
                                      ("runbooks daemon-restart", True),
                                      ("check --no-such-option", False),
                                      ("bench rados --seconds 5", None)])
def test_the_walk_knows_a_command_from_a_typo(words: str, ok: bool | None) -> None:
    why = problem(words, build_parser())
    if ok is not None:
        assert (why is None) == ok, why
