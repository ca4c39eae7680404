"""Shared set-up: a fake model upstream, and a real `compactd serve` in front of it.

``FakeModel`` is a small OpenAI chat-completions server (compactd's model candidate, not
Anthropic's API: the client under test talks to compactd only): it answers every request
with a marker text, so a test can see the summary travelled model → compactd → client, and
keeps the bodies it received. ``compactd()`` starts the binary named by ``COMPACTD_TEST_BIN``
once per test process on a free loopback port, with one client API key and the fake as its
only model candidate (no fallback, so a summary can only come from the fake).
"""

from __future__ import annotations

import atexit
import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

API_KEY = "compactd-anthropic-key-51c2"
CANDIDATE = "fake"
ANSWER = "## Goal\nSUMMARY-FROM-FAKE-MODEL: the login bug in src/auth.rs is fixed; add a test."

for _name in [n for n in os.environ if n.startswith(("COMPACTD_", "ANTHROPIC_"))]:
    if _name != "COMPACTD_TEST_BIN":
        del os.environ[_name]
COMPACTD_BIN = os.environ.get("COMPACTD_TEST_BIN", "")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeModel:
    """An OpenAI-compatible upstream on a free port (a thread of this process)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.requests.append(json.loads(body))
                answer = json.dumps({
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": 1,
                    "model": "fake-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": ANSWER}}],
                    "usage": {"prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338},
                }).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


FAKE = FakeModel()
_COMPACTD: dict = {}
WORK = Path(tempfile.mkdtemp(prefix="compactd-anthropic-"))
atexit.register(shutil.rmtree, WORK, True)


def compactd() -> str:
    """The base URL (`http://127.0.0.1:PORT`) of the compactd under test, started once."""
    if "url" in _COMPACTD:
        return _COMPACTD["url"]
    if not COMPACTD_BIN:
        raise RuntimeError("COMPACTD_TEST_BIN is not set (run clients/anthropic/test.sh)")
    config = WORK / "compactd.toml"
    config.write_text(
        f"""summarizer = "openai"
fallback = "none"
retries = 0

[[models]]
name = "{CANDIDATE}"
kind = "openai"
model = "fake-model"
base_url = "http://127.0.0.1:{FAKE.port}/v1"
context_window = 16000
""",
        encoding="utf-8",
    )
    port = free_port()
    log = open(WORK / "compactd.log", "wb")
    atexit.register(log.close)
    env = dict(os.environ, COMPACTD_API_KEYS=API_KEY)
    proc = subprocess.Popen(
        [COMPACTD_BIN, "serve", "--config", str(config), "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    atexit.register(proc.terminate)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/readyz", timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError((WORK / "compactd.log").read_text())
            time.sleep(0.05)
    _COMPACTD["url"] = url
    return url
