"""bcrypt for ceph-mgr in the stordoc lab's Debian 13 root filesystem.

Debian 13's python3-bcrypt is built with PyO3, which refuses to load in a Python
subinterpreter ("PyO3 modules do not yet support subinterpreters"); ceph-mgr runs each
module in one, and ``mgr_util`` imports bcrypt at its top, so 13 mgr modules fail to load
(MGR_MODULE_DEPENDENCY; Ceph tracker 64213). Like Ceph's own later workaround, this module
keeps bcrypt's three functions and runs the real bcrypt in a child interpreter.
Installed under /usr/local (ahead of /usr/lib/python3/dist-packages on sys.path).
"""

import json
import subprocess
import sys
from typing import Any

# the child: real bcrypt, arguments and result as JSON (bytes as {"b": hex})
_CHILD = """
import json, sys
sys.path = json.loads(sys.argv[1])
import bcrypt
dec = lambda v: bytes.fromhex(v["b"]) if isinstance(v, dict) else v
r = getattr(bcrypt, sys.argv[2])(*[dec(v) for v in json.loads(sys.argv[3])])
print(json.dumps({"b": r.hex()} if isinstance(r, bytes) else r))
"""
_PATH = [p for p in sys.path if "/usr/local/" not in p]


def _call(fn: str, *args: Any) -> Any:
    enc = [{"b": a.hex()} if isinstance(a, bytes) else a for a in args]
    out = subprocess.run(["/usr/bin/python3", "-c", _CHILD, json.dumps(_PATH), fn,
                          json.dumps(enc)], capture_output=True, text=True, check=True,
                         timeout=30).stdout
    r = json.loads(out)
    return bytes.fromhex(r["b"]) if isinstance(r, dict) else r


def gensalt(rounds: int = 12, prefix: bytes = b"2b") -> bytes:
    return bytes(_call("gensalt", rounds, prefix))


def hashpw(password: bytes, salt: bytes) -> bytes:
    return bytes(_call("hashpw", password, salt))


def checkpw(password: bytes, hashed_password: bytes) -> bool:
    return bool(_call("checkpw", password, hashed_password))
