"""Scrub results of inconsistent PGs: ``pg ls inconsistent`` (which PGs, their state,
acting set and last deep scrub) and, per PG, ``rados list-inconsistent-obj PG`` (which
object, which copy, which error). Built by ``storage.ceph.parse_scrub``; judged by
``checks.scrub``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScrubShard:
    """One copy of an object as the deep scrub read it (one OSD; an EC shard number)."""

    osd: int
    primary: bool
    errors: tuple[str, ...]  # the copy's own errors: data_digest_mismatch_info, missing...
    shard: int | None = None  # erasure-coded pools only
    size: int | None = None
    data_digest: str | None = None
    omap_digest: str | None = None


@dataclass(frozen=True)
class InconsistentObject:
    name: str
    nspace: str
    snap: str
    version: int
    errors: tuple[str, ...]  # between copies: data_digest_mismatch, size_mismatch, ...
    union_shard_errors: tuple[str, ...]
    shards: tuple[ScrubShard, ...]
    # the object info the scrub chose as authoritative (size, data digest)
    info_size: int | None = None
    info_data_digest: str | None = None

    @property
    def label(self) -> str:
        ns = f"{self.nspace}/" if self.nspace else ""
        snap = "" if self.snap in ("head", "") else f"@{self.snap}"
        return f"{ns}{self.name}{snap}"


@dataclass(frozen=True)
class PgScrub:
    """One PG the manager lists as inconsistent, and what its last deep scrub found."""

    pgid: str
    state: str
    acting: tuple[int, ...]
    primary: int | None
    last_deep_scrub_stamp: float | None
    scrub_errors: int
    objects: tuple[InconsistentObject, ...] = ()
    listed: bool = False  # list-inconsistent-obj answered
    error: str | None = None  # why it did not ("No scrub information available ...")


@dataclass(frozen=True)
class ScrubState:
    """Every inconsistent PG (at most ``limit`` listed object by object)."""

    pgs: tuple[PgScrub, ...] = ()
    error: str | None = None  # ``pg ls inconsistent`` itself failed

    def pg(self, pgid: str) -> PgScrub | None:
        return next((p for p in self.pgs if p.pgid == pgid), None)
