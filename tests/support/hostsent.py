"""The commands a plan's host steps send: a ``HostOp``'s argv, and each command a remote
``PyOp`` says it runs (its ``describe``, ``;``-separated argv lists, as the ring push
prints them). ``put LOCAL REMOTE`` is sent as the put script
(``storage.hostscripts.put_argv``) with the local file as its standard input."""

from __future__ import annotations

import shlex

from runbooks.model import HostOp, PlannedStep, PyOp
from storage.hostscripts import put_argv


def sent(step: PlannedStep) -> list[tuple[str, ...]]:
    """What ``step`` sends to its host, in order (none for a step that is not a host's)."""
    op = step.op
    if isinstance(op, HostOp):
        return [tuple(op.argv)]
    if not (isinstance(op, PyOp) and op.remote):
        return []
    out: list[tuple[str, ...]] = []
    for part in op.describe.split("; "):
        argv = shlex.split(part)
        if argv[:1] == ["put"] and len(argv) == 3:
            argv = put_argv(argv[2])
        out.append(tuple(argv))
    return out
