"""Keystroke-to-screen latency of the TUI while a refresh runs in the background.

Goal: under 100 ms. The OSD screen of a synthetic 10,000-OSD cluster is on screen; a
refresh is started whose worker thread burns real CPU in Python (holding the GIL in turns,
like collecting and parsing JSON) and then builds the view rows for a new snapshot. While
it runs we press cursor keys and time each one from the key press to the first frame the
compositor renders after it (Textual's ``_display``; headless, so nothing is written).

    .venv/bin/python benchmarks/tui_keystroke_latency.py [--osds 10000] [--keys 60]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.tui_demo_data import synthetic
from tests.support.tui_backend import SnapshotBackend
from tui import screens as S
from tui.app import StordocApp


def send_key(app: StordocApp, key: str) -> None:
    """What the terminal driver does on a key press. (Pilot.press would also wait for the
    whole process to go idle, which never happens while the worker burns CPU.)"""
    from textual import events

    ev = events.Key(key, None)
    ev.set_sender(app)
    assert app._driver is not None
    app._driver.send_message(ev)


async def measure(n_osds: int, n_keys: int, work: float) -> tuple[list[float], int, int]:
    snap, findings, target = synthetic(n_osds)
    backend = SnapshotBackend(snap, findings, target, fresh=True)
    app = StordocApp(backend, refresh_s=0, clock=lambda: snap.taken_at + 5)
    frames: list[float] = []
    orig = app._display

    def display(screen: Any, renderable: Any) -> None:
        orig(screen, renderable)
        if renderable is not None:
            frames.append(time.perf_counter())

    app._display = display  # type: ignore[method-assign]
    lat: list[float] = []
    during = 0
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, S.OsdScreen)
        backend.work = work
        assert app.request_refresh(force=True)
        keys = ["down", "down", "down", "pagedown", "up", "up", "pageup", "down"]
        i = 0
        while app.state.refreshing and i < n_keys:
            busy = app.state.refreshing
            n_before = len(frames)
            t0 = time.perf_counter()
            send_key(app, keys[i % len(keys)])
            deadline = time.monotonic() + 10
            while len(frames) == n_before and time.monotonic() < deadline:
                await asyncio.sleep(0.0005)
            if len(frames) > n_before:
                lat.append((frames[n_before] - t0) * 1000)
                during += int(busy)
            i += 1
        refreshes = backend.calls
        await app.workers.wait_for_complete()
    return lat, during, refreshes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--osds", type=int, default=10_000)
    ap.add_argument("--keys", type=int, default=200, help="at most this many keys")
    ap.add_argument("--work", type=float, default=4.0,
                    help="seconds of CPU the background refresh burns")
    a = ap.parse_args()
    lat, during, _ = asyncio.run(measure(a.osds, a.keys, a.work))
    lat_sorted = sorted(lat)
    p95 = lat_sorted[max(0, int(len(lat_sorted) * 0.95) - 1)]
    print(f"keystroke -> frame, {a.osds} OSDs, {len(lat)} keys (all pressed while the "
          f"refresh worker ran): median {statistics.median(lat):.1f} ms, p95 {p95:.1f} ms, "
          f"max {max(lat):.1f} ms (goal < 100 ms)")


if __name__ == "__main__":
    main()
