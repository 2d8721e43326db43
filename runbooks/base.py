"""How a runbook is declared: a name, the codes it fixes, a typed target, and a
``build`` that validates everything against a snapshot and returns the steps.

Runbooks are registered explicitly (``runbooks.catalog`` imports the modules); the
registry refuses a name registered twice, like the check registry does for codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checks import hostdiag
from runbooks.model import (
    HostOp,
    MonOp,
    Op,
    Plan,
    PlannedStep,
    Probe,
    PyOp,
    Refused,
    RunbookInfo,
    RunContext,
    WaitOp,
)
from storage.model import CephState, ClusterSnapshot, HostFacts, PoolState
from storage.targets import HostTarget


@dataclass
class Draft:
    """The steps and facts a runbook's ``build`` produces; ``api.plan`` turns it into a Plan."""

    ctx: RunContext
    options: Mapping[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    steps: list[PlannedStep] = field(default_factory=list)
    verify_codes: tuple[str, ...] = ()
    verify_entities: tuple[str, ...] = ()
    verify_host_facts: bool = False
    before_after: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    locks: list[str] = field(default_factory=list)

    def _add(self, title: str, where: str, op: Op, timeout_s: float | None,
             cleanup_of: int | None) -> int:
        idx = len(self.steps) + 1
        self.steps.append(PlannedStep(idx, title, where, op.command(),
                                      float(timeout_s or self.ctx.step_timeout_s),
                                      cleanup_of, op))
        return idx

    def mon(self, title: str, prefix: str, args: Mapping[str, Any] | None = None,
            timeout_s: float | None = None, cleanup_of: int | None = None) -> int:
        return self._add(title, "ceph", MonOp(prefix, dict(args or {})), timeout_s, cleanup_of)

    def host(self, title: str, host: str, argv: list[str] | tuple[str, ...],
             timeout_s: float | None = None) -> int:
        if not all(isinstance(a, str) for a in argv):
            raise TypeError("argv elements must be str")
        return self._add(title, host, HostOp(host, tuple(argv)), timeout_s, None)

    def wait(self, title: str, describe: str, probe: Probe, timeout_s: float | None = None,
             interval_s: float = 1.0, where: str = "ceph") -> int:
        """``where``: what is asked ("ceph", or "swift" for a wait on Swift's recon)."""
        return self._add(title, where, WaitOp(describe, probe, interval_s), timeout_s, None)

    def local(self, title: str, describe: str, fn: Probe,
              timeout_s: float | None = None) -> int:
        return self._add(title, "local", PyOp(describe, fn), timeout_s, None)

    def remote(self, title: str, host: str, describe: str, fn: Probe,
               timeout_s: float | None = None) -> int:
        """A step that talks to ``host`` through ``env.runner`` with logic between the
        commands (each one still an argv list)."""
        return self._add(title, host, PyOp(describe, fn, remote=True), timeout_s, None)


class Runbook:
    """Subclass and register with ``@register``. ``build`` must not change anything."""

    info: RunbookInfo
    needs_host_facts: bool = False
    option_keys: tuple[str, ...] = ()  # the ``-o KEY=VALUE`` keys it reads; others refused
    # the plan parameters a second person's approval is bound to besides the steps
    # (``core.approvals``): what the steps do not show (pg-mark-unfound-lost's count)
    approval_params: tuple[str, ...] = ()

    def lock_keys(self, target: str) -> list[str]:
        return [target]

    def build(self, draft: Draft, snap: ClusterSnapshot, target: str) -> None:
        raise NotImplementedError

    def check_run(self, plan: Plan) -> None:
        """Last refusal before anything runs (e.g. a plan-only runbook without apply)."""
        return


_REGISTRY: dict[str, Runbook] = {}


def register(cls: type[Runbook]) -> type[Runbook]:
    rb = cls()
    name = rb.info.name
    if name in _REGISTRY:
        raise ValueError(f"runbook {name!r} registered twice")
    _REGISTRY[name] = rb
    return cls


# ------------------------------------------------------------------ shared helpers

def need_ceph(snap: ClusterSnapshot) -> CephState:
    if snap.ceph is None:
        why = snap.ceph_error or "no Ceph configured for this cluster"
        raise Refused(f"cannot read the Ceph cluster: {why}")
    return snap.ceph


def need_pool(ceph: CephState, name: str) -> PoolState:
    """The pool ``name``, refused (naming the pools there are) when it does not exist."""
    p = ceph.pool(name)
    if p is None:
        known = ", ".join(sorted(x.name for x in ceph.pools)) or "none"
        raise Refused(f"pool {name!r} does not exist (pools: {known})")
    return p


def parse_osd(target: str, ceph: CephState) -> int:
    """``osd.N`` -> N, refused unless N exists in the osdmap."""
    from runbooks.targets import osd_id as _osd_id

    osd_id = _osd_id(target)
    if ceph.osd(osd_id) is None:
        known = ", ".join(f"osd.{o.id}" for o in ceph.osds) or "none"
        raise Refused(f"osd.{osd_id} does not exist in the osdmap (OSDs: {known})")
    return osd_id


def host_of(ctx: RunContext, snap: ClusterSnapshot, name: str | None,
            what: str) -> tuple[HostTarget, HostFacts]:
    """The configured host and its facts, refused when unknown or unreachable."""
    if not name:
        raise Refused(f"{what}: no CRUSH host known")
    ht = ctx.target.host(name)
    if ht is None:
        raise Refused(f"{what} lives on host {name}, which is not configured for cluster "
                      f"{ctx.cluster} (add it under [[clusters.{ctx.cluster}.hosts]])")
    facts = snap.hosts.get(ht.name)
    if facts is None:
        raise Refused(f"no facts from host {ht.name} (host facts were not collected)")
    if facts.error:
        raise Refused(f"host {ht.name} did not answer: {facts.error}")
    return ht, facts


def fill_template(template: tuple[str, ...] | list[str], values: Mapping[str, Any],
                  what: str) -> list[str]:
    """Fill an argv template element by element with typed values; never a shell string."""
    out: list[str] = []
    for part in template:
        try:
            out.append(part.format_map(dict(values)))
        except (KeyError, ValueError, IndexError) as e:
            raise Refused(f"{what}: cannot fill template element {part!r}: {e}") from None
    if not out:
        raise Refused(f"{what}: empty command template")
    return out


def io_errors_for(facts: HostFacts, device: str) -> list[str]:
    """Kernel I/O error lines on the host for this device: the one rule of
    ``checks.hostdiag.io_errors_for`` (partitions, whole disks, loop images)."""
    return [e.line for e in hostdiag.io_errors_for(facts, [device])]


def fstab_disabled(facts: HostFacts, mountpoint: str) -> str | None:
    """The fstab line for this mountpoint when it is commented out on purpose."""
    norm = mountpoint.rstrip("/")
    active = [f for f in facts.fstab if f.mountpoint.rstrip("/") == norm and not f.commented]
    if active:
        return None
    for f in facts.fstab:
        if f.mountpoint.rstrip("/") == norm and f.commented:
            return f.raw or f"#{f.device} {f.mountpoint} {f.fstype} {f.options}"
    return None


def mount_options(facts: HostFacts, mountpoint: str, device: str,
                  is_block: bool) -> list[str]:
    """``-t FSTYPE -o OPTIONS`` from the host's own active fstab line for this mountpoint."""
    norm = mountpoint.rstrip("/")
    line = next((f for f in facts.fstab
                 if f.mountpoint.rstrip("/") == norm and not f.commented), None)
    fstype = None
    for bd in facts.block_devices:
        if bd.path == device and bd.fstype:
            fstype = bd.fstype
    opts: list[str] = []
    if line is not None:
        fstype = fstype or (line.fstype if line.fstype not in ("auto", "") else None)
        opts = [o for o in line.options.split(",") if o and o not in ("defaults",)]
    if is_block:
        opts = [o for o in opts if o != "loop" and not o.startswith("loop=")]
    elif "loop" not in opts:
        opts.insert(0, "loop")
    opts = [o for o in opts if o not in ("noauto", "nofail", "auto", "user", "users")]
    args: list[str] = []
    if fstype:
        args += ["-t", fstype]
    if opts:
        args += ["-o", ",".join(opts)]
    return args
