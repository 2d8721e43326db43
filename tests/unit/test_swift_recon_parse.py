"""Recon answers parsed once into ReconHost's typed fields (storage.swift_recon_parse)
give exactly what the checks' former readers of ``ReconHost.raw`` returned: on the
captured lab answers (tests/fixtures/swift), on both object replication formats and on
answers of any shape (hypothesis). The former readers are kept below, verbatim but for
taking ``(server, raw)`` instead of a ReconHost, as the reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.swift_recon import replication as checks_replication
from checks.swift_recon_values import sweeps
from storage.model import QUARANTINE_KINDS, ReconHost
from storage.swift import recon_from_raw as storage_swift_recon_from_raw
from storage.swift_recon_parse import num, recon_from_raw
from tests.support.examples import examples

FIX = Path(__file__).parents[1] / "fixtures" / "swift"
SERVERS = ("object", "container", "account")


# ----------------------------------------------------------------- the former readers


def old_replication(server: str, raw: dict[str, Any]) -> dict[str, Any] | None:
    rep = raw.get(f"replication/{server}")
    if not isinstance(rep, dict):
        return None
    if server == "object":
        last = num(rep.get("object_replication_last")) or num(rep.get("replication_last"))
        took = num(rep.get("object_replication_time"))
        took = took * 60 if took is not None else None
    else:
        last = num(rep.get("replication_last"))
        took = num(rep.get("replication_time"))
    stats = rep.get("replication_stats") if isinstance(rep.get("replication_stats"), dict) \
        else {}
    fails = num(stats.get("failure")) if isinstance(stats, dict) else None
    tried = num(stats.get("attempted")) if isinstance(stats, dict) else None
    return {"last": last, "duration_s": took, "failures": fails, "attempted": tried}


def old_sweeps(server: str, raw: dict[str, Any]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    up = raw.get(f"updater/{server}")
    if isinstance(up, dict):
        v = num(up.get(f"{server}_updater_sweep"))
        if v is not None:
            out.append((f"{server}-updater", v))
    au = raw.get(f"auditor/{server}")
    if isinstance(au, dict):
        v = num(au.get(f"{server}_auditor_pass_completed"))
        if v is not None:
            out.append((f"{server}-auditor", v))
        for key in ("object_auditor_stats_ALL", "object_auditor_stats_ZBF"):
            s = au.get(key)
            if isinstance(s, dict) and num(s.get("audit_time")) is not None:
                out.append((f"object-auditor ({key.rsplit('_', 1)[1]})",
                            float(s["audit_time"])))
    ex = raw.get("expirer/object") if server == "object" else None
    if isinstance(ex, dict):
        v = num(ex.get("object_expiration_pass"))
        if v is not None:
            out.append(("object-expirer", v))
    return out


def old_facts(server: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Every other former read, as the checks (and the remount probe) did it."""
    q = raw.get("quarantined")
    a = raw.get("async")
    load = raw.get("load")
    ss = raw.get("sockstat")
    da = raw.get("driveaudit")
    return {
        "quarantined": {k: num(q.get(k)) for k in QUARANTINE_KINDS}
        if isinstance(q, dict) else None,
        "async_pending": num(a.get("async_pending")) if isinstance(a, dict) else None,
        "replication_evidence": raw.get(f"replication/{server}")
        if isinstance(raw.get(f"replication/{server}"), dict) else None,
        "load_5m": num(load.get("5m")) if isinstance(load, dict) else None,
        "load_evidence": dict(load) if isinstance(load, dict) else None,
        "remote": num(raw.get("time")),
        "local": num(raw.get("_local_time")),
        "rtt": num(raw.get("_rtt_s")),
        "orphan": num(ss.get("orphan")) if isinstance(ss, dict) else None,
        "sockstat_evidence": dict(ss) if isinstance(ss, dict) else None,
        "drive_audit_errors": num(da.get("drive_audit_errors")) if isinstance(da, dict)
        else None,
        "unmounted_answered": "unmounted" in raw,
        "fills": old_fills(raw),
    }


def old_fills(raw: dict[str, Any]) -> list[tuple[str, float]]:
    """``checks.swift_recon.fill_findings``' former read of ``diskusage`` (through the
    former ``ReconHost.diskusage``: the answer's dicts). Deliberate differences: only
    JSON ``true`` is mounted (recon sends true, false or its error's text, with empty sizes;
    the old truthiness took the text or a 1 for mounted), and an entry names a device."""
    du = raw.get("diskusage") or []
    entries = [d for d in (du if isinstance(du, list) else []) if isinstance(d, dict)]
    out = []
    for d in entries:
        m = d.get("mounted")
        if d.get("device") is None or (m is not None and not isinstance(m, bool)):
            continue  # the differences
        size, used = num(d.get("size")), num(d.get("used"))
        if not d.get("mounted") or not size or used is None:
            continue
        out.append((str(d.get("device")), used / size))
    return out


def new_facts(r: ReconHost) -> dict[str, Any]:
    return {
        "quarantined": dict(r.quarantined.by_kind()) if r.quarantined is not None else None,
        "async_pending": r.async_pending,
        "replication_evidence": r.replication_reported,
        "load_5m": r.load.avg_5m if r.load is not None else None,
        "load_evidence": dict(r.load.reported) if r.load is not None else None,
        "remote": r.remote_time,
        "local": r.local_time,
        "rtt": r.rtt_s,
        "orphan": r.sockstat.orphan if r.sockstat is not None else None,
        "sockstat_evidence": dict(r.sockstat.reported) if r.sockstat is not None else None,
        "drive_audit_errors": r.drive_audit_errors,
        "unmounted_answered": r.unmounted_answered,
        "fills": [(d.device, f) for d in r.diskusage if (f := d.fill) is not None],
    }


def assert_same(server: str, raw: dict[str, Any]) -> ReconHost:
    r = recon_from_raw("127.0.0.3", 6200, server, raw)
    assert r.replication == old_replication(server, raw)
    assert checks_replication(r) == old_replication(server, raw)
    assert sweeps(r) == old_sweeps(server, raw)
    assert new_facts(r) == old_facts(server, raw)
    assert r.raw is raw  # kept as collected, for captures
    return r


# ----------------------------------------------------------------- captured answers


def captured() -> list[tuple[str, str, dict[str, Any]]]:
    """(fixture, server, raw answers) of every capture holding recon answers."""
    out = []
    for name in ("recon-lab-healthy.json", "recon-lab-replicating.json"):
        for server, raw in json.loads((FIX / name).read_text()).items():
            out.append((name, server, raw))
    for p in sorted(FIX.glob("*/recon.json")):
        for h in json.loads(p.read_text())["recon"]:
            out.append((f"{p.parent.name}/recon.json", h["server"], h["raw"]))
    return out


CAPTURED = captured()


@pytest.mark.parametrize(("fixture", "server", "raw"), CAPTURED,
                         ids=[f"{f}:{s}:{i}" for i, (f, s, _) in enumerate(CAPTURED)])
def test_captured_answers_give_what_the_old_readers_did(fixture: str, server: str,
                                                         raw: dict[str, Any]) -> None:
    assert_same(server, raw)


def test_captured_answers_are_read_not_just_equal() -> None:
    """The lab's replicating capture: the numbers are there, typed."""
    raw = json.loads((FIX / "recon-lab-replicating.json").read_text())
    obj = assert_same("object", raw["object"])
    rep = raw["object"]["replication/object"]
    assert obj.replication is not None
    assert obj.replication["last"] == rep["object_replication_last"]
    assert obj.replication["duration_s"] == rep["object_replication_time"] * 60
    assert obj.replication["attempted"] == 0.0 and obj.replication["failures"] == 0.0
    assert obj.load is not None and obj.load.avg_5m == 3.14
    assert obj.quarantined is not None and obj.quarantined.objects == 0.0
    assert obj.sockstat is not None and obj.sockstat.orphan == 0.0
    assert obj.remote_time == raw["object"]["time"] and obj.unmounted_answered
    never = json.loads((FIX / "recon-lab-healthy.json").read_text())
    for server in SERVERS:
        h = assert_same(server, never[server])
        assert h.replication is not None and h.replication["last"] is None
        assert h.replication_reported == never[server][f"replication/{server}"]


def test_storage_swift_still_exports_recon_from_raw() -> None:
    assert storage_swift_recon_from_raw is recon_from_raw


# ----------------------------------------------------------------- both replication formats

# the object replicator: older releases report the end of a pass only as replication_last;
# newer ones add object_replication_last/_time (minutes); account/container replicators
# report replication_last/_time (seconds) and their stats
REPLICATION = [
    ("object", {"replication_last": 1000.5, "replication_time": 2.0,
                "replication_stats": {"attempted": 12, "failure": 1, "success": 11}}),
    ("object", {"object_replication_last": 1000.5, "object_replication_time": 0.5,
                "replication_last": 1000.5, "replication_time": 0.5,
                "replication_stats": {"attempted": 3, "failure": 0,
                                      "failure_nodes": {"10.0.0.1": {"d1": 2}}}}),
    ("object", {"object_replication_last": 0, "replication_last": 77.0}),
    ("object", {"object_replication_last": None, "object_replication_time": None,
                "replication_last": None, "replication_stats": None,
                "replication_time": None}),
    ("object", {"object_replication_last": "1000", "object_replication_time": True,
                "replication_stats": [1, 2]}),
    ("object", {}),
    ("container", {"replication_last": 2000.0, "replication_time": 4.5,
                   "replication_stats": {"attempted": 0, "failure": 0, "diff": 1}}),
    ("container", {"object_replication_last": 5.0, "replication_time": 4}),
    ("account", {"replication_last": None, "replication_stats": None,
                 "replication_time": None}),
    ("account", {"replication_last": 3000, "replication_stats": {"failure": "x"}}),
]


@pytest.mark.parametrize(("server", "answer"), REPLICATION)
def test_both_replication_formats(server: str, answer: dict[str, Any]) -> None:
    r = assert_same(server, {f"replication/{server}": answer})
    assert r.replication_reported == answer
    # another server's answer is not this server's
    other = "account" if server != "account" else "object"
    assert assert_same(other, {f"replication/{server}": answer}).replication is None


def test_old_object_format_reads_replication_last() -> None:
    r = recon_from_raw("127.0.0.3", 6200, "object",
                       {"replication/object": REPLICATION[0][1]})
    assert r.replication == {"last": 1000.5, "duration_s": None, "failures": 1.0,
                             "attempted": 12.0}


@pytest.mark.parametrize("answer", [None, [], "x", 3, {"replication_last": 1}])
def test_replication_answer_not_an_object_or_of_another_server(answer: Any) -> None:
    assert_same("object", {"replication/object": answer, "replication/container": answer})


def test_sweeps_of_every_daemon_in_order() -> None:
    raw = {"updater/object": {"object_updater_sweep": 11},
           "auditor/object": {"object_auditor_pass_completed": 12.5,
                              "object_auditor_stats_ALL": {"audit_time": 13},
                              "object_auditor_stats_ZBF": {"audit_time": 14.0}},
           "expirer/object": {"object_expiration_pass": 15}}
    r = assert_same("object", raw)
    assert sweeps(r) == [("object-updater", 11.0), ("object-auditor", 12.5),
                         ("object-auditor (ALL)", 13.0), ("object-auditor (ZBF)", 14.0),
                         ("object-expirer", 15.0)]
    # a container server's recon never carries the expirer's answer into its sweeps
    c = assert_same("container", {"updater/container": {"container_updater_sweep": 1},
                                  "expirer/object": {"object_expiration_pass": 15}})
    assert sweeps(c) == [("container-updater", 1.0)]


# ----------------------------------------------------------------- answers of any shape

_number = st.one_of(st.integers(-10**6, 10**12), st.floats(allow_nan=False,
                                                              allow_infinity=False))
_scalar = st.one_of(st.none(), st.booleans(), _number, st.text(max_size=4))
_json = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6)


def _answer(keys: list[str]) -> st.SearchStrategy[Any]:
    """An answer with the keys a reader looks for, each of any value (or absent), or not
    an object at all."""
    nested = st.fixed_dictionaries(
        {}, optional={"audit_time": _scalar, "failure": _scalar, "attempted": _scalar})
    known = st.fixed_dictionaries(
        {}, optional={k: st.one_of(_number, _scalar, nested, _json) for k in keys})
    return st.one_of(known, known, _json)


def _raw(server: str) -> st.SearchStrategy[dict[str, Any]]:
    answers = {
        "quarantined": _answer(list(QUARANTINE_KINDS) + ["policies"]),
        "async": _answer(["async_pending", "async_pending_last"]),
        f"replication/{server}": _answer(
            ["object_replication_last", "object_replication_time", "replication_last",
             "replication_time", "replication_stats"]),
        "load": _answer(["1m", "5m", "15m", "tasks", "processes"]),
        "time": _scalar, "_local_time": _scalar, "_rtt_s": _scalar,
        "sockstat": _answer(["orphan", "tcp_in_use", "time_wait"]),
        "driveaudit": _answer(["drive_audit_errors"]),
        f"updater/{server}": _answer([f"{server}_updater_sweep"]),
        f"auditor/{server}": _answer([f"{server}_auditor_pass_completed",
                                      "object_auditor_stats_ALL", "object_auditor_stats_ZBF"]),
        "expirer/object": _answer(["object_expiration_pass"]),
        "unmounted": st.just([]),
        "diskusage": st.one_of(_json, st.lists(st.one_of(_json, st.fixed_dictionaries(
            {}, optional={"device": st.one_of(st.text(max_size=4), _scalar),
                          "mounted": st.one_of(st.booleans(), st.text(max_size=6), _scalar),
                          "size": _scalar, "used": _scalar, "avail": _scalar})),
            max_size=4)),
    }
    return st.fixed_dictionaries({}, optional=answers)


@pytest.mark.parametrize("server", SERVERS)
@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_answers_of_any_shape_give_what_the_old_readers_did(data: st.DataObject,
                                                             server: str) -> None:
    assert_same(server, data.draw(_raw(server)))


def test_diskusage_is_typed_as_recon_sends_it() -> None:
    """Recon's three shapes: mounted with sizes, unmounted (empty strings), and the error's
    text in ``mounted``; an entry without a device is dropped."""
    r = recon_from_raw("127.0.0.3", 6200, "object", {"diskusage": [
        {"device": "d1", "mounted": True, "size": 400, "used": 100, "avail": 300},
        {"device": "d2", "mounted": False, "size": "", "used": "", "avail": ""},
        {"device": "d3", "mounted": "[Errno 5] Input/output error", "size": "",
         "used": "", "avail": ""},
        {"mounted": True, "size": 1, "used": 1}, "junk"]})
    d1, d2, d3 = r.diskusage
    assert (d1.device, d1.mounted, d1.fill, d1.avail, d1.error) == ("d1", True, 0.25,
                                                                    300.0, None)
    assert (d2.mounted, d2.size, d2.fill, d2.error) == (False, None, None, None)
    assert (d3.mounted, d3.fill, d3.error) == (False, None, "[Errno 5] Input/output error")
    assert recon_from_raw("127.0.0.3", 6200, "object", {"diskusage": 5}).diskusage == ()
    weird = json.loads('[{"device": "d1", "mounted": true, "size": Infinity, "used": 1},'
                       ' {"device": "d2", "mounted": true, "size": 10, "used": NaN}]')
    r = recon_from_raw("127.0.0.3", 6200, "object", {"diskusage": weird})
    assert [d.fill for d in r.diskusage] == [None, None]
