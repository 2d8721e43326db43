"""What Ceph's alert rules really fire on a saved scenario, and what stordoc's bot really
posts for each: the measuring instrument of tests/unit/test_alert_posts.py and
benchmarks/alert_coverage.py (issue 38 item 8).

1. The metrics saved with the snapshot (``metrics/``: the mgr ``prometheus`` module's and
   the node_exporters' exposition, storage/snapshot/metrics.py) become ``promtool test
   rules`` input series, held at their value past the longest ``for:`` (a snapshot is one
   instant: a rule over a rate or a change sees none), labelled as the lab's Prometheus
   stores them (``instance``, ``job``, the target label ``cluster``).
2. promtool evaluates the release's rule file (tests/fixtures/alert_rules/, Squid's renamed
   rules added as Reef's under their new name) and, expecting nothing, prints what fires;
   that is parsed, then proven by a second run expecting exactly it, which must pass.
3. Each firing alert group (Alertmanager's ``group_by: [alertname, cluster]``) is POSTed,
   as Alertmanager's webhook JSON, to the real bot's ``/alertmanager`` over HTTP, its check
   answered by the snapshot's replay; the chat.postMessage Slack receives is read: does it
   name the entity, does it carry a Fix button (and which runbook and target it runs).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from storage.snapshot.metrics import INDEX as INDEX_REL
from storage.snapshot.metrics import read_metrics, scraped_samples, series_text

ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = ROOT / "tests" / "fixtures" / "alert_rules"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
CLUSTER = "lab"
TOKEN = "alert-posts-token-0123456789"
CHANNEL = "CALERTPOST1"


class PromtoolError(RuntimeError):
    pass


@dataclass(frozen=True)
class Fired:
    """One alert promtool says fires: its labels and its templated annotations."""

    name: str
    labels: dict[str, str]
    annotations: dict[str, str]


@dataclass
class Post:
    """What the bot posted for one firing group."""

    rule: str
    alerts: int
    text: str
    cause: str | None  # the entity of the incident posted (None: no incident)
    names_entity: bool
    fix: tuple[str, str] | None  # (runbook, target) of the Fix button
    incidents: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ rule files
def rule_names(release: str) -> list[str]:
    doc = yaml.safe_load((RULE_FILES / f"{release}.yml").read_text())
    names = [r["alert"] for g in doc["groups"] for r in g["rules"] if "alert" in r]
    if release == "reef":
        names += list(_renamed())
    return names


def _renamed() -> dict[str, str]:
    from checks.alert_map import RENAMED

    return dict(RENAMED)


def rule_file(release: str, work: Path) -> Path:
    """The release's rule file as promtool reads it; Reef's with Squid's renamed rules."""
    src = RULE_FILES / f"{release}.yml"
    if release != "reef":
        return src
    doc = yaml.safe_load(src.read_text())
    extra = []
    for new, old in _renamed().items():
        rule = next(r for g in doc["groups"] for r in g["rules"] if r.get("alert") == old)
        extra.append({**copy.deepcopy(rule), "alert": new})
    doc["groups"].append({"name": "squid-renamed", "rules": extra})
    out = work / "rules-reef-squid.yml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


# ------------------------------------------------------------------ promtool
def hold_min(release: str, present: frozenset[str] | None = None) -> int:
    """Minutes the saved values are held: past the longest ``for:`` of the release's rules
    that can fire on these metrics (``present``: the metric names served; None: every
    rule), so a rule whose condition holds has fired. A rule naming no served metric
    cannot fire unless it asks for an ``absent`` one: Reef's NVMe-oF version rule (1h)
    would otherwise make every promtool run evaluate 65 minutes instead of 20."""
    doc = yaml.safe_load((RULE_FILES / f"{release}.yml").read_text())
    mult = {"s": 1 / 60, "m": 1, "h": 60}

    def can_fire(expr: str) -> bool:
        words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
        return present is None or "absent" in words or bool(words & present)

    longest = max((float(str(r["for"])[:-1]) * mult[str(r["for"])[-1]]
                   for g in doc["groups"] for r in g["rules"]
                   if r.get("for") and can_fire(str(r.get("expr", "")))), default=0)
    return int(longest) + 5


def _values(v: float, hold: int) -> str:
    if v != v:  # NaN: promtool's series notation has no NaNxN
        return " ".join(["NaN"] * (hold + 1))
    if v in (float("inf"), float("-inf")):
        return " ".join([("+" if v > 0 else "-") + "Inf"] * (hold + 1))
    return f"{v!r}x{hold}"


def rule_metrics(release: str) -> set[str]:
    """Every name the release's rule expressions mention (metrics among them): a series
    of another metric cannot change what they fire, and promtool's time grows with each."""
    doc = yaml.safe_load((RULE_FILES / f"{release}.yml").read_text())
    return {w for g in doc["groups"] for r in g["rules"]
            for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", str(r.get("expr", "")))}


def served_names(snapshot_dir: Path) -> frozenset[str]:
    """The metric names a snapshot's saved scrapes hold."""
    return frozenset(name for s in read_metrics(str(snapshot_dir))
                     for name, _, _ in scraped_samples(s, {"cluster": CLUSTER}))


def input_series(snapshot_dir: Path, release: str, hold: int | None = None
                 ) -> list[dict[str, str]] | None:
    """promtool's input series of a snapshot's saved metrics (None: it has none), each
    value held ``hold`` minutes (default: :func:`hold_min` of its own metrics)."""
    scrapes = read_metrics(str(snapshot_dir))
    if not scrapes:
        return None
    used = rule_metrics(release)
    if hold is None:
        hold = hold_min(release, served_names(snapshot_dir))
    out = []
    for s in scrapes:
        for name, labels, v in scraped_samples(s, {"cluster": CLUSTER}):
            if name not in used:
                continue
            out.append({"series": series_text(name, labels), "values": _values(v, hold)})
    return out


_BLOCK = re.compile(r"name: (t\d+),\s*alertname: (\w+), time: [^,]*,\s*exp:\[.*?\],\s*"
                    r"got:\[(.*?)\n\s*\]", re.S)
_GOT = re.compile(r"Labels:(\{.*?\})\s*\n\s*Annotations:(\{.*?\})(?:,)?\s*$", re.M)
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _go_map(text: str) -> dict[str, str]:
    """Go's ``labels.String()``: ``{a="x", b="y"}``, values quoted by strconv.Quote."""
    return {k: json.loads(f'"{v}"') for k, v in _PAIR.findall(text)}


def _promtool(test: dict[str, Any], work: Path) -> subprocess.CompletedProcess[str]:
    path = work / "test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True,
                          text=True, timeout=600, check=False)


def evaluate(release: str, snapshot_dir: Path) -> list[Fired] | None:
    """The alerts the release's rules fire on the snapshot's metrics (None: no metrics
    saved with it)."""
    return evaluate_many(release, (snapshot_dir,))[snapshot_dir]


_EVALUATED: dict[tuple[str, tuple[Path, ...]], dict[Path, list[Fired] | None]] = {}


def evaluate_many(release: str, dirs: tuple[Path, ...]) -> dict[Path, list[Fired] | None]:
    """:func:`evaluate` of several snapshots in one promtool run (one test group each):
    promtool's own answer, proven by a second run that expects exactly it. Kept for the
    process (the tests of each scenario share one run)."""
    key = (release, dirs)
    if key in _EVALUATED:
        return _EVALUATED[key]
    # one eval time for every group: past the longest wait of a rule that can fire on any
    hold = hold_min(release, frozenset().union(*(served_names(d) for d in dirs)))
    series = {d: input_series(d, release, hold) for d in dirs}
    out: dict[Path, list[Fired] | None] = {d: None if s is None else [] for d, s in series.items()}
    tagged = [(f"t{i}", d) for i, d in enumerate(dirs) if series[d] is not None]
    if tagged:
        by_tag = dict(tagged)
        with tempfile.TemporaryDirectory(prefix="stordoc-promtool-") as tmp:
            work = Path(tmp)
            rules = rule_file(release, work)
            names = rule_names(release)
            at = f"{hold}m"
            test: dict[str, Any] = {
                "rule_files": [str(rules)], "evaluation_interval": "1m",
                "tests": [{"name": tag, "interval": "1m", "input_series": series[d],
                           "alert_rule_test": [{"eval_time": at, "alertname": n,
                                                "exp_alerts": []} for n in names]}
                          for tag, d in tagged]}
            r = _promtool(test, work)
            if r.returncode != 0:
                blocks = _BLOCK.findall(r.stdout + r.stderr)
                if not blocks:
                    raise PromtoolError(f"promtool failed: {(r.stdout + r.stderr)[-2000:]}")
                for tag, name, got in blocks:
                    for lab, ann in _GOT.findall(got):
                        out[by_tag[tag]].append(  # type: ignore[union-attr]
                            Fired(name, _go_map(lab), _go_map(ann)))
            # the proof: expecting exactly what was parsed, promtool passes
            for group, (_, d) in zip(test["tests"], tagged, strict=True):
                mine: dict[str, list[Fired]] = {}
                for f in out[d] or []:
                    mine.setdefault(f.name, []).append(f)
                group["alert_rule_test"] = [
                    {"eval_time": at, "alertname": n, "exp_alerts": [
                        {"exp_labels": {k: v for k, v in f.labels.items() if k != "alertname"},
                         "exp_annotations": f.annotations} for f in mine.get(n, [])]}
                    for n in names]
            r2 = _promtool(test, work)
            if r2.returncode != 0 and not _only_ties(r2.stdout + r2.stderr, out, by_tag):
                raise PromtoolError("promtool's alerts were misread: expecting them failed: "
                                    f"{(r2.stdout + r2.stderr)[-2000:]}")
    _EVALUATED[key] = out
    return out


def _canon(f: Fired) -> tuple[Any, ...]:
    """An alert with its annotations' words sorted: a template's ``topk`` of
    equal values (CephPoolFull's "Pool Breakdown (top 5) - rbd at 0% - ..." with every pool
    at 0%) lists them in any order from one promtool run to the next."""
    return (f.name, tuple(sorted(f.labels.items())),
            tuple(sorted((k, tuple(sorted(v.split())))
                         for k, v in f.annotations.items())))


def _only_ties(text: str, out: dict[Path, list[Fired] | None], by_tag: dict[str, Path]
               ) -> bool:
    """Does the proof run differ from the first one only by the order of tied values?"""
    blocks = _BLOCK.findall(text)
    if not blocks:
        return False
    for tag, name, got in blocks:
        again = sorted(_canon(Fired(name, _go_map(lab), _go_map(ann)))
                       for lab, ann in _GOT.findall(got))
        first = sorted(_canon(f) for f in out[by_tag[tag]] or [] if f.name == name)
        if again != first:
            return False
    return True


# ------------------------------------------------------------------ the webhook's post
def groups(fired: list[Fired]) -> dict[str, list[Fired]]:
    """Alertmanager's groups (the lab's route: ``group_by: [alertname, cluster]``)."""
    out: dict[str, list[Fired]] = {}
    for f in fired:
        out.setdefault(f.name, []).append(f)
    return out


def am_payload(name: str, alerts: list[Fired], started: float) -> dict[str, Any]:
    """Alertmanager's webhook JSON (v4) for one firing group; Prometheus' external label
    ``cluster`` on every alert, as the lab's Prometheus sets it."""
    when = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(started))
    items: list[dict[str, Any]] = []
    for f in alerts:
        labels = {**f.labels, "cluster": CLUSTER}
        fp = f"{abs(hash(json.dumps(labels, sort_keys=True))):016x}"[:16]
        items.append({"status": "firing", "labels": labels, "annotations": f.annotations,
                      "startsAt": when, "endsAt": "0001-01-01T00:00:00Z",
                      "generatorURL": "", "fingerprint": fp})
    common = {k: v for k, v in items[0]["labels"].items()
              if all(i["labels"].get(k) == v for i in items)}
    common_ann = {k: v for k, v in items[0]["annotations"].items()
                  if all(i["annotations"].get(k) == v for i in items)}
    return {"version": "4", "status": "firing", "receiver": "stordoc",
            "groupKey": f'{{}}:{{alertname="{name}", cluster="{CLUSTER}"}}',
            "truncatedAlerts": 0, "groupLabels": {"alertname": name, "cluster": CLUSTER},
            "commonLabels": common, "commonAnnotations": common_ann,
            "externalURL": "http://127.0.0.1:9093", "alerts": items}


# an entity of the cluster a person can act on: an OSD, monitor, manager, MDS, a PG, a
# host, a disk or Swift device (``pool NAME`` and Swift servers are matched as entities)
_ENTITY = re.compile(r"\b(osd\.\d+|mon\.[a-z0-9]+|mgr\.[a-z0-9]+|mds\.[a-z0-9]+|"
                     r"pg \d+\.[0-9a-f]+|node\d+|/dev/[a-z0-9]+|d\d+@node\d+)\b")
_CAUSE = re.compile(r"\*Cause:\* \*(.+?)\* `([A-Z0-9_]+)`\n(.*?)(?:\n_impact|$)", re.S)


def _is_entity(e: str) -> bool:
    if e.startswith(("cluster ", "ceph ")) or e.endswith(" pgs"):
        return False  # the whole cluster, Ceph's code, "the PGs": no one thing to act on
    return bool(e.startswith(("pool ", "host ", "disk ")) or " server " in e
                or _ENTITY.search(e))


def read_post(call: Any, rule: str, n: int) -> Post:
    """What one chat.postMessage says, from its blocks alone."""
    from tests.support.fake_slack import all_text

    text = all_text(call)
    m = _CAUSE.search(text)
    cause = m.group(1) if m else None
    names: list[str] = [cause] if cause else []
    cm = re.search(r"consequences: (.*)", text)
    if m and cm:
        names += [c.rsplit(" ", 1)[0] for c in cm.group(1).split("; ")]
    named = m is not None and (any(_is_entity(e) for e in names)
                               or bool(_ENTITY.search(m.group(3))))
    return Post(rule, n, text, cause, named, None)


class Desk:
    """The real bot (slack-bolt App on loopback HTTP, fake Slack API) whose check answers
    with a snapshot's replay; one fresh bot per group, so each rule's post is the one it
    gets when it alone fires (a later group explaining a posted incident only replies
    "same cause" in its thread)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        conf = work / "ceph.conf"
        conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
        tok = work / "token"
        tok.write_text(TOKEN + "\n")
        from core.settings import AlertSettings, Secret, parse_settings

        self.settings = parse_settings({"journal": str(work / "j.db"), "clusters": {
            CLUSTER: {"ceph": {"conf": str(conf), "timeout": 2}}}})
        self.alerts = AlertSettings(token=Secret(file=str(tok)), thread_window_s=0)
        self.n = 0

    def post(self, outcome: Any, name: str, alerts: list[Fired]) -> list[Post]:
        """POST one group to the webhook; every message the bot posts for it (one per
        incident it relates the alerts to, or the one saying it finds none)."""
        from tests.support.fake_slack import BotHarness, buttons

        self.n += 1
        h = BotHarness(self.settings, {CLUSTER: {"operators": ["UOPS000001"]}},
                       str(self.work / f"bot-{self.n}.db"), throttle_s=0.0,
                       channels={CHANNEL: CLUSTER}, alerts=self.alerts)
        try:
            h.bot.backend.check = (  # type: ignore[method-assign]
                lambda *a, **k: outcome)  # the snapshot's replayed check
            body = json.dumps(am_payload(name, alerts, time.time() - 120)).encode()
            req = urllib.request.Request(
                h.base_url + "/alertmanager", data=body, method="POST",
                headers={"Authorization": f"Bearer {TOKEN}",
                         "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 (loopback)
                assert resp.status == 200, resp.status

            def mine() -> list[Any]:
                return [c for c in h.fake.of("chat.postMessage")
                        if c.params.get("channel") == CHANNEL]

            h.fake.wait_for(lambda f: mine(), 60)
            with h.bot.desk.lock(CLUSTER):  # the delivery's handling holds it: it is done
                pass
            out = []
            for call in mine():
                post = read_post(call, name, len(alerts))
                fix = buttons(call, "fix")
                if fix:
                    b = h.bot.store.button(fix[0]["value"])
                    assert b is not None, "a Fix button whose token the bot does not know"
                    post.fix = (b.runbook, b.target)
                m = _CAUSE.search(post.text)
                post.incidents = [f"{m.group(2)} {m.group(1)}"] if m else []
                out.append(post)
            return out
        finally:
            h.close()


def scenario_dirs(release: str) -> tuple[Path, ...]:
    """The saved scenarios of a release that hold metrics."""
    from tests.support.fixture_snapshots import FIXTURES

    base = FIXTURES / release
    return tuple(d for d in sorted(base.iterdir()) if (d / "metrics" / INDEX_REL).exists()
                 ) if base.is_dir() else ()


def posts_of(release: str, snapshot_dir: Path, work: Path,
             together: tuple[Path, ...] = ()) -> tuple[list[Fired], list[Post]] | None:
    """The alerts a scenario fires and the bot's post for each group (None: no metrics);
    ``together``: the scenarios evaluated in the same promtool run (cached)."""
    from core.service.snapshots import load
    from tests.support.fixture_snapshots import FIXTURES, replayed

    fired = (evaluate_many(release, together)[snapshot_dir] if snapshot_dir in together
             else evaluate(release, snapshot_dir))
    if fired is None:
        return None
    saved = snapshot_dir.parent == FIXTURES / release  # a saved one: replayed once a session
    outcome = (replayed(release, snapshot_dir.name) if saved
               else load(str(snapshot_dir))).outcome
    desk = Desk(work)
    return fired, [p for n, a in sorted(groups(fired).items()) for p in desk.post(outcome, n, a)]


# ------------------------------------------------------------------ claims
def attached_runbooks() -> set[str]:
    """The runbook names a check of checks/ can attach to a finding (what an incident's
    next step and its Fix button are made of): the strings in each ``runbook=`` argument,
    in assignments to a ``runbook``/``rb`` variable, in what a ``runbook()`` method
    returns, and the module constants these name. A runbook only named in a finding's
    text (``replace the drive (osd-replace-disk)``) is not attached."""
    import ast

    out: set[str] = set()
    for p in sorted((ROOT / "checks").glob("*.py")):
        tree = ast.parse(p.read_text())
        consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                  for t in n.targets if isinstance(t, ast.Name)}
        exprs: list[ast.expr] = []
        for n in ast.walk(tree):
            if isinstance(n, ast.keyword) and n.arg == "runbook":
                exprs.append(n.value)
            elif isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id in ("runbook", "rb") for t in n.targets):
                exprs.append(n.value)
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and \
                    n.target.id in ("runbook", "rb") and n.value is not None:
                exprs.append(n.value)
            elif isinstance(n, ast.FunctionDef) and n.name == "runbook":
                exprs += [r.value for r in ast.walk(n)
                          if isinstance(r, ast.Return) and r.value is not None]
        for e in exprs:
            for x in ast.walk(e):
                if isinstance(x, ast.Constant) and isinstance(x.value, str):
                    out.add(x.value)
                elif isinstance(x, ast.Name) and x.id in consts:
                    out.add(consts[x.id])
    return out
