"""Settings: one typed model read from a TOML file shaped like ``config.example.toml``.

pydantic validates it (unknown keys are refused, so a typo is an error, not a silently
ignored option) and ``SettingsError`` names the bad key in dotted form. Secrets are read
from the environment or from files named here, never written in the file itself (the
lab's generated config is the one exception: it lives outside the repo).

Here: where the file is found (``--config``, $STORDOC_CONFIG, the default paths, a running
default lab) and how a bad one is worded. The models are in ``core.settings_model``
(top level, front ends, runbooks, bench) and ``core.settings_clusters`` (the cluster
tables); the names used elsewhere are importable from here.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.settings_clusters import ClusterSettings as ClusterSettings
from core.settings_clusters import Secret as Secret
from core.settings_clusters import ThresholdSettings as ThresholdSettings
from core.settings_model import AlertSettings as AlertSettings
from core.settings_model import Role as Role
from core.settings_model import Settings as Settings
from core.settings_model import SettingsError as SettingsError
from core.settings_model import SlackSettings as SlackSettings
from storage.safefile import FileRefused, read_text

DEFAULT_PATHS = (
    Path(os.environ.get("STORDOC_CONFIG", "")) if os.environ.get("STORDOC_CONFIG") else None,
    Path.home() / ".config" / "stordoc" / "config.toml",
    Path("/etc/stordoc/config.toml"),
)
# The running default lab, as a pointer file {"config": PATH, "pid": MON_PID}: written by
# `stordoc lab up` and removed by `stordoc lab down` (stordoc/commands/lab.py, the one door
# into lab/; the product never imports the lab). /run is emptied at boot, and a pointer
# whose monitor is gone is not followed.
LAB_POINTER = Path("/run/stordoc/lab.json")


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def parse_settings(data: dict[str, Any], source: str = "<settings>") -> Settings:
    try:
        s = Settings.model_validate({**data, "source": source})
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            key = _loc(err["loc"])
            if err["type"] == "extra_forbidden":
                msgs.append(f"{key}: unknown key")
            elif err["type"] == "missing":
                msgs.append(f"{key}: required key missing")
            else:
                msgs.append(f"{key}: {err['msg']}")
        raise SettingsError(f"{source}: " + "; ".join(msgs)) from None
    if s.default_cluster and s.default_cluster not in s.clusters:
        raise SettingsError(
            f"{source}: default_cluster: {s.default_cluster!r} is not a configured cluster")
    return s


MAX_CONFIG_BYTES = 1 << 20  # a config of many clusters is a few KiB


def _read(p: Path) -> Settings:
    if p.is_dir():
        raise SettingsError(f"{p}: is a directory, not a config file")
    try:
        data = tomllib.loads(read_text(p, MAX_CONFIG_BYTES))
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"{p}: not valid TOML: {e}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise SettingsError(f"{p}: not valid TOML: nested too deeply") from None
    except FileRefused as e:
        raise SettingsError(str(e)) from None
    except PermissionError:
        raise  # the CLI says "permission denied: FILE" with its own exit status
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"{p}: cannot read: {e}") from None
    return parse_settings(data, str(p))


def running_lab_config() -> Path | None:
    """The config of a default lab that runs now (``stordoc lab up`` without --dir)."""
    try:
        data = json.loads(read_text(LAB_POINTER, 4096))
        config, pid = Path(str(data["config"])), int(data["pid"])
    except (OSError, FileRefused, ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    if pid <= 0 or not config.is_file():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return config


def announce_lab(config: Path, mon_pid: int, pointer: Path | None = None) -> None:
    """Say where a running default lab's config is (best effort: a lab still runs
    without it, ``--config`` then names its config)."""
    pointer = pointer or LAB_POINTER
    try:
        pointer.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        tmp = pointer.with_name(pointer.name + ".tmp")
        tmp.write_text(json.dumps({"config": str(config), "pid": mon_pid}))
        tmp.replace(pointer)
    except OSError:
        pass


def forget_lab(pointer: Path | None = None) -> None:
    (pointer or LAB_POINTER).unlink(missing_ok=True)


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def load_settings(path: str | os.PathLike[str] | None = None,
                  notice: Callable[[str], None] = _say) -> Settings:
    """Read settings from ``path``, $STORDOC_CONFIG, ~/.config/stordoc or /etc/stordoc, or
    else a running default lab's config (``notice`` says so)."""
    if path is not None and not os.fspath(path):
        raise SettingsError("--config: empty file name")
    if path:
        p = Path(path)
        if not p.exists():
            raise SettingsError(f"{path}: no such config file")
        return _read(p)
    env = os.environ.get("STORDOC_CONFIG")
    if env is not None and not env.strip():
        # set but empty: an error, never "use whatever other config is around"
        raise SettingsError("$STORDOC_CONFIG is set but empty: name a config file or "
                            "unset it")
    if env:
        if not Path(env).exists():
            raise SettingsError(f"{env} (named by $STORDOC_CONFIG): no such config file")
        return _read(Path(env))
    for p in DEFAULT_PATHS[1:]:
        if p is not None and p.exists():
            return _read(p)
    lab = running_lab_config()
    if lab is not None:
        notice(f"stordoc: no config file; using the running lab's config {lab}")
        return _read(lab)
    raise SettingsError(
        "no config file: pass --config FILE, set STORDOC_CONFIG, or write "
        f"{DEFAULT_PATHS[1]} (see config.example.toml); a lab's config is in its "
        "directory ('stordoc lab status --dir DIR' names it; 'stordoc lab up' starts one)")
