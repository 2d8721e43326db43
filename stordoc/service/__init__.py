"""The application service: what the CLI, the Slack bot and the TUI all call.

``Service(env)`` gathers the four parts (``inspect``: check runs and the recording rule;
``actions``: plans and runs of runbooks and benchmarks; ``records``: history, audit,
mutes, alert stream; ``fixes``: the runbook for a finding). Front ends parse input, call
these and render what comes back; they decide nothing about the cluster themselves.
"""

from __future__ import annotations

from stordoc.service.app import Service

__all__ = ["Service"]
