"""Issue 24: ``stordoc --help``, argument parsing and usage errors load no heavy library.

Each probe runs in a fresh interpreter (this test process has imported everything
already) and lists the heavy modules in ``sys.modules`` afterwards. A command module that
imports Swift, the Env or rich at its top again makes these fail; nothing here measures
time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.conftest import ROOT

# what the parser must never load; the handlers import them
HEAVY = ("swift", "eventlet", "textual", "slack_bolt", "slack_sdk", "fabric", "paramiko",
         "invoke", "rados", "rbd", "matplotlib", "scipy", "plotext", "pydantic",
         "sqlite_utils", "numpy", "requests", "rich", "bot", "tui", "runbooks")

# one argv per subcommand (and some sub-subcommands), parsed without running anything
ARGVS = [
    ["check", "--json", "--config", "/nonexistent.toml"],
    ["check", "--all", "--no-host-facts", "--only", "OSD_DOWN,OSD_DOWN_OUT"],
    ["check", "--cluster", "lab", "--no-record"],
    ["mute", "OSD_DOWN_OUT", "osd.1", "--for", "4h", "--reason", "disk swap"],
    ["mute", "--list"],
    ["unmute", "OSD_DOWN_OUT", "osd.1", "--cluster", "lab"],
    ["runbooks", "--json"],
    ["plan", "osd-remount", "osd.1", "-o", "headroom=0.7", "--cluster", "lab"],
    ["fix", "--finding", "OSD_DOWN", "--entity", "osd.1", "--yes", "--follow", "5m"],
    ["audit", "--last", "5", "--json"],
    ["locks", "--clear", "osd.1", "--force"],
    ["bench", "rados", "--duration", "2", "-t", "4", "--mode", "write,seq", "--compare"],
    ["bench", "swift", "--mix", "80/15/5", "--clients", "node1,node2", "--steady"],
    ["bench", "rbd", "--rwmixread", "50", "--json"],
    ["bench", "limits", "--host", "node1", "--mode", "disk"],
    ["bench", "history", "--kind", "rados", "--limit", "5"],
    ["bench", "baseline", "set", "before", "--group", "g1"],
    ["bench", "show", "g1", "--compare", "before"],
    ["bot", "--http", "--port", "3001", "--watch", "lab", "--every", "30s"],
    ["watch", "--every", "30s", "--count", "1", "--no-slack"],
    ["tui", "--read-only", "--refresh", "5"],
    ["lab", "status", "--dir", "/nonexistent", "--json"],
    ["lab", "down", "--dir", "/nonexistent", "--port-base", "20000"],
    ["swift", "dispersion", "report", "--json"],
    ["swift", "dispersion", "populate", "--objects", "4", "--yes"],
    ["--config", "/nonexistent.toml", "check"],
]

# usage errors: the parser's error path (one line on stderr through the Terminal, which
# is rich: the only heavy-ish library allowed there; exit 64)
BAD = [
    ["check", "--bogus"],
    ["bench", "rados", "-t", "0"],
    ["mute", "X", "--for", "forever"],
    ["nosuchcommand"],
    ["lab", "break", "nosuchscenario"],
]

PROBE = textwrap.dedent("""
    import json, sys
    import stordoc.cli

    argvs, bad = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    parser = stordoc.cli.build_parser()
    funcs = []
    for argv in argvs:
        funcs.append(parser.parse_args(argv).func.__name__)
    codes = []
    try:
        stordoc.cli.main(["--help"])
    except SystemExit as e:
        codes.append(e.code)
    parsed = sorted(sys.modules)
    for argv in bad:
        try:
            stordoc.cli.main(argv)
        except SystemExit as e:
            codes.append(e.code)
    print("@@" + json.dumps({"funcs": funcs, "codes": codes, "parsed": parsed,
                             "modules": sorted(sys.modules)}))
""")


def _probe(code: str, *args: str) -> dict:
    p = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    line = next(x for x in p.stdout.splitlines() if x.startswith("@@"))
    return json.loads(line[2:])


def _heavy(modules: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


def test_parsing_every_subcommand_loads_no_heavy_library() -> None:
    got = _probe(PROBE, json.dumps(ARGVS), json.dumps(BAD))
    assert len(got["funcs"]) == len(ARGVS)  # every argv reached its handler's name
    assert got["codes"] == [0] + [64] * len(BAD)  # --help, then the usage errors
    assert _heavy(got["parsed"]) == []
    assert _heavy(got["modules"]) == ["rich"]


def test_the_probe_sees_a_heavy_import() -> None:
    """The probe is meaningful: what a handler imports does load Swift and the rest (a
    check's handler no Swift, a plan's the runbooks and, through the ring ones, Swift)."""
    code = ("import json, sys; import core.env, core.service.app, runbooks.api;"
            "print('@@' + json.dumps({'modules': sorted(sys.modules)}))")
    heavy = _heavy(_probe(code)["modules"])
    for name in ("swift", "eventlet", "pydantic", "sqlite_utils", "requests", "rich",
                 "runbooks"):
        assert name in heavy, heavy


def test_the_check_handler_imports_the_collectors_in_the_main_thread() -> None:
    """The collectors arrive with the Env, imported by the handler in the main thread
    before collect() starts its pool; Swift (eventlet) no longer comes with them (issue
    39.7: storage.ringfile reads the rings); logging keeps real locks."""
    code = textwrap.dedent("""
        import json, logging, sys, threading
        import stordoc.cli
        from stordoc.commands.common import env_from_args
        parser = stordoc.cli.build_parser()
        args = parser.parse_args(["check", "--config", sys.argv[1]])
        before = "swift" in sys.modules
        try:
            env_from_args(args)
        except Exception:
            pass  # the settings file does not exist: the imports happened first
        after = "swift" in sys.modules
        from storage.swiftlib import is_real_lock
        print("@@" + json.dumps({"before": before, "after": after,
                                 "collect": "storage.collect" in sys.modules,
                                 "threads": threading.active_count(),
                                 "real": logging.threading is threading
                                 and is_real_lock(logging._lock)}))
    """)
    got = _probe(code, "/nonexistent/stordoc.toml")
    assert got == {"before": False, "after": False, "collect": True, "threads": 1,
                   "real": True}


def test_main_builds_the_lab_parser_only_for_lab() -> None:
    """``lab``'s options come from the lab package (scenario registry): ``main`` imports it
    only for an argv that names ``lab``; the top-level help still lists it."""
    code = textwrap.dedent("""
        import contextlib, io, json, sys
        import stordoc.cli
        out = io.StringIO()
        codes = []
        for argv in (["--help"], ["check", "--bogus"], ["lab", "break", "--help"]):
            with contextlib.redirect_stdout(out):
                try:
                    stordoc.cli.main(argv)
                except SystemExit as e:
                    codes.append(e.code)
            codes.append("lab" in sys.modules)
        print("@@" + json.dumps({"codes": codes, "help": out.getvalue()}))
    """)
    got = _probe(code)
    assert got["codes"] == [0, False, 64, False, 0, True]
    assert "a real local Ceph + Swift cluster for tests and demos" in got["help"]
    assert "--osd" in got["help"]  # lab break's options, from the scenario registry


def test_swift_import_skips_green_dns_and_leaves_the_environment_as_it_was() -> None:
    """storage.swiftlib imports Swift (eventlet) without eventlet's green DNS (dnspython),
    and the variable that says so is gone again afterwards (child processes unchanged)."""
    code = ("import json, os, sys; import storage.swiftlib;"
            "print('@@' + json.dumps({'dns': 'dns' in sys.modules,"
            " 'eventlet': 'eventlet' in sys.modules,"
            " 'env': os.environ.get('EVENTLET_NO_GREENDNS')}))")
    assert _probe(code) == {"dns": False, "eventlet": True, "env": None}


def test_exit_skips_collecting_the_modules_cycles() -> None:
    """main() makes the process's last atexit step gc.freeze(): teardown does not collect
    the cycles of every imported module (what made exit cost up to a second after check)."""
    code = textwrap.dedent("""
        import atexit, gc, sys
        # registered first, so it runs after main()'s own handler
        atexit.register(lambda: print("@@frozen", gc.get_freeze_count() > 0, flush=True))
        import stordoc.cli
        try:
            stordoc.cli.main(["--help"])
        except SystemExit:
            pass
        print("@@before", gc.get_freeze_count() == 0, flush=True)
    """)
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [x for x in p.stdout.splitlines() if x.startswith("@@")]
    assert lines == ["@@before True", "@@frozen True"], p.stdout[-2000:]
