"""Tests' ``ReconHost`` built from recon's raw JSON answers through the real parser
(``storage.swift_recon_parse.recon_from_raw``), never by setting typed fields or ``raw``
by hand: the same signature as ``ReconHost(ip, port, server, error=, error_kind=, raw=)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.model import ReconHost
from storage.swift_recon_parse import recon_from_raw


def recon_host(ip: str, port: int, server: str, error: str | None = None,
               error_kind: str | None = None,
               raw: Mapping[str, Any] | None = None) -> ReconHost:
    """A server's recon answers (keyed by recon check name: ``replication/object``,
    ``async``, ``load``, ``_local_time``...) as the collector would have parsed them."""
    return recon_from_raw(ip, port, server, dict(raw or {}), error, error_kind)
