"""The engine: a raising check becomes a finding and the others still run; exit codes;
muting; parts that could not be reached become findings."""

from __future__ import annotations

from checks.engine import run_checks
from checks.model import CodeInfo, Finding, Registry, Severity
from storage.model import ClusterSnapshot, HostFacts


def _registry() -> Registry:
    reg = Registry()

    @reg.register("boom", [CodeInfo("T_BOOM", Severity.WARN, "x")], needs=())
    def boom(snap, ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("kaput")

    @reg.register("fine", [CodeInfo("T_FINE", Severity.CRIT, "x")], needs=())
    def fine(snap, ctx):  # type: ignore[no-untyped-def]
        return [Finding("T_FINE", Severity.CRIT, "osd.1", "down")]

    @reg.register("needs_ceph", [CodeInfo("T_CEPH", Severity.WARN, "x")], needs=("ceph",))
    def needs_ceph(snap, ctx):  # type: ignore[no-untyped-def]
        return [Finding("T_CEPH", Severity.WARN, "x", "should not run without ceph")]

    return reg


def test_raising_check_is_a_finding_and_others_run() -> None:
    rep = run_checks(ClusterSnapshot("c", 0.0), registry=_registry())
    codes = [f.code for f in rep.findings]
    assert codes == ["T_FINE", "CHECK_INTERNAL_ERROR"]  # crit first
    err = rep.findings[1]
    assert "kaput" in err.message and err.entity == "check boom"
    assert rep.verdict == 2
    assert "needs_ceph" not in rep.checks_run


def test_muted_and_unreachable() -> None:
    snap = ClusterSnapshot("c", 0.0, ceph_error="no monitor answered within 10 s",
                           hosts={"n1": HostFacts("n1", "127.0.0.2", error="refused")},
                           host_facts_collected=True)
    rep = run_checks(snap, registry=_registry(), muted=["T_FINE"])
    assert rep.verdict == 3
    codes = {f.code for f in rep.findings}
    assert {"CEPH_UNREACHABLE", "HOST_UNREACHABLE"} <= codes
    assert "T_FINE" not in codes and [f.code for f in rep.muted] == ["T_FINE"]
