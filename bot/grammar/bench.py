"""``bench`` options from chat: ``key=value`` words to typed ``BenchOptions`` fields.

A bad value is refused when the command is parsed, not in the middle of a run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from bot.grammar.words import NAME_RE, GrammarError, show, suggest

# Numbers from chat are ASCII digits with fixed bounds: no inf/nan/exponent, no Unicode
# digits (int() takes them, `\d` matches them), nothing that overflows a float or a C int.

_OPT_RE = re.compile(r"([a-z][a-z0-9_]{0,31})=([A-Za-z0-9._/,-]{1,64})")
_UINT_RE = re.compile(r"[0-9]{1,9}")
_SECONDS_RE = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,3})?")
_SIZE_RE = re.compile(r"([0-9]{1,7})([kmg]?)(?:i?b)?", re.IGNORECASE)
_MIX_RE = re.compile(r"([0-9]{1,3})/([0-9]{1,3})/([0-9]{1,3})")
_MODE_RE = re.compile(r"[a-z][a-z0-9_-]{0,15}")
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
MAX_BENCH_SECONDS = 3600.0
MAX_BENCH_SIZE = 1024 ** 3  # 1 GiB per object: more is no "quick" benchmark
_INT_BOUNDS = {"concurrency": (1, 1024), "repeat": (1, 100), "ops": (1, 10_000_000)}

# chat word -> BenchOptions field
BENCH_KEYS: Mapping[str, str] = {
    "seconds": "duration_s", "duration": "duration_s", "concurrency": "concurrency",
    "threads": "concurrency", "size": "size", "size_max": "size_max", "modes": "modes",
    "mode": "modes", "repeat": "repeat", "ops": "ops", "pool": "pool",
    "container": "container", "mix": "mix", "engine": "engine"}

BenchValue = int | float | str | tuple[str, ...] | tuple[int, int, int]


def bench_options(words: Sequence[str]) -> dict[str, str]:
    """The ``key=value`` words after ``bench KIND``, each value checked now (kept as text:
    the backend types them again with ``bench_option``)."""
    opts: dict[str, str] = {}
    for t in words:
        m = _OPT_RE.fullmatch(t)
        if not m:
            raise GrammarError(f"bench option `{show(t)}` must look like key=value "
                               "(e.g. `seconds=10`)")
        if m.group(1) in opts:
            raise GrammarError(f"bench option `{m.group(1)}` given twice")
        bench_option(m.group(1), m.group(2))  # refuse a bad value now, not mid-run
        opts[m.group(1)] = m.group(2)
    return opts


def bench_option(key: str, value: str) -> tuple[str, BenchValue]:
    """One ``key=value`` of ``bench``: (BenchOptions field, typed value) or a refusal."""
    field_ = BENCH_KEYS.get(key)
    if field_ is None:
        raise GrammarError(f"unknown bench option `{show(key)}`{suggest(key, BENCH_KEYS)} "
                           f"(options: {', '.join(sorted(BENCH_KEYS))})")
    shown = f"`{show(key)}={show(value)}`"
    if field_ == "duration_s":
        if not _SECONDS_RE.fullmatch(value) or not 0 < float(value) <= MAX_BENCH_SECONDS:
            raise GrammarError(f"bench option {shown}: seconds are a number of seconds "
                               f"above 0 and at most {MAX_BENCH_SECONDS:.0f} (e.g. `10`)")
        return field_, float(value)
    if field_ in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[field_]
        if not _UINT_RE.fullmatch(value) or not lo <= int(value) <= hi:
            raise GrammarError(f"bench option {shown}: a whole number {lo}..{hi}")
        return field_, int(value)
    if field_ in ("size", "size_max"):
        m = _SIZE_RE.fullmatch(value)
        n = int(m.group(1)) * _UNITS[m.group(2).lower()] if m else 0
        if not 0 < n <= MAX_BENCH_SIZE:
            raise GrammarError(f"bench option {shown}: a size above 0 and at most 1G, "
                               "in bytes or with k, M, G (e.g. `4k`, `4M`)")
        return field_, n
    if field_ == "mix":
        mm = _MIX_RE.fullmatch(value)
        parts = tuple(int(x) for x in mm.groups()) if mm else ()
        if len(parts) != 3 or sum(parts) != 100:
            raise GrammarError(f"bench option {shown}: READ/WRITE/DELETE percentages "
                               "that add up to 100 (e.g. `80/15/5`)")
        return field_, (parts[0], parts[1], parts[2])
    if field_ == "modes":
        modes = tuple(value.split(","))
        if not all(_MODE_RE.fullmatch(x) for x in modes):
            raise GrammarError(f"bench option {shown}: mode names separated by commas "
                               "(e.g. `write,seq`)")
        return field_, modes
    if not NAME_RE.fullmatch(value):  # pool, container, engine
        raise GrammarError(f"bench option {shown}: not a valid {key} name")
    return field_, value
