// oh-my-pi's own compaction code (@oh-my-pi/pi-agent-core, `generateSummary` with
// `compaction.remoteEndpoint`) pointed at compactd's /v1/chat/completions, under bun.
// compactd runs in front of a fake OpenAI model (Bun.serve) that answers a marker text and
// keeps what it was sent, so the test sees the summary travel model → compactd → oh-my-pi and
// what compactd forwarded. Run by test.sh (which installs the pinned packages).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSummary } from "@oh-my-pi/pi-agent-core/compaction";

const ANSWER = "## Goal\nSUMMARY-FROM-FAKE-MODEL: the login bug in src/auth.rs is fixed.";
const received: any[] = [];
const fake = Bun.serve({
	port: 0,
	hostname: "127.0.0.1",
	async fetch(req) {
		received.push(await req.json());
		return Response.json({
			id: "chatcmpl-fake",
			object: "chat.completion",
			created: 1,
			model: "fake-model",
			choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: ANSWER } }],
			usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
		});
	},
});

const work = mkdtempSync(join(tmpdir(), "compactd-omp-"));
let compactd: ReturnType<typeof Bun.spawn>;
let base = "";

beforeAll(async () => {
	const config = join(work, "compactd.toml");
	writeFileSync(
		config,
		`summarizer = "openai"\nfallback = "none"\nretries = 0\n\n[[models]]\nname = "fake"\nkind = "openai"\nmodel = "fake-model"\nbase_url = "http://127.0.0.1:${fake.port}/v1"\n`,
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
