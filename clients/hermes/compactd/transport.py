"""One POST to compactd, as plain functions (no client object survives a call).

The host deep-copies the engine for every agent, so nothing here is kept between calls:
each request opens its own connection with urllib and closes it. Every failure comes back
as a ``CompactdError`` whose text is safe to log and to show the user: it names the URL
without credentials and never contains the API key.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Optional

DEFAULT_URL = "http://127.0.0.1:8080"
# A little above compactd's own request deadline (120 s by default), so that compactd's
# 504 answers first and says which step ran out of time.
DEFAULT_TIMEOUT = 130.0
COMPRESS_PATH = "/v1/hermes/compress"
RECALL_PATH = "/v1/hermes/recall"
# Error texts quote at most this much of what compactd answered.
_QUOTE = 300


class CompactdError(Exception):
    """compactd could not be asked, or did not answer with a usable result."""

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        self.status = status


def endpoint() -> Dict[str, Any]:
    """The connection settings from the environment, read at call time.

    hermes loads ``$HERMES_HOME/.env`` into the environment, so a user may set them there.
    """
    url = (os.environ.get("COMPACTD_URL") or DEFAULT_URL).strip().rstrip("/")
    key = (os.environ.get("COMPACTD_API_KEY") or "").strip()
    raw_timeout = (os.environ.get("COMPACTD_TIMEOUT") or "").strip()
    timeout = DEFAULT_TIMEOUT
    if raw_timeout:
        try:
            timeout = float(raw_timeout)
        except ValueError:
            timeout = DEFAULT_TIMEOUT
        if not timeout > 0:
            timeout = DEFAULT_TIMEOUT
    return {"url": url, "api_key": key, "timeout": timeout}


def display_url(url: str) -> str:
    """The URL without any ``user:password@`` part, for logs and messages."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<invalid COMPACTD_URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def post_compress(body: Dict[str, Any]) -> Dict[str, Any]:
    """POST ``body`` to ``/v1/hermes/compress`` and return the decoded 200 answer.

    Raises ``CompactdError`` for a body that cannot be encoded, a connection failure, a
    timeout, any non-200 status, and an answer that is not a JSON object.
    """
    return _post(COMPRESS_PATH, body)


def post_recall(body: Dict[str, Any]) -> Dict[str, Any]:
    """POST ``body`` to ``/v1/hermes/recall``; errors as for ``post_compress``."""
    return _post(RECALL_PATH, body)


def _post(path: str, body: Dict[str, Any]) -> Dict[str, Any]:
    conf = endpoint()
    url = conf["url"] + path
    shown = display_url(url)
    try:
        # allow_nan=False: NaN is not JSON and compactd would refuse the whole body.
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise CompactdError(f"the messages cannot be sent as JSON ({exc})") from None

    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if conf["api_key"]:
        headers["Authorization"] = "Bearer " + conf["api_key"]
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=conf["timeout"]) as response:
            status = response.status
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise CompactdError(_status_text(shown, exc.code, _read_quietly(exc)), exc.code) from None
    except (socket.timeout, TimeoutError):
        raise CompactdError(
            f"compactd at {shown} timed out after {conf['timeout']:g} s"
        ) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            raise CompactdError(
                f"compactd at {shown} timed out after {conf['timeout']:g} s"
            ) from None
        raise CompactdError(f"compactd at {shown} is unreachable ({reason})") from None
    except (OSError, ValueError) as exc:
        # ValueError: an unusable COMPACTD_URL (no scheme, bad port).
        raise CompactdError(f"compactd at {shown} could not be asked ({exc})") from None

    if status != 200:
        raise CompactdError(_status_text(shown, status, raw), status)
    try:
        answer = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CompactdError(f"compactd at {shown} answered something that is not JSON") from None
    if not isinstance(answer, dict):
        raise CompactdError(f"compactd at {shown} answered JSON that is not an object")
    return answer


def _read_quietly(exc: urllib.error.HTTPError) -> bytes:
    try:
        return exc.read() or b""
    except Exception:
        return b""


def _status_text(shown: str, status: int, raw: bytes) -> str:
    """``compactd at URL answered 401: unauthorized: …`` from a problem+json body."""
    detail = ""
    try:
        problem = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        problem = None
    if isinstance(problem, dict):
        parts = [
            str(problem[k]) for k in ("title", "detail") if isinstance(problem.get(k), str) and problem[k]
        ]
        detail = ": ".join(parts)
    elif raw:
        detail = raw.decode("utf-8", "replace").strip()
    detail = detail[:_QUOTE]
    return f"compactd at {shown} answered HTTP {status}" + (f": {detail}" if detail else "")
