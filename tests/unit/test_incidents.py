"""checks.incidents on findings from captured lab states (the real checks on captured Ceph
and host outputs), plus the rule table's invariants. The lab tests
(tests/lab/test_incidents.py) drive every break scenario on the real cluster."""

from __future__ import annotations

import time

from checks.engine import run_checks
from checks.incidents import RULES, Incident, correlate, headline
from checks.model import REGISTRY, Finding, Severity, Verdict
from storage.model import ClusterSnapshot
from tests.unit.test_hosts_facts import ceph_state, facts_of


def _snap(ceph: str, hosts: dict[str, str]) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="lab", taken_at=time.time(), ceph=ceph_state(ceph),
                           swift=None, hosts={h: facts_of(n) for h, n in hosts.items()},
                           host_facts_collected=True)


def _incidents(s: ClusterSnapshot) -> tuple[Incident, ...]:
    return correlate(run_checks(s).findings, s)


def test_unmounted_osd_is_one_incident_with_cephs_codes_folded() -> None:
    s = _snap("osd1-unmounted", {"node1": "osd1-unmounted-node1",
                                 "node2": "osd1-unmounted-node2"})
    rep = run_checks(s)
    incs = correlate(rep.findings, s)
    assert len(incs) == 1, [i.id for i in incs]
    inc = incs[0]
    assert (inc.root.code, inc.root.entity) == ("OSD_DATA_UNMOUNTED", "osd.1")
    # every finding of the run is explained by it: osd.1 down+in, Ceph's OSD_DOWN/HOST_DOWN
    assert {f.key for f in inc.findings} == {f.key for f in rep.findings
                                             if f.severity > Severity.INFO}
    assert ("CEPH_HEALTH", "ceph OSD_DOWN") in {f.key for f in inc.consequences}
    assert inc.next_step is not None and inc.next_step.command == \
        "stordoc fix osd-remount osd.1"
    assert headline("lab", rep.verdict, incs, len(rep.findings)).startswith(
        "CRIT lab: OSD_DATA_UNMOUNTED osd.1: 33 PGs short of copies")


def test_stopped_daemon_is_the_root_not_cephs_osd_down() -> None:
    s = _snap("osd2-stopped", {"node3": "osd2-stopped-node3"})
    incs = _incidents(s)
    assert [i.root.key for i in incs][:1] == [("OSD_DAEMON_STOPPED", "osd.2")]
    codes = {f.key for f in incs[0].consequences}
    assert ("OSD_DOWN_IN", "osd.2") in codes


def F(code: str, entity: str, sev: Severity = Severity.WARN, **ev: object) -> Finding:
    return Finding(code, sev, entity, f"{code} on {entity}", ev)


def test_pgs_blocking_io_make_the_incident_critical_whatever_the_roots_severity() -> None:
    fs = [F("OSD_DATA_UNMOUNTED", "osd.1"), F("OSD_DOWN_OUT", "osd.1"),
          F("PGS_NOT_ACTIVE_CLEAN", "cluster lab pgs", Severity.CRIT,
            not_clean={"peering": 3, "active+undersized": 5}, blocking=3)]
    (inc,) = correlate(fs)
    assert inc.severity == Severity.CRIT and inc.root.code == "OSD_DATA_UNMOUNTED"
    assert inc.impact == "3 PGs inactive: client I/O blocked"


def test_two_roots_on_two_osds_stay_two_incidents_pgs_go_to_the_first() -> None:
    fs = [F("OSD_DAEMON_STOPPED", "osd.2"), F("OSD_DATA_UNMOUNTED", "osd.1"),
          F("OSD_DOWN_IN", "osd.1"), F("OSD_DOWN_IN", "osd.2"),
          F("PGS_STUCK", "cluster lab pgs stuck undersized"),
          F("CEPH_HEALTH", "ceph OSD_DOWN", ceph_code="OSD_DOWN",
            detail=["osd.1 (root=default,host=node2) is down",
                    "osd.2 (root=default,host=node3) is down"])]
    incs = correlate(fs)
    assert [i.root.key for i in incs] == [("OSD_DATA_UNMOUNTED", "osd.1"),
                                          ("OSD_DAEMON_STOPPED", "osd.2")]
    assert ("PGS_STUCK", "cluster lab pgs stuck undersized") in \
        {f.key for f in incs[0].consequences}
    assert ("OSD_DOWN_IN", "osd.2") in {f.key for f in incs[1].consequences}
    assert sum(len(i.findings) for i in incs) == len(fs)  # nothing lost, nothing twice


def test_io_errors_outrank_the_unmounted_dir_and_offer_no_remount() -> None:
    fs = [F("OSD_DATA_UNMOUNTED", "osd.1"), F("OSD_DEVICE_IO_ERRORS", "osd.1", Severity.CRIT)]
    fs[0] = Finding(fs[0].code, fs[0].severity, fs[0].entity, fs[0].message, {},
                    "osd-remount", "osd.1")
    (inc,) = correlate(fs)
    assert inc.root.code == "OSD_DEVICE_IO_ERRORS" and inc.next_step is None


def test_swift_servers_of_one_kind_are_one_incident_and_async_pendings_fold() -> None:
    fs = [F("SWIFT_SERVER_DOWN", f"container server 127.0.0.{n}:6201", Severity.CRIT,
            server="container", ip=f"127.0.0.{n}", port=6201) for n in (2, 3, 4)]
    fs += [F("SWIFT_ASYNC_PENDING", f"object server 127.0.0.{n}:6200",
             async_pending=40) for n in (2, 3, 4)]
    (inc,) = correlate(fs)
    assert inc.impact == "container server down on 3 node(s); 120 container updates queued"


def test_replication_failures_towards_an_unmounted_device_fold_into_it() -> None:
    """Every other node's replicator fails towards a device that answers 507: one cause."""
    fs = [F("SWIFT_DEVICE_UNMOUNTED", "d2@node2", Severity.CRIT,
            ip="127.0.0.3", device="d2")]
    fs += [F("SWIFT_REPLICATION_FAILURES", f"{k} server 127.0.0.{n}:{p}", failures=40)
           for n in (2, 4) for k, p in (("object", 6200), ("container", 6201))]
    (inc,) = correlate(fs)
    assert inc.root.code == "SWIFT_DEVICE_UNMOUNTED"
    assert {f.code for f in inc.consequences} == {"SWIFT_REPLICATION_FAILURES"}
    assert len(inc.findings) == 5
    # without a device cause they stay an incident of their own (one per server kind)
    assert {i.root.code for i in correlate(fs[1:])} == {"SWIFT_REPLICATION_FAILURES"}


def test_idle_replicators_of_one_kind_are_one_incident_with_their_impact() -> None:
    fs = [F("SWIFT_REPLICATOR_IDLE", f"object server 127.0.0.{n}:6200", partitions={"d1": 5})
          for n in (2, 3, 4)]
    (inc,) = correlate(fs)
    assert inc.impact.startswith("object replication does nothing on 3 node(s)")


def test_info_findings_are_not_incidents_and_empty_is_ok() -> None:
    assert correlate([F("CACHE_TIER_DEPRECATED", "pool c", Severity.INFO)]) == ()
    assert headline("lab", Verdict.OK, (), 0) == "OK lab: no incidents"


def test_every_rule_names_registered_codes_except_other_issues_lines() -> None:
    import checks.catalog  # noqa: F401

    known = set(REGISTRY.codes) | {"OSD_NOT_ACTIVATED"}  # issue 11 adds it
    for r in RULES:
        assert r.cause in known, r.cause
        assert set(r.consequences) <= known, r.cause
