"""Shared set-up: a fake OpenAI model upstream, and a real `compactd serve` in front of it.

Importing this module prepares a throwaway ``HERMES_HOME`` *before* any hermes module is
imported (hermes resolves its home once per process). Its ``config.yaml`` points the main
model at a closed port (so nothing reaches a real provider) and hermes's auxiliary
compression model at compactd's OpenAI-compatible facade, as docs/api.md tells users to:
``auxiliary.compression.{base_url, model, api_key}``.

The fake model and compactd's start are shared with the anthropic client tests
(`clients/common/fake_upstream.py`); ``compactd()`` starts the binary named by
``COMPACTD_TEST_BIN`` once per test process, with JSON logs that ``compactd_requests()``
reads.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

API_KEY = "compactd-client-key-7f3a"
CANDIDATE = "fake"
# The candidate's window: hermes's prompt for 60 turns fits it, for 200 turns it is folded.
CONTEXT_WINDOW = 16_000
ANSWER = "## Goal\nSUMMARY-FROM-FAKE-MODEL: keep fixing the login bug in src/auth.rs."

for _name in [n for n in os.environ if n.startswith("COMPACTD_")]:
    if _name != "COMPACTD_TEST_BIN":
        del os.environ[_name]
COMPACTD_BIN = os.environ.get("COMPACTD_TEST_BIN", "")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
from fake_upstream import FakeModel, start_compactd  # noqa: E402



FAKE = FakeModel(ANSWER)
_COMPACTD: dict = {}
WORK = Path(tempfile.mkdtemp(prefix="compactd-openai-"))
atexit.register(shutil.rmtree, WORK, True)


def compactd() -> str:
    """The base URL (`http://127.0.0.1:PORT`) of the compactd under test, started once."""
    if "url" not in _COMPACTD:
        if not COMPACTD_BIN:
            raise RuntimeError("COMPACTD_TEST_BIN is not set (run clients/openai/test.sh)")
        env = dict(os.environ, RUST_LOG="info", COMPACTD_LOG_FORMAT="json")
        _COMPACTD["url"] = start_compactd(
            COMPACTD_BIN, WORK, api_key=API_KEY, candidate=CANDIDATE, fake=FAKE,
            context_window=CONTEXT_WINDOW, env=env,
        )
    return _COMPACTD["url"]


def compactd_requests() -> list[dict]:
    """compactd's request log lines (JSON logs): their fields (route, status, …)."""
    lines = (WORK / "compactd.log").read_text(encoding="utf-8", errors="replace").splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return [r for r in records if r.get("message") == "request"]


# hermes's home: written before any hermes import (see the module documentation).
HOME = WORK / "hermes-home"
HOME.mkdir()
(HOME / "config.yaml").write_text(
    f"""model:
  default: main-model
  provider: custom
  base_url: http://127.0.0.1:9/v1
  context_length: 200000
auxiliary:
  compression:
    base_url: {compactd()}/v1
    model: {CANDIDATE}
    api_key: {API_KEY}
""",
    encoding="utf-8",
)
os.environ["HERMES_HOME"] = str(HOME)
os.environ["HOME"] = str(HOME)
for _name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(_name, None)
