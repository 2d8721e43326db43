"""storage.why: a failure told in words. A refused port, a missing file, a nested
requests/urllib3 error and a timeout read as a person would say them, never with Python's
class names or urllib3's repr (issue 37's hostile run: "unreachable: ConnectionError",
"FileNotFoundError: no rings or builders")."""

from __future__ import annotations

import re
import socket

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from storage.why import why
from tests.support.bot_process import free_port

CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b|HTTPConnectionPool|0x[0-9a-f]+")



def test_a_refused_http_request_is_connection_refused() -> None:
    port = free_port()
    with pytest.raises(requests.RequestException) as ei:
        requests.get(f"http://127.0.0.1:{port}/healthcheck", timeout=2)
    assert "HTTPConnectionPool" in str(ei.value)  # what was shown before
    assert why(ei.value) == "connection refused"


def test_a_missing_file_names_the_file_not_the_class(tmp_path: object) -> None:
    with pytest.raises(FileNotFoundError) as ei:
        open("/nonexistent/stordoc-x")  # noqa: SIM115
    assert why(ei.value) == "/nonexistent/stordoc-x: no such file or directory"
    assert why(FileNotFoundError("no rings or builders in /etc/swift")) == \
        "no rings or builders in /etc/swift"


def test_a_timeout_and_empty_messages_get_plain_words() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)  # accepts, never answers
    try:
        with pytest.raises(requests.RequestException) as ei:
            requests.get(f"http://127.0.0.1:{srv.getsockname()[1]}/", timeout=0.3)
        assert why(ei.value) == "timed out"
    finally:
        srv.close()
    assert why(TimeoutError()) == "timed out"
    assert why(ConnectionError()) == "cannot connect"
    assert why(ValueError()) == "failed"


@given(st.text(max_size=400))
def test_one_line_never_a_class_name_of_its_own(msg: str) -> None:
    for exc in (ValueError(msg), OSError(msg), requests.ConnectionError(msg), RuntimeError()):
        out = why(exc)
        assert "\n" not in out and "\r" not in out
        assert len(out) <= 300
        if not CLASS_NAME.search(msg):
            assert not CLASS_NAME.search(out)
