"""argparse types for every number and name the CLI takes: ASCII digits only, finite,
inside a sane range. A bad value is argparse's one-line error and exit 64, before any
settings are read or anything is touched (``inf``, ``nan``, ``1e400``, ``10**20``, ``٢``
all end here instead of deep in a benchmark)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

_INT_RE = re.compile(r"\A-?[0-9]{1,40}\Z", re.ASCII)
_FLOAT_RE = re.compile(r"\A-?(?:[0-9]{1,15}(?:\.[0-9]{0,9})?|\.[0-9]{1,9})\Z", re.ASCII)


def int_range(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        t = text.strip()
        if not _INT_RE.match(t):
            raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}")
        v = int(t)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {hi}, not {v}")
        return v

    parse.__name__ = "integer"
    return parse


def float_range(lo: float, hi: float, *, lo_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        t = text.strip()
        if not _FLOAT_RE.match(t):
            raise argparse.ArgumentTypeError(f"not a plain decimal number: {text[:40]!r}")
        v = float(t)
        if not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
            low = f"above {lo:g}" if lo_open else f"at least {lo:g}"
            raise argparse.ArgumentTypeError(f"must be {low} and at most {hi:g}, not {t}")
        return v

    parse.__name__ = "number"
    return parse


_DUR_RE = re.compile(r"\A([0-9]{1,9})([smhd]?)\Z", re.ASCII)
_DUR_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, lo_s: float, hi_s: float) -> float:
    """``90``, ``90s``, ``5m``, ``4h``, ``2d`` to seconds within [lo_s, hi_s], else
    ``ValueError`` with one line (shared by the CLI and the Slack grammar)."""
    t = text.strip().lower()
    m = _DUR_RE.match(t)
    if not m:
        raise ValueError(f"not a duration like 30s, 5m, 4h or 2d: {text[:40]!r}")
    v = float(int(m.group(1)) * _DUR_UNIT[m.group(2)])
    if not lo_s <= v <= hi_s:
        raise ValueError(f"must be between {_fmt_s(lo_s)} and {_fmt_s(hi_s)}, not {t}")
    return v


def _fmt_s(s: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{int(s // n)}{unit}"
    return f"{s:g}s"


def duration(lo_s: float, hi_s: float) -> Callable[[str], float]:
    """argparse type for ``parse_duration``."""
    def parse(text: str) -> float:
        try:
            return parse_duration(text, lo_s, hi_s)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = "duration"
    return parse


def plain_name(text: str) -> str:
    """A pool or container name stordoc may create: letters, digits, ``. _ -``; no ``/``."""
    from runbooks.model import Refused
    from runbooks.targets import new_pool_name

    try:
        return new_pool_name(text)
    except Refused as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def check_strings(ns: argparse.Namespace) -> str | None:
    """A NUL or another control character in any string option: the message, else None."""
    for k, v in vars(ns).items():
        vals = v if isinstance(v, list | tuple) else [v]
        for x in vals:
            if isinstance(x, str) and any(ord(c) < 32 or ord(c) == 127 for c in x):
                return f"--{k.replace('_', '-')}: control characters are not allowed"
            if isinstance(x, str) and len(x) > 4096:
                return f"--{k.replace('_', '-')}: longer than 4096 characters"
    return None
