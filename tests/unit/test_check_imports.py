"""Issue 39.7: what a check loads leaves out Swift's library and the runbook machinery.

A fresh interpreter (this test process has imported everything already) imports what
``stordoc check`` imports (the Env, the Service, the check command, the collectors, every
check), makes a ``Service`` and reads the lab's real rings and builders with
``storage.swift.read_ring`` (what the Swift collector does), then lists ``sys.modules``.
Swift's ``swift``/``eventlet``/``pkg_resources`` come only with what writes rings (the ring
runbooks, ``storage.swiftlib``); the runbooks only with a plan. Nothing here measures
time (``benchmarks/cli_startup.py`` does).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "swift" / "healthy"

NOT_IN_A_CHECK = ("swift", "eventlet", "pkg_resources", "storage.swiftlib", "runbooks.api",
                  "runbooks.catalog", "runbooks.execute", "core.service.actions", "numpy")

PROBE = textwrap.dedent("""
    import json, sys
    import checks.catalog, storage.collect, stordoc.commands.check, core.env
    from storage.swift import read_ring, ring_kinds
    from core.env import Env
    from core.service import Service
    from core.settings import Settings

    ring_dir = sys.argv[1]
    rings = [read_ring(ring_dir, k) for k in ring_kinds(ring_dir)]
    svc = Service(Env(Settings(journal=":memory:", clusters={})))
    print(json.dumps({
        "rings": [[r.kind, r.error, r.part_power, len(r.devices), r.builder_matches_ring,
                   r.balance] for r in rings],
        "checks": len(checks.catalog.finding_codes()),
        "service": type(svc).__name__,
        "modules": sorted(sys.modules),
    }))
""")


def test_a_check_loads_neither_swift_nor_the_runbooks() -> None:
    p = subprocess.run([sys.executable, "-c", PROBE, str(FIX)], capture_output=True,
                       text=True, cwd=ROOT, check=False, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    # the rings were really read (without Swift): every kind, devices, builder compared
    assert [r[0] for r in got["rings"]] == ["account", "container", "object"]
    assert all(r[1] is None and r[2] > 0 and r[3] > 0 and r[4] is True
               and r[5] is not None for r in got["rings"]), got["rings"]
    assert got["checks"] > 0 and got["service"] == "Service"
    loaded = set(got["modules"])
    assert sorted(m for m in NOT_IN_A_CHECK if m in loaded) == []
    assert not any(m.startswith(("swift.", "eventlet.")) for m in loaded)


NUMPY_PROBE = textwrap.dedent("""
    import json, sys
    from storage.journal import Journal
    j = Journal(sys.argv[1])
    before = "numpy" in sys.modules
    import numpy as np
    j.db["t"].insert({"f64": np.float64(1.5), "f32": np.float32(2.5), "i64": np.int64(3),
                      "u8": np.uint8(4), "i": 5, "s": "x"})
    print(json.dumps({"before": before, "types": {c.name: c.type for c in j.db["t"].columns},
                      "rows": j.db["t"].count}))
""")


def test_the_journal_types_numpy_values_as_sqlite_utils_does(tmp_path: Path) -> None:
    """sqlite-utils is imported without numpy (storage.sqlite_lib), yet a numpy value a
    benchmark records later gets the column type sqlite-utils gives it with numpy."""
    p = subprocess.run([sys.executable, "-c", NUMPY_PROBE, str(tmp_path / "j.db")],
                       capture_output=True, text=True, cwd=ROOT, check=False, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["before"] is False
    assert got["types"] == {"f64": "REAL", "f32": "REAL", "i64": "INTEGER", "u8": "INTEGER",
                            "i": "INTEGER", "s": "TEXT"}
    assert got["rows"] == 1


DISPERSION_PROBE = textwrap.dedent("""
    import json, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from storage.dispersion import sample
    from storage.targets import SwiftTarget

    class Proxy(BaseHTTPRequestHandler):
        # Swift's v1 auth, then: the dispersion container does not exist (404)
        def do_GET(self):
            if self.path == "/auth/v1.0":
                ok = (self.headers.get("X-Auth-User"), self.headers.get("X-Auth-Key")) \\
                    == ("test:tester", "testing")
                self.send_response(200 if ok else 401)
                if ok:
                    self.send_header("X-Storage-Url", f"http://127.0.0.1:{port}/v1/AUTH_test")
                    self.send_header("X-Auth-Token", "AUTH_tk1")
            else:
                self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    before = sorted(m for m in ("swiftclient", "pkg_resources") if m in sys.modules)
    t = SwiftTarget(auth_url=f"http://127.0.0.1:{port}/auth/v1.0", user="test:tester",
                    key="testing", recon_timeout_s=5)
    d = sample(t, {}, 0.0)
    srv.shutdown()
    import swiftclient
    print(json.dumps({"populated": d.populated, "account": d.account, "error": d.error,
                      "before": before, "version": swiftclient.__version__,
                      "pkg_resources": "pkg_resources" in sys.modules,
                      "swiftclient": "swiftclient.client" in sys.modules}))
""")


def test_the_dispersion_sample_uses_swiftclient_without_pkg_resources() -> None:
    """The check's dispersion sample goes through python-swiftclient (v1 auth against a
    real loopback server), yet ``pkg_resources`` (~0.5 s of CPU that swiftclient's version
    module spends on its own version string) is not imported (storage.swiftclient_lib)."""
    from importlib import metadata

    p = subprocess.run([sys.executable, "-c", DISPERSION_PROBE], capture_output=True,
                       text=True, cwd=ROOT, check=False, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["before"] == []  # nothing of it loaded before the sample
    assert (got["populated"], got["account"], got["error"]) == (False, "AUTH_test", None)
    assert got["swiftclient"] is True
    assert got["version"] == metadata.version("python-swiftclient")
    assert got["pkg_resources"] is False
