"""hermes-agent 0.19.0's own ContextCompressor with its auxiliary compression model pointed at
compactd (``auxiliary.compression`` in ``$HERMES_HOME/config.yaml``, written by support.py):
the summary hermes puts into the compressed conversation is the fake model's, and it came
through compactd's facade (the fake saw hermes's prompt; compactd logged the request). A
conversation whose prompt exceeds the candidate's window is folded: the older turns are
summarized first, and hermes's own prompt, with them replaced by that summary, writes the
answer."""

from __future__ import annotations

import logging
import unittest

import support  # first: HERMES_HOME and compactd, before any hermes import

from agent.context_compressor import ContextCompressor


def conversation(turns: int = 60) -> list[dict]:
    messages = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        messages.append({
            "role": "user",
            "content": f"Step {i}: look at src/module_{i}.rs and fix issue #{i}. " + "Details. " * 120,
        })
        messages.append({
            "role": "assistant",
            "content": f"Fixed issue #{i} in src/module_{i}.rs by changing the parser. " + "Notes. " * 120,
        })
    return messages


class HermesCompressor(unittest.TestCase):
    def test_hermes_gets_its_summary_from_compactd(self):
        logging.disable(logging.CRITICAL)
        before = len(support.FAKE.requests)
        served_before = len(support.compactd_requests())
        compressor = ContextCompressor(
            model="main-model", quiet_mode=True, config_context_length=200_000,
        )
        messages = conversation()
        compressed = compressor.compress(messages, force=True)

        self.assertLess(len(compressed), len(messages))
        texts = [m.get("content") or "" for m in compressed]
        carrying = [t for t in texts if "SUMMARY-FROM-FAKE-MODEL" in t]
        self.assertEqual(len(carrying), 1, "exactly one summary message, the model's text")

        sent = support.FAKE.requests[before:]
        self.assertEqual(len(sent), 1, "one summary call reached the model through compactd")
        (request,) = sent
        # compactd forwards hermes's one user message as sent, with no system prompt added.
        self.assertEqual([m["role"] for m in request["messages"]], ["user"])
        prompt = request["messages"][0]["content"]
        self.assertIn("TURNS TO SUMMARIZE", prompt)
        self.assertIn("src/module_1.rs", prompt)
        self.assertEqual(request["model"], "fake-model")
        served = [r for r in support.compactd_requests()[served_before:]
                  if r["route"] == "/v1/chat/completions"]
        self.assertEqual([r["status"] for r in served], [200], "compactd answered hermes once")

    def test_a_prompt_larger_than_the_window_is_folded(self):
        logging.disable(logging.CRITICAL)
        before = len(support.FAKE.requests)
        served_before = len(support.compactd_requests())
        compressor = ContextCompressor(
            model="main-model", quiet_mode=True, config_context_length=200_000,
        )
        messages = conversation(200)
        compressed = compressor.compress(messages, force=True)

        texts = [m.get("content") or "" for m in compressed]
        self.assertEqual(len([t for t in texts if "SUMMARY-FROM-FAKE-MODEL" in t]), 1)
        sent = support.FAKE.requests[before:]
        self.assertGreaterEqual(len(sent), 2, "the older turns were summarized first")
        prompts = ["\n".join(m["content"] for m in r["messages"]) for r in sent]
        for r, p in zip(sent, prompts):
            tokens = -(-len(p.encode("utf-16-le")) // 8)
            self.assertLessEqual(tokens + r["max_tokens"], support.CONTEXT_WINDOW)
        # Every turn hermes sent reaches the model exactly once.
        seen = [i for i in range(200) if any(f"fix issue #{i}. " in p for p in prompts)]
        self.assertGreater(len(seen), 100)
        for i in seen:
            self.assertEqual(sum(f"fix issue #{i}. " in p for p in prompts), 1, i)
        self.assertTrue(any(f"fix issue #{seen[0]}. " in p for p in prompts[:-1]))
        # The last call is hermes's own one-message prompt with the older turns folded.
        last = sent[-1]
        self.assertEqual([m["role"] for m in last["messages"]], ["user"])
        self.assertIn("TURNS TO SUMMARIZE", prompts[-1])
        self.assertIn("[EARLIER TURNS, SUMMARIZED]: " + support.ANSWER, prompts[-1])
        self.assertIn(f"fix issue #{seen[-1]}. ", prompts[-1])
        served = [r for r in support.compactd_requests()[served_before:]
                  if r["route"] == "/v1/chat/completions"]
        self.assertEqual([r["status"] for r in served], [200], "compactd answered hermes once")


if __name__ == "__main__":
    unittest.main()
