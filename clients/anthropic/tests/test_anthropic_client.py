"""The official `anthropic` Python client asking compactd to compact: the beta Messages
API's `compaction` parameter answers one readable `compaction` block, which a second
request sends back as the previous summary. The summary must come from the fake model
behind compactd."""

from __future__ import annotations

import unittest

import support  # first: sets up the environment and starts compactd

import anthropic
from anthropic.types.beta import BetaCompactionBlock, BetaMessage

CONVERSATION = [
    {"role": "user", "content": "The login fails: fix src/auth.rs"},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "src/auth.rs"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "fn check(t: &str) -> bool { !valid(t) }"},
    ]},
    {"role": "assistant", "content": [{"type": "text", "text": "The token check was inverted; fixed."}]},
    {"role": "user", "content": "Now add a regression test for the login."},
]


class AnthropicClient(unittest.TestCase):
    def setUp(self):
        self.client = anthropic.Anthropic(
            base_url=support.compactd(), api_key=support.API_KEY, max_retries=0
        )

    def compact(self, messages, **kwargs):
        return self.client.beta.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1500,
            messages=messages,
            compaction={"type": "summarize", **kwargs},
        )

    def test_a_compaction_request_answers_one_readable_compaction_block(self):
        before = len(support.FAKE.requests)
        message = self.compact(CONVERSATION)
        self.assertIsInstance(message, BetaMessage)
        self.assertTrue(message.id.startswith("msg_"))
        self.assertEqual(message.role, "assistant")
        self.assertEqual(message.stop_reason, "compaction")
        self.assertIsNone(message.stop_sequence)
        self.assertEqual(message.model, "fake/fake-model")
        self.assertEqual(len(message.content), 1)
        block = message.content[0]
        self.assertEqual(block.type, "compaction")
        self.assertIsInstance(block, BetaCompactionBlock)
        self.assertTrue(block.content.startswith(support.ANSWER), block.content)
        self.assertTrue(block.signature)
        self.assertIsInstance(block.encrypted_content, str)
        self.assertEqual((message.usage.input_tokens, message.usage.output_tokens), (321, 17))
        # The whole conversation, the newest request and the tool's output included, reached
        # the model; the unknown model name meant compactd's default candidate.
        sent = support.FAKE.requests[before]
        self.assertEqual(sent["model"], "fake-model")
        self.assertEqual(sent["max_tokens"], 1500)
        prompt = sent["messages"][-1]["content"]
        for needle in ("fix src/auth.rs", "!valid(t)", "inverted", "regression test"):
            self.assertIn(needle, prompt)

    def test_the_block_sent_back_is_the_previous_summary(self):
        first = self.compact(CONVERSATION)
        before = len(support.FAKE.requests)
        second = self.compact(
            [
                {"role": "assistant", "content": first.content},
                {"role": "user", "content": "Also document the fix in docs/login.md."},
                {"role": "assistant", "content": "Documented."},
            ],
            instructions="Summarize for a new engineer; list every file.",
        )
        self.assertEqual(second.content[0].type, "compaction")
        self.assertTrue(second.content[0].content.startswith(support.ANSWER))
        prompt = support.FAKE.requests[before]["messages"][-1]["content"]
        self.assertIn("<previous-summary>\n" + first.content[0].content.rstrip("\n"), prompt)
        self.assertIn("docs/login.md", prompt)
        self.assertIn("Summarize for a new engineer; list every file.", prompt)
        # What the earlier block stands for is not sent again.
        self.assertNotIn("!valid(t)", prompt.split("</conversation>")[0])

    def test_the_streaming_helper_accumulates_the_compaction_block(self):
        # A large max_tokens makes the SDK insist on a stream; compactd's summary budget stays
        # its own (max_tokens only lowers it).
        before = len(support.FAKE.requests)
        with self.client.beta.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=64000,
            messages=CONVERSATION,
            compaction={"type": "summarize"},
        ) as stream:
            kinds = [event.type for event in stream]
            message = stream.get_final_message()
        self.assertIn("compaction", kinds)
        self.assertEqual(message.stop_reason, "compaction")
        block = message.content[0]
        self.assertIsInstance(block, BetaCompactionBlock)
        self.assertTrue(block.content.startswith(support.ANSWER), block.content)
        self.assertTrue(block.signature)
        self.assertIsInstance(block.encrypted_content, str)
        self.assertEqual((message.usage.input_tokens, message.usage.output_tokens), (321, 17))
        self.assertLess(support.FAKE.requests[before]["max_tokens"], 64000)

    def test_a_slow_summary_streams_pings_and_then_the_block(self):
        support.FAKE.delay = 1.2
        # A system prompt of its own: no answer of the other tests comes from the cache.
        system = "You are the agent of the slow-model test."
        try:
            # The raw stream, as a proxy sees it: pings while the model writes.
            with self.client.beta.messages.with_streaming_response.create(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                messages=CONVERSATION,
                compaction={"type": "summarize"},
                system=system,
                stream=True,
            ) as response:
                names = [
                    line.removeprefix("event: ")
                    for line in response.iter_lines()
                    if line.startswith("event: ")
                ]
            self.assertEqual(names[:2], ["message_start", "ping"])
            block_at = names.index("content_block_start")
            self.assertGreaterEqual(names[:block_at].count("ping"), 4, names)
            self.assertEqual(names[-1], "message_stop")
            # The SDK's stream skips the pings and still assembles the block.
            with self.client.beta.messages.stream(
                model="claude-sonnet-4-5",
                max_tokens=64000,
                messages=CONVERSATION,
                compaction={"type": "summarize"},
                system=system + " Second call.",
            ) as stream:
                message = stream.get_final_message()
            self.assertEqual(message.stop_reason, "compaction")
            self.assertTrue(message.content[0].content.startswith(support.ANSWER))
        finally:
            support.FAKE.delay = 0.0

    def test_an_ordinary_message_is_refused_with_a_bad_request(self):
        with self.assertRaises(anthropic.BadRequestError) as caught:
            self.client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=100,
                messages=[{"role": "user", "content": "Hello"}],
            )
        self.assertEqual(caught.exception.status_code, 400)
        self.assertEqual(caught.exception.body["type"], "error")
        self.assertEqual(caught.exception.body["error"]["type"], "invalid_request_error")
        self.assertIn("only compaction requests", caught.exception.message)

    def test_a_wrong_key_is_an_authentication_error(self):
        client = anthropic.Anthropic(base_url=support.compactd(), api_key="wrong", max_retries=0)
        with self.assertRaises(anthropic.AuthenticationError):
            client.beta.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=100,
                messages=[{"role": "user", "content": "Hello"}],
                compaction={"type": "summarize"},
            )


if __name__ == "__main__":
    unittest.main()
