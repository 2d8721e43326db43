"""Capture the command tables of a running lab's Ceph (``get_command_descriptions``, what
the ``ceph`` CLI validates every command against) into ``checks/ceph_cmdtables/<release>.json``.

One file per release: the monitor's table (``ceph X``, the manager's commands with it),
the tables ``ceph tell osd.N|mon.ID|mgr`` validate against, and the admin sockets'
(``ceph daemon osd.N|mon.ID|mgr.ID``). Each command keeps its signature, permission and
flags (the help texts are left out: nothing validates against them).

    python -m lab.capture_commands --dir /var/tmp/stordoc-lab [--out checks/ceph_cmdtables]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lab.core import Lab

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "checks" / "ceph_cmdtables"
TIMEOUT = 30


def _compact(raw: bytes) -> dict[str, Any]:
    """``{"cmd000": {"sig": [...], "perm": "r", "flags": 0}, ...}`` without help texts."""
    table = json.loads(raw)
    return {k: {f: v[f] for f in ("sig", "perm", "flags") if f in v}
            for k, v in sorted(table.items())}


def capture(lab: Lab) -> dict[str, Any]:
    import rados
    from ceph_daemon import admin_socket

    conf = str(lab.base / "ceph" / "ceph.conf")
    run = lab.base / "ceph" / "run"
    gcd = json.dumps({"prefix": "get_command_descriptions"})
    c = rados.Rados(conffile=conf)
    c.connect(timeout=TIMEOUT)
    try:
        def ok(what: str, r: tuple[int, bytes, str]) -> bytes:
            if r[0] != 0:
                raise RuntimeError(f"{what}: {r[0]} {r[2]}")
            return r[1]

        ret, out, err = c.mon_command(json.dumps({"prefix": "version", "format": "json"}),
                                      b"", timeout=TIMEOUT)
        version = json.loads(out)["version"] if ret == 0 else "?"
        mon = _compact(ok("mon", c.mon_command(gcd, b"", timeout=TIMEOUT)))
        tell = {
            "mon": _compact(ok("tell mon.a", c.mon_command(gcd, b"", timeout=TIMEOUT,
                                                           target="a"))),
            "osd": _compact(ok("tell osd.0", c.osd_command(0, gcd, b"", timeout=TIMEOUT))),
            "mgr": _compact(ok("tell mgr", c.mgr_command(gcd, b"", timeout=TIMEOUT))),
        }
    finally:
        c.shutdown()
    daemon = {kind: _compact(admin_socket(str(run / f"ceph-{name}.asok"),
                                          "get_command_descriptions"))
              for kind, name in (("osd", "osd.0"), ("mon", "mon.a"), ("mgr", "mgr.x"))}
    return {"release": lab.release, "version": version, "mon": mon, "tell": tell,
            "daemon": daemon}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="the running lab's base directory")
    ap.add_argument("--out", default=str(OUT), help=f"directory (default {OUT})")
    a = ap.parse_args(argv)
    lab = Lab(a.dir)
    if not lab.state_path.exists():
        print(f"capture_commands: no lab under {a.dir} (stordoc lab up first)",
              file=sys.stderr)
        return 2
    doc = capture(lab)
    out = Path(a.out) / f"{lab.release}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")
    print(f"{out}: {doc['version']}: {len(doc['mon'])} mon commands, "
          + ", ".join(f"tell {k} {len(v)}" for k, v in doc["tell"].items()) + ", "
          + ", ".join(f"daemon {k} {len(v)}" for k, v in doc["daemon"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
