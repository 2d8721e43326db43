#!/usr/bin/env python3
"""stordoc-host: the forced command of stordoc's restricted SSH key on a storage host.

Installed on each host (``authorized_keys``: ``command="python3 /usr/local/lib/stordoc/
stordoc-host /etc/stordoc/host-allow.json",restrict ssh-ed25519 ...``), it runs what
stordoc sends only when the argv matches a rule of that host's allowlist (written by
``stordoc hostguard CLUSTER HOST``), and runs it without a shell (``execvp``). Anything
else (a login, ``id``, ``sh -c id``, sftp, a look-alike of a rule) is refused with one line
on stderr and exit status 126, and runs nothing.

The only shell scripts it runs are stordoc's own, each matched by its whole text, with
arguments matched token by token. This file uses the standard library alone: the hosts
run it with their own python3, without stordoc installed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Any

REFUSED = 126  # what a shell returns for a command found but not runnable
MARK = "stordoc-host:"  # the refusal's first word (doctor tells the wrapper by it)
VERSION = 3


def match(argv: Sequence[str], rules: Sequence[dict[str, Any]]) -> str | None:
    """The name of the first rule ``argv`` matches, or None. A rule is a literal head
    (compared as strings) and one pattern over the rest, each argument preceded by NUL (no
    argument can hold one), so a value it names twice (an OSD's id in its data dir and
    its pid file) is the same value both times."""
    if not argv or any("\0" in a for a in argv):
        return None
    for rule in rules:
        lit = rule.get("lit")
        if not isinstance(lit, list) or list(argv[:len(lit)]) != lit:
            continue
        rest = "".join("\0" + a for a in argv[len(lit):])
        if re.fullmatch(str(rule.get("re", "(?!)")), rest):
            return str(rule.get("name", "?"))
    return None


def load(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("version") != VERSION \
            or not isinstance(doc.get("rules"), list):
        raise ValueError(f"{path}: not a stordoc-host allowlist of version {VERSION}")
    return list(doc["rules"])


def refuse(why: str) -> int:
    sys.stderr.write(f"{MARK} refused: {why}\n")
    return REFUSED


def main(args: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if args is None else args)
    if len(args) != 1:
        return refuse("usage: stordoc-host ALLOWLIST.json (as an authorized_keys command=)")
    try:
        rules = load(args[0])
    except (OSError, ValueError) as e:
        return refuse(f"no allowlist: {e}")
    original = os.environ.get("SSH_ORIGINAL_COMMAND")
    if original is None:
        return refuse("no command given (this key runs stordoc's commands only, no login)")
    try:
        argv = shlex.split(original)
    except ValueError as e:
        return refuse(f"not a command line: {e}")
    name = match(argv, rules)
    if name is None:
        first = argv[0][:60] if argv else "(empty)"
        return refuse(f"{first!r} ... is not one of stordoc's commands for this host")
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        return refuse(f"{argv[0]}: {e.strerror}")
    return REFUSED  # not reached


if __name__ == "__main__":
    sys.exit(main())
