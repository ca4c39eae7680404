"""The official `openai` Python client's `responses.compact` against compactd's
`POST /v1/responses/compact`: the answer parses as a `CompactedResponse` whose output is
readable (the fake model's summary as a user message, the kept items as sent), every output
item is a valid Responses input item, and the output fed back with new turns compacts again
through the update path."""

from __future__ import annotations

import unittest
import warnings

import support  # first: sets up the environment and starts compactd

import openai
import pydantic
from openai.types.responses import CompactedResponse, ResponseInputItemParam


def turns(first: int, count: int) -> list[dict]:
    """`count` turns of a coding session: a request, a tool call, its output, an answer."""
    items: list[dict] = []
    for t in range(first, first + count):
        ask = "Fix the login bug in src/auth.rs. Never force-push." if t == 0 else f"Now check module {t}."
        items += [
            {"role": "user", "content": ask},
            {"type": "reasoning", "id": f"rs_{t}", "summary": [{"type": "summary_text", "text": f"Read m{t} first."}]},
            {"type": "function_call", "call_id": f"call_{t}", "name": "read", "arguments": f'{{"path": "src/m{t}.rs"}}'},
            {"type": "function_call_output", "call_id": f"call_{t}", "output": "fn m() { " + "let x = 1; " * 60 + "}"},
            {"type": "message", "id": f"msg_{t}", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": f"Module {t} is fine.", "annotations": []}]},
        ]
    return items


INPUT_ITEM = pydantic.TypeAdapter(ResponseInputItemParam)


class ResponsesCompact(unittest.TestCase):
    def setUp(self):
        self.client = openai.OpenAI(
            base_url=f"{support.compactd()}/v1", api_key=support.API_KEY, max_retries=0
        )

    def compact(self, items: list, **options) -> CompactedResponse:
        return self.client.responses.compact(
            model="gpt-5.1-codex",  # not configured: the default candidate answers
            input=items,
            instructions="You are a coding agent.",
            extra_body={"keepRecentTokens": 400, **options},
        )

    def assert_readable(self, r: CompactedResponse) -> list[dict]:
        self.assertIsInstance(r, CompactedResponse)
        self.assertEqual(r.object, "response.compaction")
        self.assertTrue(r.id.startswith("cmp_"))
        summary = r.output[0]
        self.assertEqual((summary.type, summary.role), ("message", "user"))
        self.assertIn(support.ANSWER, summary.content[0].text)
        # The SDK types `output` with its output-item union, which has no user message
        # (OpenAI's own user messages there are parsed the same way): pydantic warns when
        # such an item is dumped back, and the dump is still the item as sent.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            items = [item.to_dict() for item in r.output]
        for item in items:
            INPUT_ITEM.validate_python(item)  # sendable as input to a Responses API
        calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
        for item in items:
            if item.get("type") == "function_call_output":
                self.assertIn(item["call_id"], calls, "an output without its call")
        return items

    def test_compact_answers_a_readable_compacted_response(self):
        sent = turns(0, 6)
        before = len(support.FAKE.requests)
        r = self.compact(sent)
        items = self.assert_readable(r)
        kept = items[1:]
        self.assertTrue(0 < len(kept) < len(sent))
        self.assertEqual(kept, sent[len(sent) - len(kept):], "the kept items as sent")
        calls = len(support.FAKE.requests) - before
        self.assertGreaterEqual(calls, 1)
        self.assertEqual(
            (r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens),
            (321 * calls, 17 * calls, 338 * calls),
        )
        self.assertEqual(support.FAKE.requests[before]["model"], "fake-model")

    def test_the_output_fed_back_compacts_again(self):
        first = self.assert_readable(self.compact(turns(0, 6)))
        before = len(support.FAKE.requests)
        again = self.compact(first + turns(6, 4))
        items = self.assert_readable(again)
        prompts = "\n".join(
            m["content"] for req in support.FAKE.requests[before:] for m in req["messages"]
        )
        self.assertIn(support.ANSWER, prompts, "the previous summary is updated")
        summaries = [
            i for i in items
            if i.get("role") == "user" and not isinstance(i["content"], str)
            and support.ANSWER in i["content"][0]["text"]
        ]
        self.assertEqual(len(summaries), 1, "one summary, not one per round")

    def test_errors_arrive_as_the_clients_exceptions(self):
        with self.assertRaises(openai.UnprocessableEntityError) as caught:
            self.client.responses.compact(model="x", previous_response_id="resp_123")
        self.assertEqual(caught.exception.param, "previous_response_id")

    def test_a_short_conversation_is_compacted_all_the_same(self):
        sent = [
            {"role": "user", "content": "Rename the helper in src/lex.ts. Never push to main."},
            {"type": "message", "id": "msg_a", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Renamed it to nextToken.", "annotations": []}]},
            {"role": "user", "content": "Now run the tests."},
            {"type": "message", "id": "msg_b", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "All 41 pass.", "annotations": []}]},
        ]
        r = self.client.responses.compact(model="gpt-5.1-codex", input=sent)
        items = self.assert_readable(r)
        self.assertEqual(items[1:], sent[2:], "the newest user message and what follows, as sent")
        self.assertIn("newest user message", r.model_extra["metadata"]["note"])
        # Nothing before the newest user message: as it came, with an empty summary.
        r = self.client.responses.compact(model="x", input="just one line")
        self.assertEqual(r.object, "response.compaction")
        self.assertIn("as it came", r.model_extra["metadata"]["note"])


if __name__ == "__main__":
    unittest.main()
