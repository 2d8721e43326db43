"""The CLI's second person: an approval that only the approver can make.

A runbook that needs two people (the rule is ``core.policy.Authorizer.second_person``'s:
``RunbookInfo.two_people``, or any runbook that needs a second person on a cluster whose
``[slack.roles]`` set ``two_person``) runs from the CLI only with an approval: the exact plan, signed by the approver's own SSH key on their own
machine (``ssh-keygen -Y sign -n stordoc-approval``, or ``stordoc approve`` which calls
it). stordoc verifies it with ``ssh-keygen -Y verify`` against the public keys the
settings list for that approver (``[approver_keys]``): the host that runs stordoc holds
public keys only, so nobody there (root included) can make one, and nothing in a plan
computes one. In Slack the second person is the Confirm button pressed by another user.

What is signed (the *statement*, plain text the approver reads before signing):

    stordoc approval v1
    cluster: lab
    runbook: pg-mark-unfound-lost
    target: 6.0
    param mode: revert            (the runbook's ``approval_params``)
    param num_unfound: 8
    param pgid: 6.0
    step 1: ceph pg 6.0 mark_unfound_lost revert
    step 2: ceph pg 6.0 query: unfound 0
    approver: U0ADMIN
    expires: 2026-11-28T14:00:00Z

The first lines are the *request* (``request_text``: what ``stordoc plan`` prints and
``--approval-request FILE`` writes); the approver adds the last two. At ``fix`` time the
request is made again from the fresh plan: another PG, mode, count, step or cluster is
another text and the approval is refused. An approval file is the statement followed by
the SSH signature block.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.policy import SecondPerson

NAMESPACE = "stordoc-approval"
HEADER = "stordoc approval v1"
SIG_BEGIN = "-----BEGIN SSH SIGNATURE-----"
MAX_VALID_S = 24 * 3600.0  # an approval for longer is a blank cheque: refused
DEFAULT_VALID_S = 3600.0
SSH_KEYGEN_TIMEOUT_S = 30.0
# a user id as it may appear in allowed_signers: no pattern characters (* ? , !), no blanks
USER_ID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._@-]{0,63}\Z", re.ASCII)
KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
             "ecdsa-sha2-nistp521", "ssh-rsa", "sk-ssh-ed25519@openssh.com",
             "sk-ecdsa-sha2-nistp256@openssh.com")
_KEY_RE = re.compile(r"\A(" + "|".join(re.escape(t) for t in KEY_TYPES)
                     + r") ([A-Za-z0-9+/]{16,}={0,3})(?: [ -~]{0,200})?\Z", re.ASCII)
_EXPIRES_FMT = "%Y-%m-%dT%H:%M:%SZ"


class ApprovalRefused(Exception):
    """Why an approval is not accepted (one line); nothing runs."""


def public_key(text: str) -> str:
    """``TYPE BASE64 [comment]`` of an OpenSSH public key as the settings hold it, without
    the comment; ValueError otherwise."""
    t = text.strip()
    m = _KEY_RE.match(t)
    if not m:
        raise ValueError(f"not an OpenSSH public key like 'ssh-ed25519 AAAA... comment': "
                         f"{t[:40]!r}")
    return f"{m.group(1)} {m.group(2)}"


def _value(v: Any) -> str:
    s = str(v)
    return " ".join(s.split())  # one line, whatever it held


def request_text(plan: Any, approval_params: Collection[str] = ()) -> str:
    """The lines of ``plan`` an approver signs (without approver and expiry)."""
    params: Mapping[str, Any] = plan.params
    lines = [HEADER, f"cluster: {_value(plan.cluster)}", f"runbook: {_value(plan.runbook)}",
             f"target: {_value(plan.target)}"]
    for k in sorted(approval_params):
        lines.append(f"param {k}: {_value(params.get(k, '-'))}")
    for k in sorted(plan.options or {}):
        lines.append(f"option {k}: {_value(plan.options[k])}")
    for s in plan.steps:
        lines.append(f"step {s.index}: {_value(s.command)}")
    return "\n".join(lines) + "\n"


def request_for(plan: Any) -> str:
    """``request_text`` with the plan's runbook's ``approval_params``."""
    from runbooks.catalog import registry

    rb = registry().get(plan.runbook)
    return request_text(plan, getattr(rb, "approval_params", ()) if rb is not None else ())


def fmt_expires(ts: float) -> str:
    return time.strftime(_EXPIRES_FMT, time.gmtime(ts))


def statement(request: str, approver: str, expires: float) -> str:
    return f"{request}approver: {approver}\nexpires: {fmt_expires(expires)}\n"


@dataclass(frozen=True)
class Approval:
    """An approval file read: the signed statement, who signed, until when, the signature."""

    statement: str
    approver: str
    expires: float
    signature: str


def parse_approval(text: str) -> Approval:
    """The statement and signature of an approval file; ApprovalRefused when it is not one."""
    head, sep, sig = text.partition(SIG_BEGIN)
    if not sep or not head.startswith(HEADER + "\n") or not head.endswith("\n"):
        raise ApprovalRefused("not a stordoc approval (the signed plan followed by an SSH "
                              "signature, as `stordoc approve` writes it)")
    lines = head.rstrip("\n").split("\n")
    if len(lines) < 3 or not lines[-2].startswith("approver: ") or \
            not lines[-1].startswith("expires: "):
        raise ApprovalRefused("the approval names no approver and expiry (its last lines "
                              "must be 'approver: ID' and 'expires: YYYY-MM-DDTHH:MM:SSZ')")
    approver = lines[-2].removeprefix("approver: ")
    try:
        expires = dt.datetime.strptime(lines[-1].removeprefix("expires: "), _EXPIRES_FMT
                                       ).replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        raise ApprovalRefused(f"the approval's expiry {lines[-1][9:40]!r} is not "
                              "YYYY-MM-DDTHH:MM:SSZ") from None
    return Approval(head, approver, expires, sep + sig)


def _first_difference(signed: str, wanted: str) -> str:
    a, b = signed.split("\n"), wanted.split("\n")
    for x, y in zip(a, b):
        if x != y:
            return f"this plan has '{y[:80]}', the approval '{x[:80]}'"
    return "this plan has other steps than the approval" if len(a) != len(b) else ""


def allowed_signers(approver: str, keys: Collection[str]) -> str:
    """ssh-keygen's allowed_signers lines: ``approver``'s keys, for our namespace only."""
    return "".join(f'{approver} namespaces="{NAMESPACE}" {public_key(k)}\n' for k in keys)


def ssh_keygen() -> str:
    path = shutil.which("ssh-keygen")
    if path is None:
        raise ApprovalRefused("ssh-keygen is not installed here (openssh-client): an "
                              "approval cannot be verified")
    return path


def verify(text: str, request: str, second_person: Callable[[str], SecondPerson],
           keys: Mapping[str, Collection[str]], approved_by: str | None = None,
           now: float | None = None) -> str:
    """The approver of this plan (``request``) if ``text`` is their valid approval; else
    ApprovalRefused with one line. Checked: the policy's answer for this approver
    (``second_person``: ``core.policy.Authorizer.second_person`` with the runner as the
    requester: another person, an admin or operator of the cluster), keys in the
    settings; it has not expired and is valid for at most a day; it is for this very plan;
    ``ssh-keygen -Y verify`` accepts the signature by one of the approver's keys."""
    a = parse_approval(text)
    now = time.time() if now is None else now
    if approved_by and approved_by != a.approver:
        raise ApprovalRefused(f"the approval is by {a.approver}, not {approved_by}")
    answer = second_person(a.approver)
    if answer is SecondPerson.SAME_PERSON:
        raise ApprovalRefused(f"{a.approver} cannot approve their own run: a second person "
                              "must sign it")
    if not answer.ok:
        raise ApprovalRefused(f"{a.approver} is not an admin or operator of this cluster in "
                              "the settings: they cannot approve it")
    own = tuple(keys.get(a.approver) or ())
    if not own:
        raise ApprovalRefused(f"{a.approver} has no public key in [approver_keys] of the "
                              "settings: their approval cannot be verified")
    if a.expires <= now:
        raise ApprovalRefused(f"the approval by {a.approver} expired at "
                              f"{fmt_expires(a.expires)}: they sign the plan again")
    if a.expires > now + MAX_VALID_S + 60:
        raise ApprovalRefused(f"the approval by {a.approver} is valid until "
                              f"{fmt_expires(a.expires)}: at most "
                              f"{MAX_VALID_S / 3600:g} h is accepted")
    want = statement(request, a.approver, a.expires)
    if a.statement != want:
        raise ApprovalRefused(f"the approval by {a.approver} is for another plan: "
                              + _first_difference(a.statement, want))
    _check_signature(a, own)
    return a.approver


def _check_signature(a: Approval, keys: Collection[str]) -> None:
    exe = ssh_keygen()
    with tempfile.TemporaryDirectory(prefix="stordoc-approval-") as d:
        signers = Path(d) / "allowed_signers"
        sig = Path(d) / "approval.sig"
        signers.write_text(allowed_signers(a.approver, keys))
        sig.write_text(a.signature)
        try:
            r = subprocess.run([exe, "-Y", "verify", "-f", str(signers), "-I", a.approver,
                                "-n", NAMESPACE, "-s", str(sig)],
                               input=a.statement.encode(), capture_output=True,
                               timeout=SSH_KEYGEN_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ApprovalRefused(f"ssh-keygen -Y verify did not run: {e}") from None
    if r.returncode != 0:
        raise ApprovalRefused(f"the approval's signature is not by a key of {a.approver} "
                              "in [approver_keys] (or not over this text): refused")


def sign(request: str, approver: str, key_file: str, valid_s: float = DEFAULT_VALID_S,
         now: float | None = None) -> str:
    """The approval file's text: ``request`` with the approver and expiry, signed with
    ``ssh-keygen -Y sign`` and the private key ``key_file`` (the approver's own machine;
    ssh-keygen asks for its passphrase or uses the agent)."""
    if not request.startswith(HEADER + "\n") or not request.endswith("\n") or \
            "\napprover: " in request or SIG_BEGIN in request:
        raise ApprovalRefused("not a stordoc approval request (what `stordoc plan ... "
                              "--approval-request FILE` writes)")
    if not USER_ID_RE.match(approver):
        raise ApprovalRefused(f"{approver[:40]!r} is not a user id like U0ADMIN")
    if not 0 < valid_s <= MAX_VALID_S:
        raise ApprovalRefused(f"an approval is valid for at most {MAX_VALID_S / 3600:g} h")
    now = time.time() if now is None else now
    text = statement(request, approver, now + valid_s)
    exe = ssh_keygen()
    with tempfile.TemporaryDirectory(prefix="stordoc-approve-") as d:
        msg = Path(d) / "plan.txt"
        msg.write_text(text)
        try:
            r = subprocess.run([exe, "-Y", "sign", "-f", key_file, "-n", NAMESPACE, str(msg)],
                               capture_output=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ApprovalRefused(f"ssh-keygen -Y sign did not run: {e}") from None
        sig = Path(d) / "plan.txt.sig"
        if r.returncode != 0 or not sig.exists():
            err = r.stderr.decode(errors="replace").strip().splitlines()
            raise ApprovalRefused("ssh-keygen -Y sign failed: "
                                  + (err[-1][:200] if err else f"exit {r.returncode}"))
        return text + sig.read_text()
