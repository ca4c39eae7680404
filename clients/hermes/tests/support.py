"""Shared set-up for the plugin tests: a throwaway HERMES_HOME, a real compactd, a stub.

Importing this module prepares the hermes home *before* any hermes module is imported, since
hermes resolves its home and discovers plugins once per process:

* ``$HERMES_HOME/config.yaml`` selects the engine (``context.engine: compactd``), enables the
  plugin (``plugins.enabled: [compactd]``) and fixes the model's window, so that nothing is
  looked up on the network;
* ``$HERMES_HOME/plugins/compactd/`` is a copy of ``clients/hermes/compactd/``, installed the
  way the plugin's README tells users to.

``compactd()`` starts ``compactd serve`` (the binary named by ``COMPACTD_TEST_BIN``) once per test
process on a free loopback port, with an API key and no model configured; ``Stub`` is a tiny
HTTP server with a canned answer, for the failure shapes a healthy compactd never produces.
"""

from __future__ import annotations

import atexit
import http.server
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN_SRC = HERE.parent / "compactd"

CONTEXT_LENGTH = 200_000
CONFIG = f"""\
model:
  default: test-model
  provider: custom
  base_url: http://127.0.0.1:9/v1
  context_length: {CONTEXT_LENGTH}
context:
  engine: compactd
plugins:
  enabled: [compactd]
compression:
  threshold: 0.6
  target_ratio: 0.25
  protect_first_n: 2
  protect_last_n: 6
"""

# The binary under test; every other COMPACTD_* variable is cleared so that the plugin sees
# only what each test sets.
COMPACTD_BIN = os.environ.get("COMPACTD_TEST_BIN", "")
for _name in [n for n in os.environ if n.startswith("COMPACTD_")]:
    del os.environ[_name]
os.environ.pop("HERMES_SAFE_MODE", None)

HOME = Path(tempfile.mkdtemp(prefix="compactd-hermes-home-"))
atexit.register(shutil.rmtree, HOME, True)
(HOME / "config.yaml").write_text(CONFIG, encoding="utf-8")
shutil.copytree(
    PLUGIN_SRC, HOME / "plugins" / "compactd", ignore=shutil.ignore_patterns("__pycache__")
)
os.environ["HERMES_HOME"] = str(HOME)
# hermes writes its own files (logs, state) under the home; keep the user's untouched.
os.environ["HOME"] = str(HOME)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_url() -> str:
    """A loopback URL where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


class Compactd:
    """A running ``compactd serve``."""

    def __init__(self) -> None:
        binary = COMPACTD_BIN
        if not binary:
            raise RuntimeError("set COMPACTD_TEST_BIN to the compactd binary (clients/hermes/test.sh does)")
        self.api_key = secrets.token_hex(16)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(HOME / "compactd.log", "wb")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(HOME),
            "COMPACTD_LISTEN": f"127.0.0.1:{port}",
            "COMPACTD_API_KEYS": self.api_key,
            "RUST_LOG": "warn",
        }
        self.process = subprocess.Popen(
            [binary, "serve"], env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"compactd exited at start:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"compactd did not become healthy:\n{self.output()}")
            time.sleep(0.1)

    def output(self) -> str:
        self.log.flush()
        return (HOME / "compactd.log").read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


_compactd = None


def compactd() -> Compactd:
    global _compactd
    if _compactd is None:
        _compactd = Compactd()
    return _compactd


class Stub:
    """An HTTP server answering every POST with one canned status and JSON body.

    ``delay`` holds the answer back (for timeouts). ``requests`` keeps the decoded bodies
    and the Authorization headers that were sent.
    """

    def __init__(self, status: int = 200, answer=None, delay: float = 0.0) -> None:
        self.status, self.answer, self.delay = status, answer, delay
        self.requests = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                stub.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if stub.delay:
                    time.sleep(stub.delay)
                data = json.dumps(stub.answer).encode("utf-8")
                kind = "application/json" if stub.status == 200 else "application/problem+json"
                try:
                    self.send_response(stub.status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def conversation(turns: int, size: int = 3000):
    """A system prompt and ``turns`` user/assistant pairs with tool work in between."""
    messages = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Step {i}: please look at module_{i}.py. " + "u" * size})
        call_id = f"call_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": f"Reading module_{i}.py.",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": f"module_{i}.py"})},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"# module_{i}\n" + "t" * size})
        messages.append({"role": "assistant", "content": f"module_{i}.py defines step {i}. " + "a" * size})
    return messages


def plugin_engine():
    """The engine hermes's plugin system registered (discovering plugins if needed)."""
    from hermes_cli.plugins import get_plugin_context_engine

    return get_plugin_context_engine()


def engine_module():
    """The plugin's engine module as hermes loaded it (``hermes_plugins.compactd.engine``)."""
    return sys.modules[type(plugin_engine()).__module__]


def fresh_engine():
    """A new engine, sized by update_model as the host does."""
    engine = type(plugin_engine())()
    engine.update_model(model="test-model", context_length=CONTEXT_LENGTH)
    return engine


def set_env(**values):
    """Set (or with None, remove) environment variables; returns a restore function."""
    saved = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v

    def restore():
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    return restore


def plugin_logs(test: unittest.TestCase):
    """Capture everything the plugin logs (its loggers live under hermes_plugins.compactd)."""
    return test.assertLogs("hermes_plugins.compactd", level="DEBUG")
