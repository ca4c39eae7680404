"""What the OpenAI and Anthropic client tests share: a fake OpenAI chat-completions model, and
a real `compactd serve` in front of it with that model as its only candidate.

``FakeModel`` answers every request with a marker text (so a test can see the summary
travelled model → compactd → client) and keeps the bodies it received. ``start_compactd``
starts the binary on a free loopback port with one client API key and no fallback, so a
summary can only come from the fake, and waits until it is ready. Imported by each suite's
``support.py``, which puts this folder on ``sys.path``.
"""

from __future__ import annotations

import atexit
import http.server
import json
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeModel:
    """An OpenAI-compatible upstream on a free port (a thread of this process)."""

    def __init__(self, answer: str) -> None:
        self.requests: list[dict] = []
        # Seconds to wait before answering, as a slow model does.
        self.delay = 0.0
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.requests.append(json.loads(body))
                if fake.delay:
                    time.sleep(fake.delay)
                data = json.dumps({
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": 1,
                    "model": "fake-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": answer}}],
                    "usage": {"prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338},
                }).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def start_compactd(binary: str, work: Path, *, api_key: str, candidate: str, fake: FakeModel,
                   context_window: int, env: dict) -> str:
    """Starts `compactd serve` (its log in `work/compactd.log`); its base URL."""
    config = work / "compactd.toml"
    config.write_text(
        f"""summarizer = "openai"
fallback = "none"
retries = 0

[[models]]
name = "{candidate}"
kind = "openai"
model = "fake-model"
base_url = "http://127.0.0.1:{fake.port}/v1"
context_window = {context_window}
""",
        encoding="utf-8",
    )
    port = free_port()
    log = open(work / "compactd.log", "wb")
    atexit.register(log.close)
    proc = subprocess.Popen(
        [binary, "serve", "--config", str(config), "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, env=dict(env, COMPACTD_API_KEYS=api_key),
    )
    atexit.register(proc.terminate)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/readyz", timeout=1).read()
            return url
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError((work / "compactd.log").read_text())
            time.sleep(0.05)
    raise RuntimeError(f"compactd did not become ready: {(work / 'compactd.log').read_text()}")
