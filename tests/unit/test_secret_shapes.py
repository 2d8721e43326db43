"""Issue 37.12: secrets pasted anywhere are never stored nor posted, and Slack errors say
no server path and no exception class.

Hypothesis generates each common secret shape (``pass=...`` assignments, Authorization
and X-Auth/X-Storage-Token headers, PEM private keys even multi-line, AWS key ids and
secret keys, Slack tokens, Ceph keys, URLs with a password) inside random text and sends
it through ``storage.audit.redact`` (the one function), the CLI (``mute --reason``,
``audit`` of rows an older version stored raw), the journal's own writes (findings,
temporary changes, benchmark rows, locks) and the real bolt App over HTTP (a mute reason,
commands refused with the user's words): the secret is in no byte of the journal file
(``-wal`` included) and in no call the fake Slack received. Ordinary words stay as they
are (``passive``, ``tokens 5``, ``osd.1``, ``keyring`` paths, pool names).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sqlite3
import string
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from core.settings import parse_settings
from storage.audit import Audit, redact, redact_obj
from storage.benchstore import BenchStore
from storage.expiring import record as record_change
from storage.journal import Journal
from tests.support.cli import run_main
from tests.support.fake_slack import BotHarness, all_text

OPERATOR = "UOPERSECR1"


@dataclass(frozen=True)
class Shape:
    """A secret as pasted (``text``) and the part that must never be kept (``secret``)."""

    kind: str
    text: str
    secret: str


# what a command line and Slack's grammar let through: letters, digits, . _ - @ : = , / +
_B64 = string.ascii_letters + string.digits + "+/"
_WORDY = string.ascii_letters + string.digits + "!#%&*_+-.@^~"
_SLACK_WORDY = string.ascii_letters + string.digits + "_+-.@"  # what the bot's grammar takes


def _value(alphabet: str = _WORDY, lo: int = 10, hi: int = 30) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=lo, max_size=hi)


@st.composite
def assignments(draw: st.DrawFn, wordy: str = _WORDY) -> Shape:
    name = draw(st.sampled_from(["password", "pass", "pwd", "passphrase", "secret", "token",
                                 "api_key", "access_key", "db_password", "PASS",
                                 "Api-Key", "OS_PASSWORD", "rgw_secret", "auth_token"]))
    sep = draw(st.sampled_from(["=", ":", ": ", " = ", ":"]))
    value = draw(_value(wordy))
    return Shape("assignment", f"{name}{sep}{value}", value)


@st.composite
def headers(draw: st.DrawFn) -> Shape:
    value = draw(_value(string.ascii_letters + string.digits + "._-+/", 12, 60))
    head = draw(st.sampled_from(["Authorization: Bearer ", "Authorization: Basic ",
                                 "authorization:bearer ", "X-Auth-Token: ",
                                 "X-Storage-Token: ", "x-auth-token:"]))
    return Shape("header", head + value, value)


@st.composite
def pem_keys(draw: st.DrawFn, sep: str = "\n") -> Shape:
    kind = draw(st.sampled_from(["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", ""]))
    lines = draw(st.lists(_value(_B64, 16, 64), min_size=1, max_size=5))
    body = sep.join(lines)
    text = (f"-----BEGIN {kind}PRIVATE KEY-----{sep}{body}{sep}"
            f"-----END {kind}PRIVATE KEY-----")
    return Shape("pem", text, body)


@st.composite
def aws_ids(draw: st.DrawFn) -> Shape:
    kid = draw(st.sampled_from(["AKIA", "ASIA"])) + draw(
        st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16))
    return Shape("aws-id", kid, kid)


@st.composite
def aws_secrets(draw: st.DrawFn) -> Shape:
    key = draw(st.text(_B64, min_size=40, max_size=40))
    lead = draw(st.sampled_from(["aws_secret_access_key=", "AWS secret key ",
                                 "aws_secret_access_key: ", "secret access key: ",
                                 "AWS_SECRET_ACCESS_KEY ", "AKIAIOSFODNN7EXAMPLE ",
                                 "ASIAIOSFODNN7EXAMPLE:"]))  # the id pasted with its key
    return Shape("aws-secret", lead + key, key)


@st.composite
def slack_tokens(draw: st.DrawFn) -> Shape:
    kind = draw(st.sampled_from(["xoxb", "xoxp", "xapp", "xoxa", "xoxe"]))
    parts = draw(st.lists(st.text(string.ascii_letters + string.digits, min_size=4,
                                  max_size=24), min_size=2, max_size=4))
    tok = kind + "-" + "-".join(parts)
    return Shape("slack", tok, tok)


@st.composite
def ceph_keys(draw: st.DrawFn) -> Shape:
    raw = b"\x01\x00" + draw(st.binary(min_size=26, max_size=26))
    key = base64.b64encode(raw).decode()
    return Shape("ceph", draw(st.sampled_from(["", "key = ", "key "])) + key, key)


@st.composite
def url_creds(draw: st.DrawFn, wordy: str = _WORDY) -> Shape:
    user = draw(st.text(string.ascii_lowercase, min_size=1, max_size=8))
    pw = draw(_value("".join(c for c in wordy if c not in "@#"), 8, 24))
    scheme = draw(st.sampled_from(["http", "https", "amqp", "postgresql", "redis"]))
    assume(pw not in f"{scheme}://{user}")  # the user name stays: it is not the secret
    return Shape("url", f"{scheme}://{user}:{pw}@127.0.0.1:8080/v1/x", pw)


def shapes(pem_sep: str = "\n", wordy: str = _WORDY) -> st.SearchStrategy[Shape]:
    """Every shape; ``wordy``: the characters of free values (a password)."""
    return st.one_of(assignments(wordy), headers(), pem_keys(pem_sep), aws_ids(),
                     aws_secrets(), slack_tokens(), ceph_keys(), url_creds(wordy))


# words around the secret: anything printable, or only what a Slack command accepts
_NOISE = st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12),
                  max_size=4).map(" ".join)
_TOKEN_NOISE = st.lists(st.text(string.ascii_letters + string.digits + "._-@,/+",
                                min_size=1, max_size=10), max_size=4).map(" ".join)


def embed(before: str, shape: Shape, after: str, sep: str = " ") -> str:
    assume(shape.secret not in before + after)
    return f"{before}{sep}{shape.text}{sep}{after}"


def file_bytes(db: Path) -> bytes:
    """The journal as a reader of the disk gets it: the file and its write-ahead log."""
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


# ------------------------------------------------------------------ the one function


@settings(max_examples=400, deadline=None)
@given(_NOISE, shapes(), _NOISE, st.sampled_from([" ", "\n", "\t", "  "]))
@example("see", Shape("assignment", "pass=hunter2", "hunter2"), "", " ")
@example("", Shape("header", "Authorization: Bearer abc.def-ghi", "abc.def-ghi"), "", " ")
def test_every_secret_shape_is_redacted_in_any_text(before: str, shape: Shape, after: str,
                                                    sep: str) -> None:
    text = embed(before, shape, after, sep)
    out = redact(text)
    assert shape.secret not in out, (shape.kind, out)
    # a stored JSON document (evidence, a plan, a bench row) is scrubbed too
    assert shape.secret not in json.dumps(redact_obj({"message": text, "l": [text]}))


@settings(max_examples=150, deadline=None)
@given(pem_keys(), st.integers(0, 400))
def test_a_private_key_cut_short_still_goes(shape: Shape, extra: int) -> None:
    """A PEM block cut before its END line (a 300-character reason, a row size limit) is
    still a private key: everything after its BEGIN line goes."""
    head = shape.text.split("-----", 3)
    begin = f"-----{head[1]}-----"
    cut = shape.text[:len(begin) + extra]
    out = redact(f"keys: {cut}")
    rest = cut[len(begin):]
    assert out.startswith(f"keys: {begin}")
    assert rest.strip() == "" or rest not in out, out


ORDINARY = [
    "passive", "the scrub pass finished", "tokens 5", "max_tokens=5", "osd.1 is down",
    "keyring /etc/ceph/ceph.client.admin.keyring", "keyring path", "bypass=1",
    "compass: north", "pool rbd", "pool .rgw.root", "pool cephfs_data pg_num 64",
    "pg 3.1f is active+clean", "mount -t xfs -o noatime /dev/loop3 /var/lib/ceph/osd/ceph-1",
    "swift-object-server@127.0.0.2:6200", "Bearer of bad news", "http://127.0.0.1:9093/api/v2",
    "object ring d2@127.0.0.1:6210", "sha1 0123456789abcdef0123456789abcdef0123 ok",
    "ssh://root@127.0.0.2/var/lib", "the keys of osd.3", "OSD_DOWN_OUT osd.1",
    "disk replaced, see ticket OPS-1234", "passes: 3", "a secretary's note",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_words_are_not_redacted(text: str) -> None:
    assert redact(text) == text
    assert redact_obj({"pool": text, "n": 5}) == {"pool": text, "n": 5}


def test_evidence_names_that_only_end_in_key_keep_their_value() -> None:
    """Findings' evidence is scrubbed now: ``disk_key`` (host:device) is no secret."""
    ev = {"disk_key": "node1:/dev/sdb", "swift_keys": [["127.0.0.2", "d1"]],
          "secret_key": "plain", "password": "plain", "db_pass": "plain"}
    assert redact_obj(ev) == {**ev, "secret_key": "***", "password": "***",
                              "db_pass": "***"}


_WORDS = st.sampled_from(["osd.1", "osd.12", "pool", "rbd", "cephfs_data", ".rgw.root",
                          "passive", "tokens", "5", "keyring", "path", "mon.a", "host",
                          "node2", "down", "out", "pg_num", "64", "ring", "object",
                          "/var/lib/ceph/osd/ceph-3", "pass", "token", "key", "secret",
                          "noout", "maintenance"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=12).map(" ".join))
def test_ordinary_sentences_are_kept_word_for_word(text: str) -> None:
    assert redact(text) == text


# ------------------------------------------------------------------ the journal's writes


def test_every_journal_write_is_scrubbed(tmp_path: Path) -> None:
    """Findings (message and evidence), temporary changes, benchmark rows, locks and
    audited steps: no secret in the file's bytes."""
    pem = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxyzPEMBODYLINE\n"
           "-----END RSA PRIVATE KEY-----")
    secrets = {"hunter2pass", "AKIAIOSFODNN7EXAMPLE", "MIIEowIBAAKCAQEAxyzPEMBODYLINE",
               "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "tokEnVal42"}
    text = (f"pass=hunter2pass {pem} AKIAIOSFODNN7EXAMPLE "
            "aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY X-Auth-Token: tokEnVal42")
    db = tmp_path / "j.db"
    j = Journal(db)
    j.record_check_run("lab", time.time(), 1.0, 1, "warn", [{
        "code": "OSD_DOWN_OUT", "severity": "warn", "entity": "osd.1",
        "message": f"osd.1 log says {text}",
        "evidence": {"log_tail": [text], "disk_key": "node2:/dev/loop3",
                     "nested": {"out": text}}}])
    (f,) = j.findings_of(j.runs("lab")[0].id)
    assert f.evidence["disk_key"] == "node2:/dev/loop3" and "pass=***" in f.message
    record_change(j, "lab", "osd-flag", "noout", time.time() + 60, "alice",
                  reason=f"maintenance {text}")
    BenchStore(j).save({"cluster": "lab", "kind": "rados", "started_at": time.time(),
                        "params": {"pool": "rbd", "note": text}, "notes": [text],
                        "extra": {"stderr": text}, "series": [1, 2]})
    a = Audit(j)
    a.acquire("lab", "osd.1", "alice", f"osd-remount osd.1 {text}")
    rid = a.start_run("lab", "osd-remount", "osd.1", "alice", "cli",
                      {"options": {"pg_num": text}})
    a.own(rid, "lab", 1, f"noout {text}", "osd unset", {"key": "noout"},
          f"ceph osd unset noout {text}")
    assert a.flags_of(rid) == (("noout",), ("noout",))  # the undo still knows its flag
    j.close()
    raw = file_bytes(db)
    for s in secrets:
        assert s.encode() not in raw, s


def test_cli_audit_never_prints_a_secret_an_older_version_stored(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'journal = "{db}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.ceph]\nconf = "/nonexistent/ceph.conf"\n')
    a = Audit(Journal(db))
    rid = a.start_run("lab", "osd-remount", "osd.1", "alice", "cli", {})
    a.record_step(rid, 1, "mount", "node2", "mount /dev/loop3 /x", 0, "", "", 0.1, "done")
    a.finish_run(rid, "success", "ok")
    a.journal.close()
    c = sqlite3.connect(db)  # what an older stordoc wrote: raw
    c.execute("update runbook_runs set message = 'done pass=hunter2raw'")
    c.execute("update runbook_steps set command = 'curl -H \"X-Auth-Token: tkRAW12345\"', "
              "stdout = 'AKIAIOSFODNN7RAWXXXX'")
    c.commit()
    c.close()
    rc, out, err = run_main("--config", str(cfg), "audit", "--run", str(rid))
    assert rc == 0 and "osd-remount" in out, err
    for s in ("hunter2raw", "tkRAW12345", "AKIAIOSFODNN7RAWXXXX"):
        assert s not in out + err, out


# ------------------------------------------------------------------ the CLI


@pytest.fixture(scope="module")
def cli_cfg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    cfg = d / "c.toml"
    cfg.write_text(f'journal = "{d / "j.db"}"\ndefault_cluster = "lab"\n'
                   '[clusters.lab.ceph]\nconf = "/nonexistent/ceph.conf"\n')
    return cfg


@settings(max_examples=int(os.environ.get("STORDOC_SECRET_EXAMPLES", "30")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_TOKEN_NOISE, shapes(pem_sep=" "), _TOKEN_NOISE)  # a reason is one line
def test_cli_mute_reason_is_stored_and_listed_without_the_secret(
        cli_cfg: Path, before: str, shape: Shape, after: str) -> None:
    reason = embed(before, shape, after)
    # a journal of this example's own: a secret one example leaked would fail every later
    # example that draws it (hypothesis then reports a shrunk example that leaks nothing)
    journal = cli_cfg.parent / f"j-{uuid.uuid4().hex}.db"
    cfg = cli_cfg.parent / f"c-{journal.stem}.toml"
    cfg.write_text(cli_cfg.read_text().replace(str(cli_cfg.parent / "j.db"), str(journal)))
    try:
        rc, _out, err = run_main("--config", str(cfg), "mute", "OSD_DOWN_OUT", "osd.1",
                                 "--for", "4h", "--reason", reason)
        assert rc == 0, err
        rc, out, err = run_main("--config", str(cfg), "mute", "--list")
        assert rc == 0, err
        assert shape.secret not in out + err
        assert shape.secret.encode() not in file_bytes(journal), (shape.kind, reason)
    finally:
        for f in cli_cfg.parent.glob(f"{journal.name}*"):
            f.unlink()
        cfg.unlink()


# ------------------------------------------------------------------ the real Slack app


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BotHarness]:
    d = tmp_path_factory.mktemp("bot")
    conf = d / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    snaps = d / "srv-stordoc-snapshots"
    snaps.mkdir()
    (snaps / "empty-one").mkdir()
    s = parse_settings({"journal": str(d / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    h = BotHarness(s, {"lab": {"operators": [OPERATOR]}}, str(d / "bot.db"),
                   throttle_s=0.0, working_after_s=30.0, snapshots_dir=str(snaps))
    yield h
    h.close()


def _answer(h: BotHarness, text: str) -> str:
    """Send one slash command; the text of the first message or ephemeral it brings."""
    n = len(h.fake.calls)
    h.slack.slash(text, OPERATOR)
    got = h.fake.wait_for(lambda f: [c for c in f.calls[n:] if c.method in (
        "chat.postMessage", "chat.postEphemeral", "chat.update")], 30)
    return all_text(got[0])


class Leaks:
    """What the bot posted and stored while one example ran: the fake Slack's calls since
    then, and the secret's count in the journal file then and now (one bot serves every
    example, so an earlier example's harmless words may be this one's secret)."""

    def __init__(self, h: BotHarness, secret: str) -> None:
        self.h, self.secret = h, secret
        self.calls = len(h.fake.calls)
        self.stored = self._count()

    def _count(self) -> int:
        return file_bytes(Path(self.h.settings.journal)).count(self.secret.encode())

    def check(self) -> None:
        for c in list(self.h.fake.calls)[self.calls:]:
            assert self.secret not in json.dumps(c.params) + str(c.params), c.method
        assert self._count() == self.stored, "stored in the journal"


@settings(max_examples=int(os.environ.get("STORDOC_SECRET_EXAMPLES", "25")), deadline=None)
@given(_TOKEN_NOISE, shapes(" ", _SLACK_WORDY), _TOKEN_NOISE)
@example("see", Shape("assignment", "pass=hunter2", "hunter2"), "")
def test_slack_mute_reason_never_posted_nor_stored(bot: BotHarness, before: str,
                                                   shape: Shape, after: str) -> None:
    reason = embed(before, shape, after)
    leaks = Leaks(bot, shape.secret)
    said = _answer(bot, f"mute OSD_DOWN_OUT osd.1 for 2h {reason}")
    assert "muted `OSD_DOWN_OUT osd.1`" in said, said
    leaks.check()


@settings(max_examples=int(os.environ.get("STORDOC_SECRET_EXAMPLES", "40")), deadline=None)
@given(st.sampled_from(["health", "osd", "plan osd-start", "fix osd-start osd.1",
                        "bench rados", "frobnicate", "mute", "silence CephOSDDown for=1h",
                        "history", "mute OSD_DOWN_OUT osd.1 for 1h",
                        "maintenance start node1 for"]),
       shapes(pem_sep=" "), _NOISE)
def test_slack_commands_quoting_a_secret_never_post_it(bot: BotHarness, verb: str,
                                                       shape: Shape, after: str) -> None:
    """Refusals quote the user's words (an unknown word, an option, a character a
    command never needs): the secret is not among them, nor in the bot's audit."""
    assume(shape.secret not in after and "\x00" not in after)
    leaks = Leaks(bot, shape.secret)
    _answer(bot, f"{verb} {shape.text} {after}")
    time.sleep(0.05)  # the audit row of a refusal is written after the answer
    leaks.check()


def test_slack_errors_name_no_server_path_nor_exception(bot: BotHarness,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    snaps = str(bot.settings.slack.snapshots_dir)
    assert "muted" in _answer(bot, "mute OSD_DOWN_IN osd.2 for 1h a mutes table exists")
    for name in ("missing-one", "empty-one"):
        said = _answer(bot, f"health lab from {name}")
        assert f"snapshot `{name}`" in said and snaps not in said, said
        assert "/" + Path(snaps).name not in said, said
    # a fault the bot does not expect: a journal whose mutes table is not ours
    c = sqlite3.connect(bot.settings.journal)
    c.execute("alter table mutes rename to mutes_theirs")
    c.execute(f"create table mutes (id integer primary key, note text default '{snaps}')")
    c.commit()
    try:
        with caplog.at_level(logging.ERROR, logger="stordoc.bot"):
            said = _answer(bot, "mute list")
    finally:
        c.execute("drop table mutes")
        c.execute("alter table mutes_theirs rename to mutes")
        c.commit()
        c.close()
    assert "internal error" in said and "reference" in said, said
    assert len(set(said.strip().splitlines())) == 1, said  # one line (text = its block)
    assert "Error" not in said and snaps not in said, said
    ref = said.split("reference ")[1].split(";")[0]
    assert any(ref in r.getMessage() and "OperationalError" in r.getMessage()
               for r in caplog.records), caplog.text  # the detail is in the log
