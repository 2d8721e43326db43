"""Which pool a RADOS or RBD benchmark writes to, and that it leaves no pool behind.

Creating a pool is a change of its own on a production cluster (65 -> 97 PGs on the lab
once, left there by an older stordoc). So:

* a pool named in the settings (``[bench] pool``) or by ``--pool`` that exists is used
  as it is, and only the run's own objects and images are removed from it;
* otherwise the run creates a pool of its own, ``stordoc-bench-<run>`` (or the named one
  when it is missing), the plan announces it, and the run removes it afterwards, also
  after a failure or Ctrl-C;
* a cluster that forbids pool deletion (``mon_allow_pool_delete`` false) would keep that
  pool: the plan refuses instead of creating it, and names the way out (a pool in the
  settings). stordoc never flips that safety switch itself;
* a ``stordoc-bench`` pool an older stordoc left is neither used nor removed: the plan
  says it is there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from runbooks.bench.model import SCRATCH_LABEL, SCRATCH_RE
from runbooks.model import Refused
from storage.rados_io import RadosBenchError, RadosIO

LEGACY_POOL = "stordoc-bench"  # what stordoc before issue 27 created and left
SCRATCH_PREFIX = "stordoc-bench-"


def scratch_pool(group_id: str) -> str:
    """The pool a run creates for itself when none is named."""
    return f"{SCRATCH_PREFIX}{group_id}"


@dataclass(frozen=True)
class PoolChoice:
    """The plan's pool: its name (``stordoc-bench-<run>`` until the run has an id),
    whether the run creates (and so removes) it, and who named it."""

    name: str
    create: bool
    named_by: str | None  # "--pool" | "settings [bench] pool" | None (the run's own)
    legacy_left: bool = False  # an older stordoc's stordoc-bench pool is there
    # pools of runs stopped before their cleanup (killed with SIGKILL, a host crash)
    orphans: tuple[str, ...] = ()

    def for_run(self, group_id: str) -> str:
        return scratch_pool(group_id) if self.named_by is None else self.name

    def plan_lines(self) -> list[str]:
        """What the plan says about the pool, before anything else."""
        if not self.create:
            out = [f"uses pool {self.name} named in {self.named_by} (it stays; only this "
                   "run's objects and images are removed from it)"]
        else:
            why = "" if self.named_by is None else f" (named in {self.named_by}, missing)"
            out = [f"creates pool {self.name}{why} (replicated, size fitted to the up "
                   "hosts, application 'stordoc'), waits for active+clean, and removes it "
                   "afterwards, also after a failure or Ctrl-C"]
        if self.legacy_left:
            out.append(f"pool {LEGACY_POOL} is there (left by an older stordoc): not used, "
                       "not removed; remove it yourself if nobody needs it")
        for p in self.orphans:
            out.append(f"pool {p} is there (a stordoc run stopped before removing it): "
                       f"not touched; remove it with: ceph osd pool rm {p} {p} "
                       "--yes-i-really-really-mean-it")
        return out


def deletion_allowed(io: RadosIO) -> bool | None:
    """Whether the monitors allow pool deletion (``mon_allow_pool_delete``), as they run
    (``config show`` through the manager sees ceph.conf too); the monitors' central config
    when the manager cannot say; None when neither can."""
    try:
        dump = io.mon({"prefix": "mon dump"}) or {}
        names = [m["name"] for m in dump.get("mons", []) if m.get("name")]
    except (RadosBenchError, TypeError, KeyError):
        names = []
    seen: list[bool] = []
    for name in names:
        try:
            ret, out, _err = io.cluster.mgr_command(json.dumps(
                {"prefix": "config show", "who": f"mon.{name}", "key": "mon_allow_pool_delete",
                 "format": "json"}), b"", timeout=int(io.target.timeout_s))
        except Exception:
            break
        if ret != 0:
            break
        seen.append(_true(out.decode(errors="replace")))
    else:
        if seen:
            return all(seen)
    v = io.config_value("mon", "mon_allow_pool_delete")
    return None if v is None else _true(v)


def _true(text: str) -> bool:
    return text.strip().strip('"').lower() in ("true", "1", "yes", "on")


def choose_pool(io: RadosIO, named: str | None, named_by: str | None, keep: bool
                ) -> PoolChoice:
    """The plan's pool (see the module doc). Raises Refused when the run would have to
    create a pool the cluster does not let it remove, or keep objects in its own pool."""
    pools = set(io.cluster.list_pools())
    legacy = LEGACY_POOL in pools and named != LEGACY_POOL
    orphans = tuple(sorted(p for p in pools if SCRATCH_RE.match(p) and p != named))
    if named is not None and named in pools:
        return PoolChoice(named, False, named_by, legacy, orphans)
    choice = PoolChoice(named or SCRATCH_LABEL, True,
                        named_by if named is not None else None, legacy, orphans)
    if keep:
        raise Refused("--keep leaves objects for a later read run, but this run would "
                      f"create pool {choice.name} and remove it afterwards: name an "
                      "existing pool (settings [bench] pool or --pool)")
    allowed = deletion_allowed(io)
    if allowed is not True:
        why = "forbids pool deletion (mon_allow_pool_delete is false)" if allowed is False \
            else "does not say whether it allows pool deletion (mon_allow_pool_delete)"
        raise Refused(f"this run would create pool {choice.name}, but the cluster {why}, "
                      "so the pool would stay behind: name an existing pool to benchmark in "
                      "(settings [bench] pool or --pool); stordoc does not change "
                      "mon_allow_pool_delete")
    return choice
