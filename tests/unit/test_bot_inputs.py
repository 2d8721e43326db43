"""Issue 26.5 on the bot, over real HTTP (the real bolt App and the real WSGI server):
deeply nested JSON is a one-line 400, never a RecursionError traceback and a 500; a
stalled client is dropped by a read timeout, a dribbling one by the request deadline, and
the server never runs more than its bounded number of worker threads (issue 37.8, slow
clients beside a signed request: test_bot_slow_clients.py)."""

from __future__ import annotations

import json
import logging
import select
import socket
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.server import HttpServer, malformed
from core.alerts.payload import Refused, parse_payload
from core.settings import AlertSettings, Secret, parse_settings
from core.slack.wsgi import MAX_DEPTH, depth
from tests.support.fake_slack import SIGNING_SECRET, BotHarness, SlackSender, sign
from tests.unit.test_bot_hardening import FORM, raw_post

VIEWER = "UVIEWER01"
TOKEN = "alert-token-0123456789"


@pytest.fixture
def h(tmp_path: Path) -> Iterator[BotHarness]:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon_host = 127.0.0.1:1\n")
    tok = tmp_path / "token"
    tok.write_text(TOKEN + "\n")
    s = parse_settings({"journal": str(tmp_path / "j.db"), "clusters": {
        "lab": {"ceph": {"conf": str(conf), "timeout": 2}}}, "default_cluster": "lab"})
    harness = BotHarness(s, {"lab": {"viewers": [VIEWER]}}, str(tmp_path / "bot.db"),
                         throttle_s=0.05, alerts=AlertSettings(token=Secret(file=str(tok))))
    yield harness
    harness.close()


def _no_traceback(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
                  ) -> None:
    for r in caplog.records:
        assert r.exc_info is None and "Traceback" not in r.getMessage()
        assert "\n" not in r.getMessage() and len(r.getMessage()) < 400
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "RecursionError" not in err


def test_deep_alertmanager_body_is_a_one_line_400(
        h: BotHarness, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    url = urllib.parse.urlsplit(h.base_url + "/alertmanager")
    for body in (b"[" * 100_000, b'{"a":' * 3000 + b"1" + b"}" * 3000,
                 json.dumps({"version": "4", "x": [[[[[[[[[[[[[[]]]]]]]]]]]]]]}).encode()
                 .replace(b"[]", b"[" * 70 + b"]" * 70)):
        import http.client
        c = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
        c.request("POST", url.path, body, {"Authorization": f"Bearer {TOKEN}",
                                           "Content-Type": "application/json"})
        r = c.getresponse()
        detail = json.loads(r.read())["detail"]
        c.close()
        assert r.status == 400, detail
        assert "nested too deeply" in detail
    _no_traceback(caplog, capfd)
    assert not h.posts()


def test_deep_signed_slack_bodies_are_a_one_line_400(
        h: BotHarness, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    deep = "[" * 3000 + "]" * 3000
    bodies = [
        (("payload=" + urllib.parse.quote(deep)).encode(), FORM),
        (("payload=" + urllib.parse.quote('{"type":"block_actions","a":' + deep + "}"))
         .encode(), FORM),
        (('{"type":"event_callback","event":' + deep + "}").encode(), "application/json"),
        (b"[" * 100_000, "application/json"),
    ]
    for body, ctype in bodies:
        status, answer = raw_post(h, body, {"Content-Type": ctype,
                                            **sign(SIGNING_SECRET, body)})
        assert status == 400, answer
    _no_traceback(caplog, capfd)
    refused = [r.getMessage() for r in caplog.records if "refused 400" in r.getMessage()]
    assert len(refused) == len(bodies) and all("too deeply" in m for m in refused)
    assert not h.fake.of("chat.postMessage", "chat.postEphemeral")
    # a shallow, good request still works after all that
    assert h.slack.slash("help", VIEWER).status == 200


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                     max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(doc=_json, nest=st.integers(0, 5000), opener=st.sampled_from(["[", '{"k":']))
def test_parsers_never_raise_anything_but_a_refusal(doc: Any, nest: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * nest + json.dumps(doc) + closer * nest
    try:
        parse_payload(text.encode(), 200)
    except Refused as e:
        assert e.status in (400, 413) and "\n" not in str(e)
    why = malformed(text.encode(), "application/json")
    form = malformed(("payload=" + urllib.parse.quote(text)).encode(), FORM)
    for w in (why, form):
        assert w is None or "\n" not in w
    if nest + depth(doc) > MAX_DEPTH:
        assert why is not None and "too deeply" in why
        assert form is not None and "too deeply" in form


def test_stalled_clients_are_dropped_and_workers_are_bounded(
        h: BotHarness, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    srv = HttpServer(h.bot, "127.0.0.1", 0, read_timeout_s=0.5, max_workers=2).start()
    try:
        stalled = []
        for i in range(6):  # half a request line, half a body: then silence
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                      b"Content-Type: application/x-www-form-urlencoded\r\n\r\ntext=he"
                      if i % 2 else b"POST /slack/ev")
            stalled.append(s)
        deadline = time.monotonic() + HANG_GUARD_S
        for s in stalled:  # the server hangs up on each (the deadline: a hang guard only)
            # a reset (closed with our bytes unread) is closed too
            data = _read_to_close(s, deadline, "a stalled client", b"")
            assert data in (b"", ) or data.startswith(b"HTTP/1.0 408"), data
            s.close()
        # a stalled request never reached a worker: at most the 2 of the server exist
        assert len(srv.httpd.task_dispatcher.threads) <= 2
        # and the server still answers afterwards
        url = f"http://127.0.0.1:{srv.port}/slack/events"
        body = b"text=x"
        import urllib.error
        import urllib.request
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": FORM, **sign("wrong", body)})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == 401
    finally:
        srv.stop()
    msgs = [r.getMessage() for r in caplog.records]
    assert sum("silent for 0.5 s" in m for m in msgs) == 6
    _no_traceback(caplog, capfd)


HANG_GUARD_S = 60.0  # no server under test takes this long: past it, a clear failure


def _read_to_close(s: socket.socket, deadline: float, what: str, on_reset: bytes) -> bytes:
    """What the server sends until it closes the connection (a reset: what came before
    it, else ``on_reset``); an AssertionError naming ``what`` if it has not closed by
    ``deadline`` (monotonic): a server that keeps the socket open (or trickles bytes)
    fails the test instead of hanging CI."""
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{what}: the server did not close the connection within "
                                 f"the test's hang guard (got {data[:80]!r})")
        s.settimeout(left)
        try:
            chunk = s.recv(4096)
        except TimeoutError:
            continue  # the deadline check above says it
        except ConnectionResetError:
            return data or on_reset
        if not chunk:
            return data
        data += chunk


def _dribble(port: int, head: bytes, tail: bytes) -> bytes:
    """Send ``head`` at once, then ``tail`` one byte every 0.3 s (slowloris) until the
    server answers or hangs up; what it sent back. ``tail`` is long enough to outlast any
    deadline under test: the loop ends with it only if the server never cut the client."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    deadline = time.monotonic() + HANG_GUARD_S
    try:
        s.sendall(head)
        for i in range(len(tail)):
            if time.monotonic() > deadline:
                raise AssertionError(f"the dribbling client was not cut off within "
                                     f"{HANG_GUARD_S:.0f} s")
            readable, _, _ = select.select([s], [], [], 0.3)
            if readable:
                break
            try:
                s.sendall(tail[i:i + 1])
            except OSError:  # the server closed first: its answer is in the buffer
                break
        # a byte the dribbler sent after the 408 can make the server's close a reset, and
        # a reset may drop the answer unread (seen under CI load): said as such (RESET);
        # the server's own count and log lines still prove the deadline cut it
        return _read_to_close(s, deadline, "the dribbling client's answer", b"RESET")
    finally:
        s.close()


def test_a_dribbling_client_is_cut_off_by_the_request_deadline(
        h: BotHarness, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    """Slowloris: each byte comes well within the per-read timeout (30 s), so only the
    total deadline (1 s) can free the one worker; then a normal request is answered."""
    caplog.set_level(logging.DEBUG)
    srv = HttpServer(h.bot, "127.0.0.1", 0, read_timeout_s=30, max_workers=1,
                     request_deadline_s=1).start()
    try:
        sender = SlackSender(srv.url, command=h.slack.command)
        body = sender.command_body("help", VIEWER)
        headers = "".join(f"{k}: {v}\r\n" for k, v in
                          {"Host": "x", "Content-Type": FORM,
                           "Content-Length": str(len(body)),
                           **sign(SIGNING_SECRET, body)}.items()).encode()
        line = b"POST /slack/events HTTP/1.1\r\n"
        # dribbling the headers, then dribbling a (valid, signed) body
        in_headers = _dribble(srv.port, line, headers * 20)
        in_body = _dribble(srv.port, line + headers + b"\r\n", body * 20)
        for answer in (in_headers, in_body):
            assert answer.startswith(b"HTTP/1.0 408 ") or answer == b"RESET", answer
        # the worker is free again: a normal request on the same server is answered
        assert sender.slash("help", VIEWER).status == 200
        assert srv.httpd.late_refusals == 2
    finally:
        srv.stop()
    cut = [r.getMessage() for r in caplog.records
           if "refused 408: the request was not complete within 1 s" in r.getMessage()]
    assert len(cut) == 2, cut  # one line per dribbler
    for r in caplog.records:  # the help answer logs slack_sdk's long debug lines: ours only
        if r.name.startswith("stordoc"):
            assert r.exc_info is None and "\n" not in r.getMessage()
    assert "Traceback" not in capfd.readouterr().err


def test_a_server_that_never_hangs_up_fails_the_read_instead_of_hanging() -> None:
    """The hang guard of the reads above: a peer that keeps the connection open (and
    trickles a byte now and then) ends in one clear AssertionError at the deadline."""
    srv = socket.create_server(("127.0.0.1", 0))
    c = socket.create_connection(srv.getsockname()[:2], timeout=30)
    peer, _ = srv.accept()
    try:
        peer.sendall(b"HTTP/1.0 1")  # a start, then nothing, and never a close
        with pytest.raises(AssertionError, match="did not close the connection within"):
            _read_to_close(c, time.monotonic() + 0.5, "a silent server", b"")
    finally:
        for s in (c, peer, srv):
            s.close()
