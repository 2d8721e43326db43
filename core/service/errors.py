"""The service's refusals, in a module light enough for the CLI's entry point to import."""

from __future__ import annotations


class ActionRefused(Exception):
    """A plan or run that cannot go ahead (unknown target, lock held, caps, read-only
    cluster...). The message is one line for a person; nothing was changed."""


class InvalidAction(ActionRefused):
    """The request itself is wrong (unknown runbook, a misspelt target or option): a
    usage error, where ``ActionRefused`` is a sound request the cluster's state refuses."""
