"""The engine's own rules: threshold, settings, request body, and every answer shape.

The threshold is checked against hermes's own ``ContextCompressor`` arithmetic. Answers a
healthy compactd does not give on demand (a 503, ``summary-failed``, a stall, garbage) come
from ``support.Stub``; the end-to-end behaviour against the real compactd is in test_host.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import unittest

import support  # noqa: F401  (prepares HERMES_HOME before hermes is imported)
from support import (
    CONTEXT_LENGTH,
    Stub,
    closed_url,
    conversation,
    engine_module,
    fresh_engine,
    plugin_logs,
    set_env,
)

from agent.context_compressor import ContextCompressor

OK_ANSWER = {
    "compressed": True,
    "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "[CONTEXT COMPACTION — REFERENCE ONLY] x"}],
    "summary": "[CONTEXT COMPACTION — REFERENCE ONLY] x",
    "summarizer": "llm",
    "state": {"compressionCount": 4, "previousSummary": "## Historical Task Snapshot\nbody"},
    "fallback": {"used": False, "droppedCount": 0, "error": None},
    "tokensBefore": 9000,
    "tokensAfter": 100,
    "madeProgress": True,
}


class Threshold(unittest.TestCase):
    def test_matches_hermes_context_compressor(self):
        mod = engine_module()
        for ctx in (0, 1, 8_000, 64_000, 75_294, 128_000, 200_000, 511_999, 512_000, 1_000_000, 2_000_000):
            for pct in (0.1, 0.5, 0.6, 0.75, 0.85, 0.95):
                for max_tokens in (None, 4_096, 65_536, 200_000, 3_000_000):
                    hermes_pct = ContextCompressor._effective_threshold_percent(ctx, pct)
                    expected = ContextCompressor._compute_threshold_tokens(ctx, hermes_pct, max_tokens)
                    with self.subTest(ctx=ctx, pct=pct, max_tokens=max_tokens):
                        self.assertEqual(mod.effective_threshold_percent(ctx, pct), hermes_pct)
                        self.assertEqual(mod.threshold_tokens_for(ctx, pct, max_tokens), expected)

    def test_worked_values(self):
        mod = engine_module()
        # 200000 < 512K: 0.5 raised to 0.75 → 150000.
        self.assertEqual(mod.threshold_tokens_for(200_000, 0.5), 150_000)
        # 1M keeps 0.5 → 500000; with 65536 reserved: (1000000 − 65536) × 0.5 = 467232.
        self.assertEqual(mod.threshold_tokens_for(1_000_000, 0.5, 65_536), 467_232)
        # 64000 window: the 64000 floor reaches the window → 85 % = 54400.
        self.assertEqual(mod.threshold_tokens_for(64_000, 0.5), 54_400)

    def test_update_model_sizes_the_engine_from_config(self):
        engine = fresh_engine()
        self.assertEqual(engine.threshold_tokens, 150_000)
        engine.update_model(model="big", context_length=1_000_000, api_key="model-key")
        # support's config has threshold 0.6: above 512K it is kept → 600000.
        self.assertEqual((engine.threshold_percent, engine.threshold_tokens), (0.6, 600_000))
        self.assertNotIn("model-key", json.dumps(vars(engine), default=str))
        engine.update_model(model="big", context_length=1_000_000, max_tokens=100_000)
        self.assertEqual(engine.threshold_tokens, 540_000)  # 900000 × 0.6
        self.assertEqual(engine.max_tokens, 100_000)
        engine.update_model(model="big", context_length=1_000_000)
        self.assertEqual((engine.max_tokens, engine.threshold_tokens), (None, 600_000))

    def test_no_window_no_trigger(self):
        engine = type(fresh_engine())()
        self.assertEqual(engine.threshold_tokens, 0)
        self.assertFalse(engine.should_compress(10**9))


class Settings(unittest.TestCase):
    def test_parsed_like_agent_init(self):
        read = engine_module().read_settings
        self.assertEqual(
            read({"compression": {"threshold": "0.7", "target_ratio": 0.3, "protect_first_n": -2,
                                  "protect_last_n": "12", "abort_on_summary_failure": "Yes"},
                  "model": {"max_tokens": "8192"}}),
            {"thresholdPercent": 0.7, "targetRatio": 0.3, "protectFirstN": 0, "protectLastN": 12,
             "maxTokens": 8192, "abortOnSummaryFailure": True},
        )

    def test_unusable_values_keep_the_defaults(self):
        read = engine_module().read_settings
        defaults = read(None)
        self.assertEqual(defaults["thresholdPercent"], 0.5)
        self.assertEqual(read({"compression": "off", "model": "gpt"}), defaults)
        with self.assertLogs("hermes_plugins.compactd", level="WARNING"):
            got = read({"compression": {"threshold": "half", "protect_last_n": [1]},
                        "model": {"max_tokens": True}})
        self.assertEqual(got, defaults)
        for bad in (0, -5, "many", 2.5e-1):
            self.assertIsNone(read({"model": {"max_tokens": bad}})["maxTokens"], bad)


class Request(unittest.TestCase):
    def stub(self, **kwargs) -> Stub:
        stub = Stub(**kwargs)
        self.addCleanup(stub.close)
        return stub

    def test_body_and_bearer(self):
        stub = self.stub(answer=OK_ANSWER)
        self.addCleanup(set_env(COMPACTD_URL=stub.url + "/", COMPACTD_API_KEY="key-1"))
        engine = fresh_engine()
        messages = conversation(3, size=10)
        result = engine.compress(messages, current_tokens=151_000, focus_topic="the parser",
                                 memory_context="user prefers tabs")
        self.assertEqual(result, OK_ANSWER["messages"])
        sent = stub.requests[0]
        self.assertEqual(sent["path"], "/v1/hermes/compress")
        self.assertEqual(sent["auth"], "Bearer key-1")
        from hermes_time import now

        self.assertEqual(
            sent["body"],
            {
                "messages": messages,
                "contextLength": CONTEXT_LENGTH,
                "settings": {"thresholdPercent": 0.6, "targetRatio": 0.25, "protectFirstN": 2,
                             "protectLastN": 6, "maxTokens": None, "abortOnSummaryFailure": False},
                "state": {"compressionCount": 0, "previousSummary": None},
                "focusTopic": "the parser",
                "memoryContext": "user prefers tabs",
                "currentTokens": 151_000,
                "today": now().date().isoformat(),
            },
        )
        datetime.date.fromisoformat(sent["body"]["today"])
        # The returned state goes back out with the next call.
        self.assertEqual(engine.compression_count, 4)
        self.assertTrue(engine._last_compression_made_progress)
        self.assertFalse(engine._last_summary_fallback_used)
        self.assertIsNone(engine._last_summary_error)
        engine.compress(messages)
        self.assertEqual(stub.requests[1]["body"]["state"],
                         {"compressionCount": 4, "previousSummary": "## Historical Task Snapshot\nbody"})
        self.assertIsNone(stub.requests[1]["body"]["currentTokens"])
        # Session end forgets it.
        engine.on_session_end("sid", messages)
        engine.compress(messages)
        self.assertEqual(stub.requests[2]["body"]["state"], {"compressionCount": 0, "previousSummary": None})

    def test_no_key_no_authorization_header(self):
        stub = self.stub(answer=OK_ANSWER)
        self.addCleanup(set_env(COMPACTD_URL=stub.url, COMPACTD_API_KEY=None))
        fresh_engine().compress(conversation(2, size=10))
        self.assertIsNone(stub.requests[0]["auth"])

    def test_not_compressed_returns_the_input_without_abort(self):
        answer = {"compressed": False, "reason": "too-few-messages", "messages": [], "state": {}}
        stub = self.stub(answer=answer)
        self.addCleanup(set_env(COMPACTD_URL=stub.url))
        engine = fresh_engine()
        messages = conversation(1, size=10)
        self.assertIs(engine.compress(messages), messages)
        self.assertFalse(engine._last_compress_aborted)
        self.assertFalse(engine._last_compression_made_progress)
        self.assertIsNone(engine.get_active_compression_failure_cooldown())

    def test_summary_failed_is_an_abort(self):
        answer = {"compressed": False, "reason": "summary-failed", "messages": [],
                  "error": "upstream timed out", "state": {}}
        stub = self.stub(answer=answer)
        self.addCleanup(set_env(COMPACTD_URL=stub.url))
        engine = fresh_engine()
        messages = conversation(5, size=10)
        with plugin_logs(self) as logs:
            self.assertIs(engine.compress(messages), messages)
        self.assertTrue(engine._last_compress_aborted)
        self.assertIn("upstream timed out", engine._last_summary_error)
        self.assertIn("upstream timed out", "\n".join(logs.output))

    def test_fallback_answer_sets_the_fallback_flags(self):
        answer = dict(OK_ANSWER, summarizer="fallback",
                      fallback={"used": True, "droppedCount": 17, "error": "model said 500"})
        stub = self.stub(answer=answer)
        self.addCleanup(set_env(COMPACTD_URL=stub.url))
        engine = fresh_engine()
        engine.update_model(model="m", context_length=CONTEXT_LENGTH)
        engine.compress(conversation(5, size=10))
        self.assertEqual((engine._last_summary_fallback_used, engine._last_summary_error,
                          engine._last_summary_dropped_count), (True, "model said 500", 17))
        self.assertTrue(engine.should_compress(10**9))
        engine.compress(conversation(5, size=10))
        # Two fallback compactions in a row pause automatic compaction (as hermes's engine).
        with plugin_logs(self):
            self.assertFalse(engine.should_compress(10**9))
        engine.on_session_reset()
        self.assertTrue(engine.should_compress(10**9))

    def test_server_error_is_an_abort_with_its_text(self):
        problem = {"type": "urn:compactd:problem:overloaded", "title": "overloaded", "status": 503,
                   "detail": "too many requests in progress"}
        stub = self.stub(status=503, answer=problem)
        self.addCleanup(set_env(COMPACTD_URL=stub.url, COMPACTD_API_KEY="key-503"))
        engine = fresh_engine()
        messages = conversation(5, size=10)
        with plugin_logs(self) as logs:
            self.assertIs(engine.compress(messages), messages)
        self.assertTrue(engine._last_compress_aborted)
        self.assertIn("HTTP 503: overloaded: too many requests in progress", engine._last_summary_error)
        self.assertIn("HTTP 503", "\n".join(logs.output))
        self.assertNotIn("key-503", "\n".join(logs.output))

    def test_timeout_is_an_abort(self):
        stub = self.stub(answer=OK_ANSWER, delay=3)
        self.addCleanup(set_env(COMPACTD_URL=stub.url, COMPACTD_TIMEOUT="0.3"))
        engine = fresh_engine()
        messages = conversation(5, size=10)
        with plugin_logs(self):
            self.assertIs(engine.compress(messages), messages)
        self.assertTrue(engine._last_compress_aborted)
        self.assertIn("timed out after 0.3 s", engine._last_summary_error)

    def test_malformed_answers_are_aborts(self):
        for answer in ("not an object", {"compressed": "yes"}, {"compressed": True, "messages": []},
                       {"compressed": True}):
            stub = self.stub(answer=answer)
            self.addCleanup(set_env(COMPACTD_URL=stub.url))
            engine = fresh_engine()
            messages = conversation(2, size=10)
            with self.subTest(answer=answer), plugin_logs(self):
                self.assertIs(engine.compress(messages), messages)
                self.assertTrue(engine._last_compress_aborted)
                self.assertEqual(engine.compression_count, 0)

    def test_unsendable_messages_are_an_abort(self):
        self.addCleanup(set_env(COMPACTD_URL=closed_url()))
        engine = fresh_engine()
        messages = [{"role": "user", "content": float("nan")}]
        with plugin_logs(self):
            self.assertIs(engine.compress(messages), messages)
        self.assertIn("cannot be sent as JSON", engine._last_summary_error)

    def test_credentials_in_the_url_are_never_shown(self):
        url = closed_url().replace("http://", "http://alice:s3cret@")
        self.addCleanup(set_env(COMPACTD_URL=url))
        engine = fresh_engine()
        with plugin_logs(self) as logs:
            engine.compress(conversation(2, size=10))
        self.assertNotIn("s3cret", engine._last_summary_error + "\n".join(logs.output))
        self.assertNotIn("s3cret", json.dumps(engine.get_status()))
        self.assertIn("unreachable", engine._last_summary_error)

    def test_force_retries_during_the_pause(self):
        self.addCleanup(set_env(COMPACTD_URL=closed_url()))
        engine = fresh_engine()
        with plugin_logs(self):
            engine.compress(conversation(2, size=10))
        self.assertFalse(engine.should_compress(10**9))
        stub = self.stub(answer=OK_ANSWER)
        os.environ["COMPACTD_URL"] = stub.url
        self.assertEqual(engine.compress(conversation(2, size=10), force=True), OK_ANSWER["messages"])
        self.assertFalse(engine._last_compress_aborted)
        self.assertTrue(engine.should_compress(10**9))


class Usage(unittest.TestCase):
    def test_tracking_and_ineffective_compactions(self):
        engine = fresh_engine()
        engine.update_from_response({"prompt_tokens": 1000, "completion_tokens": 20})
        self.assertEqual((engine.last_prompt_tokens, engine.last_total_tokens), (1000, 1020))
        self.assertFalse(engine.should_compress())
        for _ in range(2):
            engine._verify_compaction_cleared_threshold = True  # as the host arms it
            with plugin_logs(self):
                engine.update_from_response({"prompt_tokens": 160_000, "completion_tokens": 1})
        with plugin_logs(self):
            self.assertFalse(engine.should_compress())
        engine._verify_compaction_cleared_threshold = True
        engine.update_from_response({"prompt_tokens": 100, "completion_tokens": 1})
        self.assertTrue(engine.should_compress(150_000))

    def test_deep_copy_of_a_used_engine(self):
        engine = fresh_engine()
        engine.update_from_response({"prompt_tokens": 5, "completion_tokens": 1})
        twin = copy.deepcopy(engine)
        twin.update_from_response({"prompt_tokens": 7, "completion_tokens": 1})
        self.assertEqual((engine.last_prompt_tokens, twin.last_prompt_tokens), (5, 7))
        self.assertEqual(twin.get_status()["threshold_tokens"], 150_000)


if __name__ == "__main__":
    unittest.main()


class Archive(unittest.TestCase):
    def test_keeps_what_the_answer_dropped_within_its_byte_bound(self):
        mod = engine_module()
        engine = fresh_engine()
        messages = [{"role": "user", "content": f"m{i} " + "x" * 100} for i in range(10)]
        # The answer keeps inputs 0 and 9 (and adds a summary, source null).
        engine._keep_compacted(messages, [0, None, 9])
        self.assertEqual(engine._archive, messages[1:9])
        size = len(json.dumps(messages[1], ensure_ascii=False).encode("utf-8"))
        saved = mod.ARCHIVE_MAX_BYTES
        self.addCleanup(setattr, mod, "ARCHIVE_MAX_BYTES", saved)
        mod.ARCHIVE_MAX_BYTES = size * 5
        later = [{"role": "user", "content": f"n{i} " + "x" * 100} for i in range(3)]
        engine._keep_compacted(later, [])
        # The oldest go first: five messages' worth remain, the newest last.
        self.assertEqual(engine._archive, (messages[1:9] + later)[-5:])
        self.assertLessEqual(sum(engine._archive_sizes), mod.ARCHIVE_MAX_BYTES)
        # A new session forgets them.
        engine.on_session_reset()
        self.assertEqual(engine._archive, [])
        # An answer without sources keeps nothing (it cannot say what was dropped).
        engine._keep_compacted(messages, None)
        self.assertEqual(engine._archive, [])
