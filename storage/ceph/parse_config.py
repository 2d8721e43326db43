"""Pure parsers of Ceph's settings: ``config get`` (one value), ``config dump`` (the
monitors' configuration database: what someone set centrally) and ``config show osd.N``
(what one daemon runs with, and where each value came from)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.ceph.parse import as_list, as_map
from storage.model import ConfigSetting, RunningConfig


def parse_config_value(v: Any) -> str | None:
    """``config get`` answers a bare value, a string, or ``{"name": value}``."""
    if v is None:
        return None
    if isinstance(v, Mapping):
        if len(v) == 1:
            return str(next(iter(v.values())))
        return None
    return str(v).strip()


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v).strip()


def parse_config_dump(d: Any) -> tuple[ConfigSetting, ...]:
    """``config dump``: a list of ``{section, name, value, mask, ...}`` (Octopus through
    Reef); ``section`` is ``global``, ``osd``, ``osd.3``, ``client.rgw`` ...."""
    out = []
    for e in as_list(d):
        if not isinstance(e, Mapping) or not e.get("name"):
            continue
        out.append(ConfigSetting(name=str(e["name"]), value=_value(e.get("value", "")),
                                 section=str(e.get("section", "")), source="mon",
                                 mask=str(e.get("mask") or "")))
    return tuple(out)


def parse_config_show(daemon: str, d: Any) -> RunningConfig | None:
    """``config show DAEMON``: the daemon's non-default settings with their ``source``
    (``file`` = its ceph.conf, ``mon`` = the configuration database, ``cmdline``,
    ``override``, ``default``). Pacific and Reef answer a list of ``{name, value,
    source, overrides}``; a mapping ``name -> value`` or ``name -> {value, source}`` is read too.
    None when the answer is neither (not read)."""
    settings: dict[str, ConfigSetting] = {}
    if isinstance(d, list):
        for e in d:
            if isinstance(e, Mapping) and e.get("name"):
                name = str(e["name"])
                over = tuple((str(as_map(o).get("source", "")), _value(as_map(o).get("value", "")))
                             for o in as_list(e.get("overrides")) if isinstance(o, Mapping))
                settings[name] = ConfigSetting(name, _value(e.get("value", "")), daemon,
                                               str(e.get("source", "")), overrides=over)
    elif isinstance(d, Mapping):
        for name, v in d.items():
            m = as_map(v)
            value = m.get("value", "") if m else v
            settings[str(name)] = ConfigSetting(str(name), _value(value), daemon,
                                                str(m.get("source", "")) if m else "")
    else:
        return None
    return RunningConfig(daemon, settings)
