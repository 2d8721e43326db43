"""Helpers shared by subcommands: load settings into an Env that carries the terminal.

Imported by every command module, so it stays light: settings (pydantic) and the Env
(the check engine, Swift, the journal) are imported only when a handler asks for them.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.env import Env
    from core.service.snapshots import Replay
    from core.terminal import Terminal

_frozen = False


def term_of(args: argparse.Namespace) -> Terminal:
    """The command's terminal (``main`` sets it; a handler called directly gets sys's)."""
    from core.terminal import Terminal

    t = getattr(args, "term", None)
    return t if isinstance(t, Terminal) else Terminal.from_sys()


@contextmanager
def cancel_when_stdout_lost(term: Terminal, cancel: Callable[[], object]) -> Iterator[None]:
    """While in the block, ``cancel()`` when stdout's reader goes away (``fix ... | tee
    log`` and Ctrl-C: tee exits first): a run then stops as for Ctrl-C, cleanup included."""
    def lost() -> None:
        cancel()

    forget = term.on_stdout_lost(lost)
    try:
        yield
    finally:
        forget()


def finding_code(code: str, ceph_hint: str) -> str:
    """A finding code as typed (``fix --finding``, ``mute``), normalised; else one line and
    exit 64, before anything is read or changed: ``unknown finding code OSD_DATA_UNMOUNT:
    did you mean OSD_DATA_UNMOUNTED?``, or, with nothing close, where the codes are and
    how Ceph's own are named (``ceph_hint``: this command's way to name one)."""
    from core.errors import UserError
    from core.service import fixes

    try:
        return fixes.catalogued_code(code)
    except fixes.UnknownFindingCode as e:
        if e.suggestion:
            raise UserError(str(e)) from None
        raise UserError(f"{e}: no check reports it (stordoc's codes: docs/checks.md; "
                        f"Ceph's own are CEPH_HEALTH findings on 'ceph CODE': {ceph_hint})"
                        ) from None


def env_from_args(args: argparse.Namespace) -> Env:
    """The settings and the Env. Their imports (the engine, Swift, the journal: about a
    thousand modules, objects that live as long as the process) run with the cyclic
    garbage collector paused, and the first time they are then moved to its permanent
    generation (``gc.freeze``), so that no collection walks them again: two full
    collections of 100k objects during a ``check`` otherwise."""
    global _frozen
    collecting = gc.isenabled()
    gc.disable()
    try:
        from core.env import Env
        from core.settings import load_settings

        term = term_of(args)
        env = Env(load_settings(getattr(args, "config", None),
                                notice=term.note),
                  term=term)
    finally:
        if collecting:
            gc.enable()
    if not _frozen:
        gc.freeze()
        _frozen = True
    return env


def load_snapshot(directory: str, only: list[str] | None = None) -> Replay:
    """``--from DIR`` of check and tui: the snapshot's diagnosis, or one line and exit 64
    for anything it cannot take."""
    from core.errors import UserError
    from core.service.snapshots import load
    from storage.snapshot import SnapshotError

    try:
        return load(directory, only)
    except SnapshotError as e:
        raise UserError(f"snapshot {directory}: {e}") from None
