"""The application service: what the CLI, the Slack bot and the TUI all call.

``Service(env)`` gathers the parts (``inspect``: check runs and the recording rule;
``actions``: plans and runs of runbooks and benchmarks; ``records``: history, audit,
mutes, alert stream; ``locks``: runbook locks and what interrupted runs left;
``fixes``: the runbook for a finding). Front ends parse input, call
these and render what comes back; they decide nothing about the cluster themselves.
``Service`` is imported on first use, so ``core.service.errors`` stays light for the
CLI's entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.service.app import Service

__all__ = ["Service"]


def __getattr__(name: str) -> Any:
    if name == "Service":
        from core.service.app import Service

        return Service
    raise AttributeError(name)
