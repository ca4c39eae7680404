"""The plugin inside the real hermes-agent 0.19.0 host, against a real compactd.

hermes selects the engine in ``agent/agent_init.py`` while building an ``AIAgent``: it asks
``plugins.context_engine.load_context_engine`` (bundled engines), then
``hermes_cli.plugins.get_plugin_context_engine()`` (user and pip plugins), and deep-copies the
winner. These tests build a real ``AIAgent`` from the throwaway HERMES_HOME prepared by
``support`` and drive compaction through the host's own ``_compress_context`` (which filters
the keyword arguments by signature, reads the ``_last_*`` flags and warns), so the plugin is
exercised exactly as a hermes user would run it.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

import support  # noqa: F401  (prepares HERMES_HOME before hermes is imported)
from support import (
    CONTEXT_LENGTH,
    closed_url,
    compactd,
    conversation,
    plugin_engine,
    plugin_logs,
    set_env,
)

from agent.context_engine import ContextEngine
from hermes_cli.plugins import get_plugin_manager
from agent.tool_executor import execute_tool_calls_sequential
from run_agent import AIAgent

PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY]"


def make_agent(warnings: list) -> AIAgent:
    """An agent as the CLI builds one; no model is ever called (nothing here sends a turn)."""
    return AIAgent(
        model="test-model",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-model-key-not-for-compactd",
        provider="custom",
        quiet_mode=True,
        skip_context_files=True,
        skip_memory=True,
        enabled_toolsets=[],
        status_callback=lambda kind, message: warnings.append((kind, message)),
    )


class Selection(unittest.TestCase):
    """(1) hermes's own loading path discovers the plugin and selects the engine."""

    def test_plugin_system_loads_the_user_plugin(self):
        engine = plugin_engine()
        self.assertIsInstance(engine, ContextEngine)
        self.assertEqual(engine.name, "compactd")
        info = {p["key"]: p for p in get_plugin_manager().list_plugins()}["compactd"]
        self.assertEqual((info["source"], info["kind"], info["enabled"], info["error"]),
                         ("user", "standalone", True, None))

    def test_agent_selects_a_copy_sized_for_the_model(self):
        agent = make_agent([])
        engine = agent.context_compressor
        self.assertEqual(engine.name, "compactd")
        self.assertEqual(type(engine).__module__, "hermes_plugins.compactd.engine")
        # The host deep-copies the registered singleton for every agent (#42449).
        self.assertIsNot(engine, plugin_engine())
        self.assertEqual(engine.context_length, CONTEXT_LENGTH)
        # config: threshold 0.6, raised to the 0.75 floor under 512K; 200000 × 0.75.
        self.assertEqual(engine.threshold_percent, 0.75)
        self.assertEqual(engine.threshold_tokens, 150_000)
        self.assertEqual((engine.protect_first_n, engine.protect_last_n), (2, 6))
        self.assertTrue(engine.should_compress(150_000))
        self.assertFalse(engine.should_compress(149_999))

    def test_not_enabled_means_not_used(self):
        # Discovery runs once per process, so this one runs hermes in a child process
        # with the same plugin directory and a config without plugins.enabled.
        home = Path(tempfile.mkdtemp(prefix="compactd-hermes-off-"))
        self.addCleanup(shutil.rmtree, home, True)
        shutil.copytree(support.HOME / "plugins", home / "plugins")
        config = support.CONFIG.replace("plugins:\n  enabled: [compactd]\n", "")
        self.assertNotIn("enabled", config)
        (home / "config.yaml").write_text(config, encoding="utf-8")
        script = (
            "from run_agent import AIAgent\n"
            "a = AIAgent(model='test-model', base_url='http://127.0.0.1:9/v1', api_key='k',"
            " provider='custom', quiet_mode=True, skip_context_files=True, skip_memory=True,"
            " enabled_toolsets=[])\n"
            "print('ENGINE', type(a.context_compressor).__name__, a.context_compressor.name)\n"
        )
        env = dict(os.environ, HERMES_HOME=str(home), HOME=str(home))
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("ENGINE ContextCompressor compressor", done.stdout)
        log = (home / "logs" / "agent.log").read_text(encoding="utf-8", errors="replace")
        self.assertIn("Context engine 'compactd' not found", log)


class Compaction(unittest.TestCase):
    """(2) a long conversation is compressed through a running compactd."""

    @classmethod
    def setUpClass(cls):
        cls.server = compactd()

    def setUp(self):
        self.addCleanup(set_env(COMPACTD_URL=self.server.url, COMPACTD_API_KEY=self.server.api_key))

    def test_long_conversation_is_compacted_by_compactd(self):
        warnings = []
        agent = make_agent(warnings)
        engine = agent.context_compressor
        messages = conversation(60)
        before = copy.deepcopy(messages)

        with plugin_logs(self) as logs:
            compacted, _prompt = agent._compress_context(
                messages, "You are a coding agent.", approx_tokens=160_000
            )

        self.assertEqual(messages, before, "the input list must not be modified")
        self.assertLess(len(compacted), len(messages))
        # The system prompt stays first (compactd appends its compaction note to it).
        self.assertEqual(compacted[0]["role"], "system")
        self.assertTrue(compacted[0]["content"].startswith(messages[0]["content"]))
        texts = [m.get("content") for m in compacted if isinstance(m.get("content"), str)]
        summaries = [t for t in texts if PREFIX in t]
        self.assertEqual(len(summaries), 1, texts)
        # The newest turn survives verbatim in the tail.
        self.assertIn(messages[-1], compacted)
        self.assertEqual(engine.compression_count, 1)
        self.assertFalse(engine._last_compress_aborted)
        self.assertTrue(engine._last_compression_made_progress)
        # No model is configured on this compactd: it answers with the static fallback, which
        # the host reports as a failed summary with a fallback marker.
        self.assertTrue(engine._last_summary_fallback_used)
        self.assertTrue(engine._last_summary_error)
        self.assertGreater(engine._last_summary_dropped_count, 0)
        self.assertTrue(any("fallback" in m for _k, m in warnings), warnings)
        self.assertTrue(any("summarizer fallback" in line for line in logs.output), logs.output)
        self.assertNotIn(self.server.api_key, "\n".join(logs.output))

    def test_second_compaction_sends_the_state_back(self):
        agent = make_agent([])
        engine = agent.context_compressor
        compacted, _ = agent._compress_context(conversation(60), "s", approx_tokens=160_000)
        self.assertEqual(engine.compression_count, 1)
        grown = compacted + conversation(40)[1:]
        again, _ = agent._compress_context(grown, "s", approx_tokens=160_000)
        self.assertLess(len(again), len(grown))
        self.assertEqual(engine.compression_count, 2)
        # A new session starts from nothing.
        engine.on_session_reset()
        self.assertEqual((engine.compression_count, engine._previous_summary), (0, None))


    def test_too_short_is_a_quiet_no_op(self):
        engine = make_agent([]).context_compressor
        messages = conversation(1)
        self.assertIs(engine.compress(messages), messages)
        self.assertFalse(engine._last_compress_aborted)
        self.assertFalse(engine._last_compression_made_progress)
        self.assertEqual(engine.compression_count, 0)

    def test_abort_on_summary_failure_from_the_user_config(self):
        # compression.abort_on_summary_failure reaches compactd through the plugin; with no
        # model compactd then answers summary-failed, which must keep the session unchanged.
        config = support.HOME / "config.yaml"
        original = config.read_text(encoding="utf-8")
        self.addCleanup(config.write_text, original, encoding="utf-8")
        config.write_text(original + "  abort_on_summary_failure: true\n", encoding="utf-8")
        warnings = []
        agent = make_agent(warnings)
        engine = agent.context_compressor
        self.assertTrue(engine.settings["abortOnSummaryFailure"])
        messages = conversation(60)
        before = copy.deepcopy(messages)
        with plugin_logs(self) as logs:
            kept, _ = agent._compress_context(messages, "s", approx_tokens=160_000)
        self.assertEqual(kept, before)
        self.assertTrue(engine._last_compress_aborted)
        self.assertIn("could not summarize", engine._last_summary_error)
        self.assertEqual(engine.compression_count, 0)
        self.assertIn("could not summarize", "\n".join(logs.output))
        self.assertTrue(any("Compression aborted" in m for _k, m in warnings), warnings)


class Recall(unittest.TestCase):
    """(2b) the agent gets a compactd_recall tool that finds what a compaction took out."""

    @classmethod
    def setUpClass(cls):
        cls.server = compactd()

    def setUp(self):
        self.addCleanup(set_env(COMPACTD_URL=self.server.url, COMPACTD_API_KEY=self.server.api_key))

    def test_the_tool_is_registered_and_finds_compacted_messages_through_the_host(self):
        agent = AIAgent(
            model="test-model", base_url="http://127.0.0.1:9/v1", api_key="sk-model-key-not-for-compactd",
            provider="custom", quiet_mode=True, skip_context_files=True, skip_memory=True,
            enabled_toolsets=["context_engine"],
        )
        names = {t["function"]["name"] for t in agent.tools}
        self.assertIn("compactd_recall", names)
        self.assertIn("compactd_recall", agent._context_engine_tool_names)

        messages = conversation(60)
        messages[5]["content"] = "Step 1: the cache key collides in vault_client.py, error VAULT-503. " + "u" * 3000
        compacted, _ = agent._compress_context(messages, "s", approx_tokens=160_000)
        self.assertLess(len(compacted), len(messages))
        self.assertNotIn(messages[5], compacted)

        # The host runs the call as it runs any tool call of the model's.
        call = SimpleNamespace(id="call_recall", type="function", function=SimpleNamespace(
            name="compactd_recall", arguments=json.dumps({"query": "VAULT-503", "limit": 3})))
        assistant = SimpleNamespace(content="", tool_calls=[call])
        history = list(compacted)
        execute_tool_calls_sequential(agent, assistant, history, "task-1")
        result = json.loads(history[-1]["content"])
        self.assertEqual(history[-1]["tool_call_id"], "call_recall")
        self.assertEqual(result["query"], "VAULT-503")
        self.assertGreater(result["searched"], 0)
        best = result["matches"][0]
        self.assertEqual(best["role"], "user")
        self.assertIn("VAULT-503", best["excerpt"])
        # Only what the compaction took out is searched: the kept tail is not.
        self.assertTrue(result["searched"] < len(messages))

    def test_before_any_compaction_and_with_a_bad_query(self):
        engine = make_agent([]).context_compressor
        empty = json.loads(engine.handle_tool_call("compactd_recall", {"query": "x"}))
        self.assertEqual((empty["searched"], empty["matches"]), (0, []))
        self.assertIn("error", json.loads(engine.handle_tool_call("compactd_recall", {"query": " "})))
        self.assertIn("error", json.loads(engine.handle_tool_call("other_tool", {})))


class CompactdDown(unittest.TestCase):
    """(3) compactd unreachable: the session is kept unchanged, with an abort and a warning."""

    def test_closed_port_aborts_and_keeps_the_session(self):
        self.addCleanup(set_env(COMPACTD_URL=closed_url(), COMPACTD_API_KEY="k-down-secret"))
        warnings = []
        agent = make_agent(warnings)
        engine = agent.context_compressor
        messages = conversation(30)
        before = copy.deepcopy(messages)

        with plugin_logs(self) as logs:
            result = engine.compress(messages, current_tokens=160_000)
        self.assertIs(result, messages)
        self.assertEqual(messages, before)
        self.assertTrue(engine._last_compress_aborted)
        self.assertIn("unreachable", engine._last_summary_error)
        self.assertEqual(engine.compression_count, 0)
        self.assertTrue(any(r.levelno == logging.WARNING for r in logs.records), logs.output)
        self.assertNotIn("k-down-secret", "\n".join(logs.output))
        # Automatic compaction pauses after the failure; a manual /compress (force) retries.
        self.assertFalse(engine.should_compress(10**9))
        self.assertIsNotNone(engine.get_active_compression_failure_cooldown())

        # Through the host: same list back, the abort warning shown to the user.
        kept, _ = agent._compress_context(messages, "s", approx_tokens=160_000, force=True)
        self.assertEqual(kept, before)
        self.assertTrue(any("Compression aborted" in m and "unreachable" in m for _k, m in warnings),
                        warnings)


class DeepCopy(unittest.TestCase):
    """(4) the engine survives the host's deep copy, before and after a compaction."""

    def test_copies_are_independent_and_work(self):
        self.addCleanup(set_env(COMPACTD_URL=compactd().url, COMPACTD_API_KEY=compactd().api_key))
        original = copy.deepcopy(plugin_engine())
        original.update_model(model="m", context_length=CONTEXT_LENGTH)
        compacted = original.compress(conversation(60), current_tokens=160_000)
        self.assertEqual(original.compression_count, 1)

        twin = copy.deepcopy(original)
        self.assertEqual(twin.compression_count, 1)
        twin.update_model(model="small", context_length=100_000)
        self.assertEqual(original.context_length, CONTEXT_LENGTH)
        again = twin.compress(compacted + conversation(40)[1:], current_tokens=90_000)
        self.assertFalse(twin._last_compress_aborted, twin._last_summary_error)
        self.assertEqual(twin.compression_count, 2)
        self.assertEqual(original.compression_count, 1)
        self.assertTrue(any(PREFIX in str(m.get("content")) for m in again))


class ClientError(unittest.TestCase):
    """(5) a 4xx from compactd is an abort with the error text logged, never a silent no-op."""

    def test_wrong_api_key_is_an_abort(self):
        self.addCleanup(set_env(COMPACTD_URL=compactd().url, COMPACTD_API_KEY="wrong-key-4711"))
        warnings = []
        agent = make_agent(warnings)
        engine = agent.context_compressor
        messages = conversation(30)
        before = copy.deepcopy(messages)

        with plugin_logs(self) as logs:
            kept, _ = agent._compress_context(messages, "s", approx_tokens=160_000)
        self.assertEqual(kept, before)
        self.assertTrue(engine._last_compress_aborted)
        self.assertIn("HTTP 401", engine._last_summary_error)
        logged = "\n".join(logs.output)
        self.assertIn("HTTP 401", logged)
        self.assertIn("WARNING", logged)
        self.assertNotIn("wrong-key-4711", logged)
        self.assertNotIn(compactd().api_key, logged)
        self.assertTrue(any("Compression aborted" in m and "401" in m for _k, m in warnings), warnings)


if __name__ == "__main__":
    unittest.main()
