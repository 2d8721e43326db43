"""Issue 10.1: after importing everything stordoc imports (Swift's ring module included),
logging must use real OS-thread primitives, or threads that log deadlock the bot."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

PROBE = textwrap.dedent("""
    import logging, threading, sys
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)  # a handler made BEFORE swift
    import storage.swift, runbooks.swift, storage.collect, checks.catalog
    import bot.server, bot.app, tui.app, tui.backend, stordoc.cli, stordoc.commands.bot
    import swift.common.utils  # and directly, as a third-party module might
    from storage.swiftlib import is_real_lock
    assert logging.threading is threading, logging.threading
    assert is_real_lock(logging._lock), type(logging._lock)
    late = logging.StreamHandler(sys.stderr)  # a handler made AFTER swift
    logging.getLogger().addHandler(late)
    for ref in logging._handlerList:
        h = ref()
        assert h is None or h.lock is None or is_real_lock(h.lock), (h, type(h.lock))
    done = []
    def work(i):
        log = logging.getLogger(f"t{i}")
        for n in range(200):
            log.info("thread %d line %d", i, n)
        done.append(i)
    ts = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(8)]
    for t in ts: t.start()
    for t in ts: t.join(30)
    print("finished", len(done))
""")


def test_logging_keeps_real_locks_after_every_import() -> None:
    p = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "finished 8" in p.stdout, (p.stdout, p.stderr[-2000:])
    assert "greenlet.error" not in p.stderr


def test_without_the_fix_swift_import_makes_green_locks() -> None:
    """The probe is meaningful: a bare Swift import does swap logging's primitives."""
    code = ("import logging, threading, swift.common.utils;"
            "print(logging.threading is threading)")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.stdout.strip() == "False", p.stderr[-2000:]
