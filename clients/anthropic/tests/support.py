"""Shared set-up: a fake model upstream, and a real `compactd serve` in front of it
(`clients/common/fake_upstream.py`).

The fake is compactd's model candidate, an OpenAI chat-completions server, not Anthropic's
API: the client under test talks to compactd only.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
from fake_upstream import FakeModel, start_compactd  # noqa: E402

API_KEY = "compactd-anthropic-key-51c2"
CANDIDATE = "fake"
ANSWER = "## Goal\nSUMMARY-FROM-FAKE-MODEL: the login bug in src/auth.rs is fixed; add a test."

for _name in [n for n in os.environ if n.startswith(("COMPACTD_", "ANTHROPIC_"))]:
    if _name != "COMPACTD_TEST_BIN":
        del os.environ[_name]
COMPACTD_BIN = os.environ.get("COMPACTD_TEST_BIN", "")

FAKE = FakeModel(ANSWER)
_COMPACTD: dict = {}
WORK = Path(tempfile.mkdtemp(prefix="compactd-anthropic-"))
atexit.register(shutil.rmtree, WORK, True)


def compactd() -> str:
    """The base URL (`http://127.0.0.1:PORT`) of the compactd under test, started once."""
    if "url" not in _COMPACTD:
        if not COMPACTD_BIN:
            raise RuntimeError("COMPACTD_TEST_BIN is not set (run clients/anthropic/test.sh)")
        _COMPACTD["url"] = start_compactd(
            COMPACTD_BIN, WORK, api_key=API_KEY, candidate=CANDIDATE, fake=FAKE,
            # Pings every 200 ms while a summary is written (the default is 15 s).
            context_window=16000, env=dict(os.environ, COMPACTD_HEARTBEAT_MS="200"),
        )
    return _COMPACTD["url"]
