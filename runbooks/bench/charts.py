"""Charts of results and comparisons: PNG through matplotlib's Agg backend (for Slack and
files) and text through plotext (for the CLI and the TUI). Both take the same inputs."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from runbooks.bench.model import BenchResult
from runbooks.bench.stats import Comparison


def _full(sets: list[tuple[str, list[dict[str, float]]]]
          ) -> list[tuple[str, list[dict[str, float]]]]:
    """Drop the partial last second (its rate is extrapolated from a sliver of time)."""
    return [(label, [p for p in ser if not p.get("partial")]) for label, ser in sets]


def _series_sets(obj: Any) -> tuple[str, list[tuple[str, list[dict[str, float]]]],
                                    Comparison | None]:
    """(title, [(label, series)], comparison) for a result, a list of them or a comparison."""
    if isinstance(obj, Comparison):
        sets = [(f"baseline #{i + 1}", s) for i, s in enumerate(obj.base_series)]
        sets += [(f"new #{i + 1}", s) for i, s in enumerate(obj.new_series)]
        return (f"{obj.workload}: {obj.verdict} against {obj.baseline}", _full(sets), obj)
    if isinstance(obj, BenchResult):
        return obj.headline(), _full([(f"{obj.workload} rep {obj.rep}", obj.series)]), None
    if hasattr(obj, "results"):
        obj = obj.results
    if isinstance(obj, Sequence):
        items = [r for r in obj if isinstance(r, BenchResult)]
        title = f"{items[0].kind} benchmark {items[0].group_id}" if items else "benchmark"
        return title, _full([(f"{r.workload} rep {r.rep}", r.series) for r in items]), None
    raise TypeError(f"cannot chart {type(obj).__name__}")


def is_baseline(label: str) -> bool:
    return label.startswith("baseline")


def text_sets(sets: list[tuple[str, list[dict[str, float]]]], most: int = 8
              ) -> list[tuple[str, list[dict[str, float]]]]:
    """What a terminal chart can show: the latest baseline runs and the new ones, never
    the baseline alone (eight baseline runs used to push every new run off the chart)."""
    base = [x for x in sets if is_baseline(x[0])]
    new = [x for x in sets if not is_baseline(x[0])]
    keep_new = new[:max(most // 2, most - len(base))]
    return base[-(most - len(keep_new)):] + keep_new if base else keep_new


def chart_png(obj: Any, path: str) -> str:
    """Throughput and latency over time (and metric changes for a comparison) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title, sets, comp = _series_sets(obj)
    rows = 3 if comp is not None else 2
    fig, axes = plt.subplots(rows, 1, figsize=(9, 3 * rows), constrained_layout=True)
    ax_t, ax_l = axes[0], axes[1]
    for label, ser in sets:
        if not ser:
            continue
        t = [p["t"] for p in ser]
        style = "--" if is_baseline(label) else "-"
        ax_t.plot(t, [p["mb_s"] for p in ser], style, label=label)
        ax_l.plot(t, [p["lat_ms"] for p in ser], style, label=label)
    ax_t.set_ylabel("MB/s")
    ax_t.set_title(title, fontsize=10)
    ax_l.set_ylabel("latency ms")
    ax_l.set_xlabel("seconds")
    for ax in (ax_t, ax_l):
        ax.grid(alpha=0.3)
        if len(sets) <= 12 and any(s for _, s in sets):
            ax.legend(fontsize=7)
    if comp is not None:
        ax = axes[2]
        ms = [m for m in comp.metrics if m.change is not None]
        names = [m.metric for m in ms]
        vals = [(m.change or 0) * 100 for m in ms]
        colors = ["tab:green" if m.verdict == "faster" else "tab:red" if m.verdict == "slower"
                  else "tab:gray" for m in ms]
        ax.barh(names, vals, color=colors)
        for m, y in zip(ms, range(len(ms))):
            ax.plot([m.up * 100, m.up * 100], [y - 0.4, y + 0.4], "k:")
            ax.plot([-m.down * 100, -m.down * 100], [y - 0.4, y + 0.4], "k:")
        ax.axvline(0, color="black", lw=0.8)
        ax.set_xlabel("change % (dotted: threshold)")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


_TEXT_LOCK = threading.Lock()  # plotext draws on one module-level figure


def chart_text(obj: Any, width: int = 100, height: int = 24, color: bool = False,
               with_verdict: bool = True) -> str:
    """The same charts drawn with plotext (6.x API), as a string (no terminal needed)."""
    import plotext

    title, sets, comp = _series_sets(obj)
    with _TEXT_LOCK:
        f = plotext.figure
        f.clear()
        f.plot_size(width, height)
        f.subplots(2, 1)
        top = f.subplot(1, 1)
        top.title(title[:width - 4])
        bottom = f.subplot(2, 1)
        for label, ser in text_sets(sets):
            if not ser:
                continue
            t = [p["t"] for p in ser]
            for ax, key in ((top, "mb_s"), (bottom, "lat_ms")):
                sig = ax.signal(t, [p[key] for p in ser])
                if not is_baseline(label):  # baseline runs as dots, the new ones as lines
                    sig = sig.lines()
                ax.draw(sig.label(label[:18]))
        top.label("MB/s", axis=1)
        bottom.label("latency ms", axis=1)
        bottom.label("seconds", axis=0)
        out = str(f.build().string(colorless=not color))
        f.clear()
    if comp is not None and with_verdict:
        out += "\n" + "\n".join(comp.lines())
    return out
