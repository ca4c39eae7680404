// oh-my-pi's own compaction code (@oh-my-pi/pi-agent-core) pointed at compactd under bun,
// through both shapes of its `compaction.remoteEndpoint`: compactd's /v1/chat/completions
// (`generateSummary`), and the generic remote `{systemPrompt, prompt, maxTokens?}` →
// `{summary, shortSummary?}` at /v1/summarize (`requestRemoteCompaction`, and the whole
// `compact`). compactd runs in front of a fake OpenAI model (Bun.serve) that answers marker
// texts and keeps what it was sent, so the test sees the summaries travel model → compactd →
// oh-my-pi and what compactd forwarded. Run by test.sh (which installs the pinned packages).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compact, createFileOps, generateSummary, requestRemoteCompaction } from "@oh-my-pi/pi-agent-core/compaction";

const ANSWER = "## Goal\nSUMMARY-FROM-FAKE-MODEL: the login bug in src/auth.rs is fixed.";
// What the fake answers compactd's own short-summary request (its prompt quotes the summary
// in <summary> tags).
const SHORT = "SHORT-FROM-FAKE-MODEL: the login bug is fixed.";
const received: any[] = [];
const fake = Bun.serve({
	port: 0,
	hostname: "127.0.0.1",
	async fetch(req) {
		const body = await req.json();
		received.push(body);
		const asked = String(body.messages.at(-1).content);
		const content = asked.includes("\n</summary>\n") ? SHORT : ANSWER;
		return Response.json({
			id: "chatcmpl-fake",
			object: "chat.completion",
			created: 1,
			model: "fake-model",
			choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
			usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
		});
	},
});

const work = mkdtempSync(join(tmpdir(), "compactd-omp-"));
let compactd: ReturnType<typeof Bun.spawn>;
let base = "";

beforeAll(async () => {
	const config = join(work, "compactd.toml");
	// No summary cache: each test sees every call its requests cost.
	writeFileSync(
		config,
		`summarizer = "openai"\nfallback = "none"\nretries = 0\ncache_entries = 0\n\n[[models]]\nname = "fake"\nkind = "openai"\nmodel = "fake-model"\nbase_url = "http://127.0.0.1:${fake.port}/v1"\n`,
	);
	// A free port: bind one, release it, hand it to compactd.
	const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
	const port = probe.port;
	probe.stop(true);
	const env: Record<string, string> = {};
	for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("COMPACTD_") && v) env[k] = v;
	compactd = Bun.spawn([process.env.COMPACTD_TEST_BIN!, "serve", "--config", config, "--listen", `127.0.0.1:${port}`], {
		env,
		stdout: "ignore",
		stderr: "ignore",
	});
	base = `http://127.0.0.1:${port}`;
	for (let i = 0; i < 200; i++) {
		try {
			if ((await fetch(`${base}/readyz`)).ok) return;
		} catch {}
		await Bun.sleep(50);
	}
	throw new Error("compactd did not start");
});

afterAll(() => {
	compactd?.kill();
	fake.stop(true);
	rmSync(work, { recursive: true, force: true });
});

// The agent's own model: oh-my-pi sends its id as `model` and its key as the bearer token.
const model: any = {
	id: "claude-sonnet-4-5",
	name: "Claude Sonnet 4.5",
	api: "anthropic-messages",
	provider: "anthropic",
	baseUrl: "http://127.0.0.1:9",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 200000,
	maxTokens: 8192,
	compat: {},
};
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const messages: any[] = [
	{ role: "user", content: [{ type: "text", text: "The login fails: fix src/auth.rs" }], timestamp: 1 },
	{
		role: "assistant",
		content: [{ type: "text", text: "I fixed the token check in src/auth.rs; the tests pass." }],
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-sonnet-4-5",
		usage,
		stopReason: "stop",
		timestamp: 2,
	},
];

test("oh-my-pi's generateSummary gets its summary from compactd's chat-completions facade", async () => {
	const endpoint = `${base}/v1/chat/completions`;
	const summary = await generateSummary(messages, model, 16384, "agent-provider-key", undefined, undefined, undefined, {
		remoteEndpoint: endpoint,
	});
	expect(summary).toBe(ANSWER);
	expect(received.length).toBe(1);
	const sent = received[0];
	// oh-my-pi's system prompt and prompt reach the model as sent; its model id is unknown to
	// compactd, so the default candidate answered; its budget is ⌊0.8 × 16384⌋.
	expect(sent.model).toBe("fake-model");
	expect(sent.messages.map((m: any) => m.role)).toEqual(["system", "user"]);
	expect(sent.messages[1].content).toContain("fix src/auth.rs");
	expect(sent.max_tokens).toBe(13107);
});

test("oh-my-pi's generic remote gets summary and shortSummary from compactd's /v1/summarize", async () => {
	received.length = 0;
	const prompt =
		"<conversation>\n[User]: The login fails: fix src/auth.rs\n\n[Assistant]: I fixed the token check in src/auth.rs.\n</conversation>\n\nSummarize the conversation above.";
	const remote = await requestRemoteCompaction(
		`${base}/v1/summarize`,
		{ systemPrompt: "SYSTEM-FROM-OMP", prompt, maxTokens: 777 },
		undefined,
		{ model, apiKey: "agent-provider-key" },
	);
	expect(remote.summary).toBe(ANSWER);
	expect(remote.shortSummary).toBe(SHORT);
	// The summary's call with oh-my-pi's texts and its maxTokens as the model's max_tokens,
	// then compactd's short call over that summary, within the same budget and at most 512.
	expect(received.length).toBe(2);
	expect(received[0].max_tokens).toBe(777);
	expect(received[0].messages[0].content).toBe("SYSTEM-FROM-OMP");
	expect(received[0].messages[1].content).toBe(prompt);
	expect(received[1].max_tokens).toBe(512);
	expect(received[1].messages[1].content).toContain(ANSWER);
});

test("oh-my-pi's compact through the generic remote keeps its budgets", async () => {
	received.length = 0;
	const recent: any = { role: "user", content: [{ type: "text", text: "Now add a test for it" }], timestamp: 3 };
	const result = await compact(
		{
			firstKeptEntryId: "kept-1",
			messagesToSummarize: messages,
			turnPrefixMessages: [],
			recentMessages: [recent],
			isSplitTurn: false,
			tokensBefore: 1000,
			fileOps: createFileOps(),
			settings: { enabled: true, keepRecentTokens: 10, reserveTokens: 16384, remoteEndpoint: `${base}/v1/summarize` },
		},
		model,
		"agent-provider-key",
	);
	expect(result.summary).toStartWith(ANSWER);
	expect(result.firstKeptEntryId).toBe("kept-1");
	// oh-my-pi asks for its own short summary in a second request, which compactd answers
	// in one call (it is a short summary already); compactd's short call rides on the first.
	expect(result.shortSummary).toBe(ANSWER);
	expect(received.map(r => r.max_tokens)).toEqual([13107, 512, 512]);
});
