"""A small client of Prometheus's HTTP API: instant queries (``/api/v1/query``), read
with a hard byte cap and an overall deadline, so a hostile or broken endpoint (garbage, a
10 GiB body, a server that trickles one byte a second) costs at most ``timeout_s`` and
``max_bytes`` and ends in a typed ``PromError``, never a hang or a traceback.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from storage.why import why

MAX_BYTES = 64 << 20  # an answer for 5,000 hosts' filesystems is a few MiB
CHUNK = 64 << 10
CONNECT_TIMEOUT_S = 3.0


class PromError(Exception):
    """Prometheus could not be asked or did not answer usefully. ``kind``:
    ``unreachable`` (connection refused, DNS, timeout, too slow) or ``bad_answer`` (an
    HTTP error, not JSON, ``status: error``, too big, not the API's shape)."""

    def __init__(self, kind: str, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.kind = kind
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class Sample:
    """One series of an instant vector: its labels, value and evaluation time. ``odd``:
    why the sample is not one Prometheus sends (its value missing, not a number's string,
    a label that is not a string...; ``value`` is then NaN): its series is known, its
    value is not."""

    labels: dict[str, str]
    value: float
    ts: float
    odd: str = ""


def check_url(url: str) -> str:
    """``http(s)://host[:port][/path]`` without credentials, query or fragment; the path is
    the API's prefix (a Prometheus behind ``--web.route-prefix``). ValueError says why."""
    if not isinstance(url, str) or not url.strip() or url != url.strip():
        raise ValueError("an empty URL or one with blanks around it")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise ValueError("a URL with blanks or control characters")
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError as e:
        raise ValueError(f"not a URL: {e}") from None
    if u.scheme not in ("http", "https"):
        raise ValueError(f"scheme must be http or https, not {u.scheme or 'none'!r}")
    if not u.hostname:
        raise ValueError("no host in the URL")
    if u.username is not None or u.password is not None:
        raise ValueError("credentials in the URL: stordoc keeps no secret in its config")
    if u.query or u.fragment:
        raise ValueError("a query or fragment in the URL (give the server's base URL)")
    if port == 0:
        raise ValueError("port 0")
    return url


class PromClient:
    """Instant queries against one Prometheus. Thread-safe: one requests call each."""

    def __init__(self, url: str, timeout_s: float = 10.0, max_bytes: int = MAX_BYTES
                 ) -> None:
        self.url = check_url(url).rstrip("/")
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes

    def _get(self, path: str, params: dict[str, str]) -> bytes:
        import requests  # here: the settings import this module for check_url

        deadline = time.monotonic() + self.timeout_s
        endpoint = self.url + path
        try:
            r = requests.get(endpoint, params=params, stream=True, allow_redirects=False,
                             timeout=(min(CONNECT_TIMEOUT_S, self.timeout_s), self.timeout_s),
                             headers={"Accept": "application/json",
                                      "Accept-Encoding": "identity"})
        except requests.Timeout:
            raise PromError("unreachable", self.url,
                            f"no answer within {self.timeout_s:g} s") from None
        except requests.RequestException as e:
            raise PromError("unreachable", self.url, _short(e)) from None
        with r:
            declared = r.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise PromError("bad_answer", self.url,
                                f"answer of {int(declared)} bytes refused (over "
                                f"{self.max_bytes >> 20} MiB)")
            buf = bytearray()
            try:
                while True:
                    if time.monotonic() > deadline:
                        raise PromError("unreachable", self.url,
                                        f"answer not complete within {self.timeout_s:g} s "
                                        f"({len(buf)} bytes read)")
                    chunk = r.raw.read1(CHUNK)
                    if not chunk:
                        break
                    buf += chunk
                    if len(buf) > self.max_bytes:
                        raise PromError("bad_answer", self.url,
                                        f"answer over {self.max_bytes >> 20} MiB: cut off")
            except PromError:
                raise
            except Exception as e:  # urllib3/requests/socket errors mid-body  # noqa: BLE001
                raise PromError("unreachable", self.url, f"reading the answer: {_short(e)}"
                                ) from None
            if r.status_code != 200:
                # Prometheus sends {"status":"error"} with 400/422/503: say its words
                detail = _error_of(bytes(buf)) or bytes(buf[:120]).decode("utf-8", "replace")
                raise PromError("bad_answer", self.url,
                                f"HTTP {r.status_code}" + (f": {detail.strip()}" if detail
                                                           else ""))
        return bytes(buf)

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        """An instant query: the vector's samples (PromError for anything else)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        doc = self._json(self._get("/api/v1/query", params), expr)
        data = doc.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "vector" \
                or not isinstance(data.get("result"), list):
            raise PromError("bad_answer", self.url,
                            f"{expr}: not an instant vector (resultType "
                            f"{data.get('resultType') if isinstance(data, dict) else '?'})")
        out: list[Sample] = []
        for item in data["result"]:
            out.append(_sample(item, self.url, expr))
        return out

    def _json(self, body: bytes, expr: str) -> dict[str, Any]:
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            raise PromError("bad_answer", self.url,
                            f"{expr}: not JSON ({_preview(body)})") from None
        if not isinstance(doc, dict) or "status" not in doc:
            raise PromError("bad_answer", self.url,
                            f"{expr}: not a Prometheus API answer ({_preview(body)})")
        if doc["status"] != "success":
            raise PromError("bad_answer", self.url,
                            f"{expr}: status {doc.get('status')!r}: "
                            f"{doc.get('errorType', '')} {doc.get('error', '')}".strip())
        return doc


def _sample(item: Any, url: str, expr: str) -> Sample:
    """One result of the vector. Without a label set it cannot be told whose it is: the
    whole answer is bad (PromError); with one, a value of another shape makes that one
    sample ``odd`` (its host is the one in question, not every host)."""
    metric = item.get("metric") if isinstance(item, dict) else None
    if not isinstance(metric, dict):
        raise PromError("bad_answer", url, f"{expr}: a sample of another shape: "
                        f"{str(item)[:120]}")
    labels = {str(k): v if isinstance(v, str) else str(v) for k, v in metric.items()}
    odd = "" if all(isinstance(v, str) for v in metric.values()) else \
        "a label value that is not a string"
    val = item.get("value")
    v = t = math.nan
    if not (isinstance(val, list) and len(val) == 2):
        odd = odd or f"value {_brief(val)} is not a [time, \"number\"] pair"
    else:
        ts, text = val
        if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
            odd = odd or f"sample time {_brief(ts)}"
        else:
            t = float(ts)
        if not isinstance(text, str):
            odd = odd or f"value {_brief(text)} is not a string"
        else:
            try:
                v = float(text)  # "NaN", "+Inf" are Prometheus's own spellings
            except ValueError:
                odd = odd or f"value {_brief(text)} is not a number"
    return Sample(labels, v if not odd else math.nan, t, odd)


def _brief(x: Any) -> str:
    text = json.dumps(x, default=str)[:40] if not isinstance(x, str) else repr(x[:40])
    return "".join(c if c.isprintable() else "?" for c in text)


def _error_of(body: bytes) -> str | None:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(doc, dict) and doc.get("status") == "error":
        return f"{doc.get('errorType', '')} {doc.get('error', '')}".strip()
    return None


def _preview(body: bytes) -> str:
    text = body[:60].decode("utf-8", "replace")
    text = "".join(c if c.isascii() and c.isprintable() else "?" for c in text)
    return f"{len(body)} bytes: {text!r}"


def _short(e: BaseException) -> str:
    return why(e)[:200]  # requests nests urllib3's long reprs: the telling part, in words
