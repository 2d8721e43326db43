"""Pool and monitor settings that Ceph's own health codes name (issue 38):

- ``pool-app-enable POOL``: ``ceph osd pool application enable POOL APP`` for a pool
  Ceph says has no application (POOL_APP_NOT_ENABLED). The application is ``-o app=``
  or what the pool's name says (``checks.ceph_codes_rest.guess_app``: rgw, cephfs, rbd,
  else ``rados``, a freeform name as Ceph allows). Refused for a pool that has one.
- ``global-id-reclaim-off CLUSTER``: ``ceph config set mon
  auth_allow_insecure_global_id_reclaim false`` (AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED),
  refused while AUTH_INSECURE_GLOBAL_ID_RECLAIM says clients still reclaim insecurely:
  the monitors would cut them off.
"""

from __future__ import annotations

import re

from checks.ceph_codes_rest import guess_app
from runbooks.base import Draft, Runbook, need_ceph, need_pool, register
from runbooks.model import Refused, RunbookInfo
from storage.model import ClusterSnapshot

_APP_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z", re.ASCII)
RECLAIM_OPTION = "auth_allow_insecure_global_id_reclaim"


@register
class PoolAppEnable(Runbook):
    option_keys = ("app",)
    info = RunbookInfo(
        "pool-app-enable",
        "Enable an application on a pool Ceph says has none (ceph osd pool application "
        "enable POOL APP; APP from -o app= or the pool's name: rgw, cephfs, rbd, else "
        "rados).",
        (), destructive=False, target_kind="pool",  # Ceph's POOL_APP_NOT_ENABLED
        target_help="pool name")

    def lock_keys(self, target: str) -> list[str]:
        return [f"pool {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        p = need_pool(ceph, target)
        if p.application:
            raise Refused(f"pool {p.name} already has application(s) "
                          f"{', '.join(p.application)}: nothing to enable (a second one "
                          "needs --yes-i-really-mean-it, by hand)")
        raw = d.options.get("app")
        app = guess_app(p.name) if raw is None else str(raw).strip()
        if not _APP_RE.match(app):
            raise Refused(f"option app must be an application name (rbd, rgw, cephfs or a "
                          f"freeform word), not {raw!r}")
        d.params.update(pool=p.name, app=app, guessed=raw is None)
        d.before_after["application"] = ("none", app)
        if raw is None:
            d.warnings.append(f"application {app} from the pool's name; another one: "
                              f"-o app=rbd|rgw|cephfs|NAME")
        d.mon(f"enable application {app} on pool {p.name}", "osd pool application enable",
              {"pool": p.name, "app": app})
        # Ceph's POOL_APP_NOT_ENABLED finding targets the first pool it names
        d.verify_codes = ("CEPH_HEALTH",)
        d.verify_entities = ()


@register
class GlobalIdReclaimOff(Runbook):
    info = RunbookInfo(
        "global-id-reclaim-off",
        "Stop the monitors allowing insecure global_id reclaim (ceph config set mon "
        "auth_allow_insecure_global_id_reclaim false, CVE-2021-20288); refused while a "
        "client still needs it.",
        (), destructive=True,  # Ceph's AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED
        target_kind="cluster", target_help="the cluster's name")

    def lock_keys(self, target: str) -> list[str]:
        return [f"config mon {RECLAIM_OPTION}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        if target != d.ctx.cluster:
            raise Refused(f"the target is the cluster's name ({d.ctx.cluster}), not "
                          f"{target!r}")
        codes = {hc.code: hc for hc in ceph.health_checks}
        clients = codes.get("AUTH_INSECURE_GLOBAL_ID_RECLAIM")
        if clients is not None:
            raise Refused(f"clients still reclaim their global_id insecurely ("
                          f"{clients.summary}): the monitors would refuse them; upgrade "
                          "them first (AUTH_INSECURE_GLOBAL_ID_RECLAIM)")
        if "AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED" not in codes:
            raise Refused("Ceph does not say insecure global_id reclaim is allowed "
                          "(no AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED): nothing to turn off")
        d.params.update(option=RECLAIM_OPTION, value="false")
        d.before_after[RECLAIM_OPTION] = ("true", "false")
        d.warnings.append("a client that has not been upgraded since 2021 can no longer "
                          "reconnect after this")
        d.mon(f"set mon {RECLAIM_OPTION} false", "config set",
              {"who": "mon", "name": RECLAIM_OPTION, "value": "false"})
        d.verify_codes = ("CEPH_HEALTH",)
        d.verify_entities = ("ceph AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED",)
