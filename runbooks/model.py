"""The data every front end sees: runbook descriptions, plans, events and results.

A ``Plan`` is plain data (the exact commands, per host, in order) plus, hidden from
``to_dict``/``repr``, the typed operations that ``execute`` runs. Host operations are argv
tuples built from typed values; Ceph operations are monitor commands (a prefix and typed
arguments) that never pass through a shell either.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from checks.model import Finding, Thresholds
from storage.journal import Journal
from storage.runner import Runner
from storage.targets import ClusterTarget

if TYPE_CHECKING:
    from storage.ceph import CephClient


class Refused(Exception):
    """A runbook will not plan or run: the message says why, in one line."""


class InvalidRequest(Refused):
    """The request itself is malformed (an unknown runbook or option, a target not
    spelled as one): a usage error, where ``Refused`` is the runbook's own no."""


@dataclass(frozen=True)
class RunbookInfo:
    name: str
    summary: str
    fixes: tuple[str, ...]
    destructive: bool  # moves data or changes cluster-wide settings
    target_kind: str  # "osd", "pool", "cache-pool", "swift-device", "swift-ring"
    target_help: str = ""  # e.g. "osd.N"
    touches_data: bool = False  # mounts a data directory or device: moves no data, but a
    # wrong mount serves the wrong disk, so a second person confirms it under two_person
    two_people: bool = False  # always a second person, whatever the cluster's two_person

    @property
    def needs_second_person(self) -> bool:
        """Under a cluster's two-person rule, someone other than the requester confirms.

        The one place this is decided: every front end reads it from the plan."""
        return self.destructive or self.touches_data or self.two_people


@dataclass
class RunContext:
    """Everything a runbook needs to plan and run on one cluster (built by ``Env``)."""

    cluster: str
    target: ClusterTarget
    journal: Journal
    thresholds: Thresholds = field(default_factory=Thresholds)
    muted: tuple[str, ...] = ()
    user: str = "unknown"
    source: str = "cli"
    runner: Runner | None = None
    verify_timeout_s: float = 120.0
    step_timeout_s: float = 120.0
    options: Mapping[str, Any] = field(default_factory=dict)
    bench_after_fix: str = "none"  # "rados": a quick benchmark after each verified fix
    bench_limits: Mapping[str, Any] = field(default_factory=dict)  # [bench] settings
    # planning a saved snapshot (``check --from``): nothing local is read (no builder file,
    # no swift_dir), since the paths came from the snapshot; a runbook whose plan needs
    # them refuses and says where it can be planned
    offline: bool = False

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values to redact from anything recorded (the Swift key from the settings)."""
        s = self.target.swift
        return tuple(v for v in ((s.key if s else None),) if v)


# ------------------------------------------------------------------ operations


class StepEnv:
    """What an operation may use while it runs: one Ceph connection and the runner."""

    def __init__(self, ctx: RunContext, runner: Runner) -> None:
        self.ctx = ctx
        self.runner = runner
        self._ceph: CephClient | None = None

    @property
    def ceph(self) -> CephClient:
        if self._ceph is None:
            from storage.ceph import CephClient

            if self.ctx.target.ceph is None:
                raise Refused(f"cluster {self.ctx.cluster} has no Ceph configured")
            c = CephClient(self.ctx.target.ceph)
            c.connect()
            self._ceph = c
        return self._ceph

    def close(self) -> None:
        if self._ceph is not None:
            self._ceph.close()
            self._ceph = None


def ceph_command_line(prefix: str, args: Mapping[str, Any]) -> str:
    """The ``ceph ...`` command line equivalent to a monitor command (for people to read)."""
    words = ["ceph", *prefix.split()]
    for v in args.values():
        if isinstance(v, (list, tuple)):
            words.extend(str(x) for x in v)
        elif isinstance(v, bool):
            words.append("--yes-i-really-mean-it" if v else "")
        elif v is not None:
            words.append(str(v))
    return shlex.join(w for w in words if w)


@dataclass(frozen=True)
class MonOp:
    prefix: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def command(self) -> str:
        return ceph_command_line(self.prefix, self.args)


@dataclass(frozen=True)
class HostOp:
    host: str
    argv: tuple[str, ...]

    def command(self) -> str:
        return shlex.join(self.argv)


Probe = Callable[[StepEnv], tuple[bool, str]]


@dataclass(frozen=True)
class WaitOp:
    """Poll ``probe`` until it says done or the step's timeout expires."""

    describe: str
    probe: Probe
    interval_s: float = 1.0

    def command(self) -> str:
        return self.describe


@dataclass(frozen=True)
class PyOp:
    """A local action done with a library (e.g. the Swift ring builder); ``describe`` is
    the equivalent command line."""

    describe: str
    fn: Probe
    remote: bool = False  # uses env.runner (SSH to a host): the run opens a runner

    def command(self) -> str:
        return self.describe


Op = MonOp | HostOp | WaitOp | PyOp


# ------------------------------------------------------------------ plans


@dataclass(frozen=True)
class PlannedStep:
    index: int
    title: str
    where: str  # "ceph", a configured host name, or "local" (this machine)
    command: str  # shown exactly
    timeout_s: float
    cleanup_of: int | None = None  # also runs after a failure when that step was done
    op: Op | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "title": self.title, "where": self.where,
                             "command": self.command, "timeout_s": self.timeout_s}
        if self.cleanup_of is not None:
            d["cleanup_of"] = self.cleanup_of
        if isinstance(self.op, HostOp):
            d["argv"] = list(self.op.argv)
        elif isinstance(self.op, MonOp):
            d["mon"] = {"prefix": self.op.prefix, **dict(self.op.args)}
        return d


def value_text(v: object) -> str:
    """A plan value for a person, never a Python repr: a list as ``a, b``, a mapping as
    ``k v`` pairs, nothing as ``-``."""
    if v is None:
        return "-"
    if isinstance(v, Mapping):
        return " ".join(f"{k} {value_text(x)}" for k, x in v.items()) or "-"
    if isinstance(v, (list, tuple, set, frozenset)):
        items = sorted(v, key=str) if isinstance(v, (set, frozenset)) else v
        sep = "; " if any(isinstance(x, Mapping) for x in items) else ", "
        return sep.join(value_text(x) for x in items) or "none"
    return str(v)


@dataclass(frozen=True)
class Plan:
    runbook: str
    cluster: str
    target: str
    params: Mapping[str, Any]
    steps: tuple[PlannedStep, ...]
    verify_codes: tuple[str, ...]
    before_after: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    summary: str = ""
    destructive: bool = False
    needs_second_person: bool = False  # RunbookInfo.needs_second_person of its runbook
    locks: tuple[str, ...] = ()  # lock keys taken for the run (the target first)
    verify_entities: tuple[str, ...] = ()  # findings on these entities (or target) count
    verify_host_facts: bool = False  # the verifying checks need host facts
    options: Mapping[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)

    def lines(self) -> list[str]:
        """Plain-text rendering: what will run, where, in order."""
        out = [f"Plan: {self.runbook} {self.target} on cluster {self.cluster}"]
        if self.summary:
            out.append(f"  {self.summary}")
        if self.params:
            out.append("Parameters: " + "; ".join(f"{k}={value_text(v)}"  # lists use ", "
                                                  for k, v in self.params.items()))
        if self.before_after:
            out.append("Changes (before -> after):")
            for k, (b, a) in self.before_after.items():
                out.append(f"  {k}: {value_text(b)} -> {value_text(a)}")
        out.append("Steps:")
        for s in self.steps:
            extra = f" (cleanup of step {s.cleanup_of}: runs even after a failure)" \
                if s.cleanup_of is not None else ""
            out.append(f"  {s.index}. [{s.where}] {s.title}{extra}")
            out.append(f"       $ {s.command}")
        out.append(f"Verify: {', '.join(self.verify_codes) or 'nothing'} cleared for "
                   f"{', '.join(self.verify_entities) or self.target}")
        for w in self.warnings:
            out.append(f"Warning: {w}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "runbook": self.runbook, "cluster": self.cluster, "target": self.target,
            "params": dict(self.params), "summary": self.summary,
            "destructive": self.destructive, "needs_second_person": self.needs_second_person,
            "steps": [s.to_dict() for s in self.steps],
            "verify_codes": list(self.verify_codes),
            "verify_entities": list(self.verify_entities),
            "before_after": {k: [b, a] for k, (b, a) in self.before_after.items()},
            "warnings": list(self.warnings), "locks": list(self.locks),
            "options": dict(self.options), "created_at": self.created_at,
        }


# ------------------------------------------------------------------ running


class EventKind(StrEnum):
    """What a progress event says happened (a str, so logs and old callers read it)."""

    PLAN = "plan"
    STEP_STARTED = "step_started"
    STEP_DONE = "step_done"
    STEP_FAILED = "step_failed"
    CANCELLED = "cancelled"
    VERIFY_STARTED = "verify_started"
    VERIFY_DONE = "verify_done"
    BENCH = "bench"  # the benchmark run after a fix (bench_after_fix)
    DONE = "done"


class StepStatus(StrEnum):
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    RUNNING = "running"  # audited as it starts; its outcome replaces it when known
    INTERRUPTED = "interrupted"  # the process died during the step: outcome unknown


class Outcome(StrEnum):
    """How a run ended, as audited (``running`` while it runs, ``interrupted`` when its
    process died mid-run, ``refused`` when it never started)."""

    SUCCESS = "success"
    FAILED = "failed"
    CANCELLED = "cancelled"
    VERIFY_FAILED = "verify_failed"
    REFUSED = "refused"
    RUNNING = "running"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class RunEvent:
    """Progress for a front end. On ``verify_done`` and ``done``, ``ok`` says whether
    verification passed / the run succeeded, so no front end reads it from the prose."""

    kind: EventKind
    index: int | None = None
    title: str = ""
    message: str = ""
    ok: bool | None = None


@dataclass(frozen=True)
class StepResult:
    index: int
    title: str
    where: str
    command: str
    status: StepStatus
    rc: int | None
    stdout: str
    stderr: str
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RunResult:
    run_id: int | None
    outcome: Outcome
    message: str
    steps: tuple[StepResult, ...]
    done: tuple[str, ...]
    not_done: tuple[str, ...]
    verified: bool | None
    verify_findings: tuple[Finding, ...] = ()
    bench: Mapping[str, Any] | None = None  # the benchmark after the fix, when configured

    @property
    def ok(self) -> bool:
        return self.outcome == "success"

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "outcome": self.outcome, "message": self.message,
                "steps": [s.to_dict() for s in self.steps], "done": list(self.done),
                "not_done": list(self.not_done), "verified": self.verified,
                "verify_findings": [f.to_dict() for f in self.verify_findings],
                "bench": dict(self.bench) if self.bench else None}
