"""``pg-mark-unfound-lost``: give up on a PG's unfound objects (``ceph pg P
mark_unfound_lost revert|delete``), with two people.

Unfound objects are writes whose newest copy is on no OSD that is up. Waiting for the OSD
that has them costs nothing but time; ``revert`` rolls each object back to its previous
version (or forgets a new one), ``delete`` forgets them: both lose data for good, so:

- the PG must have unfound objects now, and every OSD that might hold them must have
  been asked or be down (``might_have_unfound`` all "already probed" / "osd is down");
  otherwise Ceph may still find them and the runbook refuses; a down OSD must also be
  marked lost (``ceph osd lost N``): Ceph itself refuses ("we haven't probed all
  sources") while it could come back, so the runbook says so before, not after;
- two people: the one who plans and confirms it, and a second, different authorized
  person who approves that exact plan. In Slack the Confirm button refuses the requester
  (``bot.actions``) whatever the cluster's two_person setting; in the CLI the run needs
  ``--approval FILE``: this plan (the PG, the mode, the unfound count, the steps) signed
  with the SSH key of another admin or operator of the cluster on their own machine
  (``core.approvals``: ``stordoc approve``, verified against ``[approver_keys]``), or
  it is refused with exit 64.
"""

from __future__ import annotations

from runbooks.base import Draft, Runbook, need_ceph, register
from runbooks.model import InvalidRequest, Refused, RunbookInfo, StepEnv
from storage.ceph.parse_pgquery import PGID_RE, parse_pg_query
from storage.model import ClusterSnapshot

NAME = "pg-mark-unfound-lost"
MODES = ("revert", "delete")


def canonical_pgid(raw: str) -> str:
    """``2.5``, ``2.1F`` -> ``2.5``, ``2.1f``; InvalidRequest otherwise."""
    t = raw.strip().lower() if isinstance(raw, str) else ""
    if not t.isascii() or not PGID_RE.match(t):
        raise InvalidRequest(f"{raw!r} is not a PG id like 2.5 (pool id, a dot, hex)")
    pool, seed = t.split(".", 1)
    return f"{int(pool)}.{int(seed, 16):x}"


@register
class PgMarkUnfoundLost(Runbook):
    option_keys = ("mode",)
    approval_params = ("pgid", "mode", "num_unfound")
    info = RunbookInfo(
        NAME,
        "Give up on a PG's unfound objects (ceph pg P mark_unfound_lost revert|delete): "
        "only when every OSD that might hold them was asked; two people.",
        (), destructive=True, target_kind="pg", target_help="PGID",
        two_people=True)  # Ceph's OBJECT_UNFOUND (a CEPH_HEALTH finding names the PG)

    def lock_keys(self, target: str) -> list[str]:
        return [f"pg {target}"]

    def build(self, d: Draft, snap: ClusterSnapshot, target: str) -> None:
        ceph = need_ceph(snap)
        pgid = canonical_pgid(target)
        mode = str(d.options.get("mode") or "")
        if mode not in MODES:
            raise InvalidRequest(
                (f"{NAME} mode {mode!r} is not one of" if mode else f"{NAME} needs a mode:")
                + " revert (previous versions) or delete (forget them): --mode revert "
                "(-o mode=revert) in the CLI, `fix pg-mark-unfound-lost PG revert` in Slack")
        pool_id, seed = int(pgid.split(".")[0]), int(pgid.split(".")[1], 16)
        pool = ceph.pool_by_id(pool_id)
        if pool is None or seed >= pool.pg_num:
            raise InvalidRequest(f"pg {pgid} does not exist (" + (
                f"pool {pool.name} has {pool.pg_num} PGs)" if pool else
                f"no pool with id {pool_id})"))
        block = next((b for b in ceph.pg_blocks if b.pgid == pgid), None)
        if block is None or not block.num_unfound:
            raise InvalidRequest(f"pg {pgid} has no unfound objects: nothing to mark lost")
        if not block.all_probed:
            waiting = ", ".join(f"osd.{m.osd} {m.status}" for m in block.might_have_unfound
                                if m.status not in ("already probed", "osd is down"))
            raise Refused(f"pg {pgid}: not every OSD that might hold its unfound objects was "
                          f"asked ({waiting}): Ceph may still find them; wait")
        stalled = [f for f in ("norecover", "pause") if f in ceph.flags]
        if stalled:
            raise Refused(f"the {stalled[0]} flag is set: Ceph accepts mark_unfound_lost but "
                          f"reverts/deletes the objects only through recovery (seen on the "
                          f"lab); `ceph osd unset {stalled[0]}` first")
        # Ceph refuses while an OSD that might have them could come back ("we haven't
        # probed all sources", seen on the lab): it must be started, or marked lost
        down = [m.osd for m in block.might_have_unfound if m.status == "osd is down"]
        alive = [i for i in down if (o := ceph.osd(i)) is None or not o.lost_at]
        if alive:
            names = ", ".join(f"osd.{i}" for i in alive)
            raise Refused(f"pg {pgid}: {names} might hold its unfound objects and is down, "
                          f"not lost: start it (the objects come back, nothing lost); only "
                          f"if its disk is gone for good, `ceph osd lost {alive[0]} "
                          f"--yes-i-really-mean-it` first (Ceph refuses otherwise)")
        d.params.update(pgid=pgid, mode=mode, num_unfound=block.num_unfound,
                        might_have_unfound=[f"osd.{m.osd} {m.status}"
                                            for m in block.might_have_unfound],
                        second_person_required=True)
        slack = d.ctx.source == "slack"  # the Confirm button is the second person there
        d.warnings.append(
            f"{block.num_unfound} objects of pg {pgid} will be "
            + ("rolled back to their previous versions (newer writes lost; new objects "
               "forgotten)" if mode == "revert" else "deleted for good"))
        if down:
            d.warnings.append(
                f"{', '.join(f'osd.{i}' for i in down)} might have had them and is marked "
                f"lost: if it can still start, starting it instead costs nothing but time")
        d.warnings.append(
            f"two people: another operator than {d.ctx.user} must press Confirm (whatever "
            f"the cluster's two-person setting)" if slack else
            f"two people: another admin or operator of {d.ctx.cluster} than {d.ctx.user} "
            f"signs this exact plan with their SSH key: `stordoc plan {NAME} {pgid} --mode "
            f"{mode} --approval-request FILE`, on their machine `stordoc approve FILE --as "
            f"THEIR_ID --key ~/.ssh/id_ed25519`, then `stordoc fix {NAME} {pgid} --mode "
            f"{mode} --approval FILE.approval`")

        def mark(env: StepEnv) -> tuple[bool, str]:
            out = env.ceph.pg(pgid, "mark_unfound_lost", mulcmd=mode)
            return True, str(out or f"pg {pgid} mark_unfound_lost {mode}")

        def none_left(env: StepEnv) -> tuple[bool, str]:
            q = parse_pg_query(pgid, env.ceph.pg(pgid, "query"))
            return q.num_unfound == 0, f"pg {pgid}: {q.num_unfound} unfound ({q.state})"

        d.local(f"mark pg {pgid}'s unfound objects lost ({mode})",
                f"ceph pg {pgid} mark_unfound_lost {mode}", mark)
        d.wait(f"pg {pgid} has no unfound objects", f"ceph pg {pgid} query: unfound 0",
               none_left, timeout_s=120)
        d.verify_codes = ("CEPH_HEALTH",)
        d.verify_entities = ("ceph OBJECT_UNFOUND",)
