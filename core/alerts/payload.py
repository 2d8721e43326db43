"""Alertmanager's webhook payload (v4): validated, and what its alerts name to stordoc.

The body is someone else's text: every field is bounded, a payload that does not validate
is a ``Refused`` (4xx, nothing posted), and labels are only ever matched against known
names (the cluster label, OSD ids, hosts), never run or trusted as markup.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from checks import alert_map
from core.slack.wsgi import TooDeep, load_json

if TYPE_CHECKING:
    from checks.incidents import Incident

_OSD_RE = re.compile(r"osd\.([0-9]{1,6})")


class AmAlert(BaseModel):
    """One alert of Alertmanager's webhook payload (version 4)."""

    model_config = ConfigDict(extra="ignore")
    status: Literal["firing", "resolved"]
    labels: dict[str, str] = Field(max_length=100)
    annotations: dict[str, str] = Field(default_factory=dict, max_length=100)
    startsAt: str = Field("", max_length=64)
    endsAt: str = Field("", max_length=64)
    fingerprint: str = Field("", max_length=64)

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "?")[:120]


class AmPayload(BaseModel):
    """Alertmanager's webhook body (``version: "4"``)."""

    model_config = ConfigDict(extra="ignore")
    version: Literal["4"]
    groupKey: str = Field(max_length=4096)
    status: Literal["firing", "resolved"]
    receiver: str = Field("", max_length=256)
    groupLabels: dict[str, str] = Field(default_factory=dict, max_length=100)
    commonLabels: dict[str, str] = Field(default_factory=dict, max_length=100)
    commonAnnotations: dict[str, str] = Field(default_factory=dict, max_length=100)
    externalURL: str = Field("", max_length=2048)
    truncatedAlerts: int = Field(0, ge=0)
    alerts: list[AmAlert] = Field(min_length=1)

    @property
    def name(self) -> str:
        return (self.groupLabels.get("alertname") or self.commonLabels.get("alertname")
                or self.alerts[0].name)[:120]

    def since(self) -> float | None:
        """When the newest of these alerts started (resolved: ended), epoch s: a check
        begun after it saw the condition (or its end); None when a time is missing or
        unreadable (check afresh)."""
        starts = [_epoch(a.endsAt if a.status == "resolved" else a.startsAt)
                  for a in self.alerts]
        if not starts or any(s is None for s in starts):
            return None
        return max(s for s in starts if s is not None)

    def delivery_key(self) -> str:
        """Same for a repeated delivery of the same state of the same group."""
        parts = sorted(f"{a.fingerprint}:{a.status}:{a.startsAt}" for a in self.alerts)
        raw = json.dumps([self.groupKey, self.status, parts])
        return "am:" + hashlib.sha256(raw.encode()).hexdigest()[:40]


_FRAC_RE = re.compile(r"(\.[0-9]{6})[0-9]+")


def _epoch(ts: str) -> float | None:
    """RFC 3339 as Alertmanager writes it (nanoseconds, ``Z``) to epoch seconds."""
    try:
        d = dt.datetime.fromisoformat(_FRAC_RE.sub(r"\1", ts.strip()).replace("Z", "+00:00"))
    except ValueError:
        return None
    if d.tzinfo is None or d.year < 2000:  # Go's zero time "0001-01-01T00:00:00Z"
        return None
    return d.timestamp()


class Refused(Exception):
    """A webhook delivery that is not taken: HTTP status and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def parse_payload(body: bytes, max_alerts: int) -> AmPayload:
    """The payload, or ``Refused`` (400 malformed, 413 too many alerts)."""
    try:
        obj = load_json(body.decode("utf-8"))
    except TooDeep as e:
        raise Refused(400, str(e)) from None
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "body is not JSON") from None
    if not isinstance(obj, dict):
        raise Refused(400, "body is not a JSON object")
    alerts = obj.get("alerts")
    if isinstance(alerts, list) and len(alerts) > max_alerts:
        raise Refused(413, f"{len(alerts)} alerts in one delivery (at most {max_alerts})")
    try:
        return AmPayload.model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "body"
        raise Refused(400, f"not an Alertmanager v4 payload: {where}: "
                           f"{str(err.get('msg', ''))[:120]}") from None


def cluster_of(p: AmPayload, label: str, mapping: Mapping[str, str],
               clusters: Iterable[str]) -> str:
    """The stordoc cluster the alerts name by ``label`` (all must agree), else ``Refused``."""
    values = {a.labels.get(label) for a in p.alerts} | (
        {p.commonLabels[label]} if label in p.commonLabels else set())
    values.discard(None)
    if not values:
        raise Refused(422, f"alerts carry no {label!r} label: set it in Prometheus "
                           "(external_labels) or alerts.cluster_label")
    if len(values) > 1:
        raise Refused(422, f"alerts of several clusters in one group ({label} = "
                           f"{', '.join(sorted(str(v)[:40] for v in values))}): group by "
                           f"{label} in Alertmanager's route")
    value = str(values.pop())
    name = mapping.get(value, value)
    if name not in set(clusters):
        raise Refused(422, f"unknown cluster {value[:60]!r} (alerts.clusters maps label "
                           "values to configured clusters)")
    return name


def entities_of(alert: AmAlert) -> set[str]:
    """stordoc entities an alert's labels name (``ceph_daemon``, ``osd``, ``hostname``)."""
    out: set[str] = set()
    for key in ("ceph_daemon", "osd", "daemon"):
        m = _OSD_RE.fullmatch(alert.labels.get(key, ""))
        if m:
            out.add(f"osd.{int(m.group(1))}")
    for key in ("hostname", "host", "pool", "name"):
        v = alert.labels.get(key)
        if v and key != "name":
            out.add(v[:120])
    return out


def incident_entities(inc: Incident) -> set[str]:
    ents = {inc.root.entity} | {f.entity for f in inc.consequences}
    for f in (inc.root, *inc.consequences):
        if f.target:
            ents.add(f.target)
    return ents


def related(incidents: Sequence[Incident], alerts: Sequence[AmAlert]) -> list[Incident]:
    """The incidents an alert group is about. An alert of Ceph's own rules selects those
    its mapping (``checks.alert_map``) names by code, then by the entity its labels name
    (``CephOSDDown``: the incident that folded ``ceph OSD_DOWN`` in; ``CephOSDFlapping`` of
    ``osd.3``: osd.3's); none when the map says stordoc has no data for them here
    (``PrometheusJobMissing`` is not about an OSD that happens to be down). Otherwise, or
    when nothing the mapping names is found: those sharing an entity with its alerts, or
    all of them when the alerts name no entity."""
    if any(a.name in alert_map.MAP for a in alerts):
        ids = {i.id for a in alerts for i in alert_map.select_one(
            a.name, a.labels, incidents, entities_of(a)).incidents}
        hit = [i for i in incidents if i.id in ids]
        if hit or no_data_of(alerts):  # nothing here explains it: say so, blame nothing
            return hit
    named: set[str] = set().union(*(entities_of(a) for a in alerts))
    if not named:
        return list(incidents)
    hit = [i for i in incidents if incident_entities(i) & named]
    return hit or list(incidents)


def no_data_of(alerts: Sequence[AmAlert]) -> str:
    """Why stordoc has no data for these alerts (``checks.alert_map``), when none of them
    has any: ``PrometheusJobMissing``, CephFS or NVMe-oF rules on a cluster without."""
    maps = [alert_map.MAP.get(a.name) for a in alerts]
    if maps and all(m is not None and m.no_data for m in maps):
        return "; ".join(dict.fromkeys(m.no_data for m in maps if m is not None))
    return ""


def alertname_of(group_key: str) -> str | None:
    """The ``alertname`` an Alertmanager group key groups by, if it does."""
    m = re.search(r'alertname="([^"]{1,128})"', group_key)
    return m.group(1) if m else None
