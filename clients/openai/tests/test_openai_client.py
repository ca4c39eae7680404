"""The official `openai` Python client against compactd's facade: plain, streaming, models
and errors. The summary must come from the fake model behind compactd."""

from __future__ import annotations

import unittest

import support  # first: sets up the environment and starts compactd

import openai

PROMPT = (
    "<conversation>\n[User]: The login fails in src/auth.rs\n"
    "[Assistant]: I fixed the token check in src/auth.rs.\n</conversation>\n\n"
    "Summarize the conversation above."
)


class OpenAIClient(unittest.TestCase):
    def setUp(self):
        self.client = openai.OpenAI(
            base_url=f"{support.compactd()}/v1", api_key=support.API_KEY, max_retries=0
        )

    def test_a_plain_completion_carries_the_models_summary_and_usage(self):
        before = len(support.FAKE.requests)
        r = self.client.chat.completions.create(
            model=support.CANDIDATE,
            messages=[
                {"role": "system", "content": "You write handoff summaries."},
                {"role": "user", "content": PROMPT},
            ],
            max_tokens=1234,
            temperature=0.1,
        )
        self.assertTrue(r.id.startswith("chatcmpl-"))
        self.assertEqual(r.object, "chat.completion")
        self.assertEqual(r.model, "fake/fake-model")
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertEqual(r.choices[0].message.content, support.ANSWER)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertEqual(
            (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens),
            (321, 17, 338),
        )
        sent = support.FAKE.requests[before]
        self.assertEqual(sent["model"], "fake-model")
        self.assertEqual(sent["max_tokens"], 1234)
        self.assertEqual(
            sent["messages"],
            [
                {"role": "system", "content": "You write handoff summaries."},
                {"role": "user", "content": PROMPT},
            ],
        )

    def test_streaming_yields_the_summary_and_usage(self):
        stream = self.client.chat.completions.create(
            model="some-model-compactd-does-not-know",
            messages=[{"role": "user", "content": PROMPT + " (streamed)"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(
            c.choices[0].delta.content or "" for c in chunks if c.choices
        )
        self.assertEqual(text, support.ANSWER)
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        self.assertEqual(finishes[-1], "stop")
        self.assertEqual(chunks[-1].usage.total_tokens, 338)
        self.assertEqual({c.id for c in chunks}, {chunks[0].id})
        self.assertTrue(all(c.model == "fake/fake-model" for c in chunks))

    def test_models_lists_the_candidates_and_extractive(self):
        ids = [m.id for m in self.client.models.list()]
        self.assertEqual(ids, [support.CANDIDATE, "extractive"])

    def test_errors_arrive_as_the_clients_exceptions(self):
        bad = openai.OpenAI(
            base_url=f"{support.compactd()}/v1", api_key="wrong-key", max_retries=0
        )
        with self.assertRaises(openai.AuthenticationError) as caught:
            bad.chat.completions.create(
                model="x", messages=[{"role": "user", "content": "hi"}]
            )
        self.assertEqual(caught.exception.status_code, 401)
        self.assertEqual(caught.exception.code, "unauthorized")
        self.assertNotIn("wrong-key", str(caught.exception))
        with self.assertRaises(openai.UnprocessableEntityError) as caught:
            self.client.chat.completions.create(
                model="x",
                messages=[{"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
                ]}],
            )
        self.assertEqual(caught.exception.param, "messages.0.content.0.type")
        self.assertIn("only text parts", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
